//! Checking a repository before a team may work in it.

use super::git_error;
use std::path::Path;
use teamboard_git::Repo as Git;
use teamboard_protocol::request::SetRepoArgs;
use teamboard_protocol::{
    DEFAULT_CHECK_TIMEOUT_MS, ErrorBody, ErrorCode, MergeStyle, Repo, names::validate_name,
};

/// Checks `args` against git and the disk, and answers the `Repo` to attach:
/// git present and recent enough, `path` inside a repository with a working
/// tree, the target branch named and existing (checked out or not), the
/// worktrees directory creatable.
pub fn validate(args: &SetRepoArgs, worktrees: &str, now_ms: i64) -> Result<Repo, ErrorBody> {
    teamboard_board::check_checks(&args.checks).map_err(ErrorBody::from)?;
    if let Some(ms) = args.check_timeout_ms
        && ms == 0
    {
        return Err(invalid("check_timeout_ms must be more than 0"));
    }
    let version = teamboard_git::version().map_err(git_error)?;
    let path = Path::new(&args.path);
    if !path.is_absolute() {
        return Err(invalid(format!(
            "the repository path must be absolute, not '{}'",
            args.path
        )));
    }
    let git = Git::open(path).map_err(git_error)?;
    let root = git.root().display().to_string();
    let Some(branch) = args.branch.clone() else {
        return Err(no_branch(&git, &root, args));
    };
    if git.branch_head(&branch).map_err(git_error)?.is_none() {
        let again = suggest(args, &root, &branch);
        return Err(git_error(format!(
            "{root} has no branch '{branch}'; create it and set the repository again (git -C {root} branch {branch} && {again}) or name another"
        )));
    }
    // A branch checked out in the person's working tree is welcome: landing
    // updates that tree as git's `receive.denyCurrentBranch=updateInstead`
    // does, or waits while it has changes in the way (`land.rs`).
    // Worktrees of other teams' tasks live elsewhere; this team's directory is
    // made now so that a permission problem shows at once, not at the first
    // claim.
    std::fs::create_dir_all(worktrees).map_err(|e| {
        git_error(format!(
            "cannot create the worktrees directory {worktrees}: {e}"
        ))
    })?;
    Ok(Repo {
        path: root,
        branch,
        merge: args.merge.unwrap_or(MergeStyle::Rebase),
        checks: args.checks.clone(),
        check_timeout_ms: args.check_timeout_ms.unwrap_or(DEFAULT_CHECK_TIMEOUT_MS),
        worktrees: worktrees.to_string(),
        git_version: version.text,
        set_at: now_ms,
        review: args.review,
    })
}

/// The refusal of a `set_repo` that names no target branch. There is no
/// default, so that a repository is never attached to a branch the person did
/// not name; the refusal names the branch checked out at the path and gives
/// the command to run, with every option the person gave.
fn no_branch(git: &Git, root: &str, args: &SetRepoArgs) -> ErrorBody {
    let current = git.current_branch().ok().flatten();
    let example = current.as_deref().unwrap_or("main");
    let again = suggest(args, root, example);
    let checked = match &current {
        Some(b) => format!(" ('{b}' is checked out at {root})"),
        None => String::new(),
    };
    invalid(format!(
        "name the target branch (`branch`, or --branch): boardd takes none by default{checked}. For example: {again}"
    ))
}

/// `teamctl repo set ROOT --branch BRANCH` with every other option of `args`,
/// quoted for a POSIX shell: a suggestion that drops an option the person
/// gave would attach something else than they asked for.
pub(crate) fn suggest(args: &SetRepoArgs, root: &str, branch: &str) -> String {
    let mut words = vec![
        "teamctl".to_string(),
        "repo".into(),
        "set".into(),
        quote(root),
        "--branch".into(),
        quote(branch),
    ];
    if let Some(m) = args.merge {
        words.extend(["--merge".to_string(), m.to_string()]);
    }
    for c in &args.checks {
        words.extend(["--check".to_string(), quote(c)]);
    }
    if let Some(ms) = args.check_timeout_ms {
        // teamctl takes seconds; a limit set through the protocol in
        // milliseconds rounds up, never to a shorter limit.
        words.extend(["--check-timeout".to_string(), ms.div_ceil(1000).to_string()]);
    }
    words.join(" ")
}

/// `word` as a POSIX shell reads it back: bare when it is plainly safe, else
/// in single quotes. Hand-written: four lines, where a crate would bring a
/// dependency for one call.
fn quote(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        return word.to_string();
    }
    format!("'{}'", word.replace('\'', r"'\''"))
}

fn invalid(message: impl Into<String>) -> ErrorBody {
    ErrorBody::new(ErrorCode::InvalidArgs, message)
}

/// The team's worktree directory under the state directory. Team names are
/// validated names, safe as one path component.
pub fn worktrees_dir(state_dir: &Path, team: &str) -> String {
    debug_assert!(validate_name(team).is_ok());
    state_dir.join("worktrees").join(team).display().to_string()
}
