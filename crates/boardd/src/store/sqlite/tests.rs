//! SQLite's own: the upgrades from versions 1 and 5, and that a task's history
//! is read through the index rather than by scanning every event. What every
//! engine must keep is in `store/tests.rs`.

use super::*;
use crate::store::tests::event;
use teamboard_protocol::TaskId;

fn history(store: &mut SqliteStore, task: Option<TaskId>) -> Vec<u64> {
    store
        .history(&HistoryQuery {
            team: "default".into(),
            since: Some(0),
            task,
            limit: u64::MAX,
        })
        .expect("history")
        .iter()
        .map(|e| e.seq)
        .collect()
}

fn index_sql(conn: &Connection) -> String {
    conn.query_row(
        "SELECT sql FROM sqlite_master WHERE type = 'index' AND name = 'events_by_task'",
        [],
        |r| r.get(0),
    )
    .expect("the index exists")
}

#[test]
fn a_version_1_database_gets_the_partial_index_and_keeps_its_history() {
    let dir = tempfile::tempdir().expect("tempdir");
    {
        // The version 1 schema, as boardd 0.1 created it.
        let conn = Connection::open(dir.path().join(DB_FILE)).expect("create");
        conn.execute_batch(
            "PRAGMA journal_mode = WAL;
             CREATE TABLE tasks (team TEXT NOT NULL, id INTEGER NOT NULL, body TEXT NOT NULL,
                 PRIMARY KEY (team, id)) WITHOUT ROWID;
             CREATE TABLE members (team TEXT NOT NULL, name TEXT NOT NULL, body TEXT NOT NULL,
                 PRIMARY KEY (team, name)) WITHOUT ROWID;
             CREATE TABLE messages (id INTEGER PRIMARY KEY, team TEXT NOT NULL, body TEXT NOT NULL);
             CREATE TABLE events (seq INTEGER PRIMARY KEY, team TEXT NOT NULL, task INTEGER,
                 body TEXT NOT NULL);
             CREATE INDEX events_by_task ON events (team, task, seq);
             CREATE TABLE meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
             PRAGMA user_version = 1;",
        )
        .expect("v1 schema");
        for (seq, task) in [
            (1, Some(1)),
            (2, None),
            (3, Some(2)),
            (4, Some(1)),
            (5, None),
        ] {
            conn.execute(
                "INSERT INTO events (seq, team, task, body) VALUES (?1, 'default', ?2, ?3)",
                params![
                    seq as i64,
                    task.map(|t: u64| t as i64),
                    to_json(&event(seq, task), "event").expect("encode")
                ],
            )
            .expect("insert");
        }
        assert!(!index_sql(&conn).contains("WHERE"));
    }
    let mut store = SqliteStore::open(dir.path()).expect("open the v1 database");
    let version: i64 = store
        .conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .expect("version");
    assert_eq!(version, SCHEMA_VERSION);
    assert!(
        index_sql(&store.conn).contains("WHERE task IS NOT NULL"),
        "{}",
        index_sql(&store.conn)
    );
    assert_eq!(history(&mut store, Some(1)), vec![1, 4]);
    assert_eq!(history(&mut store, Some(2)), vec![3]);
    assert_eq!(history(&mut store, None), vec![1, 2, 3, 4, 5]);
    drop(store);
    // Opening again is a no-op: no second rebuild, same answers.
    let mut store = SqliteStore::open(dir.path()).expect("reopen");
    assert_eq!(history(&mut store, Some(1)), vec![1, 4]);
}

#[test]
fn a_tasks_history_is_read_through_the_index() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = SqliteStore::open(dir.path()).expect("open");
    for order in ["ASC", "DESC"] {
        let plan: Vec<String> = store
            .conn
            .prepare(&format!("EXPLAIN QUERY PLAN {}", task_history_sql(order)))
            .expect("explain")
            .query_map(params!["default", 1i64, 0i64, 10i64], |r| {
                r.get::<_, String>(3)
            })
            .expect("plan")
            .collect::<Result<_, _>>()
            .expect("rows");
        assert!(
            plan.iter()
                .any(|step| step.contains("USING INDEX events_by_task")
                    || step.contains("USING COVERING INDEX events_by_task")),
            "{order}: {plan:?}"
        );
    }
}

#[test]
fn a_version_5_database_gets_the_credentials_table_and_keeps_its_board() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut store = SqliteStore::open(dir.path()).expect("open");
    let batch = Changes {
        events: vec![event(1, Some(1))],
        teams: vec!["web".into()],
        ..Default::default()
    };
    store.commit([&batch], [], []).expect("commit");
    // As boardd left it before credentials: no table, schema version 5.
    store
        .conn
        .execute_batch("DROP TABLE credentials; PRAGMA user_version = 5;")
        .expect("back to version 5");
    drop(store);
    let mut store = SqliteStore::open(dir.path()).expect("reopen");
    let version: i64 = (store.conn)
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .expect("version");
    assert_eq!(version, SCHEMA_VERSION);
    assert_eq!(store.load().expect("load").teams, vec!["web".to_string()]);
    assert_eq!(history(&mut store, Some(1)), vec![1]);
    assert_eq!(store.credentials().expect("credentials"), vec![]);
    // A member's credential replaces the one before, and outlives a reopen.
    let row = |byte| CredentialRow {
        team: "web".into(),
        name: "ana".into(),
        digest: [byte; 32],
    };
    store.commit([], [&row(1)], []).expect("commit");
    store.commit([], [&row(2)], []).expect("commit");
    drop(store);
    let mut store = SqliteStore::open(dir.path()).expect("reopen");
    assert_eq!(store.credentials().expect("credentials"), vec![row(2)]);
}

#[test]
fn a_version_6_database_gets_the_tokens_table_and_keeps_its_credentials() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut store = SqliteStore::open(dir.path()).expect("open");
    let member = CredentialRow {
        team: "web".into(),
        name: "ana".into(),
        digest: [7; 32],
    };
    store.commit([], [&member], []).expect("commit");
    // As boardd left it before tokens: no table, schema version 6.
    store
        .conn
        .execute_batch("DROP TABLE tokens; PRAGMA user_version = 6;")
        .expect("back to version 6");
    drop(store);
    let mut store = SqliteStore::open(dir.path()).expect("reopen");
    let version: i64 = (store.conn)
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .expect("version");
    assert_eq!(version, SCHEMA_VERSION);
    assert_eq!(store.credentials().expect("credentials"), vec![member]);
    assert_eq!(store.tokens().expect("tokens"), vec![]);
}
