//! Stopping a teammate's processes, for a forced or expired shutdown request.
//!
//! The target is the peer of the teammate's session as the kernel reported it
//! (`SO_PEERCRED`) when the connection was accepted; a client cannot name another
//! process. It gets `SIGTERM`, on which teammated gives its task back and leaves,
//! and `SIGKILL` after [`GRACE`] if the same process is still there.
//!
//! Which processes: the peer's whole process group when the peer leads it, as
//! `teamctl spawn` arranges; otherwise the peer alone. Signalling a group the peer
//! merely belongs to could hit whatever started it (a shell, a test runner), and
//! never boardd's own group or boardd itself (an in-process client in tests).
//! teammated's tool commands die with it either way (see its tool guard).
//!
//! Alternatives that lost: the `pid` a teammate reports in `register` can be
//! anything, so it is shown, never signalled; asking the teammate to exit over its
//! connection cannot stop one that is hung, which is what a deadline is for.

use std::time::Duration;
use teamboard_board::Stop;

/// How long a teammate has between `SIGTERM` and `SIGKILL`: enough to give its
/// task back and stop its tools.
pub const GRACE: Duration = Duration::from_secs(5);

/// A stop the board decided, with the pid of its session's peer.
#[derive(Debug)]
pub struct StopTo {
    stop: Stop,
    pid: Option<u32>,
}

impl StopTo {
    pub fn new(stop: Stop, pid: Option<u32>) -> StopTo {
        StopTo { stop, pid }
    }

    /// Signals the target now and arranges the `SIGKILL`. Runs once the
    /// decision is durable.
    pub fn carry_out(self) {
        let s = &self.stop;
        let span = tracing::info_span!("stop", team = %s.team, name = %s.name, request = s.request);
        let _enter = span.enter();
        let Some(pid) = self.pid.and_then(|p| libc::pid_t::try_from(p).ok()) else {
            tracing::warn!("the kernel gave no pid for this session; cannot stop its processes");
            return;
        };
        let Some(target) = target(pid) else {
            tracing::warn!(pid, "the session's peer is boardd itself; not stopping it");
            return;
        };
        let started = start_time(pid);
        tracing::info!(pid, target, "stopping the teammate: SIGTERM");
        signal(target, libc::SIGTERM);
        let spawned = std::thread::Builder::new()
            .name("boardd-stop".into())
            .spawn(move || {
                std::thread::sleep(GRACE);
                // Only the same process: its pid may have been reused since.
                if started.is_some() && start_time(pid) == started {
                    tracing::warn!(pid, target, "still running after SIGTERM: SIGKILL");
                    signal(target, libc::SIGKILL);
                }
            });
        if let Err(e) = spawned {
            tracing::warn!(error = %e, "cannot start the SIGKILL timer");
        }
    }
}

/// What to signal for peer `pid`: its group (negative) when it leads one that
/// is not boardd's, else the pid; `None` when the peer is boardd.
fn target(pid: libc::pid_t) -> Option<libc::pid_t> {
    // SAFETY: getpid and getpgid have no preconditions; getpgid fails cleanly
    // (-1) for a pid that is gone.
    let (me, my_group, group) = unsafe { (libc::getpid(), libc::getpgid(0), libc::getpgid(pid)) };
    if pid == me {
        return None;
    }
    Some(if group == pid && group != my_group {
        -pid
    } else {
        pid
    })
}

fn signal(target: libc::pid_t, sig: libc::c_int) {
    // SAFETY: kill has no memory preconditions; a target that is gone gives ESRCH.
    if unsafe { libc::kill(target, sig) } != 0 {
        let e = std::io::Error::last_os_error();
        tracing::debug!(target, sig, error = %e, "signal not delivered");
    }
}

/// The process's start time in clock ticks since boot (field 22 of
/// `/proc/PID/stat`), which tells a process from a later one with its pid.
fn start_time(pid: libc::pid_t) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boardd_never_signals_itself() {
        let me = libc::pid_t::try_from(std::process::id()).expect("pid");
        assert_eq!(target(me), None);
    }

    #[test]
    fn a_process_that_leads_its_group_is_stopped_with_it() {
        use std::os::unix::process::CommandExt;
        let mut leader = std::process::Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .expect("sleep");
        let mut member = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("sleep");
        let (l, m) = (leader.id() as libc::pid_t, member.id() as libc::pid_t);
        assert_eq!(target(l), Some(-l));
        // In boardd's own group (as children of the test are): only itself.
        assert_eq!(target(m), Some(m));
        assert!(start_time(l).is_some());
        let _ = leader.kill();
        let _ = member.kill();
        let _ = leader.wait();
        let _ = member.wait();
    }
}
