//! The git commands behind a task's diff.
//!
//! Output read here is taken in the C locale, so that it does not depend on the
//! person's language.

use super::{DiffError, bail};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};

/// `git -C dir`, untouched by a `GIT_DIR` or `GIT_WORK_TREE` that teamctl's own
/// environment may carry (run from a git hook, say): they would point every
/// command at another repository whatever `-C` says.
pub fn git(dir: &Path) -> Command {
    let mut cmd = Command::new("git");
    cmd.arg("-C")
        .arg(dir)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .stdin(Stdio::null());
    cmd
}

/// Runs `cmd` for its output, in the C locale; git's complaint on failure.
fn capture(mut cmd: Command, what: &str) -> Result<Vec<u8>, DiffError> {
    let out = cmd
        .env("LC_ALL", "C")
        .output()
        .map_err(|e| spawn_error(e, what))?;
    if !out.status.success() {
        let said = String::from_utf8_lossy(&out.stderr);
        bail!(
            "git {what} failed ({}): {}",
            describe(out.status),
            said.trim()
        );
    }
    Ok(out.stdout)
}

pub fn spawn_error(e: std::io::Error, what: &str) -> DiffError {
    if e.kind() == std::io::ErrorKind::NotFound {
        DiffError("git is not installed or not on PATH; the task diff runs git here".into())
    } else {
        DiffError(format!("cannot run git {what}: {e}"))
    }
}

pub fn describe(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit {code}"),
        (None, Some(sig)) => format!("signal {sig}"),
        _ => "unknown status".into(),
    }
}

/// Whether `refs/heads/<branch>` exists in the repository at `repo`.
pub fn branch_exists(repo: &Path, branch: &str) -> Result<bool, DiffError> {
    let mut cmd = git(repo);
    cmd.args(["rev-parse", "--verify", "--quiet"])
        .arg(format!("refs/heads/{branch}^{{commit}}"))
        .env("LC_ALL", "C")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let out = cmd.output().map_err(|e| spawn_error(e, "rev-parse"))?;
    match out.status.code() {
        Some(0) => Ok(true),
        // --verify --quiet: exit 1 and nothing said when the ref is not there.
        Some(1) if out.stderr.is_empty() => Ok(false),
        _ => bail!(
            "git rev-parse failed in {} ({}): {}",
            repo.display(),
            describe(out.status),
            String::from_utf8_lossy(&out.stderr).trim()
        ),
    }
}

/// `git merge-base <target> HEAD` in the worktree at `dir`: where the task's work
/// forked from the target.
pub fn merge_base(dir: &Path, target: &str) -> Result<String, DiffError> {
    let mut cmd = git(dir);
    cmd.args(["merge-base", target, "HEAD"]);
    let out = capture(cmd, "merge-base").map_err(|e| {
        DiffError(format!(
            "cannot find where {} forked from {target}: {e}",
            dir.display()
        ))
    })?;
    let oid = String::from_utf8_lossy(&out).trim().to_string();
    if oid.is_empty() {
        bail!("git merge-base found no common commit of {target} and HEAD");
    }
    Ok(oid)
}

/// `git diff ARGS` in `dir`, unpaged, in the C locale, as text.
pub fn diff_text(dir: &Path, revs: &[String]) -> Result<String, DiffError> {
    let mut cmd = git(dir);
    // `--` ends the revisions: nothing after it is read as a path.
    cmd.args(["--no-pager", "diff"]).args(revs).arg("--");
    let out = capture(cmd, "diff")?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// The untracked files of the worktree at `dir`, every one (not only the
/// directories that hold them), as paths relative to its top.
pub fn untracked(dir: &Path) -> Result<Vec<String>, DiffError> {
    let mut cmd = git(dir);
    cmd.args(["status", "--porcelain", "-z", "--untracked-files=all"]);
    let out = capture(cmd, "status")?;
    Ok(parse_untracked(&out))
}

/// The `??` entries of `git status --porcelain -z` (whose reader skips the
/// source path that follows a rename or copy: it could start with `?? ` itself).
fn parse_untracked(out: &[u8]) -> Vec<String> {
    let entries = teamboard_git::parse_status(&String::from_utf8_lossy(out));
    entries
        .into_iter()
        .filter(|e| e.code == "??")
        .map(|e| e.path)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn untracked_entries_are_picked_from_porcelain_z() {
        let out = b" M src/lib.rs\0?? new file.txt\0R  moved.rs\0?? not-untracked\0?? dir/\xc3\xa9t\xc3\xa9.md\0";
        assert_eq!(
            parse_untracked(out),
            vec!["new file.txt".to_string(), "dir/été.md".to_string()]
        );
        assert!(parse_untracked(b"").is_empty());
    }
}
