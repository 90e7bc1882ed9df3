//! Knowing at once that a member's process is gone, and how it ended when that
//! can be known.
//!
//! When a member registers, boardd opens a pidfd (`pidfd_open`) on the pid the
//! kernel gave for its socket's peer (`SO_PEERCRED`, never the pid the client
//! claims) and waits for it to turn readable, which the kernel does the moment
//! the process exits. The report goes to the actor, which tells the board
//! ([`teamboard_board::Board::process_exited`]).
//!
//! Alternatives, and why they lost:
//! - The socket's close alone: a `kill -9` closes it at once, but so do a
//!   crashed connection and a teammated that reconnects, and the socket may be
//!   held open by a child the process left behind. A close says `offline`, not
//!   `dead`.
//! - `kill(pid, 0)` after the close: a zombie still answers it, and the socket
//!   closes before the process becomes a zombie (the kernel closes files first
//!   in `do_exit`), so the check races the exit and would need polling. Worse,
//!   once the zombie is reaped the pid may be given to a new process: a late
//!   check would call a dead member alive.
//! - A pidfd names the process, not the number: it cannot be fooled by reuse
//!   once open, and its readiness is the exit itself, with no timer.
//!
//! Traps:
//! - pid reuse between the exit and the read of how it ended: the start time
//!   (`/proc/PID/stat` field 22) read at registration must match, or the exit
//!   is left unknown. (Between the connect and the registration the peer's pid
//!   could in principle be reused too; that needs the pid space to wrap within
//!   milliseconds, and is not guarded.)
//! - Exit status: only a parent can `waitpid`, and boardd is not the parent
//!   of any teammate. A zombie's status is readable by anyone in field 52 of
//!   `/proc/PID/stat` until its parent reaps it, so boardd reads it there at
//!   once. A parent that reaps first (an orphan reaped by init, `teamctl
//!   spawn`'s detached children) leaves it unknown: `exit` is then `None`, and
//!   the member is `dead` all the same.
//! - No pidfd (a kernel before 5.3, a peer in another pid namespace, whose pid
//!   reads 0): the member is `offline` after its close, never `dead`.
//!
//! `pidfd_open` is called through `libc::syscall`: the one call does not
//! justify a crate, and tokio's `AsyncFd` does the waiting.

use std::collections::HashMap;
use std::os::fd::{FromRawFd, OwnedFd};
use std::sync::Arc;
use teamboard_board::SessionId;
use teamboard_process::Stat;
use tokio::io::Interest;
use tokio::io::unix::AsyncFd;
use tokio::sync::mpsc;
use tokio::task::AbortHandle;

/// A watched process that exited.
#[derive(Debug)]
pub struct Exited {
    pub team: Arc<str>,
    pub name: Arc<str>,
    /// The session it registered on.
    pub session: SessionId,
    /// "killed by SIGKILL", when boardd could read it.
    pub exit: Option<String>,
}

/// Starts watches; their reports come out of the receiver [`Procs::new`] returns.
pub struct Procs {
    tx: mpsc::UnboundedSender<Exited>,
    /// The watch of each member, by team and name: a new registration ends the
    /// one before, whose report the board would ignore anyway (it names an
    /// older session). Trap: without this, a teammate that reconnects often
    /// holds a descriptor and a task per reconnect until it exits.
    watches: HashMap<(Arc<str>, Arc<str>), AbortHandle>,
}

impl Procs {
    pub fn new() -> (Procs, mpsc::UnboundedReceiver<Exited>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let watches = HashMap::new();
        (Procs { tx, watches }, rx)
    }

    /// The watch of `name` in `team`.
    #[cfg(test)]
    fn handle(&self, team: &str, name: &str) -> Option<AbortHandle> {
        self.watches.get(&(team.into(), name.into())).cloned()
    }

    /// Watches the process `pid` that registered `name` on `session`, until it
    /// exits. Must be called inside the runtime.
    pub fn watch(&mut self, team: Arc<str>, name: Arc<str>, session: SessionId, pid: u32) {
        if let Some(before) = self.watches.remove(&(team.clone(), name.clone())) {
            before.abort();
        }
        let report = |exit| Exited {
            team: team.clone(),
            name: name.clone(),
            session,
            exit,
        };
        let fd = match pidfd_open(pid) {
            Ok(fd) => fd,
            Err(e) if e.raw_os_error() == Some(libc::ESRCH) => {
                // Gone already, and reaped: nothing is left to read.
                let _ = self.tx.send(report(None));
                return;
            }
            Err(error) => {
                tracing::debug!(pid, %error, "cannot watch the process; it will never read dead");
                return;
            }
        };
        // Read after the pidfd is open, so that it is this process's start.
        let Some(start) = Stat::of(pid).map(|s| s.start) else {
            let _ = self.tx.send(report(None));
            return;
        };
        // SAFETY: the `OwnedFd` moves into the `AsyncFd`, which alone closes it,
        // when it is dropped, so it stays open and the same for its lifetime.
        let fd = match unsafe { AsyncFd::register_with_interest(fd, Interest::READABLE) } {
            Ok(fd) => fd,
            Err(error) => {
                tracing::debug!(pid, %error, "cannot poll the pidfd; it will never read dead");
                return;
            }
        };
        let tx = self.tx.clone();
        let gone = report(None);
        let key = (team.clone(), name.clone());
        let watch = tokio::spawn(async move {
            if let Err(error) = fd.readable().await {
                tracing::debug!(pid, %error, "pidfd poll failed");
                return;
            }
            let exit = Stat::of(pid)
                .filter(|s| s.start == start)
                .and_then(|s| s.exit());
            tracing::debug!(
                pid,
                exit = exit.as_deref().unwrap_or("unknown"),
                "process exited"
            );
            let _ = tx.send(Exited { exit, ..gone });
        });
        self.watches.insert(key, watch.abort_handle());
    }
}

fn pidfd_open(pid: u32) -> std::io::Result<OwnedFd> {
    let pid = libc::pid_t::try_from(pid).map_err(std::io::Error::other)?;
    if pid <= 0 {
        return Err(std::io::Error::from_raw_os_error(libc::EINVAL));
    }
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or
    // -1; it reads and writes no memory of ours.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let fd = i32::try_from(fd).map_err(std::io::Error::other)?;
    // SAFETY: a descriptor the kernel just gave us, owned by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    async fn next(rx: &mut mpsc::UnboundedReceiver<Exited>) -> Exited {
        tokio::time::timeout(Duration::from_secs(5), rx.recv())
            .await
            .expect("a report within 5 s")
            .expect("the channel is open")
    }

    #[tokio::test]
    async fn a_killed_child_is_reported_with_its_signal() {
        let (mut procs, mut rx) = Procs::new();
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        procs.watch("t".into(), "ann".into(), 3, child.id());
        child.kill().unwrap();
        let gone = next(&mut rx).await;
        assert_eq!((gone.session, &*gone.name), (3, "ann"));
        assert_eq!(gone.exit.as_deref(), Some("killed by SIGKILL"));
        child.wait().unwrap();
    }

    #[tokio::test]
    async fn an_exit_status_is_read_and_a_reaped_process_is_gone_without_one() {
        let (mut procs, mut rx) = Procs::new();
        let mut child = std::process::Command::new("sh")
            .args(["-c", "sleep 0.2; exit 3"])
            .spawn()
            .unwrap();
        procs.watch("t".into(), "ann".into(), 1, child.id());
        assert_eq!(
            next(&mut rx).await.exit.as_deref(),
            Some("exited with status 3")
        );
        child.wait().unwrap();
        procs.watch("t".into(), "ann".into(), 2, child.id());
        let gone = next(&mut rx).await;
        assert_eq!((gone.session, gone.exit), (2, None));
    }

    #[tokio::test]
    async fn a_new_registration_ends_the_watch_before_it() {
        let (mut procs, _rx) = Procs::new();
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        procs.watch("t".into(), "ann".into(), 1, child.id());
        let first = procs.handle("t", "ann").unwrap();
        procs.watch("t".into(), "bob".into(), 9, child.id());
        procs.watch("t".into(), "ann".into(), 2, child.id());
        let second = procs.handle("t", "ann").unwrap();
        let bob = procs.handle("t", "bob").unwrap();
        for _ in 0..100 {
            if first.is_finished() {
                break;
            }
            tokio::task::yield_now().await;
        }
        assert!(first.is_finished(), "the watch of session 1 still runs");
        assert!(!second.is_finished() && !bob.is_finished());
        child.kill().unwrap();
        child.wait().unwrap();
    }
}
