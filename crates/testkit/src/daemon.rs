//! The real `boardd` binary as a child process: `teamboard-process`'s
//! [`Boardd`], with the panics a test wants instead of errors.

use crate::bins::boardd_bin;
use std::path::Path;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use teamboard_process::{Boardd, Launch};

/// How long [`Daemon::wait_ready`] waits for a fresh daemon to answer.
const READY_TIMEOUT: Duration = Duration::from_secs(20);

/// A real `boardd` process, on the state directory's own PostgreSQL database
/// under `TEAMBOARD_TEST_DATABASE=postgres`. Killed (SIGKILL) and reaped on drop. Its `socket`,
/// `state_dir` and `log` (its stderr, a file next to the socket or the state
/// directory) are [`Boardd`]'s fields.
pub struct Daemon(Boardd);

impl std::ops::Deref for Daemon {
    type Target = Boardd;
    fn deref(&self) -> &Boardd {
        &self.0
    }
}

/// Numbers the log files, so that daemons started one after another on the same
/// socket keep separate logs.
static LOGS: AtomicUsize = AtomicUsize::new(0);

/// A fresh log file next to the socket, or next to the state directory when
/// boardd is to create the socket's directory itself.
fn log_for(socket: &Path, state_dir: &Path) -> std::path::PathBuf {
    let dir = socket
        .parent()
        .filter(|d| d.is_dir())
        .or(state_dir.parent())
        .expect("the socket or the state directory has a parent");
    dir.join(format!(
        "boardd-{}.log",
        LOGS.fetch_add(1, Ordering::Relaxed)
    ))
}

/// Points boardd at the state directory's PostgreSQL database under
/// `TEAMBOARD_TEST_DATABASE=postgres` (see [`crate::pg::test_database`]).
fn with_database(cmd: &mut std::process::Command, state_dir: &Path) {
    match crate::pg::test_database(state_dir) {
        boardd::store::Database::Postgres(url) => cmd.env("TEAMBOARD_DATABASE", url),
        boardd::store::Database::Sqlite => cmd.env_remove("TEAMBOARD_DATABASE"),
    };
}

impl Daemon {
    /// Spawns `boardd --socket S --state-dir D <extra>` with `env` added.
    pub fn spawn(socket: &Path, state_dir: &Path, extra: &[&str], env: &[(&str, &str)]) -> Daemon {
        let mut launch = Launch::new(boardd_bin(), socket, state_dir, &log_for(socket, state_dir));
        with_database(launch.command(), state_dir);
        launch.command().args(extra).envs(env.iter().copied());
        Daemon(launch.spawn().expect("spawn boardd"))
    }

    /// Like [`Daemon::spawn`], but `sh` runs `setup` first (say `ulimit -n 64` or
    /// `umask 022`) and then replaces itself with boardd, so that the pid is
    /// boardd's.
    pub fn spawn_after(setup: &str, socket: &Path, state_dir: &Path, extra: &[&str]) -> Daemon {
        let log = log_for(socket, state_dir);
        let mut launch = Launch::after(setup, boardd_bin(), socket, state_dir, &log);
        with_database(launch.command(), state_dir);
        launch.command().args(extra);
        Daemon(launch.spawn().expect("spawn boardd"))
    }

    /// Spawns and waits until it answers `status`.
    pub async fn start(socket: &Path, state_dir: &Path, extra: &[&str]) -> Daemon {
        let mut d = Daemon::spawn(socket, state_dir, extra, &[]);
        d.wait_ready().await;
        d
    }

    pub fn pid(&self) -> i32 {
        self.0.pid().expect("daemon already reaped") as i32
    }

    /// What the daemon wrote to stderr so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.0.log).unwrap_or_default()
    }

    /// Polls until a client can connect and get a `status`, or panics (with the
    /// daemon's log) if it exits or takes more than 20 s.
    pub async fn wait_ready(&mut self) {
        if let Err(e) = self.0.wait_ready(READY_TIMEOUT).await {
            panic!("{e}");
        }
    }

    /// The exit status, if it has exited.
    pub fn try_wait(&mut self) -> Option<ExitStatus> {
        self.0.try_wait().expect("try_wait")
    }

    /// Sends a signal.
    pub fn signal(&self, sig: i32) {
        if let Err(e) = self.0.signal(sig) {
            panic!("kill({}, {sig}) failed: {e}", self.pid());
        }
    }

    /// `kill -9`, and reap it.
    pub fn kill9(&mut self) -> ExitStatus {
        self.0
            .kill9()
            .expect("wait for boardd")
            .expect("daemon already reaped")
    }

    /// Waits (polling, bounded) for the process to exit and reaps it.
    pub async fn wait_exit(&mut self, timeout: Duration) -> ExitStatus {
        match self.0.wait_exit(timeout).await {
            Ok(status) => status,
            Err(e) => panic!("timed out waiting for boardd to exit: {e}"),
        }
    }
}
