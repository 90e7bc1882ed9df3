//! A shell started as the leader of its own process group, with its merged
//! output on a pipe: the moving parts under [`crate::run_check`].

use crate::tail::{TAIL_BYTES, Tail};
use std::io::{PipeReader, Read};
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

pub(crate) struct Group {
    /// Never reaped before [`Group::reap`]: while the leader is unreaped its
    /// pid, which is the group id, cannot be reused, so signalling the group
    /// can only reach processes of this check.
    leader: Child,
    output: PipeReader,
    /// The writing ends are all closed (every process holding one is gone).
    eof: bool,
    tail: Tail,
}

impl Group {
    /// Starts `sh -c command` (with the spec's shell, maybe in a sandbox) in
    /// `cwd` with `env` added, stdin empty, stdout and stderr both into one
    /// pipe. Under a sandbox the group's leader is the sandbox's: killing it
    /// ends the sandbox, and everything in it with its PID namespace.
    pub(crate) fn start(spec: &crate::CheckSpec) -> std::io::Result<Group> {
        let (output, writer) = std::io::pipe()?;
        let (shell, before) = spec
            .shell
            .split_first()
            .ok_or_else(|| std::io::Error::other("no shell to run the check with"))?;
        let mut cmd = Command::new(shell);
        cmd.args(before)
            .arg("-c")
            .arg(LEADER)
            .arg("sh")
            .arg(spec.command)
            .current_dir(spec.cwd)
            // The check must see the worktree's repository, not one an
            // inherited variable points at.
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE")
            .env_remove("GIT_INDEX_FILE")
            .envs(spec.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(writer.try_clone()?)
            .stderr(writer)
            .process_group(0);
        die_with_parent(&mut cmd);
        let spawned = cmd.spawn();
        // The Command still holds our copies of the write end; until they
        // close, the pipe can never reach end-of-file.
        drop(cmd);
        Ok(Group {
            leader: spawned?,
            output,
            eof: false,
            tail: Tail::new(TAIL_BYTES),
        })
    }

    /// Reads whatever output arrives within `wait` (returning early once some did).
    pub(crate) fn read_for(&mut self, wait: Duration) {
        if self.eof {
            std::thread::sleep(wait);
            return;
        }
        let mut fd = libc::pollfd {
            fd: self.output.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let millis = i32::try_from(wait.as_millis()).unwrap_or(i32::MAX);
        // SAFETY: one valid pollfd, owned by this frame, for the whole call.
        let ready = unsafe { libc::poll(&mut fd, 1, millis) };
        if ready <= 0 {
            return; // nothing yet, or EINTR: the caller loops
        }
        let mut buf = [0u8; 8192];
        match self.output.read(&mut buf) {
            Ok(0) => self.eof = true,
            Ok(n) => self.tail.push(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => self.eof = true,
        }
    }

    /// Reads the output still buffered or still being written, until every
    /// writer is gone or `limit` has passed: a process that left the group
    /// (setsid) and kept the pipe must not hold the check forever.
    pub(crate) fn drain(&mut self, limit: Duration) {
        let until = Instant::now() + limit;
        while !self.eof {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            self.read_for(left.min(Duration::from_millis(50)));
        }
    }

    /// Whether the leader has exited, without reaping it.
    pub(crate) fn leader_exited(&self) -> bool {
        let pid = libc::id_t::from(self.leader.id());
        // SAFETY: siginfo_t is plain data; zeroed so that si_pid reads 0 when
        // WNOHANG finds nothing (waitid leaves it untouched on some systems).
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: waitid on our own child with a valid out-pointer; WNOWAIT
        // leaves it waitable, so the pid stays ours.
        let rc = unsafe {
            libc::waitid(
                libc::P_PID,
                pid,
                &mut info,
                libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
            )
        };
        // SAFETY: si_pid is valid to read for a waitid result.
        rc != 0 || unsafe { info.si_pid() } != 0
    }

    /// Sends `signal` to every process still in the group.
    pub(crate) fn signal(&self, signal: i32) {
        if let Ok(pgid) = i32::try_from(self.leader.id()) {
            // SAFETY: kill(2) has no memory preconditions; the unreaped leader
            // keeps `pgid` naming this check's group.
            unsafe { libc::kill(-pgid, signal) };
        }
    }

    /// Waits for the leader and reaps it. After this the group id may be
    /// reused, so no more signals.
    pub(crate) fn reap(mut self) -> (std::io::Result<ExitStatus>, Tail) {
        let status = self.leader.wait();
        (status, self.tail)
    }
}

/// The group's leader: a shell that runs the check (`sh -c COMMAND`) and,
/// when boardd dies, kills the whole group. The kernel tells only the leader
/// of its parent's death ([`die_with_parent`]); a plain `sh -c COMMAND` killed
/// that way left the commands it had started (a test runner and its
/// children) running in the worktree after boardd was gone.
///
/// It is meant to be invisible otherwise:
/// - the check runs in the background, so that the HUP trap can interrupt
///   `wait`; like any background command of a non-interactive shell it
///   ignores SIGINT and SIGQUIT, which nothing here sends;
/// - the leader ignores SIGTERM (set after the check has started, so the
///   check keeps its own handling): the group's SIGTERM is for the check,
///   which gets its grace before SIGKILL as before;
/// - its own words ("Terminated" when the check dies of a signal) go
///   nowhere, the check's stderr to the output as before;
/// - it exits with the check's status, and dies of the check's signal when
///   `wait` says (128 + N, N up to 15) the check died of one. Trap: a check
///   that itself exits 130 reads as killed by SIGINT, as a shell's forked
///   command always did.
const LEADER: &str = r#"exec 3>&2 2>/dev/null
trap 'kill -KILL 0' HUP
sh -c "$1" 2>&3 3>&- &
trap '' TERM
wait $!
s=$?
if [ "$s" -gt 128 ] && [ "$s" -le 143 ]; then trap - HUP TERM; kill -$((s - 128)) $$; fi
exit "$s""#;

/// Asks the kernel to send SIGHUP to the leader when the thread that started
/// it ends, so a check does not outlive a killed boardd: the leader's trap
/// then kills its group. Trap: it is the starting *thread* that counts, not
/// the process; [`crate::run_check`] blocks that thread until the shell is
/// reaped, so the two coincide.
fn die_with_parent(cmd: &mut Command) {
    #[cfg(target_os = "linux")]
    {
        let parent = i32::try_from(std::process::id()).unwrap_or(0);
        // SAFETY: the closure runs between fork and exec and only makes
        // async-signal-safe system calls; it allocates nothing.
        unsafe {
            cmd.pre_exec(move || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGHUP, 0, 0, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                // The parent may have died before the request took effect.
                if libc::getppid() != parent {
                    return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
                }
                Ok(())
            });
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = cmd;
}
