//! The schema: the upgrade from version 1, and that a task's history is read
//! through the index rather than by scanning every event.

use super::*;
use teamboard_protocol::EventKind;

fn event(seq: u64, task: Option<TaskId>) -> Event {
    Event {
        seq,
        team: "default".into(),
        at: 0,
        actor: "lead".into(),
        kind: if task.is_some() {
            EventKind::TaskCreated
        } else {
            EventKind::MemberStatus
        },
        task,
        member: task.is_none().then(|| "ana".to_string()),
        message: None,
        detail: format!("event {seq}"),
        request: None,
    }
}

fn history(store: &Store, task: Option<TaskId>) -> Vec<u64> {
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
    let store = Store::open(dir.path()).expect("open the v1 database");
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
    assert_eq!(history(&store, Some(1)), vec![1, 4]);
    assert_eq!(history(&store, Some(2)), vec![3]);
    assert_eq!(history(&store, None), vec![1, 2, 3, 4, 5]);
    drop(store);
    // Opening again is a no-op: no second rebuild, same answers.
    let store = Store::open(dir.path()).expect("reopen");
    assert_eq!(history(&store, Some(1)), vec![1, 4]);
}

#[test]
fn a_tasks_history_is_read_through_the_index() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path()).expect("open");
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

/// A value whose encoding fails, as no board type's does today.
struct Unencodable;

impl serde::Serialize for Unencodable {
    fn serialize<S: serde::Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
        Err(serde::ser::Error::custom("not today"))
    }
}

#[test]
fn a_row_that_cannot_be_encoded_is_an_error_not_an_empty_body() {
    match to_json(&Unencodable, "task") {
        Err(StoreError::Encode { what: "task", .. }) => {}
        other => panic!("expected an encoding error, got {other:?}"),
    }
}

#[test]
fn a_member_row_from_before_runtimes_loads_as_native_and_a_runtime_round_trips() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut store = Store::open(dir.path()).expect("open");
    // A row as boardd wrote it before members had a runtime: no field at all.
    store
        .conn
        .execute(
            "INSERT INTO members (team, name, body) VALUES ('default', 'old', ?1)",
            params![
                r#"{"name":"old","role":"dev","status":"idle","last_seen":1,"pid":7,
                    "task":null,"tokens":{"input":0,"output":0},"connected":false,
                    "joined_at":1}"#
            ],
        )
        .expect("insert an old row");
    let new = teamboard_protocol::Member {
        name: "new".into(),
        role: "dev".into(),
        status: teamboard_protocol::MemberStatus::Idle,
        last_seen: 2,
        pid: None,
        task: None,
        tokens: Default::default(),
        cost: Default::default(),
        waiting: None,
        connected: false,
        joined_at: 2,
        require_plan: false,
        runtime: Some("claude".into()),
        model: None,
        tokens_estimated: true,
        liveness: None,
        sandbox: None,
    };
    let batch = Changes {
        members: vec![("default".into(), new.clone())],
        ..Default::default()
    };
    store.commit([&batch], [], []).expect("commit");
    drop(store);
    let mut store = Store::open(dir.path()).expect("reopen");
    let mut members = store.load().expect("load").members;
    members.sort_by(|a, b| a.1.name.cmp(&b.1.name));
    assert_eq!(members.len(), 2);
    assert_eq!(members[0].1, new);
    assert_eq!(members[1].1.name, "old");
    assert_eq!(members[1].1.runtime, None);
}

#[test]
fn a_budget_keeps_what_it_came_to_and_an_older_row_reads_without_it() {
    use teamboard_board::BudgetMarks;
    use teamboard_protocol::spend::{Amounts, Budget, BudgetScope, Limits, MicroUsd};
    let dir = tempfile::tempdir().expect("tempdir");
    let mut store = Store::open(dir.path()).expect("open");
    let team = Budget {
        scope: BudgetScope::Team,
        per_ms: None,
        limits: Limits {
            tokens: Some(50_000),
            ..Limits::default()
        },
        set_by: "lead".into(),
        set_at: 1,
    };
    let marks = BudgetMarks {
        refused: Some(Amounts {
            tokens: 5_787,
            input_tokens: 1_691,
            usd: MicroUsd(12),
        }),
        warned: true,
    };
    let batch = Changes {
        budgets: vec![(
            "default".into(),
            BudgetScope::Team,
            None,
            Some((team.clone(), marks)),
        )],
        ..Default::default()
    };
    store.commit([&batch], [], []).expect("commit");
    // A row as boardd wrote it before it kept the marks: the budget alone.
    let ana = Budget {
        scope: BudgetScope::Member { name: "ana".into() },
        ..team.clone()
    };
    let old = serde_json::to_string(&ana).expect("json");
    store
        .conn
        .execute(
            "INSERT INTO budgets (team, key, body) VALUES ('default', 'old', ?1)",
            params![old],
        )
        .expect("an old row");
    drop(store);
    let mut store = Store::open(dir.path()).expect("reopen");
    let budgets = store.load().expect("load").budgets;
    assert_eq!(
        budgets,
        vec![
            ("default".to_string(), team, marks),
            ("default".to_string(), ana, BudgetMarks::default()),
        ]
    );
}

#[test]
fn a_version_5_database_gets_the_credentials_table_and_keeps_its_board() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut store = Store::open(dir.path()).expect("open");
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
    let mut store = Store::open(dir.path()).expect("reopen");
    let version: i64 = (store.conn)
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .expect("version");
    assert_eq!(version, SCHEMA_VERSION);
    assert_eq!(store.load().expect("load").teams, vec!["web".to_string()]);
    assert_eq!(history(&store, Some(1)), vec![1]);
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
    let store = Store::open(dir.path()).expect("reopen");
    assert_eq!(store.credentials().expect("credentials"), vec![row(2)]);
}

#[test]
fn a_version_6_database_gets_the_tokens_table_and_keeps_its_credentials() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut store = Store::open(dir.path()).expect("open");
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
    let mut store = Store::open(dir.path()).expect("reopen");
    let version: i64 = (store.conn)
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .expect("version");
    assert_eq!(version, SCHEMA_VERSION);
    assert_eq!(store.credentials().expect("credentials"), vec![member]);
    assert_eq!(store.tokens().expect("tokens"), vec![]);
    // A name's token replaces the one before, a revoke deletes it, and what
    // is left outlives a reopen.
    let token = |team: &str, name: &str, byte| TokenRow {
        team: team.into(),
        name: name.into(),
        digest: [byte; 32],
        created_ms: i64::from(byte),
    };
    let puts = [
        TokenChange::Put(token("web", "ana", 1)),
        TokenChange::Put(token("web", "bo", 2)),
    ];
    store.commit([], [], &puts).expect("commit");
    let later = [
        TokenChange::Put(token("web", "ana", 3)),
        TokenChange::Revoke {
            team: "web".into(),
            name: "bo".into(),
        },
    ];
    store.commit([], [], &later).expect("commit");
    drop(store);
    let store = Store::open(dir.path()).expect("reopen");
    assert_eq!(
        store.tokens().expect("tokens"),
        vec![token("web", "ana", 3)]
    );
}
