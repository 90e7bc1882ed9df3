//! Processes the tests started, directly or through teamctl, and those their
//! teammates' agents started, found by a marker or by their environment.

use crate::bins::workspace_bin;
use crate::eventually::{Later, eventually};
use std::ffi::OsStr;
use std::fmt::Display;
use std::io::{BufRead as _, BufReader};
use std::os::unix::process::CommandExt as _;
use std::process::{Child, Command, ExitStatus, Stdio};
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

/// `kill -9` of a process (a git that boardd ran, say), if it still exists.
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
    let waited = Later(|| format!("{what} to end; still running: {:?}", left()));
    eventually(waited, within, || async { left().is_empty().then_some(()) }).await;
    since.elapsed()
}

/// Starts this kit's binary `name` with `args` in a process group of its own, and
/// reads the first line it prints: how it says it is ready.
pub(crate) fn start_kit_bin(
    name: &str,
    socket: &std::path::Path,
    args: impl IntoIterator<Item = impl AsRef<OsStr>>,
) -> (Child, std::io::Result<String>) {
    let (key_var, key) = crate::lead_key_env(socket);
    let mut child = Command::new(workspace_bin(name))
        .arg(socket)
        .args(args)
        .env(key_var, key)
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap_or_else(|e| panic!("start {name}: {e}"));
    let stdout = child.stdout.take().expect("piped stdout");
    let mut line = String::new();
    let read = BufReader::new(stdout).read_line(&mut line);
    (child, read.map(|_| line))
}

/// `kill -9` of the process group `child` leads, and the child reaped.
pub(crate) fn kill_group(child: &mut Child) -> std::io::Result<ExitStatus> {
    // SAFETY: kill(2) has no memory-safety preconditions; the group is our own
    // unreaped child's, so its id cannot have been reused.
    if unsafe { libc::kill(-(child.id() as libc::pid_t), libc::SIGKILL) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    child.wait()
}
