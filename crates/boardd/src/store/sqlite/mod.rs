//! SQLite persistence: the embedded engine, a file in the state directory.
//!
//! The database runs in WAL mode with `synchronous=FULL`: a committed
//! transaction has been fsynced, which is what an acknowledgement promises.
//!
//! SQLite's automatic checkpoint is replaced by a WAL hook that only counts pages:
//! the writer checkpoints at quiet moments instead (see `writer::commit`).

mod credentials;
mod spend;
mod tokens;

use super::restore;
use super::rows::{CredentialRow, TokenChange, TokenRow};
use super::{HistoryQuery, StoreError, to_json};
use rusqlite::{Connection, params};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use teamboard_board::{Changes, Snapshot};
use teamboard_protocol::Event;

/// The database file inside the state directory.
pub const DB_FILE: &str = "board.sqlite3";

/// 2: `events_by_task` leaves out events about no task (see [`SqliteStore::open`]).
/// 3: `requests`. 4: `repos`. 5: the ledger's tables (see `spend`).
/// 6: `credentials`. 7: `tokens`.
const SCHEMA_VERSION: i64 = 7;

pub struct SqliteStore {
    conn: Connection,
    path: PathBuf,
    /// Pages in the WAL after the last commit, as SQLite's WAL hook reports them.
    wal_pages: Arc<AtomicU32>,
    /// The message id counter as last written. Most commits send no message, and
    /// skipping the unchanged row saves a page in every such transaction.
    stored_next_message_id: u64,
}

impl SqliteStore {
    /// Opens (creating if needed) the database in `state_dir`.
    pub fn open(state_dir: &Path) -> Result<SqliteStore, StoreError> {
        let path = state_dir.join(DB_FILE);
        let err = |source| StoreError::Sqlite {
            path: path.clone(),
            source,
        };
        // SQLite would create the database with the umask's mode, and gives its
        // WAL the database's mode: so the database is made 0600 first, and so are
        // the files SQLite left beside it.
        crate::private::file(&path)?;
        for suffix in ["-wal", "-shm", "-journal"] {
            let mut beside = path.clone().into_os_string();
            beside.push(suffix);
            crate::private::existing_file(Path::new(&beside))?;
        }
        let mut conn = Connection::open(&path).map_err(err)?;
        // boardd's lock file already guarantees one process per database, so
        // SQLite's own file locks are pure cost: in exclusive mode it takes them
        // once instead of several fcntl calls per transaction, and keeps the WAL
        // index in memory rather than in a shared-memory file.
        for (pragma, value) in [
            ("locking_mode", "EXCLUSIVE"),
            ("journal_mode", "WAL"),
            ("synchronous", "FULL"),
            ("foreign_keys", "OFF"),
        ] {
            conn.pragma_update(None, pragma, value).map_err(err)?;
        }
        let version: i64 = conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .map_err(err)?;
        if version > SCHEMA_VERSION {
            return Err(StoreError::TooNew {
                database: path.display().to_string(),
                found: version,
                known: SCHEMA_VERSION,
            });
        }
        // Version 1 indexed every event by task, including the member and message
        // events that have none. Those entries served no query, and because NULL
        // sorts first they landed on a page of their own: one more page in every
        // commit with both kinds. The history of a task asks for `task = ?`, which
        // the partial index still serves.
        let migrate = if version < 2 {
            "DROP INDEX IF EXISTS events_by_task;"
        } else {
            ""
        };
        conn.execute_batch(&format!(
            "BEGIN;
             {migrate}
             CREATE TABLE IF NOT EXISTS tasks (
                 team TEXT NOT NULL, id INTEGER NOT NULL, body TEXT NOT NULL,
                 PRIMARY KEY (team, id)) WITHOUT ROWID;
             CREATE TABLE IF NOT EXISTS members (
                 team TEXT NOT NULL, name TEXT NOT NULL, body TEXT NOT NULL,
                 PRIMARY KEY (team, name)) WITHOUT ROWID;
             CREATE TABLE IF NOT EXISTS messages (
                 id INTEGER PRIMARY KEY, team TEXT NOT NULL, body TEXT NOT NULL);
             CREATE TABLE IF NOT EXISTS events (
                 seq INTEGER PRIMARY KEY, team TEXT NOT NULL, task INTEGER, body TEXT NOT NULL);
             CREATE INDEX IF NOT EXISTS events_by_task ON events (team, task, seq)
                 WHERE task IS NOT NULL;
             CREATE TABLE IF NOT EXISTS requests (
                 id INTEGER PRIMARY KEY, team TEXT NOT NULL, body TEXT NOT NULL);
             CREATE TABLE IF NOT EXISTS repos (team TEXT PRIMARY KEY, body TEXT NOT NULL);
             CREATE TABLE IF NOT EXISTS teams (name TEXT PRIMARY KEY) WITHOUT ROWID;
             CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
             {spend}
             {credentials}
             {tokens}
             PRAGMA user_version = {SCHEMA_VERSION};
             COMMIT;",
            spend = spend::SCHEMA,
            credentials = credentials::SCHEMA,
            tokens = tokens::SCHEMA
        ))
        .map_err(err)?;
        // Replaces SQLite's automatic checkpoint (which is itself a WAL hook).
        let wal_pages = Arc::new(AtomicU32::new(0));
        let hook_pages = wal_pages.clone();
        conn.wal_hook(Some(
            move |_: &mut rusqlite::hooks::Wal, pages: std::ffi::c_int| {
                hook_pages.store(u32::try_from(pages).unwrap_or(0), Ordering::Relaxed);
                Ok(())
            },
        ))
        .map_err(err)?;
        Ok(SqliteStore {
            conn,
            path,
            wal_pages,
            stored_next_message_id: 0,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Pages in the WAL since the last checkpoint.
    pub fn wal_pages(&self) -> u32 {
        self.wal_pages.load(Ordering::Relaxed)
    }

    /// Copies the WAL back into the database file, so that the next commit starts
    /// the WAL again from its beginning. boardd is the only connection, so nothing
    /// can hold the checkpoint back.
    pub fn checkpoint(&mut self) -> Result<(), StoreError> {
        self.conn
            .wal_checkpoint_v2(None::<&str>, rusqlite::wal::CheckpointMode::PASSIVE)
            .map_err(|e| self.sqlite(e))?;
        self.wal_pages.store(0, Ordering::Relaxed);
        Ok(())
    }

    fn sqlite(&self, source: rusqlite::Error) -> StoreError {
        StoreError::Sqlite {
            path: self.path.clone(),
            source,
        }
    }

    fn corrupt(&self, what: &'static str) -> impl Fn(serde_json::Error) -> StoreError {
        move |source| StoreError::Corrupt {
            database: self.path.display().to_string(),
            what,
            source,
        }
    }

    /// Loads every row, for [`teamboard_board::Board::restore`].
    pub fn load(&mut self) -> Result<Snapshot, StoreError> {
        let (snap, next_msg) = restore::load(self)?;
        self.stored_next_message_id = next_msg.unwrap_or(0).max(0) as u64;
        Ok(snap)
    }

    /// Every member's current credential, as its digest.
    pub fn credentials(&mut self) -> Result<Vec<CredentialRow>, StoreError> {
        let mut stmt = (self.conn)
            .prepare("SELECT team, name, digest FROM credentials")
            .map_err(|e| self.sqlite(e))?;
        let rows = stmt
            .query_map([], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, Vec<u8>>(2)?,
                ))
            })
            .map_err(|e| self.sqlite(e))?;
        let mut out = Vec::new();
        for row in rows {
            let (team, name, digest) = row.map_err(|e| self.sqlite(e))?;
            // A row of another length cannot have been written by boardd: it
            // vouches for nobody, and the member registers again.
            match <[u8; 32]>::try_from(digest.as_slice()) {
                Ok(digest) => out.push(CredentialRow { team, name, digest }),
                Err(_) => tracing::warn!(%team, %name, "ignoring a malformed credential row"),
            }
        }
        Ok(out)
    }

    /// Every token the lead issued, as its digest.
    pub fn tokens(&mut self) -> Result<Vec<TokenRow>, StoreError> {
        tokens::load(&self.conn).map_err(|e| self.sqlite(e))
    }

    /// Writes a group of batches, and the credentials and tokens issued or
    /// revoked with them, in one transaction. When this returns `Ok`, the data
    /// is on disk.
    pub fn commit<'a>(
        &mut self,
        batches: impl IntoIterator<Item = &'a Changes>,
        credentials: impl IntoIterator<Item = &'a CredentialRow>,
        tokens: impl IntoIterator<Item = &'a TokenChange>,
    ) -> Result<(), StoreError> {
        let path = self.path.clone();
        let err = |source| StoreError::Sqlite {
            path: path.clone(),
            source,
        };
        let tx = self.conn.transaction().map_err(err)?;
        let mut next_message_id = None;
        {
            let tx = &tx;
            let prepare = move |sql| tx.prepare_cached(sql).map_err(err);
            let mut put_task =
                prepare("INSERT OR REPLACE INTO tasks (team, id, body) VALUES (?1, ?2, ?3)")?;
            let mut put_member =
                prepare("INSERT OR REPLACE INTO members (team, name, body) VALUES (?1, ?2, ?3)")?;
            let mut put_message =
                prepare("INSERT OR REPLACE INTO messages (id, team, body) VALUES (?1, ?2, ?3)")?;
            let mut del_message = prepare("DELETE FROM messages WHERE id = ?1")?;
            let mut del_task = prepare("DELETE FROM tasks WHERE team = ?1 AND id = ?2")?;
            let mut put_request =
                prepare("INSERT OR REPLACE INTO requests (id, team, body) VALUES (?1, ?2, ?3)")?;
            let mut put_repo =
                prepare("INSERT OR REPLACE INTO repos (team, body) VALUES (?1, ?2)")?;
            let mut put_team = prepare("INSERT OR IGNORE INTO teams (name) VALUES (?1)")?;
            let mut put_event = prepare(
                "INSERT OR REPLACE INTO events (seq, team, task, body) VALUES (?1, ?2, ?3, ?4)",
            )?;
            for batch in batches {
                for (team, task) in &batch.tasks {
                    put_task
                        .execute(params![team, task.id as i64, to_json(task, "task")?])
                        .map_err(err)?;
                }
                for (team, id) in &batch.tasks_deleted {
                    del_task.execute(params![team, *id as i64]).map_err(err)?;
                }
                for (team, member) in &batch.members {
                    put_member
                        .execute(params![team, member.name, to_json(member, "member")?])
                        .map_err(err)?;
                }
                for (team, msg) in &batch.messages_added {
                    put_message
                        .execute(params![msg.id as i64, team, to_json(msg, "message")?])
                        .map_err(err)?;
                }
                for id in &batch.messages_acked {
                    del_message.execute(params![*id as i64]).map_err(err)?;
                }
                for (team, req) in &batch.requests {
                    put_request
                        .execute(params![req.id as i64, team, to_json(req, "request")?])
                        .map_err(err)?;
                }
                for (team, repo) in &batch.repos {
                    put_repo
                        .execute(params![team, to_json(repo, "repo")?])
                        .map_err(err)?;
                }
                for name in &batch.teams {
                    put_team.execute(params![name]).map_err(err)?;
                }
                for ev in &batch.events {
                    put_event
                        .execute(params![
                            ev.seq as i64,
                            ev.team,
                            ev.task.map(|t| t as i64),
                            to_json(ev, "event")?
                        ])
                        .map_err(err)?;
                }
                spend::write(tx, batch, &err)?;
                next_message_id = Some(batch.next_message_id);
            }
            credentials::write(tx, credentials, &err)?;
            tokens::write(tx, tokens, &err)?;
            if let Some(next) = next_message_id.filter(|n| *n != self.stored_next_message_id) {
                prepare(
                    "INSERT INTO meta (key, value) VALUES ('next_message_id', ?1)
                     ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                )?
                .execute(params![next as i64])
                .map_err(err)?;
            }
        }
        tx.commit().map_err(err)?;
        if let Some(next) = next_message_id {
            self.stored_next_message_id = next;
        }
        Ok(())
    }

    /// Reads history, returned oldest first. With `since`, the oldest `limit` events
    /// after it, so a client can page forward without gaps; without, the newest
    /// `limit` events.
    pub fn history(&mut self, q: &HistoryQuery) -> Result<Vec<Event>, StoreError> {
        let limit = q.limit.min(i64::MAX as u64) as i64;
        let forward = q.since.is_some();
        let since = q.since.unwrap_or(0).min(i64::MAX as u64) as i64;
        let order = if forward { "ASC" } else { "DESC" };
        let mut bodies: Vec<String> = match q.task {
            Some(task) => self.query_bodies(
                &task_history_sql(order),
                params![q.team, task as i64, since, limit],
            )?,
            None => self.query_bodies(
                &format!(
                    "SELECT body FROM events WHERE team = ?1 AND seq > ?2 ORDER BY seq {order} LIMIT ?3"
                ),
                params![q.team, since, limit],
            )?,
        };
        if !forward {
            bodies.reverse();
        }
        (bodies.iter())
            .map(|body| serde_json::from_str(body).map_err(self.corrupt("event")))
            .collect()
    }

    fn query_bodies(&self, sql: &str, p: impl rusqlite::Params) -> Result<Vec<String>, StoreError> {
        let mut stmt = self.conn.prepare_cached(sql).map_err(|e| self.sqlite(e))?;
        let rows = stmt
            .query_map(p, |r| r.get::<_, String>(0))
            .map_err(|e| self.sqlite(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.sqlite(e))
    }
}

impl restore::Source for SqliteStore {
    /// SQLite's default collation (BINARY) compares bytes.
    const BYTEWISE: &'static str = "";

    fn bodies(&mut self, sql: &str) -> Result<Vec<(String, String)>, StoreError> {
        self.all(sql, |r| Ok((r.get(0)?, r.get(1)?)))
    }

    fn numbered(&mut self, sql: &str) -> Result<Vec<(String, i64)>, StoreError> {
        self.all(sql, |r| Ok((r.get(0)?, r.get(1)?)))
    }

    fn texts(&mut self, sql: &str) -> Result<Vec<String>, StoreError> {
        self.all(sql, |r| r.get(0))
    }

    fn number(&mut self, sql: &str) -> Result<Option<i64>, StoreError> {
        let first = self.all(sql, |r| r.get::<_, Option<i64>>(0))?;
        Ok(first.into_iter().next().flatten())
    }

    fn corrupt(&self, what: &'static str, source: serde_json::Error) -> StoreError {
        SqliteStore::corrupt(self, what)(source)
    }
}

impl SqliteStore {
    /// Every row of `sql`, each read by `row`.
    fn all<T>(
        &self,
        sql: &str,
        row: impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
    ) -> Result<Vec<T>, StoreError> {
        let mut stmt = self.conn.prepare(sql).map_err(|e| self.sqlite(e))?;
        let rows = stmt.query_map([], row).map_err(|e| self.sqlite(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.sqlite(e))
    }
}

#[cfg(test)]
impl SqliteStore {
    /// Runs a test's own SQL.
    pub fn execute_raw(&mut self, sql: &str, params: &[&str]) {
        (self.conn)
            .execute(sql, rusqlite::params_from_iter(params))
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
}

/// The history of one task, oldest or newest (`order`) first.
fn task_history_sql(order: &str) -> String {
    format!(
        "SELECT body FROM events WHERE team = ?1 AND task = ?2 AND seq > ?3
         ORDER BY seq {order} LIMIT ?4"
    )
}

#[cfg(test)]
mod tests;
