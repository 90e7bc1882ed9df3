//! boardd: the teamboard daemon, as a library so tests can run it in-process.
//!
//! [`start`] takes the single-instance lock, opens the database, restores the board,
//! binds the socket and spawns the server; [`Running::shutdown`] stops it gracefully.
//! The `boardd` binary is a thin wrapper that adds flags, logging and signals.
//!
//! `docs/architecture.md` follows one request from a client's socket to its reply.
//!
//! - [`server`]: the accept loop and the connections (`server/connection.rs`).
//! - `actor`: the single task that owns the board; `handlers` decide each request.
//! - `writer`: persists each batch (group commit) and sends what it owes.
//! - `repo`: git off the actor's thread: worktrees, completion gates, the merge
//!   queue (`docs/design/worktrees.md`).
//! - `outbox`: one connection's frames, in order; `wire` encodes them.
//! - [`store`]: SQLite or PostgreSQL behind one seam, and the state directory's lock.
//! - `auth`: the credentials that vouch for sessions' names (`lead.key`).
//! - [`cluster`]: several boardd on one PostgreSQL database, one deciding.

mod actor;
mod approx;
mod auth;
pub mod cluster;
mod handlers;
mod info;
mod leads;
mod notify;
mod outbox;
mod private;
mod procs;
mod reply;
mod repo;
pub mod server;
mod stop;
pub mod store;
mod wire;
mod writer;

pub use notify::notify;
pub use teamboard_board::BoardConfig;
pub use writer::CommitMode;

use actor::Actor;
use info::DaemonInfo;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use teamboard_board::Board;
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
    /// Where the board is kept: SQLite in the state directory, or PostgreSQL.
    pub database: store::Database,
    /// The leadership this boardd holds on a PostgreSQL database shared with
    /// other boardd (`cluster`); `None`: the database is this boardd's alone.
    pub fence: Option<store::Fence>,
    /// The most connections served at once. `None`: as many as the descriptor
    /// limit leaves room for (see `server::fds`). More than that is allowed: past
    /// the descriptor limit, clients are still refused, only less cheaply.
    pub max_connections: Option<usize>,
    /// The prices file (see `teamboard-prices`); `None`: the default one, if
    /// it exists.
    pub prices: Option<PathBuf>,
    /// A TCP listener besides the socket, for teammates on other hosts.
    pub tcp: Option<server::TcpListen>,
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
            database: store::Database::Sqlite,
            fence: None,
            max_connections: None,
            prices: None,
            tcp: None,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Lock(#[from] store::lock::LockError),
    #[error(transparent)]
    Store(#[from] store::StoreError),
    #[error(transparent)]
    Bind(#[from] server::BindError),
    #[error("cannot start the writer thread")]
    Thread(#[source] std::io::Error),
    #[error(transparent)]
    Prices(#[from] teamboard_prices::PricesError),
    #[error(transparent)]
    Key(#[from] auth::KeyError),
    #[error(transparent)]
    Tcp(#[from] server::TcpError),
}

/// A running daemon.
pub struct Running {
    pub socket: PathBuf,
    /// Where the TCP listener is bound, when there is one (its port chosen by
    /// the system when the configuration said 0).
    pub tcp: Option<std::net::SocketAddr>,
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

/// Writes the lead's credential of the shared database `url` into `state_dir`,
/// as a deciding boardd does when it starts: a boardd that only follows has
/// none otherwise, and teamctl on its host reads it there.
pub fn share_lead_key(url: &str, state_dir: &std::path::Path) -> Result<(), StartError> {
    private::state_dir(state_dir).map_err(store::StoreError::from)?;
    let mut store = store::pg::PgStore::open_shared(url)?;
    let secret = store.shared_secret(auth::LEAD_SECRET, auth::random_credential()?.as_str())?;
    auth::Keys::load(state_dir, Vec::new(), Some(&secret))?;
    Ok(())
}

/// Starts boardd: lock, restore, bind, serve.
pub async fn start(config: Config) -> Result<Running, StartError> {
    let limit = server::fds::raise_limit();
    let fit = server::fds::capacity(limit);
    let max_connections = config.max_connections.unwrap_or(fit);
    tracing::debug!(max_connections, fit, "connection limit");
    let lock = store::lock::lock_state_dir(&config.state_dir)?;
    let mut store = match (&config.database, config.fence) {
        (store::Database::Postgres(url), Some(fence)) => store::Store::open_fenced(url, fence)?,
        (database, _) => store::Store::open(database, &config.state_dir)?,
    };
    let snapshot = store.load()?;
    // On PostgreSQL the lead's credential is the database's, so that every
    // boardd on it vouches for the same lead.
    let shared = store.shared_secret(auth::LEAD_SECRET, auth::random_credential()?.as_str())?;
    let keys = auth::Keys::load(&config.state_dir, store.credentials()?, shared.as_deref())?
        .with_tokens(store.tokens()?);
    let restored_tasks = snapshot.tasks.len();
    let prices = teamboard_prices::Prices::load(config.prices.as_deref())?;
    let mut board = Board::restore(config.board, snapshot, Actor::now());
    board.set_pricer(Arc::new(move |model: &str, tokens: &_| {
        prices.price(model, tokens)
    }));
    let network = match &config.tcp {
        Some(spec) => Some(server::tcp::listen(spec).await?),
        None => None,
    };
    let tcp = network.as_ref().map(|n| n.addr);
    let listener = server::bind(&config.socket).await?;
    let shutdown = CancellationToken::new();
    let fatal = CancellationToken::new();
    let writer = if config.inline_commits {
        Writer::inline(store, fatal.clone())
    } else {
        Writer::spawn(store, config.commit_mode, fatal.clone()).map_err(StartError::Thread)?
    };
    let live = Arc::new(AtomicU64::new(0));
    let info = DaemonInfo {
        started: std::time::Instant::now(),
        socket: config.socket.clone(),
        state_dir: config.state_dir.clone(),
        live: live.clone(),
        commits: writer.counters(),
    };
    let actor = Actor::new(board, writer, config.commit_mode, info, keys);
    let settings = server::Settings {
        lease_ttl: config.board.lease_ttl,
        live,
        max_connections,
    };
    tracing::info!(
        socket = %config.socket.display(),
        state_dir = %config.state_dir.display(),
        database = ?config.database,
        tcp = ?tcp,
        tasks = restored_tasks,
        "boardd ready"
    );
    let stop = shutdown.clone();
    let failed = fatal.clone();
    let socket = config.socket.clone();
    let task = tokio::spawn(async move {
        let _lock = lock;
        let stopping = async {
            tokio::select! {
                _ = stop.cancelled() => {}
                _ = failed.cancelled() => {}
            }
        };
        let (incoming, accepting) = network.map(|n| (n.incoming, n.accepting)).unzip();
        server::run(listener, incoming, actor, settings, stopping).await;
        // The port is free once this returns: a boardd on a shared database
        // binds it again at once to forward (see `cluster::role`).
        if let Some(accepting) = accepting {
            accepting.close().await;
        }
        let _ = std::fs::remove_file(&socket);
        tracing::info!("boardd stopped");
    });
    Ok(Running {
        socket: config.socket,
        tcp,
        shutdown,
        fatal,
        task,
    })
}
