//! The PostgreSQL schema, created and migrated by boardd at open.
//!
//! The board's tables are SQLite's, with SQLite's keys: `BIGINT` for its
//! integers (ids are `u64` on the wire, stored as `i64` as SQLite stores them),
//! `TEXT` for the JSON bodies, `BYTEA` for digests. `meta` keeps the schema
//! version (SQLite's `user_version`) beside the message id counter.

/// 1: the board's tables, `tokens`, `leadership` and `secrets`.
pub const SCHEMA_VERSION: i64 = 1;

/// Every statement is idempotent: run in full at each open, inside the
/// migration's transaction.
pub const SCHEMA: &str = "
    CREATE TABLE IF NOT EXISTS tasks (
        team TEXT NOT NULL, id BIGINT NOT NULL, body TEXT NOT NULL,
        PRIMARY KEY (team, id));
    CREATE TABLE IF NOT EXISTS members (
        team TEXT NOT NULL, name TEXT NOT NULL, body TEXT NOT NULL,
        PRIMARY KEY (team, name));
    CREATE TABLE IF NOT EXISTS messages (
        id BIGINT PRIMARY KEY, team TEXT NOT NULL, body TEXT NOT NULL);
    CREATE TABLE IF NOT EXISTS events (
        seq BIGINT PRIMARY KEY, team TEXT NOT NULL, task BIGINT, body TEXT NOT NULL);
    CREATE INDEX IF NOT EXISTS events_by_task ON events (team, task, seq)
        WHERE task IS NOT NULL;
    CREATE TABLE IF NOT EXISTS requests (
        id BIGINT PRIMARY KEY, team TEXT NOT NULL, body TEXT NOT NULL);
    CREATE TABLE IF NOT EXISTS repos (team TEXT PRIMARY KEY, body TEXT NOT NULL);
    CREATE TABLE IF NOT EXISTS teams (name TEXT PRIMARY KEY);
    CREATE TABLE IF NOT EXISTS budgets (
        team TEXT NOT NULL, key TEXT NOT NULL, body TEXT NOT NULL,
        PRIMARY KEY (team, key));
    CREATE TABLE IF NOT EXISTS usage (
        seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        team TEXT NOT NULL, body TEXT NOT NULL);
    CREATE TABLE IF NOT EXISTS held (
        team TEXT NOT NULL, member TEXT NOT NULL, id BIGINT NOT NULL, body TEXT NOT NULL,
        PRIMARY KEY (team, member, id));
    CREATE TABLE IF NOT EXISTS account_blocks (account TEXT PRIMARY KEY, body TEXT NOT NULL);
    CREATE TABLE IF NOT EXISTS credentials (
        team TEXT NOT NULL, name TEXT NOT NULL, digest BYTEA NOT NULL,
        PRIMARY KEY (team, name));
    CREATE TABLE IF NOT EXISTS tokens (
        team TEXT NOT NULL, name TEXT NOT NULL, digest BYTEA NOT NULL,
        created BIGINT NOT NULL,
        PRIMARY KEY (team, name));
    CREATE TABLE IF NOT EXISTS leadership (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        term BIGINT NOT NULL,
        node TEXT NOT NULL,
        addr TEXT NOT NULL,
        expires TIMESTAMPTZ NOT NULL);
    INSERT INTO leadership VALUES (1, 0, '', '', '-infinity') ON CONFLICT DO NOTHING;
    CREATE TABLE IF NOT EXISTS secrets (name TEXT PRIMARY KEY, value TEXT NOT NULL);";

/// Upserts, one per kind of row, in the order a commit runs them.
pub const PUT_TASK: &str = "INSERT INTO tasks (team, id, body) VALUES ($1, $2, $3)
    ON CONFLICT (team, id) DO UPDATE SET body = excluded.body";
pub const DEL_TASK: &str = "DELETE FROM tasks WHERE team = $1 AND id = $2";
pub const PUT_MEMBER: &str = "INSERT INTO members (team, name, body) VALUES ($1, $2, $3)
    ON CONFLICT (team, name) DO UPDATE SET body = excluded.body";
pub const PUT_MESSAGE: &str = "INSERT INTO messages (id, team, body) VALUES ($1, $2, $3)
    ON CONFLICT (id) DO UPDATE SET team = excluded.team, body = excluded.body";
pub const DEL_MESSAGE: &str = "DELETE FROM messages WHERE id = $1";
pub const PUT_REQUEST: &str = "INSERT INTO requests (id, team, body) VALUES ($1, $2, $3)
    ON CONFLICT (id) DO UPDATE SET team = excluded.team, body = excluded.body";
pub const PUT_REPO: &str = "INSERT INTO repos (team, body) VALUES ($1, $2)
    ON CONFLICT (team) DO UPDATE SET body = excluded.body";
pub const PUT_TEAM: &str = "INSERT INTO teams (name) VALUES ($1) ON CONFLICT DO NOTHING";
pub const PUT_EVENT: &str = "INSERT INTO events (seq, team, task, body) VALUES ($1, $2, $3, $4)
    ON CONFLICT (seq) DO UPDATE SET team = excluded.team, task = excluded.task,
    body = excluded.body";
pub const PUT_BUDGET: &str = "INSERT INTO budgets (team, key, body) VALUES ($1, $2, $3)
    ON CONFLICT (team, key) DO UPDATE SET body = excluded.body";
pub const DEL_BUDGET: &str = "DELETE FROM budgets WHERE team = $1 AND key = $2";
pub const PUT_USAGE: &str = "INSERT INTO usage (team, body) VALUES ($1, $2)";
pub const PUT_HELD: &str = "INSERT INTO held (team, member, id, body) VALUES ($1, $2, $3, $4)
    ON CONFLICT (team, member, id) DO UPDATE SET body = excluded.body";
pub const DEL_HELD: &str = "DELETE FROM held WHERE team = $1 AND member = $2 AND id = $3";
pub const PUT_ACCOUNT_BLOCK: &str = "INSERT INTO account_blocks (account, body) VALUES ($1, $2)
    ON CONFLICT (account) DO UPDATE SET body = excluded.body";
pub const PUT_CREDENTIAL: &str = "INSERT INTO credentials (team, name, digest) VALUES ($1, $2, $3)
    ON CONFLICT (team, name) DO UPDATE SET digest = excluded.digest";
pub const PUT_TOKEN: &str =
    "INSERT INTO tokens (team, name, digest, created) VALUES ($1, $2, $3, $4)
    ON CONFLICT (team, name) DO UPDATE SET digest = excluded.digest, created = excluded.created";
pub const DEL_TOKEN: &str = "DELETE FROM tokens WHERE team = $1 AND name = $2";
pub const PUT_NEXT_MESSAGE_ID: &str = "INSERT INTO meta (key, value) VALUES ('next_message_id', $1)
    ON CONFLICT (key) DO UPDATE SET value = excluded.value";

/// The history of one task, oldest or newest (`order`) first.
pub fn task_history_sql(order: &str) -> String {
    format!(
        "SELECT body FROM events WHERE team = $1 AND task = $2 AND seq > $3
         ORDER BY seq {order} LIMIT $4"
    )
}

/// A team's history, oldest or newest (`order`) first.
pub fn team_history_sql(order: &str) -> String {
    format!("SELECT body FROM events WHERE team = $1 AND seq > $2 ORDER BY seq {order} LIMIT $3")
}
