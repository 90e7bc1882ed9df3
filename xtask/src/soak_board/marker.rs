//! The run's mark on its processes: an environment variable that boardd, the
//! teammates and every command they start inherit, naming the run's
//! directory. A scan of `/proc` for it finds the commands to kill during the
//! run and whatever is left behind after it.
//!
//! An environment variable rather than a process group or a cgroup: the tool
//! guard puts each command in a group of its own, a cgroup needs privileges
//! the machines may not give, and a command that escapes its group (setsid,
//! a double fork) keeps its environment.

use std::ffi::OsString;

const VAR: &str = "TEAMBOARD_SOAK_RUN";

pub struct Marker {
    value: String,
}

/// A marked process.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Marked {
    pub pid: u32,
    pub comm: String,
}

impl Marker {
    pub fn new(run_dir: &std::path::Path) -> Marker {
        Marker {
            value: run_dir.display().to_string(),
        }
    }

    pub fn env(&self) -> (OsString, OsString) {
        (VAR.into(), self.value.clone().into())
    }

    /// The live processes (zombies left out) that carry the mark, this process
    /// never among them.
    pub fn processes(&self) -> Vec<Marked> {
        let me = std::process::id();
        teamboard_process::processes()
            .into_iter()
            .filter(|s| s.running() && s.pid != me && self.carried_by(s.pid))
            .map(|s| Marked {
                pid: s.pid,
                comm: s.comm,
            })
            .collect()
    }

    fn carried_by(&self, pid: u32) -> bool {
        let needle = format!("{VAR}={}", self.value);
        let Ok(env) = std::fs::read(format!("/proc/{pid}/environ")) else {
            return false;
        };
        env.split(|&b| b == 0).any(|e| e == needle.as_bytes())
    }

    /// `kill -9` of `pid` if it is (still) a process of this run. Trap: a pid
    /// is reused once its process is reaped, so the process is pinned with a
    /// pidfd first and its mark checked after: the signal then reaches the
    /// marked process or nothing.
    pub fn kill9(&self, pid: u32) -> bool {
        // SAFETY: pidfd_open(2) takes a pid and flags and returns a new fd.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
        if fd < 0 {
            return false;
        }
        let fd = fd as libc::c_int;
        let null: *const libc::siginfo_t = std::ptr::null();
        // SAFETY: pidfd_send_signal(2) on the fd just opened, with no siginfo.
        let sent = self.carried_by(pid)
            && unsafe { libc::syscall(libc::SYS_pidfd_send_signal, fd, libc::SIGKILL, null, 0) }
                == 0;
        // SAFETY: closes the fd opened above, once.
        unsafe { libc::close(fd) };
        sent
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_marked_child_is_found_and_an_unmarked_one_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let m = Marker::new(dir.path());
        let (k, v) = m.env();
        let mut marked = std::process::Command::new("sleep")
            .arg("5")
            .env(k, v)
            .spawn()
            .unwrap();
        let mut plain = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let found = m.processes();
        let _ = (marked.kill(), plain.kill());
        let _ = (marked.wait(), plain.wait());
        let pids: Vec<u32> = found.iter().map(|p| p.pid).collect();
        assert_eq!(pids, vec![marked.id()]);
    }
}
