//! teamboard's own processes, for everything that runs them from outside: a real
//! `boardd` started for a test, a benchmark, the demo or the soak and waited for
//! until it answers ([`Boardd`]), stopped or killed; the lead's credential of
//! each boardd, by its socket ([`lead_key`]); the end of a log ([`tail`]);
//! what `/proc` says of a process ([`Stat`], [`alive`], [`cpu_time`]); and a
//! private PostgreSQL server ([`pg`]).
//!
//! One owner, because the four copies that came before drifted: one waited until
//! the socket accepted and another until `status` answered, each picked its own
//! log level and poll interval, and each read `/proc/PID/stat` its own way.
//!
//! Where it lives, and why not elsewhere:
//! - **The test kit** (`teamboard-testkit`) as the one home, xtask depending on
//!   it: that brings boardd's library and SQLite into every `cargo xtask`, and
//!   the kit panics where a command wants an error. The kit's `Daemon` wraps
//!   this crate's [`Boardd`] with the panics instead.
//! - **A process crate** (`duct`, `command-group`, `sysinfo`): the first two
//!   spawn and reap, which `std::process` already does; what is teamboard's own
//!   is "answers" (a protocol `status`). `sysinfo` reads every field of every
//!   process to give the four of `/proc/PID/stat` used here, and is a larger
//!   build than this whole crate.
//! - **`tokio::process::Child`** instead of std's: its `kill_on_drop` sends the
//!   signal but does not reap, so a test that starts boardd again on the same
//!   state right after a drop would race the old process for its lock. A std
//!   child is killed and reaped in `drop`, and the few waits are polled.

mod boardd;
mod keys;
pub mod pg;
mod proc;

pub use boardd::{Boardd, Error, Launch};
pub use keys::{lead_key, lead_key_env, lead_key_path, note_daemon};
pub use proc::{Stat, alive, cpu_time, processes};

use std::future::Future;
use std::path::Path;
use std::time::{Duration, Instant};

/// The last `lines` lines of a log file, for an error message; empty when the
/// file cannot be read.
pub fn tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// Makes a child die with the thread that spawns it: the kernel sends it
/// `signal` then (`PR_SET_PDEATHSIG`). Drop guards cover errors and panics;
/// this covers the parent being killed outright.
///
/// Trap: it is the spawning *thread* whose exit counts, so spawn from a thread
/// that lives as long as the child should (the main thread of a
/// single-threaded runtime).
pub fn die_with_parent(cmd: &mut std::process::Command, signal: libc::c_int) {
    use std::os::unix::process::CommandExt as _;
    // SAFETY: the closure runs between fork and exec and only calls prctl, which
    // is async-signal-safe and touches no memory of ours.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, signal) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// How often [`poll`] looks.
pub const POLL: Duration = Duration::from_millis(5);

/// Calls `check` every [`POLL`] until it gives a value, for at most `within`;
/// `None` if it never did.
///
/// Trap: the deadline is wall-clock time (`std::time::Instant`), also under
/// tokio's paused clock. A virtual deadline would pass at once while a test
/// waits on a real process or socket, because the paused runtime jumps its
/// clock whenever it is idle.
pub async fn poll<T, Fut>(within: Duration, mut check: impl FnMut() -> Fut) -> Option<T>
where
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + within;
    loop {
        if let Some(value) = check().await {
            return Some(value);
        }
        if Instant::now() >= deadline {
            return None;
        }
        tokio::time::sleep(POLL).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_keeps_the_last_lines() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("log");
        std::fs::write(&log, "a\nb\nc\n").unwrap();
        assert_eq!(tail(&log, 2), "b\nc");
        assert_eq!(tail(&log, 9), "a\nb\nc");
        assert_eq!(tail(&dir.path().join("missing"), 2), "");
    }

    #[tokio::test]
    async fn poll_gives_up_at_its_deadline() {
        let mut n = 0;
        let got = poll(Duration::from_secs(5), || {
            n += 1;
            let v = (n == 3).then_some(n);
            async move { v }
        })
        .await;
        assert_eq!(got, Some(3));
        let never: Option<()> = poll(Duration::from_millis(20), || async { None }).await;
        assert_eq!(never, None);
    }
}
