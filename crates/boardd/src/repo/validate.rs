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
/// tree, the target branch named, existing and checked out nowhere, the
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
        return Err(no_branch(&git, &root));
    };
    if git.branch_head(&branch).map_err(git_error)?.is_none() {
        return Err(git_error(format!(
            "{root} has no branch '{branch}'; create it (git -C {root} branch {branch}) or name another"
        )));
    }
    if let Some(at) = git.checked_out_in(&branch).map_err(git_error)? {
        return Err(checked_out(&branch, &at));
    }
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

/// The refusal for a target branch that is checked out: it teaches the fix,
/// down to the command to run next, since the branch a person names first is
/// often the one checked out in their own tree.
pub fn checked_out(branch: &str, at: &Path) -> ErrorBody {
    git_error(format!(
        "branch '{branch}' is checked out in {at}; boardd moves the target branch without a checkout, which would leave those files behind. Detach it there and name it: git -C {at} switch --detach && teamctl repo set {at} --branch {branch}. Or choose a branch that is checked out nowhere",
        at = at.display()
    ))
}

/// The refusal of a `set_repo` that names no target branch. There is no
/// default: the one a person means, the branch checked out at the path, is
/// the one branch that cannot be the target (see [`checked_out`]). So the
/// refusal names it, and says how to free it and what to pass.
fn no_branch(git: &Git, root: &str) -> ErrorBody {
    match git.current_branch().ok().flatten() {
        Some(b) => invalid(format!(
            "name the target branch (`branch`, or --branch): boardd takes none by default, since the branch checked out at {root}, '{b}', cannot be the target (boardd moves it without a checkout). To land on '{b}', detach it there and name it: git -C {root} switch --detach && teamctl repo set {root} --branch {b}. Or name a branch that is checked out nowhere"
        )),
        None => invalid(format!(
            "name the target branch (`branch`, or --branch): boardd takes none by default. For example: teamctl repo set {root} --branch main"
        )),
    }
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
