//! boardd inside the test's own tokio runtime.

use crate::tempdir::short_tempdir;
use std::path::{Path, PathBuf};
use tempfile::TempDir;

/// A daemon running in the test's runtime, with its own socket and state directory
/// in a [`short_tempdir`], and its own PostgreSQL database under
/// `TEAMBOARD_TEST_DATABASE=postgres` (see [`crate::pg::test_database`]). The directory lives as long as this value, across
/// [`InProc::shutdown`] and [`InProc::restart`].
///
/// Dropped while running, it is told to stop and the directory goes; a test that
/// checks what the daemon does on the way out calls [`InProc::stop`].
pub struct InProc {
    /// The socket clients connect to (`<dir>/s`).
    pub socket: PathBuf,
    /// The daemon's state directory (`<dir>/state`).
    pub state_dir: PathBuf,
    config: boardd::Config,
    running: Option<boardd::Running>,
    // Declared last: dropped after the daemon has been told to stop.
    dir: TempDir,
}

impl InProc {
    /// Starts a daemon with the default configuration.
    pub async fn start() -> InProc {
        InProc::start_with(|_| {}).await
    }

    /// Starts a daemon after `tune` has adjusted its configuration.
    pub async fn start_with(tune: impl FnOnce(&mut boardd::Config)) -> InProc {
        let dir = short_tempdir();
        let socket = dir.path().join("s");
        let state_dir = dir.path().join("state");
        let mut config = boardd::Config::new(socket.clone(), state_dir.clone());
        config.database = crate::pg::test_database(&state_dir);
        tune(&mut config);
        let running = launch(&config).await;
        teamboard_process::note_daemon(&config.socket, &config.state_dir, true);
        InProc {
            socket,
            state_dir,
            config,
            running: Some(running),
            dir,
        }
    }

    /// Starts a daemon for a test under tokio's paused clock
    /// (`#[tokio::test(start_paused = true)]`), after `tune`.
    ///
    /// Trap: it commits on the actor's own task (`inline_commits`). With the writer
    /// thread, the runtime would look idle while a commit is in flight, and the
    /// paused clock would jump ahead (expiring leases) before the answer is sent.
    pub async fn start_paused(tune: impl FnOnce(&mut boardd::Config)) -> InProc {
        InProc::start_with(|config| {
            config.inline_commits = true;
            tune(config);
        })
        .await
    }

    /// The scratch directory holding the socket and the state directory; tests may
    /// put their own files (work directories, markers) in it.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The configuration the daemon was started with (and restarts with).
    pub fn config(&self) -> &boardd::Config {
        &self.config
    }

    /// The running daemon, for its tokens; `None` after [`InProc::shutdown`].
    pub fn running(&self) -> Option<&boardd::Running> {
        self.running.as_ref()
    }

    /// Stops the daemon gracefully and waits until it has: it answers what it had
    /// accepted, persists, closes every connection and removes its socket. Claims
    /// are not released, as after a crash. The directory stays. Does nothing if the
    /// daemon is already stopped.
    pub async fn shutdown(&mut self) {
        if let Some(running) = self.running.take() {
            running.shutdown().await;
        }
    }

    /// Shuts the daemon down (if it runs) and starts it again on the same socket,
    /// state and configuration: the board it restores is what was persisted, and
    /// claims come back under the restart grace period.
    pub async fn restart(&mut self) {
        self.shutdown().await;
        // Trap: the stopped daemon has closed its lock, but a child that
        // another test's thread is forking at this moment holds a copy of the
        // descriptor until it execs, and the flock with it. Start again once
        // that copy is gone, within moments; anything else still fails at once.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        loop {
            match boardd::start(self.config.clone()).await {
                Ok(running) => break self.running = Some(running),
                Err(boardd::StartError::Lock(boardd::store::lock::LockError::AlreadyRunning {
                    ..
                })) if std::time::Instant::now() < deadline => {
                    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                }
                Err(e) => panic!("restart boardd in-process: {e}"),
            }
        }
    }

    /// Stops the daemon gracefully, waits until it has, and removes the directory.
    pub async fn stop(mut self) {
        self.shutdown().await;
    }
}

impl Drop for InProc {
    fn drop(&mut self) {
        if let Some(running) = self.running.take() {
            running.shutdown_token().cancel();
        }
    }
}

async fn launch(config: &boardd::Config) -> boardd::Running {
    boardd::start(config.clone())
        .await
        .unwrap_or_else(|e| panic!("start boardd in-process: {e}"))
}
