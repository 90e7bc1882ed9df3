//! Persistence: the durable copy of the board, behind one seam over two engines.
//!
//! [`Store`] is what `start` and the writer talk to. It stores the board's
//! [`Changes`] and gives back its [`Snapshot`]; the board's rules stay in the
//! `board` crate, and each engine only keeps rows: JSON bodies keyed by their
//! natural ids, so that the schema does not chase every new field.
//!
//! - [`sqlite`]: the embedded default, a file in the state directory.
//! - [`pg`]: a PostgreSQL database named by `boardd --database postgres://…`.
//!
//! The seam is an enum over the two, not a trait object: there are two engines,
//! both known here, and a match keeps each call a direct one. A trait would
//! only pay off for engines outside this crate, and there are none.
//!
//! [`lock`] keeps a second daemon off the same state directory.

pub mod lock;
pub mod pg;
mod restore;
mod rows;
pub mod sqlite;

pub use rows::{CredentialRow, TokenChange, TokenRow};
pub use sqlite::DB_FILE;

use pg::PgStore;
use sqlite::SqliteStore;
use std::path::{Path, PathBuf};
use teamboard_board::{Changes, Snapshot};
use teamboard_protocol::{Event, TaskId};

/// Where the board is kept, as `--database` names it.
#[derive(Clone, PartialEq, Eq, Default)]
pub enum Database {
    /// `board.sqlite3` in the state directory.
    #[default]
    Sqlite,
    /// A PostgreSQL database, by its `postgres://` URL.
    Postgres(String),
}

impl Database {
    /// The database a `--database` URL names: `postgres://…` or
    /// `postgresql://…`. Anything else is refused rather than guessed at.
    pub fn from_url(url: &str) -> Result<Database, StoreError> {
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            Ok(Database::Postgres(url.to_string()))
        } else {
            Err(StoreError::Url {
                url: pg::redact(url),
            })
        }
    }
}

/// Never prints a password that a URL may hold.
impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Database::Sqlite => f.write_str("Sqlite"),
            Database::Postgres(url) => write!(f, "Postgres({})", pg::redact(url)),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database {path}: {source}")]
    Sqlite {
        path: PathBuf,
        source: rusqlite::Error,
    },
    /// Whole in its message, the server's words included (a `postgres::Error`
    /// says only its kind, "db error", and keeps the rest as its cause), so
    /// not a `source`: a log line's `%error` shows all of it.
    #[error("database {database}: {}", pg::connect::with_causes(.error))]
    Postgres {
        database: String,
        error: postgres::Error,
    },
    /// Whole in its message (see `ConnectError`), so not a `source`.
    #[error("database {database}: {error}")]
    Connect {
        database: String,
        error: Box<pg::connect::ConnectError>,
    },
    #[error(
        "database {database}: a stored {what} could not be read ({source}); the file may be corrupt or from a newer boardd"
    )]
    Corrupt {
        database: String,
        what: &'static str,
        source: serde_json::Error,
    },
    #[error(
        "database {database} has schema version {found}, newer than this boardd understands ({known}); upgrade boardd"
    )]
    TooNew {
        database: String,
        found: i64,
        known: i64,
    },
    #[error(
        "database {database} is in use by another boardd; only one boardd may serve a database"
    )]
    InUse { database: String },
    #[error(
        "database {database}: this boardd was deposed (it held term {held}, the database is at term {now}); nothing of the batch was written"
    )]
    Deposed {
        database: String,
        held: i64,
        now: i64,
    },
    #[error(
        "--database {url}: not a database boardd knows; give a postgres:// or postgresql:// URL, or leave it out for SQLite in the state directory"
    )]
    Url { url: String },
    #[error(transparent)]
    Private(#[from] crate::private::PrivateError),
    #[error("cannot encode a {what} for the database: {source}")]
    Encode {
        what: &'static str,
        source: serde_json::Error,
    },
}

/// What a history query asks for.
#[derive(Debug, Clone)]
pub struct HistoryQuery {
    pub team: String,
    pub since: Option<u64>,
    pub task: Option<TaskId>,
    pub limit: u64,
}

/// The leadership a boardd holds on a database it shares with others
/// (`cluster`): every commit is refused once the term moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fence {
    pub term: i64,
    /// How long the lease lasts: the most a transaction may sit idle.
    pub lease: std::time::Duration,
}

/// The durable copy of the board, in one engine or the other.
#[allow(
    clippy::large_enum_variant,
    reason = "one per daemon, moved once into the writer: boxing would buy nothing"
)]
pub enum Store {
    Sqlite(SqliteStore),
    Pg(PgStore),
}

impl Store {
    /// Opens (creating and migrating if needed) the database: SQLite's in
    /// `state_dir`, or the PostgreSQL one the URL names.
    pub fn open(database: &Database, state_dir: &Path) -> Result<Store, StoreError> {
        Ok(match database {
            Database::Sqlite => Store::Sqlite(SqliteStore::open(state_dir)?),
            Database::Postgres(url) => Store::Pg(PgStore::open(url)?),
        })
    }

    /// Opens the PostgreSQL database `url` for the leader of `fence` (see
    /// [`PgStore::open_fenced`]).
    pub fn open_fenced(url: &str, fence: Fence) -> Result<Store, StoreError> {
        Ok(Store::Pg(PgStore::open_fenced(url, fence)?))
    }

    /// Loads every row, for [`teamboard_board::Board::restore`].
    pub fn load(&mut self) -> Result<Snapshot, StoreError> {
        match self {
            Store::Sqlite(s) => s.load(),
            Store::Pg(s) => s.load(),
        }
    }

    /// Every member's current credential, as its digest.
    pub fn credentials(&mut self) -> Result<Vec<CredentialRow>, StoreError> {
        match self {
            Store::Sqlite(s) => s.credentials(),
            Store::Pg(s) => s.credentials(),
        }
    }

    /// Every token the lead issued, as its digest.
    pub fn tokens(&mut self) -> Result<Vec<TokenRow>, StoreError> {
        match self {
            Store::Sqlite(s) => s.tokens(),
            Store::Pg(s) => s.tokens(),
        }
    }

    /// Writes a group of batches, and the credentials and tokens issued or
    /// revoked with them, in one transaction. When this returns `Ok`, the data
    /// is durable; on `Err`, nothing of the group was written.
    pub fn commit<'a>(
        &mut self,
        batches: impl IntoIterator<Item = &'a Changes>,
        credentials: impl IntoIterator<Item = &'a CredentialRow>,
        tokens: impl IntoIterator<Item = &'a TokenChange>,
    ) -> Result<(), StoreError> {
        match self {
            Store::Sqlite(s) => s.commit(batches, credentials, tokens),
            Store::Pg(s) => s.commit(batches, credentials, tokens),
        }
    }

    /// Reads history, returned oldest first. With `since`, the oldest `limit` events
    /// after it, so a client can page forward without gaps; without, the newest
    /// `limit` events.
    pub fn history(&mut self, q: &HistoryQuery) -> Result<Vec<Event>, StoreError> {
        match self {
            Store::Sqlite(s) => s.history(q),
            Store::Pg(s) => s.history(q),
        }
    }

    /// The secret `name` that every boardd on this database shares: the one
    /// stored, or `candidate` if there was none. `None` on SQLite, whose one
    /// boardd keeps its secrets in files in the state directory (see `auth`).
    pub fn shared_secret(
        &mut self,
        name: &str,
        candidate: &str,
    ) -> Result<Option<String>, StoreError> {
        match self {
            Store::Sqlite(_) => Ok(None),
            Store::Pg(s) => s.shared_secret(name, candidate).map(Some),
        }
    }

    /// Pages in SQLite's WAL since the last checkpoint; PostgreSQL checkpoints
    /// on its own, and has none here.
    pub fn wal_pages(&self) -> u32 {
        match self {
            Store::Sqlite(s) => s.wal_pages(),
            Store::Pg(_) => 0,
        }
    }

    /// Copies SQLite's WAL back into the database file; nothing to do on
    /// PostgreSQL.
    pub fn checkpoint(&mut self) -> Result<(), StoreError> {
        match self {
            Store::Sqlite(s) => s.checkpoint(),
            Store::Pg(_) => Ok(()),
        }
    }
}

/// A row's body. Failing here fails the whole commit: a row written as anything
/// but its value would be lost at the next restart.
fn to_json<T: serde::Serialize>(value: &T, what: &'static str) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|source| StoreError::Encode { what, source })
}

#[cfg(test)]
pub(crate) mod tests;
