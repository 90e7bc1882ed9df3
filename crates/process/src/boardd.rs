//! A real `boardd` process: started on a socket and a state directory, waited
//! for until it answers, stopped with SIGTERM or killed, and started again on
//! the same state.

use crate::{POLL, tail};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};
use teamboard_protocol::{Client, DEFAULT_TEAM};

/// Lines of boardd's log that an error carries.
const LOG_LINES: usize = 20;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot open boardd's log {}: {source}", path.display())]
    Log {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot start {}: {source}", program.to_string_lossy())]
    Spawn {
        program: OsString,
        source: std::io::Error,
    },
    #[error("boardd exited ({status}) before it answered; the end of its log:\n{log}")]
    Exited { status: ExitStatus, log: String },
    #[error("boardd did not answer on {} within {within:?}; the end of its log:\n{log}", socket.display())]
    NotReady {
        socket: PathBuf,
        within: Duration,
        log: String,
    },
    #[error("boardd exited with {0} on SIGTERM")]
    Stopped(ExitStatus),
    #[error("boardd did not exit within {0:?}")]
    StillRunning(Duration),
    #[error("boardd: {0}")]
    Io(#[from] std::io::Error),
}

/// How to start boardd: `BIN --socket S --state-dir D`, stdin and stdout on
/// /dev/null, stderr appended to a log file, `RUST_LOG=info`, and none of the
/// caller's `TEAMBOARD_SOCKET`, `TEAMBOARD_STATE_DIR` or `NOTIFY_SOCKET`.
/// [`Launch::command`] adds the rest (flags, environment, a process group).
pub struct Launch {
    cmd: Command,
    socket: PathBuf,
    state_dir: PathBuf,
    log: PathBuf,
}

impl Launch {
    pub fn new(bin: &Path, socket: &Path, state_dir: &Path, log: &Path) -> Launch {
        Launch::of(Command::new(bin), socket, state_dir, log)
    }

    /// Like [`Launch::new`], but `sh` runs `setup` first (`ulimit -n 64`,
    /// `umask 022`) and then replaces itself with boardd, so the pid is boardd's.
    pub fn after(setup: &str, bin: &Path, socket: &Path, state_dir: &Path, log: &Path) -> Launch {
        let mut sh = Command::new("sh");
        sh.arg("-c")
            .arg(format!("{setup} && exec \"$0\" \"$@\""))
            .arg(bin);
        Launch::of(sh, socket, state_dir, log)
    }

    fn of(mut cmd: Command, socket: &Path, state_dir: &Path, log: &Path) -> Launch {
        cmd.arg("--socket")
            .arg(socket)
            .arg("--state-dir")
            .arg(state_dir)
            .env_remove("TEAMBOARD_SOCKET")
            .env_remove("TEAMBOARD_STATE_DIR")
            .env_remove("NOTIFY_SOCKET")
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::null());
        Launch {
            cmd,
            socket: socket.to_path_buf(),
            state_dir: state_dir.to_path_buf(),
            log: log.to_path_buf(),
        }
    }

    /// The command, for boardd's other flags and the environment.
    pub fn command(&mut self) -> &mut Command {
        &mut self.cmd
    }

    /// Starts it and returns at once.
    pub fn spawn(self) -> Result<Boardd, Error> {
        let mut b = Boardd {
            cmd: self.cmd,
            child: None,
            socket: self.socket,
            state_dir: self.state_dir,
            log: self.log,
        };
        crate::note_daemon(&b.socket, &b.state_dir, false);
        b.spawn()?;
        Ok(b)
    }

    /// Starts it and waits until it answers, for at most `within`.
    pub async fn start(self, within: Duration) -> Result<Boardd, Error> {
        let mut b = self.spawn()?;
        b.wait_ready(within).await?;
        Ok(b)
    }
}

/// A running boardd (or one that has exited and not been started again).
/// Dropping it kills the process (SIGKILL) and reaps it, so that nothing can
/// hold the state directory's lock after the drop.
pub struct Boardd {
    cmd: Command,
    child: Option<Child>,
    pub socket: PathBuf,
    pub state_dir: PathBuf,
    /// Its stderr, appended to by every start.
    pub log: PathBuf,
}

impl Boardd {
    fn spawn(&mut self) -> Result<(), Error> {
        if let Some(dir) = self.log.parent() {
            std::fs::create_dir_all(dir).map_err(|source| Error::Log {
                path: dir.to_path_buf(),
                source,
            })?;
        }
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .map_err(|source| Error::Log {
                path: self.log.clone(),
                source,
            })?;
        self.cmd.stderr(log);
        let child = self.cmd.spawn().map_err(|source| Error::Spawn {
            program: self.cmd.get_program().to_os_string(),
            source,
        })?;
        self.child = Some(child);
        Ok(())
    }

    /// Polls until a client can connect and get an answer to `status`. Fails
    /// with the end of the log if boardd exits first or `within` passes.
    pub async fn wait_ready(&mut self, within: Duration) -> Result<(), Error> {
        let deadline = Instant::now() + within;
        loop {
            if let Some(status) = self.try_wait()? {
                return Err(Error::Exited {
                    status,
                    log: self.log_tail(LOG_LINES),
                });
            }
            if self.answers().await {
                crate::note_daemon(&self.socket, &self.state_dir, true);
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(Error::NotReady {
                    socket: self.socket.clone(),
                    within,
                    log: self.log_tail(LOG_LINES),
                });
            }
            tokio::time::sleep(POLL).await;
        }
    }

    async fn answers(&self) -> bool {
        // boardd writes its key before it listens: no key yet, no answer yet.
        let Ok(key) = self.lead_key() else {
            return false;
        };
        let connecting = Client::connect(
            &self.socket,
            "teamboard-process",
            teamboard_protocol::LEAD,
            DEFAULT_TEAM,
            Some(&key),
        );
        match connecting.await {
            Ok(client) => client.status().await.is_ok(),
            Err(_) => false,
        }
    }

    /// The lead's credential, from this boardd's state directory.
    pub fn lead_key(
        &self,
    ) -> Result<teamboard_protocol::Credential, teamboard_protocol::lead_key::LeadKeyError> {
        let path = self
            .state_dir
            .join(teamboard_protocol::lead_key::LEAD_KEY_FILE);
        teamboard_protocol::lead_key::read_lead_key(&path)
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// The exit status, once it has exited.
    pub fn try_wait(&mut self) -> std::io::Result<Option<ExitStatus>> {
        match self.child.as_mut() {
            Some(c) => c.try_wait(),
            None => Ok(None),
        }
    }

    /// Whether it was started and has not exited.
    pub fn running(&mut self) -> bool {
        self.child.is_some() && matches!(self.try_wait(), Ok(None))
    }

    /// Sends `signal`.
    pub fn signal(&self, signal: libc::c_int) -> std::io::Result<()> {
        let Some(pid) = self.pid() else {
            return Ok(());
        };
        // SAFETY: kill(2) has no memory-safety preconditions; the pid is our own
        // unreaped child, so it cannot have been recycled.
        if unsafe { libc::kill(pid as libc::pid_t, signal) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }

    /// `kill -9`, and reaps it: how it ended, `None` if it was not running.
    pub fn kill9(&mut self) -> std::io::Result<Option<ExitStatus>> {
        let Some(mut child) = self.child.take() else {
            return Ok(None);
        };
        child.kill()?;
        child.wait().map(Some)
    }

    /// `kill -9`, then boardd again on the same state, as a crash and a restart
    /// by systemd would. Answers how long the new one took to answer.
    pub async fn restart(&mut self, within: Duration) -> Result<Duration, Error> {
        self.kill9()?;
        let t = Instant::now();
        self.spawn()?;
        self.wait_ready(within).await?;
        Ok(t.elapsed())
    }

    /// Waits (polling) for it to exit and reaps it.
    pub async fn wait_exit(&mut self, within: Duration) -> Result<ExitStatus, Error> {
        let deadline = Instant::now() + within;
        loop {
            if let Some(status) = self.try_wait()? {
                self.child = None;
                return Ok(status);
            }
            if Instant::now() >= deadline {
                return Err(Error::StillRunning(within));
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Stops it as a person would: SIGTERM (it finishes its commits and lets go
    /// of its lock), then SIGKILL if it has not exited within `within`. An exit
    /// other than success is an error.
    pub async fn stop(&mut self, within: Duration) -> Result<(), Error> {
        if self.child.is_none() {
            return Ok(());
        }
        if self.try_wait()?.is_none() {
            self.signal(libc::SIGTERM)?;
        }
        match self.wait_exit(within).await {
            Ok(status) if status.success() => Ok(()),
            Ok(status) => Err(Error::Stopped(status)),
            Err(e) => {
                self.kill9()?;
                Err(e)
            }
        }
    }

    /// The last `lines` lines of its log.
    pub fn log_tail(&self, lines: usize) -> String {
        tail(&self.log, lines)
    }
}

impl Drop for Boardd {
    fn drop(&mut self) {
        let _ = self.kill9();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dirs() -> (tempfile::TempDir, PathBuf, PathBuf, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().to_path_buf();
        (
            dir,
            p.join("b.sock"),
            p.join("state"),
            p.join("logs/boardd.log"),
        )
    }

    #[tokio::test]
    async fn a_boardd_that_exits_at_once_is_reported_with_its_log() {
        let (_dir, socket, state, log) = dirs();
        let launch = Launch::after(
            "echo no such flag >&2; exit 3",
            Path::new("boardd"),
            &socket,
            &state,
            &log,
        );
        let err = launch.start(Duration::from_secs(10)).await.err().unwrap();
        assert!(
            matches!(&err, Error::Exited { status, log } if status.code() == Some(3) && log == "no such flag"),
            "{err}"
        );
    }

    #[tokio::test]
    async fn one_that_never_answers_times_out_and_is_stopped_by_sigterm() {
        let (_dir, socket, state, log) = dirs();
        // The comment swallows the exec of boardd.
        let mut b = Launch::after(
            "exec sleep 30 #",
            Path::new("boardd"),
            &socket,
            &state,
            &log,
        )
        .spawn()
        .unwrap();
        let err = b.wait_ready(Duration::from_millis(50)).await.unwrap_err();
        assert!(matches!(err, Error::NotReady { .. }), "{err}");
        assert!(b.running());
        // sleep dies of the SIGTERM, which is not a clean exit.
        let err = b.stop(Duration::from_secs(10)).await.unwrap_err();
        assert!(
            matches!(err, Error::Stopped(s) if s.code().is_none()),
            "{err}"
        );
        assert!(!b.running());
        assert!(b.kill9().unwrap().is_none());
    }
}
