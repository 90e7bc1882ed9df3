//! boardd on a runtime of its own, for blocking tests.
//!
//! A plain `#[test]` that runs child processes to completion (`Command::output`)
//! cannot share a runtime with the daemon: the daemon would stop while the test
//! thread blocks. Here the daemon runs on two worker threads owned by [`InProc`],
//! and the test reaches it through [`InProc::block_on`].

use std::future::Future;
use std::path::PathBuf;
use std::time::Duration;
use tokio::runtime::Runtime;

/// How long stopping waits for the runtime's tasks before abandoning them.
const RUNTIME_SHUTDOWN: Duration = Duration::from_secs(5);

/// A [`crate::InProc`] daemon on its own multi-threaded runtime, stopped when
/// dropped.
pub struct InProc {
    /// The socket clients connect to.
    pub socket: PathBuf,
    /// The daemon's state directory.
    pub state_dir: PathBuf,
    daemon: Option<crate::InProc>,
    rt: Option<Runtime>,
}

impl InProc {
    /// Starts a daemon with the default configuration.
    pub fn start() -> InProc {
        InProc::start_with(|_| {})
    }

    /// Starts a daemon after `tune` has adjusted its configuration.
    pub fn start_with(tune: impl FnOnce(&mut boardd::Config)) -> InProc {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("build the daemon's runtime");
        let daemon = rt.block_on(crate::InProc::start_with(tune));
        InProc {
            socket: daemon.socket.clone(),
            state_dir: daemon.state_dir.clone(),
            daemon: Some(daemon),
            rt: Some(rt),
        }
    }

    /// Runs `f` on the daemon's runtime. Clients made here keep working between
    /// calls: their tasks live on that runtime.
    pub fn block_on<F: Future>(&self, f: F) -> F::Output {
        self.rt.as_ref().expect("daemon is running").block_on(f)
    }

    /// Restarts the daemon on the same socket and state: see [`crate::InProc::restart`].
    pub fn restart(&mut self) {
        if let (Some(rt), Some(daemon)) = (self.rt.as_ref(), self.daemon.as_mut()) {
            rt.block_on(daemon.restart());
        }
    }

    /// Stops the daemon the way a process exit would: a graceful shutdown, then the
    /// runtime goes away and with it every client made through
    /// [`InProc::block_on`]. Does nothing the second time.
    pub fn stop(&mut self) {
        let Some(rt) = self.rt.take() else { return };
        if let Some(daemon) = self.daemon.as_mut() {
            rt.block_on(daemon.shutdown());
        }
        rt.shutdown_timeout(RUNTIME_SHUTDOWN);
    }
}

impl Drop for InProc {
    fn drop(&mut self) {
        self.stop();
    }
}
