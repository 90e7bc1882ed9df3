//! The real `boardd` binary as a child process.

use crate::bins::boardd_bin;
use crate::clients::TEAM;
use crate::eventually::eventually;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use teamboard_protocol::Client;

/// How long [`Daemon::wait_ready`] waits for a fresh daemon to answer.
const READY_TIMEOUT: Duration = Duration::from_secs(20);

/// A real `boardd` process. Killed (SIGKILL) and reaped on drop.
pub struct Daemon {
    child: Option<Child>,
    pub socket: PathBuf,
    pub state_dir: PathBuf,
    /// Its stderr, a file next to the socket or the state directory.
    pub log: PathBuf,
}

/// Numbers the log files, so that daemons started one after another on the same
/// socket keep separate logs.
static LOGS: AtomicUsize = AtomicUsize::new(0);

impl Daemon {
    /// Spawns `boardd --socket S --state-dir D <extra>` with `env` added. Its stderr
    /// goes to a log file next to the socket (or the state directory), so it can
    /// never block on a full pipe.
    pub fn spawn(socket: &Path, state_dir: &Path, extra: &[&str], env: &[(&str, &str)]) -> Daemon {
        Daemon::spawn_from(Command::new(boardd_bin()), socket, state_dir, extra, env)
    }

    /// Like [`Daemon::spawn`], but `sh` runs `setup` first (say `ulimit -n 64` or
    /// `umask 022`) and then replaces itself with boardd, so that the pid is
    /// boardd's.
    pub fn spawn_after(setup: &str, socket: &Path, state_dir: &Path, extra: &[&str]) -> Daemon {
        let mut sh = Command::new("sh");
        sh.arg("-c")
            .arg(format!("{setup} && exec \"$0\" \"$@\""))
            .arg(boardd_bin());
        Daemon::spawn_from(sh, socket, state_dir, extra, &[])
    }

    fn spawn_from(
        mut cmd: Command,
        socket: &Path,
        state_dir: &Path,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> Daemon {
        // Next to the socket, or next to the state directory when boardd is to
        // create the socket's directory itself.
        let dir = socket
            .parent()
            .filter(|d| d.is_dir())
            .or(state_dir.parent())
            .expect("the socket or the state directory has a parent");
        let log = dir.join(format!(
            "boardd-{}.log",
            LOGS.fetch_add(1, Ordering::Relaxed)
        ));
        let stderr = std::fs::File::create(&log).expect("create log file");
        cmd.arg("--socket")
            .arg(socket)
            .arg("--state-dir")
            .arg(state_dir)
            .args(extra)
            .env_remove("TEAMBOARD_SOCKET")
            .env_remove("TEAMBOARD_STATE_DIR")
            .env_remove("NOTIFY_SOCKET")
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let child = cmd.spawn().expect("spawn boardd");
        Daemon {
            child: Some(child),
            socket: socket.to_path_buf(),
            state_dir: state_dir.to_path_buf(),
            log,
        }
    }

    /// Spawns and waits until it answers `status`.
    pub async fn start(socket: &Path, state_dir: &Path, extra: &[&str]) -> Daemon {
        let mut d = Daemon::spawn(socket, state_dir, extra, &[]);
        d.wait_ready().await;
        d
    }

    pub fn pid(&self) -> i32 {
        self.child.as_ref().expect("daemon already reaped").id() as i32
    }

    /// What the daemon wrote to stderr so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Polls until a client can connect and get a `status`, or panics (with the
    /// daemon's log) if it exits or takes more than 20 s.
    pub async fn wait_ready(&mut self) {
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            if let Some(status) = self.try_wait() {
                panic!(
                    "boardd exited with {status} before it was ready; log:\n{}",
                    self.log()
                );
            }
            if let Ok(client) = Client::connect(&self.socket, "test", "probe", TEAM).await
                && client.status().await.is_ok()
            {
                return;
            }
            if Instant::now() >= deadline {
                panic!(
                    "boardd not ready after {READY_TIMEOUT:?}; log:\n{}",
                    self.log()
                );
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// The exit status, if it has exited.
    pub fn try_wait(&mut self) -> Option<ExitStatus> {
        self.child
            .as_mut()
            .and_then(|c| c.try_wait().expect("try_wait"))
    }

    /// Sends a signal.
    pub fn signal(&self, sig: i32) {
        // SAFETY: kill(2) has no memory-safety preconditions; the pid is our own
        // unreaped child, so it cannot have been recycled.
        let rc = unsafe { libc::kill(self.pid(), sig) };
        assert_eq!(rc, 0, "kill({}, {sig}) failed", self.pid());
    }

    /// `kill -9`, and reap it.
    pub fn kill9(&mut self) -> ExitStatus {
        self.signal(libc::SIGKILL);
        let mut child = self.child.take().expect("daemon already reaped");
        child.wait().expect("wait for boardd")
    }

    /// Waits (polling, bounded) for the process to exit and reaps it.
    pub async fn wait_exit(&mut self, timeout: Duration) -> ExitStatus {
        let status = eventually("boardd to exit", timeout, || {
            let s = self.try_wait();
            async move { s }
        })
        .await;
        self.child = None;
        status
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
