//! boardd: the teamboard daemon, as a library so tests can run it in-process.
//!
//! [`start`] takes the single-instance lock, opens the database, restores the board,
//! binds the socket and spawns the server; [`Running::shutdown`] stops it gracefully.
//! The `boardd` binary is a thin wrapper that adds flags, logging and signals.

mod actor;
mod connection;
mod handlers;
pub mod listener;
mod notify;
mod outbox;
mod reply;
pub mod store;
mod wire;
mod writer;

#[cfg(test)]
mod checkpoint_tests;
#[cfg(test)]
mod outbox_tests;
#[cfg(test)]
mod tests;

pub use notify::notify;
pub use teamboard_board::BoardConfig;
pub use writer::CommitMode;

use actor::{Actor, Cmd, DaemonInfo};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use teamboard_board::Board;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use writer::Writer;

/// Everything boardd needs to know to run.
#[derive(Debug, Clone)]
pub struct Config {
    pub socket: PathBuf,
    pub state_dir: PathBuf,
    pub board: BoardConfig,
    pub commit_mode: CommitMode,
    /// Commit on the actor's own task instead of the writer thread. Only for tests
    /// under tokio's paused clock; it gives up overlapping fsync with work.
    pub inline_commits: bool,
}

impl Config {
    /// The defaults for a socket and state directory.
    pub fn new(socket: PathBuf, state_dir: PathBuf) -> Config {
        Config {
            socket,
            state_dir,
            board: BoardConfig::default(),
            commit_mode: CommitMode::Group,
            inline_commits: false,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Listen(#[from] listener::ListenError),
    #[error(transparent)]
    Store(#[from] store::StoreError),
    #[error("cannot start the writer thread: {0}")]
    Thread(std::io::Error),
}

/// A running daemon.
pub struct Running {
    pub socket: PathBuf,
    shutdown: CancellationToken,
    fatal: CancellationToken,
    task: JoinHandle<()>,
}

impl Running {
    /// A token that, when cancelled, stops the daemon gracefully.
    pub fn shutdown_token(&self) -> CancellationToken {
        self.shutdown.clone()
    }

    /// Cancelled when the daemon stopped because storage failed.
    pub fn fatal_token(&self) -> CancellationToken {
        self.fatal.clone()
    }

    /// Stops accepting, answers what was already accepted, persists, and returns.
    pub async fn shutdown(self) {
        self.shutdown.cancel();
        let _ = self.task.await;
    }

    /// Waits until the daemon stops (after [`Running::shutdown_token`] is cancelled,
    /// or a storage failure). Returns true if it stopped because storage failed.
    pub async fn wait(self) -> bool {
        let _ = self.task.await;
        self.fatal.is_cancelled()
    }
}

/// Starts boardd: lock, restore, bind, serve.
pub async fn start(config: Config) -> Result<Running, StartError> {
    let lock = listener::lock_state_dir(&config.state_dir)?;
    let mut store = store::Store::open(&config.state_dir)?;
    let snapshot = store.load()?;
    let restored_tasks = snapshot.tasks.len();
    let board = Board::restore(config.board, snapshot, Actor::now());
    let listener = listener::bind(&config.socket).await?;
    let shutdown = CancellationToken::new();
    let fatal = CancellationToken::new();
    let writer = if config.inline_commits {
        Writer::inline(store, fatal.clone())
    } else {
        Writer::spawn(store, config.commit_mode, fatal.clone()).map_err(StartError::Thread)?
    };
    let sessions = Arc::new(AtomicU64::new(0));
    let info = DaemonInfo {
        started: std::time::Instant::now(),
        socket: config.socket.clone(),
        state_dir: config.state_dir.clone(),
        sessions: sessions.clone(),
    };
    let actor = Actor::new(board, writer, config.commit_mode, info);
    let (tx, rx) = mpsc::channel::<Cmd>(65_536);
    tracing::info!(
        socket = %config.socket.display(),
        state_dir = %config.state_dir.display(),
        tasks = restored_tasks,
        "boardd ready"
    );
    let stop = shutdown.clone();
    let fatal_stop = fatal.clone();
    let socket = config.socket.clone();
    let lease_ttl = config.board.lease_ttl;
    let task = tokio::spawn(async move {
        let _lock = lock;
        let actor_stop = CancellationToken::new();
        let conns_stop = CancellationToken::new();
        let actor_task = tokio::spawn(actor.run(rx, actor_stop.clone()));
        let conns = Connections {
            actor: tx,
            sessions,
            lease_ttl,
            stopped: conns_stop.clone(),
        };
        accept_loop(listener, conns, stop, fatal_stop).await;
        // Connections still open keep their sender; stopping the actor explicitly
        // lets it answer what is queued and flush to disk. Only then are the
        // connections closed, so those answers still reach their clients.
        actor_stop.cancel();
        let _ = actor_task.await;
        conns_stop.cancel();
        let _ = std::fs::remove_file(&socket);
        tracing::info!("boardd stopped");
    });
    Ok(Running {
        socket: config.socket,
        shutdown,
        fatal,
        task,
    })
}

/// What every connection task shares.
struct Connections {
    actor: mpsc::Sender<Cmd>,
    sessions: Arc<AtomicU64>,
    lease_ttl: std::time::Duration,
    /// Cancelled once the actor has stopped, to close the remaining connections.
    stopped: CancellationToken,
}

async fn accept_loop(
    listener: tokio::net::UnixListener,
    conns: Connections,
    stop: CancellationToken,
    fatal: CancellationToken,
) {
    let mut next_session: u64 = 1;
    loop {
        let accepted = tokio::select! {
            _ = stop.cancelled() => break,
            _ = fatal.cancelled() => break,
            a = listener.accept() => a,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(e) => {
                // Running out of file descriptors must not end the daemon.
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                continue;
            }
        };
        if let Err(why) = listener::same_user(&stream) {
            tracing::warn!(%why, "refusing peer");
            tokio::spawn(connection::reject(stream, why));
            continue;
        }
        let session = next_session;
        next_session += 1;
        let actor = conns.actor.clone();
        let sessions = conns.sessions.clone();
        let stopped = conns.stopped.clone();
        let lease_ttl = conns.lease_ttl;
        sessions.fetch_add(1, Ordering::Relaxed);
        tokio::spawn(async move {
            connection::serve(stream, session, actor, lease_ttl, stopped).await;
            sessions.fetch_sub(1, Ordering::Relaxed);
        });
    }
}
