//! `git diff` to the person's terminal, for `task diff`. The rest of the git it
//! runs is shared with the web page (`teamboard_web::task_diff::git`).
//!
//! The diff goes straight to the person's terminal, with their git configuration
//! (pager, colours); piped, it is not paged and is in the C locale, so scripts get
//! stable text.
//!
//! Trap: the locale is not forced on a terminal because git hands its environment to
//! the pager, and `less` under `LC_ALL=C` shows every non-ASCII byte as `<E2>`.

use std::io::IsTerminal;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use teamboard_web::task_diff::git::{describe, git, spawn_error};

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
