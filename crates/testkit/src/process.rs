//! Processes the tests started, directly or through teamctl, and those their
//! teammates' agents started, found by a marker or by their environment.

use crate::eventually::eventually;
use std::fmt::Display;
use std::time::{Duration, Instant};

pub use teamboard_process::alive;
use teamboard_process::{Stat, processes};

/// The process group of a live process.
pub fn process_group(pid: u32) -> Option<u32> {
    Stat::of(pid).map(|s| s.pgrp)
}

/// The live processes (zombies left out) whose process group is `pgid`: what
/// is left of a check or a tool command after its leader was stopped.
pub fn group_members(pgid: u32) -> Vec<u32> {
    let mut found: Vec<u32> = processes()
        .into_iter()
        .filter(|s| s.running() && s.pgrp == pgid)
        .map(|s| s.pid)
        .collect();
    found.sort_unstable();
    found
}

/// `kill -9` of a process the test did not start (a git that boardd ran, say),
/// if it still exists.
pub fn kill9(pid: u32) {
    // SAFETY: kill(2) has no memory-safety preconditions.
    unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
}

/// The live processes (zombies left out) other than this test's own: each pid
/// with its command line, a space between the arguments.
pub fn live_processes() -> Vec<(u32, String)> {
    let me = std::process::id();
    processes()
        .into_iter()
        .filter(|s| s.pid != me && s.running())
        .filter_map(|Stat { pid, .. }| {
            let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
            let args: Vec<String> = cmd
                .split(|b| *b == 0)
                .filter(|a| !a.is_empty())
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect();
            Some((pid, args.join(" ")))
        })
        .collect()
}

/// The live processes whose command line contains `marker`: a tool command
/// made unique to its test, or an agent named by its session id.
pub fn with_marker(marker: &str) -> Vec<(u32, String)> {
    live_processes()
        .into_iter()
        .filter(|(_, cmd)| cmd.contains(marker))
        .collect()
}

/// The live processes started with `var=value` in their environment: an
/// agent given a home of its own, and everything it started.
pub fn with_env(var: &str, value: &str) -> Vec<(u32, String)> {
    let wanted = format!("{var}={value}");
    live_processes()
        .into_iter()
        .filter(|(pid, _)| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .map(|env| env.split(|b| *b == 0).any(|v| v == wanted.as_bytes()))
                .unwrap_or(false)
        })
        .collect()
}

/// Waits until `left` finds no process, for at most `within`, and returns how
/// long that took. Panics with `what` and the processes still running.
pub async fn wait_gone(
    what: impl Display,
    within: Duration,
    left: impl Fn() -> Vec<(u32, String)>,
) -> Duration {
    let since = Instant::now();
    let waited = StillRunning { what, left: &left };
    eventually(&waited, within, || async {
        left().is_empty().then_some(())
    })
    .await;
    since.elapsed()
}

/// What [`wait_gone`] waits for; what is left is looked up only if it fails.
struct StillRunning<'a, W, L> {
    what: W,
    left: &'a L,
}

impl<W: Display, L: Fn() -> Vec<(u32, String)>> Display for StillRunning<'_, W, L> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} to end; still running: {:?}",
            self.what,
            (self.left)()
        )
    }
}
