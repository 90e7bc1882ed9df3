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

/// One statement per table and kind of write, each taking a whole group's rows
/// as arrays, one per column (see `group`: no key appears twice in one).
pub const PUT_TASKS: &str = "INSERT INTO tasks (team, id, body)
    SELECT * FROM UNNEST($1::text[], $2::bigint[], $3::text[])
    ON CONFLICT (team, id) DO UPDATE SET body = excluded.body";
pub const DEL_TASKS: &str = "DELETE FROM tasks WHERE (team, id) IN
    (SELECT * FROM UNNEST($1::text[], $2::bigint[]))";
pub const PUT_MEMBERS: &str = "INSERT INTO members (team, name, body)
    SELECT * FROM UNNEST($1::text[], $2::text[], $3::text[])
    ON CONFLICT (team, name) DO UPDATE SET body = excluded.body";
pub const PUT_MESSAGES: &str = "INSERT INTO messages (id, team, body)
    SELECT * FROM UNNEST($1::bigint[], $2::text[], $3::text[])
    ON CONFLICT (id) DO UPDATE SET team = excluded.team, body = excluded.body";
pub const DEL_MESSAGES: &str = "DELETE FROM messages WHERE id = ANY($1::bigint[])";
pub const PUT_REQUESTS: &str = "INSERT INTO requests (id, team, body)
    SELECT * FROM UNNEST($1::bigint[], $2::text[], $3::text[])
    ON CONFLICT (id) DO UPDATE SET team = excluded.team, body = excluded.body";
pub const PUT_REPOS: &str = "INSERT INTO repos (team, body)
    SELECT * FROM UNNEST($1::text[], $2::text[])
    ON CONFLICT (team) DO UPDATE SET body = excluded.body";
pub const PUT_TEAMS: &str =
    "INSERT INTO teams (name) SELECT * FROM UNNEST($1::text[]) ON CONFLICT DO NOTHING";
pub const PUT_EVENTS: &str = "INSERT INTO events (seq, team, task, body)
    SELECT * FROM UNNEST($1::bigint[], $2::text[], $3::bigint[], $4::text[])
    ON CONFLICT (seq) DO UPDATE SET team = excluded.team, task = excluded.task,
    body = excluded.body";
pub const PUT_BUDGETS: &str = "INSERT INTO budgets (team, key, body)
    SELECT * FROM UNNEST($1::text[], $2::text[], $3::text[])
    ON CONFLICT (team, key) DO UPDATE SET body = excluded.body";
pub const DEL_BUDGETS: &str = "DELETE FROM budgets WHERE (team, key) IN
    (SELECT * FROM UNNEST($1::text[], $2::text[]))";
/// The ledger's sequence follows the group's order.
pub const PUT_USAGE: &str = "INSERT INTO usage (team, body)
    SELECT team, body FROM UNNEST($1::text[], $2::text[]) WITH ORDINALITY AS u (team, body, n)
    ORDER BY n";
pub const PUT_HELD: &str = "INSERT INTO held (team, member, id, body)
    SELECT * FROM UNNEST($1::text[], $2::text[], $3::bigint[], $4::text[])
    ON CONFLICT (team, member, id) DO UPDATE SET body = excluded.body";
pub const DEL_HELD: &str = "DELETE FROM held WHERE (team, member, id) IN
    (SELECT * FROM UNNEST($1::text[], $2::text[], $3::bigint[]))";
pub const PUT_ACCOUNT_BLOCKS: &str = "INSERT INTO account_blocks (account, body)
    SELECT * FROM UNNEST($1::text[], $2::text[])
    ON CONFLICT (account) DO UPDATE SET body = excluded.body";
pub const PUT_CREDENTIALS: &str = "INSERT INTO credentials (team, name, digest)
    SELECT * FROM UNNEST($1::text[], $2::text[], $3::bytea[])
    ON CONFLICT (team, name) DO UPDATE SET digest = excluded.digest";
pub const PUT_TOKENS: &str = "INSERT INTO tokens (team, name, digest, created)
    SELECT * FROM UNNEST($1::text[], $2::text[], $3::bytea[], $4::bigint[])
    ON CONFLICT (team, name) DO UPDATE SET digest = excluded.digest, created = excluded.created";
pub const DEL_TOKENS: &str = "DELETE FROM tokens WHERE (team, name) IN
    (SELECT * FROM UNNEST($1::text[], $2::text[]))";
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
