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
///
/// These commands only read, and must write nothing: `git status` and `git
/// diff` otherwise refresh the worktree's index and write it back under
/// `index.lock`. The worktree is a teammate's, and boardd runs `git add -A`
/// there when the teammate completes: a diff shown at that moment made the
/// completion fail on the held lock. `GIT_OPTIONAL_LOCKS=0` stops `status`;
/// `git diff` ignores it (git 2.47) and needs `diff.autoRefreshIndex=false`,
/// with which a file whose stat alone changed still shows no change.
pub fn git(dir: &Path) -> Command {
    let mut cmd = Command::new("git");
    cmd.arg("-C")
        .arg(dir)
        .args(["-c", "diff.autoRefreshIndex=false"])
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .env("GIT_OPTIONAL_LOCKS", "0")
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

    /// Reading a worktree writes nothing in it, not even the refreshed index
    /// (see [`git`]): its inode stays the one git made it with.
    #[test]
    fn reading_a_worktree_leaves_its_index_alone() {
        use std::os::unix::fs::MetadataExt as _;
        let dir = tempfile::tempdir().expect("tempdir");
        let run = |args: &[&str]| {
            let out = git(dir.path())
                .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
                .args(args)
                .output()
                .expect("git");
            assert!(out.status.success(), "git {args:?}: {out:?}");
        };
        run(&["init", "-q"]);
        let file = dir.path().join("a.txt");
        std::fs::write(&file, "one\n").expect("write");
        run(&["add", "a.txt"]);
        run(&["commit", "-q", "-m", "one"]);
        // Same content, another mtime: the index's record of the file is
        // stale, which `git status` or `git diff` free to would refresh and
        // write.
        let later = std::time::SystemTime::now() + std::time::Duration::from_secs(100);
        (std::fs::File::options().write(true).open(&file))
            .and_then(|f| f.set_modified(later))
            .expect("set mtime");
        let index = dir.path().join(".git").join("index");
        let before = std::fs::metadata(&index).expect("index").ino();
        std::fs::write(dir.path().join("new.txt"), "new\n").expect("write");
        assert_eq!(untracked(dir.path()).expect("status"), vec!["new.txt"]);
        let diff = diff_text(dir.path(), &[]).expect("diff");
        assert_eq!(diff, "", "a change of stat alone is no change");
        let after = std::fs::metadata(&index).expect("index").ino();
        assert_eq!(before, after, "the index was written");
    }
}
