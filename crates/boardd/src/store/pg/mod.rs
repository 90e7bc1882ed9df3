//! PostgreSQL persistence: the same rows as SQLite's, in a server's database
//! (`boardd --database postgres://…`).
//!
//! The client is the synchronous `postgres` crate (`tokio-postgres` underneath,
//! on a small runtime of its own). The writer is a dedicated std thread that
//! commits synchronously and answers only once the commit returned, so a
//! blocking client is what it wants. The alternatives lost:
//! - `sqlx`: async everywhere, compile-time query macros that want a database
//!   (or a prepared cache) at build time, and an any-driver layer boardd does
//!   not need; the writer thread would still need a runtime to block on.
//! - raw `tokio-postgres`: the writer thread would need a runtime handle to
//!   block on each call, which is what `postgres` already is, written once.
//!
//! Trap: `postgres::Client` blocks on its own runtime, and tokio panics when
//! that happens on a thread that drives a runtime (the actor's, in tests under
//! the paused clock or when a commit at rest runs on the actor's task, see
//! `writer::route`). [`off_runtime`] moves such a call onto a scoped thread and
//! waits for it, so that every path works on either engine, at the price of a
//! thread per call on those paths only. The writer thread calls directly.
//!
//! Text sorts as SQLite sorts it (`COLLATE "C"`, byte order) wherever a load
//! orders by it, whatever the database's own collation.
//!
//! Bodies are `TEXT`, not `JSONB`: boardd only ever writes and reads a body
//! whole, and `JSONB` would parse each on write, reorder its keys, and refuse a
//! `\u0000` in a task's text, which `serde_json` writes and SQLite keeps.
//!
//! A dead server must not hang boardd: unless the URL says otherwise, a
//! connection gives up after [`CONNECT_TIMEOUT`], and on TCP an unanswered
//! write fails after [`TCP_USER_TIMEOUT`] (`TCP_USER_TIMEOUT`), with keepalives
//! every [`KEEPALIVE`] while idle. Either is a failed commit: boardd stops, and
//! restarting it reloads the board from the database.
//!
//! Trap: a connection lost after `COMMIT` was sent leaves the outcome unknown.
//! boardd then refuses the batch and stops, and a restart may find it written:
//! refused but kept is allowed (a client retries or sees it done), acknowledged
//! but lost never is.
//!
//! - [`connect`]: the URL made into a connection, TLS or not.
//! - [`schema`]: the tables, created and migrated at open.
//! - [`commit`]: one group of batches in one transaction, behind the fence.
//! - [`group`]: a group of batches as the rows it leaves, a table at a time.

mod commit;
pub mod connect;
mod group;
mod schema;

use super::restore;
use super::rows::{CredentialRow, TokenRow};
use super::{HistoryQuery, StoreError};
use postgres::{Client, Statement};
use std::collections::HashMap;
use std::time::{Duration, Instant};
use teamboard_board::Snapshot;
use teamboard_protocol::Event;

/// How long connecting may take before boardd gives up.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long sent data may go unacknowledged on TCP before the connection fails.
pub const TCP_USER_TIMEOUT: Duration = Duration::from_secs(30);
/// Idle time before TCP keepalives probe the server.
pub const KEEPALIVE: Duration = Duration::from_secs(30);

/// The advisory lock a boardd holds on its database for as long as it runs.
const ONE_BOARDD: i64 = 0x7465_616d_626f_6172; // "teamboar" in ASCII.
/// The transaction-level lock that serialises migrations.
const MIGRATING: i64 = ONE_BOARDD + 1;
/// How long a boardd waits for the lock of one that just died: its server
/// process notices the closed connection, and lets go, within moments.
const LOCK_WAIT: Duration = Duration::from_secs(2);

/// How a boardd holds its database (see [`PgStore::hold_the_database`]).
#[derive(Debug, Clone, Copy)]
enum Hold {
    /// The only boardd on it.
    Alone,
    /// One of several sharing it through leadership.
    Shared,
}

pub struct PgStore {
    /// `None` only while being dropped (see [`Drop`]).
    client: Option<Client>,
    /// The database as messages name it: never with a password.
    database: String,
    /// Prepared statements, by their text.
    prepared: HashMap<&'static str, Statement>,
    /// The leadership term this boardd holds; every commit checks it first.
    fence: Option<i64>,
    /// The message id counter as last written (see the SQLite engine).
    stored_next_message_id: u64,
}

impl PgStore {
    /// Connects, takes the database for this boardd alone, and creates or
    /// migrates the schema.
    pub fn open(url: &str) -> Result<PgStore, StoreError> {
        let mut store = PgStore::connect(url)?;
        off_runtime(|| {
            store.hold_the_database(Hold::Alone)?;
            store.migrate()
        })?;
        Ok(store)
    }

    /// Connects for the leader of `fence.term`, one of several boardd on the
    /// database (`cluster`): no lock, every commit behind the fence instead.
    /// The server ends this connection's transaction if it sits idle for the
    /// lease (`idle_in_transaction_session_timeout`): a leader cut off in the
    /// middle of a commit would otherwise hold the leadership row `FOR SHARE`,
    /// and with it the next leader's take, until the server noticed.
    pub fn open_fenced(url: &str, fence: super::Fence) -> Result<PgStore, StoreError> {
        let mut store = PgStore::connect(url)?;
        store.fence = Some(fence.term);
        let idle = format!(
            "SET idle_in_transaction_session_timeout = {}",
            fence.lease.as_millis().max(1)
        );
        off_runtime(|| {
            store.hold_the_database(Hold::Shared)?;
            let set = store.client()?.batch_execute(&idle);
            set.map_err(|e| store.pg(e))?;
            store.migrate()
        })?;
        Ok(store)
    }

    /// Connects to a database shared with other boardd and makes its schema,
    /// for what a follower reads (the lead's credential); it commits nothing.
    pub fn open_shared(url: &str) -> Result<PgStore, StoreError> {
        let mut store = PgStore::connect(url)?;
        off_runtime(|| store.migrate())?;
        Ok(store)
    }

    fn connect(url: &str) -> Result<PgStore, StoreError> {
        let database = redact(url);
        let err = |error| StoreError::Connect {
            database: database.clone(),
            error: Box::new(error),
        };
        let mut target = connect::target(url).map_err(err)?;
        let config = &mut target.config;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        if config.get_tcp_user_timeout().is_none() {
            config.tcp_user_timeout(TCP_USER_TIMEOUT);
        }
        config.keepalives(true).keepalives_idle(KEEPALIVE);
        config.application_name("boardd");
        let client = off_runtime(|| target.connect()).map_err(err)?;
        Ok(PgStore {
            client: Some(client),
            database,
            prepared: HashMap::new(),
            fence: None,
            stored_next_message_id: 0,
        })
    }

    /// One boardd per database, or several that share it through leadership,
    /// never both: a session-level advisory lock, held by this connection and
    /// let go when it closes (or its boardd dies). A boardd alone holds it
    /// exclusively; the leaders of a shared database hold it shared, so that a
    /// cut-off leader's stale lock does not keep its successor out (the fence
    /// does that job among them), yet a boardd started alone by mistake beside
    /// them is refused, as they are beside it.
    fn hold_the_database(&mut self, hold: Hold) -> Result<(), StoreError> {
        let sql = match hold {
            Hold::Alone => "SELECT pg_try_advisory_lock($1)",
            Hold::Shared => "SELECT pg_try_advisory_lock_shared($1)",
        };
        let deadline = Instant::now() + LOCK_WAIT;
        loop {
            let row = (self.client()?)
                .query_one(sql, &[&ONE_BOARDD])
                .map_err(|e| self.pg(e))?;
            if row.try_get::<_, bool>(0).map_err(|e| self.pg(e))? {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(StoreError::InUse {
                    database: self.database.clone(),
                });
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn migrate(&mut self) -> Result<(), StoreError> {
        let database = self.database.clone();
        let err = |error| StoreError::Postgres {
            database: database.clone(),
            error,
        };
        let mut tx = self.client()?.transaction().map_err(err)?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATING])
            .map_err(err)?;
        tx.batch_execute(
            "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value BIGINT NOT NULL)",
        )
        .map_err(err)?;
        let found: Option<i64> = tx
            .query_opt("SELECT value FROM meta WHERE key = 'schema_version'", &[])
            .map_err(err)?
            .map(|r| r.try_get(0))
            .transpose()
            .map_err(err)?;
        if let Some(found) = found.filter(|v| *v > schema::SCHEMA_VERSION) {
            return Err(StoreError::TooNew {
                database,
                found,
                known: schema::SCHEMA_VERSION,
            });
        }
        tx.batch_execute(schema::SCHEMA).map_err(err)?;
        tx.execute(
            "INSERT INTO meta (key, value) VALUES ('schema_version', $1)
             ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            &[&schema::SCHEMA_VERSION],
        )
        .map_err(err)?;
        tx.commit().map_err(err)
    }

    /// Sets the leadership term this boardd holds: from then on, a commit
    /// finds the term moved and fails with [`StoreError::Deposed`] rather than
    /// write. `None`: no fence (one boardd per database, by its lock).
    pub fn set_fence(&mut self, term: Option<i64>) {
        self.fence = term;
    }

    fn client(&mut self) -> Result<&mut Client, StoreError> {
        // Only `Drop` takes it, and nothing runs after that.
        self.client.as_mut().ok_or_else(|| StoreError::InUse {
            database: self.database.clone(),
        })
    }

    fn pg(&self, error: postgres::Error) -> StoreError {
        StoreError::Postgres {
            database: self.database.clone(),
            error,
        }
    }

    fn corrupt(&self, what: &'static str) -> impl Fn(serde_json::Error) -> StoreError {
        move |source| StoreError::Corrupt {
            database: self.database.clone(),
            what,
            source,
        }
    }

    /// Loads every row, for [`teamboard_board::Board::restore`].
    pub fn load(&mut self) -> Result<Snapshot, StoreError> {
        off_runtime(|| self.load_here())
    }

    fn load_here(&mut self) -> Result<Snapshot, StoreError> {
        let (snap, next_msg) = restore::load(self)?;
        self.stored_next_message_id = next_msg.unwrap_or(0).max(0) as u64;
        Ok(snap)
    }

    /// The rows of a query. Their columns are read with `try_get`: a table
    /// changed by hand is an error, never a panic.
    fn query(
        &mut self,
        sql: &str,
        params: &[&(dyn postgres::types::ToSql + Sync)],
    ) -> Result<Vec<postgres::Row>, StoreError> {
        let rows = self.client()?.query(sql, params);
        rows.map_err(|e| self.pg(e))
    }

    /// The first column of the one row a query returns.
    /// Every member's current credential, as its digest.
    pub fn credentials(&mut self) -> Result<Vec<CredentialRow>, StoreError> {
        let rows = off_runtime(|| self.query("SELECT team, name, digest FROM credentials", &[]))?;
        let mut out = Vec::with_capacity(rows.len());
        for row in rows {
            let columns = (row.try_get(0))
                .and_then(|team| Ok((team, row.try_get(1)?, row.try_get::<_, &[u8]>(2)?)));
            let (team, name, digest): (String, String, &[u8]) = columns.map_err(|e| self.pg(e))?;
            // As in the SQLite engine: a row of another length vouches for nobody.
            match <[u8; 32]>::try_from(digest) {
                Ok(digest) => out.push(CredentialRow { team, name, digest }),
                Err(_) => tracing::warn!(%team, %name, "ignoring a malformed credential row"),
            }
        }
        Ok(out)
    }

    /// Every token the lead issued, as its digest.
    pub fn tokens(&mut self) -> Result<Vec<TokenRow>, StoreError> {
        let rows =
            off_runtime(|| self.query("SELECT team, name, digest, created FROM tokens", &[]))?;
        let mut out = Vec::with_capacity(rows.len());
        for row in rows {
            let columns = (row.try_get(0)).and_then(|team| {
                Ok((
                    team,
                    row.try_get(1)?,
                    row.try_get::<_, &[u8]>(2)?,
                    row.try_get(3)?,
                ))
            });
            let (team, name, digest, created_ms): (String, String, &[u8], i64) =
                columns.map_err(|e| self.pg(e))?;
            // As in the SQLite engine: a row of another length vouches for nobody.
            match <[u8; 32]>::try_from(digest) {
                Ok(digest) => out.push(TokenRow {
                    team,
                    name,
                    digest,
                    created_ms,
                }),
                Err(_) => tracing::warn!(%team, %name, "ignoring a malformed token row"),
            }
        }
        Ok(out)
    }

    /// Reads history; see [`super::Store::history`].
    pub fn history(&mut self, q: &HistoryQuery) -> Result<Vec<Event>, StoreError> {
        let limit = q.limit.min(i64::MAX as u64) as i64;
        let forward = q.since.is_some();
        let since = q.since.unwrap_or(0).min(i64::MAX as u64) as i64;
        let order = if forward { "ASC" } else { "DESC" };
        let rows = off_runtime(|| {
            let client = self.client()?;
            match q.task {
                Some(task) => client.query(
                    &schema::task_history_sql(order),
                    &[&q.team, &(task as i64), &since, &limit],
                ),
                None => client.query(&schema::team_history_sql(order), &[&q.team, &since, &limit]),
            }
            .map_err(|e| self.pg(e))
        })?;
        let mut events = Vec::with_capacity(rows.len());
        for row in &rows {
            let body: &str = row.try_get(0).map_err(|e| self.pg(e))?;
            events.push(serde_json::from_str(body).map_err(self.corrupt("event"))?);
        }
        if !forward {
            events.reverse();
        }
        Ok(events)
    }

    /// The secret `name`, stored first as `candidate` if there was none. Two
    /// boardd starting at once both insert, one wins, and both read the winner.
    pub fn shared_secret(&mut self, name: &str, candidate: &str) -> Result<String, StoreError> {
        off_runtime(|| {
            let client = self.client()?;
            let row = client
                .execute(
                    "INSERT INTO secrets (name, value) VALUES ($1, $2) ON CONFLICT DO NOTHING",
                    &[&name, &candidate],
                )
                .and_then(|_| {
                    client.query_one("SELECT value FROM secrets WHERE name = $1", &[&name])
                });
            row.and_then(|r| r.try_get(0)).map_err(|e| self.pg(e))
        })
    }
}

impl restore::Source for PgStore {
    const BYTEWISE: &'static str = " COLLATE \"C\"";

    fn bodies(&mut self, sql: &str) -> Result<Vec<(String, String)>, StoreError> {
        let rows = self.query(sql, &[])?;
        (rows.iter())
            .map(|r| Ok((r.try_get(0)?, r.try_get(1)?)))
            .collect::<Result<_, postgres::Error>>()
            .map_err(|e| self.pg(e))
    }

    fn numbered(&mut self, sql: &str) -> Result<Vec<(String, i64)>, StoreError> {
        let rows = self.query(sql, &[])?;
        (rows.iter())
            .map(|r| Ok((r.try_get(0)?, r.try_get(1)?)))
            .collect::<Result<_, postgres::Error>>()
            .map_err(|e| self.pg(e))
    }

    fn texts(&mut self, sql: &str) -> Result<Vec<String>, StoreError> {
        let rows = self.query(sql, &[])?;
        (rows.iter())
            .map(|r| r.try_get(0))
            .collect::<Result<_, _>>()
            .map_err(|e| self.pg(e))
    }

    fn number(&mut self, sql: &str) -> Result<Option<i64>, StoreError> {
        let rows = self.query(sql, &[])?;
        let first = rows.first().map(|r| r.try_get::<_, Option<i64>>(0));
        first
            .transpose()
            .map(Option::flatten)
            .map_err(|e| self.pg(e))
    }

    fn corrupt(&self, what: &'static str, source: serde_json::Error) -> StoreError {
        PgStore::corrupt(self, what)(source)
    }
}

#[cfg(test)]
impl PgStore {
    /// Runs a test's own SQL.
    pub fn execute_raw(&mut self, sql: &str, params: &[&str]) {
        let params: Vec<&(dyn postgres::types::ToSql + Sync)> = params
            .iter()
            .map(|p| p as &(dyn postgres::types::ToSql + Sync))
            .collect();
        let client = self.client.as_mut().expect("open");
        client
            .execute(sql, &params)
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
}

/// Lets go of the database, then closes the connection, off any runtime (see
/// the module doc): a restarted boardd in the same process finds the lock free
/// at once rather than when the server notices the closed connection.
impl Drop for PgStore {
    fn drop(&mut self) {
        if let Some(mut client) = self.client.take() {
            off_runtime(move || {
                // Exclusive or shared, whichever this session holds.
                let _ = client.execute("SELECT pg_advisory_unlock_all()", &[]);
                drop(client);
            });
        }
    }
}

/// Runs `f` here, or on a scoped thread if this thread drives a tokio
/// runtime, where the `postgres` client may not block (see the module doc).
fn off_runtime<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    if tokio::runtime::Handle::try_current().is_err() {
        return f();
    }
    std::thread::scope(|s| match s.spawn(f).join() {
        Ok(value) => value,
        Err(panic) => std::panic::resume_unwind(panic),
    })
}

/// A database URL as messages show it: without its password.
pub fn redact(url: &str) -> String {
    match connect::parse(url) {
        Ok((config, _)) => {
            let hosts = connect::hosts(&config);
            format!(
                "postgres database '{}' on {}",
                config.get_dbname().unwrap_or("(default)"),
                if hosts.is_empty() {
                    "localhost"
                } else {
                    &hosts
                }
            )
        }
        // Not a URL the client reads: show its scheme only, since a password
        // may sit anywhere in what follows.
        Err(_) => match url.split_once("://") {
            Some((scheme, _)) => format!("{scheme}://…"),
            None => "(not a URL)".to_string(),
        },
    }
}

#[cfg(test)]
mod tests;
