//! The git commands behind `task diff`.
//!
//! Output teamctl reads is taken in the C locale, so that it does not depend on the
//! person's language. The diff itself goes straight to the person's terminal, with
//! their git configuration (pager, colours); piped, it is not paged and is in the C
//! locale too, so scripts get stable text.
//!
//! Trap: the locale is not forced on a terminal because git hands its environment to
//! the pager, and `less` under `LC_ALL=C` shows every non-ASCII byte as `<E2>`.

use anyhow::Context as _;
use std::io::IsTerminal;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};

/// `git -C dir`, untouched by a `GIT_DIR` or `GIT_WORK_TREE` that teamctl's own
/// environment may carry (run from a git hook, say): they would point every
/// command at another repository whatever `-C` says.
fn git(dir: &Path) -> Command {
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
fn capture(mut cmd: Command, what: &str) -> anyhow::Result<Vec<u8>> {
    let out = cmd
        .env("LC_ALL", "C")
        .output()
        .map_err(|e| spawn_error(e, what))?;
    if !out.status.success() {
        let said = String::from_utf8_lossy(&out.stderr);
        anyhow::bail!(
            "git {what} failed ({}): {}",
            describe(out.status),
            said.trim()
        );
    }
    Ok(out.stdout)
}

fn spawn_error(e: std::io::Error, what: &str) -> anyhow::Error {
    if e.kind() == std::io::ErrorKind::NotFound {
        anyhow::anyhow!("git is not installed or not on PATH; `task diff` runs git here")
    } else {
        anyhow::anyhow!("cannot run git {what}: {e}")
    }
}

fn describe(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit {code}"),
        (None, Some(sig)) => format!("signal {sig}"),
        _ => "unknown status".into(),
    }
}

/// Whether `refs/heads/<branch>` exists in the repository at `repo`.
pub fn branch_exists(repo: &Path, branch: &str) -> anyhow::Result<bool> {
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
        _ => anyhow::bail!(
            "git rev-parse failed in {} ({}): {}",
            repo.display(),
            describe(out.status),
            String::from_utf8_lossy(&out.stderr).trim()
        ),
    }
}

/// `git merge-base <target> HEAD` in the worktree at `dir`: where the task's work
/// forked from the target.
pub fn merge_base(dir: &Path, target: &str) -> anyhow::Result<String> {
    let mut cmd = git(dir);
    cmd.args(["merge-base", target, "HEAD"]);
    let out = capture(cmd, "merge-base")
        .with_context(|| format!("cannot find where {} forked from {target}", dir.display()))?;
    let oid = String::from_utf8_lossy(&out).trim().to_string();
    if oid.is_empty() {
        anyhow::bail!("git merge-base found no common commit of {target} and HEAD");
    }
    Ok(oid)
}

/// Runs `git diff ARGS` in `dir` with its output on teamctl's stdout. In a terminal
/// git pages and colours as configured; piped, it does not page.
pub fn show_diff(dir: &Path, revs: &[String], format: Option<&str>) -> anyhow::Result<()> {
    let tty = std::io::stdout().is_terminal();
    let mut cmd = git(dir);
    if !tty {
        cmd.arg("--no-pager").env("LC_ALL", "C");
    }
    cmd.arg("diff").args(format);
    // `--` ends the revisions: nothing after it is read as a path.
    cmd.args(revs).arg("--");
    let status = cmd.status().map_err(|e| spawn_error(e, "diff"))?;
    // A reader that quit early (the pager, `head`) ends git with SIGPIPE: the
    // person has seen what they wanted.
    if status.success() || status.signal() == Some(libc::SIGPIPE) {
        return Ok(());
    }
    anyhow::bail!(
        "git diff failed in {} ({})",
        dir.display(),
        describe(status)
    )
}

/// The untracked files of the worktree at `dir`, every one (not only the
/// directories that hold them), as paths relative to its top.
pub fn untracked(dir: &Path) -> anyhow::Result<Vec<String>> {
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
