//! What every engine must keep: each test runs against SQLite and against
//! PostgreSQL (skipped, with a printed `skipped: …`, when there is no server,
//! unless `TEAMBOARD_REQUIRE_PG=1`). Each engine's own tests (SQLite's
//! migrations and query plans, PostgreSQL's lock and fence) are beside it.

use super::*;
use teamboard_protocol::EventKind;

/// A database to run a test against, and what keeps it alive.
pub(crate) struct Engine {
    pub name: &'static str,
    pub database: Database,
    pub dir: tempfile::TempDir,
}

impl Engine {
    pub fn open(&self) -> Store {
        Store::open(&self.database, self.dir.path())
            .unwrap_or_else(|e| panic!("{}: open: {e}", self.name))
    }
}

/// SQLite, and PostgreSQL when there is a server.
pub(crate) fn engines() -> Vec<Engine> {
    let dir = || tempfile::tempdir().expect("tempdir");
    let mut out = vec![Engine {
        name: "sqlite",
        database: Database::Sqlite,
        dir: dir(),
    }];
    if let Some(url) = teamboard_testkit::pg::database_or_skip() {
        out.push(Engine {
            name: "postgres",
            database: Database::Postgres(url),
            dir: dir(),
        });
    }
    out
}

/// Runs SQL of the test's own on either engine: `$1`-style parameters, which
/// SQLite reads in order too.
pub(crate) fn raw(store: &mut Store, sql: &str, params: &[&str]) {
    match store {
        Store::Sqlite(s) => s.execute_raw(sql, params),
        Store::Pg(s) => s.execute_raw(sql, params),
    }
}

pub(crate) fn event(seq: u64, task: Option<TaskId>) -> Event {
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

pub(super) fn history(store: &mut Store, task: Option<TaskId>) -> Vec<u64> {
    page(store, task, Some(0), u64::MAX)
}

fn page(store: &mut Store, task: Option<TaskId>, since: Option<u64>, limit: u64) -> Vec<u64> {
    store
        .history(&HistoryQuery {
            team: "default".into(),
            since,
            task,
            limit,
        })
        .expect("history")
        .iter()
        .map(|e| e.seq)
        .collect()
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
fn history_pages_forward_and_reads_the_newest_by_team_and_by_task() {
    for engine in engines() {
        let mut store = engine.open();
        let events = [
            (1, Some(1)),
            (2, None),
            (3, Some(2)),
            (4, Some(1)),
            (5, None),
        ]
        .map(|(seq, task)| event(seq, task));
        let mut other_team = event(6, Some(1));
        other_team.team = "web".into();
        let batch = Changes {
            events: events.into_iter().chain([other_team]).collect(),
            ..Default::default()
        };
        store.commit([&batch], [], []).expect("commit");
        let name = engine.name;
        assert_eq!(history(&mut store, None), vec![1, 2, 3, 4, 5], "{name}");
        assert_eq!(history(&mut store, Some(1)), vec![1, 4], "{name}");
        assert_eq!(page(&mut store, None, Some(2), 2), vec![3, 4], "{name}");
        assert_eq!(page(&mut store, None, None, 2), vec![4, 5], "{name}");
        assert_eq!(page(&mut store, Some(1), None, 1), vec![4], "{name}");
        drop(store);
        let mut store = engine.open();
        assert_eq!(history(&mut store, Some(2)), vec![3], "{name}");
        assert_eq!(store.load().expect("load").next_event_seq, 7, "{name}");
    }
}

#[test]
fn messages_credentials_and_teams_outlive_a_reopen() {
    use teamboard_protocol::{Message, MessageKind};
    for engine in engines() {
        let name = engine.name;
        let mut store = engine.open();
        let message = |id| Message {
            id,
            from: "lead".into(),
            to: "ana".into(),
            kind: MessageKind::Message,
            content: format!("message {id} with a \u{0} inside"),
            request_id: None,
            at: 1,
        };
        let sent = Changes {
            messages_added: vec![("web".into(), message(1)), ("web".into(), message(2))],
            teams: vec!["web".into()],
            next_message_id: 3,
            ..Default::default()
        };
        let acked = Changes {
            messages_acked: vec![1],
            teams: vec!["web".into()],
            next_message_id: 3,
            ..Default::default()
        };
        let row = |byte| CredentialRow {
            team: "web".into(),
            name: "ana".into(),
            digest: [byte; 32],
        };
        store
            .commit([&sent, &acked], [&row(1)], [])
            .expect("commit");
        // A member's credential replaces the one before.
        store.commit([], [&row(2)], []).expect("commit");
        drop(store);
        let mut store = engine.open();
        let snap = store.load().expect("load");
        assert_eq!(snap.teams, vec!["web".to_string()], "{name}");
        assert_eq!(snap.messages, vec![("web".into(), message(2))], "{name}");
        assert_eq!(snap.next_message_id, 3, "{name}");
        assert_eq!(
            store.credentials().expect("credentials"),
            vec![row(2)],
            "{name}"
        );
    }
}

#[test]
fn a_row_that_does_not_decode_fails_the_restore_and_names_its_table() {
    for engine in engines() {
        for (table, what) in [("tasks", "task"), ("account_blocks", "account block")] {
            let mut store = engine.open();
            let sql = match table {
                "tasks" => "INSERT INTO tasks (team, id, body) VALUES ('default', 1, $1)",
                _ => "INSERT INTO account_blocks (account, body) VALUES ('acme', $1)",
            };
            raw(&mut store, sql, &["{not json"]);
            match store.load() {
                Err(StoreError::Corrupt { what: said, .. }) => {
                    assert_eq!(said, what, "{}", engine.name)
                }
                Err(other) => panic!("{}: {table}: {other}", engine.name),
                Ok(_) => panic!("{}: {table}: restored", engine.name),
            }
            raw(&mut store, &format!("DELETE FROM {table}"), &[]);
        }
    }
}

#[test]
fn a_member_row_from_before_runtimes_loads_as_native_and_a_runtime_round_trips() {
    for engine in engines() {
        let mut store = engine.open();
        // A row as boardd wrote it before members had a runtime: no field at all.
        raw(
            &mut store,
            "INSERT INTO members (team, name, body) VALUES ('default', 'old', $1)",
            &[
                r#"{"name":"old","role":"dev","status":"idle","last_seen":1,"pid":7,
                "task":null,"tokens":{"input":0,"output":0},"connected":false,
                "joined_at":1}"#,
            ],
        );
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
        let mut store = engine.open();
        let mut members = store.load().expect("load").members;
        members.sort_by(|a, b| a.1.name.cmp(&b.1.name));
        assert_eq!(members.len(), 2, "{}", engine.name);
        assert_eq!(members[0].1, new, "{}", engine.name);
        assert_eq!(members[1].1.name, "old", "{}", engine.name);
        assert_eq!(members[1].1.runtime, None, "{}", engine.name);
    }
}

#[test]
fn a_budget_keeps_what_it_came_to_and_an_older_row_reads_without_it() {
    use teamboard_board::BudgetMarks;
    use teamboard_protocol::spend::{Amounts, Budget, BudgetScope, Limits, MicroUsd};
    for engine in engines() {
        let mut store = engine.open();
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
        raw(
            &mut store,
            "INSERT INTO budgets (team, key, body) VALUES ('default', 'old', $1)",
            &[&old],
        );
        drop(store);
        let mut store = engine.open();
        let budgets = store.load().expect("load").budgets;
        assert_eq!(
            budgets,
            vec![
                ("default".to_string(), team, marks),
                ("default".to_string(), ana, BudgetMarks::default()),
            ],
            "{}",
            engine.name
        );
    }
}

#[test]
fn a_token_replaces_the_one_before_a_revoke_deletes_it_and_the_rest_outlives_a_reopen() {
    use crate::store::{TokenChange, TokenRow};
    for engine in engines() {
        let name = engine.name;
        let mut store = engine.open();
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
        // In one group, in order: ana's new token stands, bo's is gone.
        let later = [
            TokenChange::Put(token("web", "ana", 3)),
            TokenChange::Revoke {
                team: "web".into(),
                name: "bo".into(),
            },
        ];
        store.commit([], [], &later).expect("commit");
        drop(store);
        let mut store = engine.open();
        assert_eq!(
            store.tokens().expect("tokens"),
            vec![token("web", "ana", 3)],
            "{name}"
        );
    }
}

/// One group that puts and deletes the same keys, in every order: each engine
/// ends where applying the batches one by one, in order, ends (PostgreSQL
/// collapses a group to one statement per table, SQLite writes row by row).
#[test]
fn a_group_that_touches_a_key_twice_ends_as_its_batches_applied_in_order() {
    use crate::store::{TokenChange, TokenRow};
    use teamboard_protocol::{Message, MessageKind};
    let task = |id: u64, subject: &str| -> teamboard_protocol::Task {
        serde_json::from_value(serde_json::json!({
            "id": id, "subject": subject, "description": "", "status": "pending",
            "owner": null, "blocked_by": [], "priority": 0, "attempts": 0,
            "created_at": 0, "updated_at": 0
        }))
        .expect("a task")
    };
    let member = |name: &str, role: &str| -> teamboard_protocol::Member {
        serde_json::from_value(serde_json::json!({
            "name": name, "role": role, "status": "idle", "last_seen": 1, "pid": null,
            "task": null, "tokens": {"input": 0, "output": 0}, "connected": false,
            "joined_at": 1
        }))
        .expect("a member")
    };
    let message = |id| Message {
        id,
        from: "lead".into(),
        to: "ana".into(),
        kind: MessageKind::Message,
        content: format!("message {id}"),
        request_id: None,
        at: 1,
    };
    let token = |name: &str, byte| TokenRow {
        team: "web".into(),
        name: name.into(),
        digest: [byte; 32],
        created_ms: i64::from(byte),
    };
    fn web<T>(t: T) -> (String, T) {
        ("web".to_string(), t)
    }
    let credential = |byte| CredentialRow {
        team: "web".into(),
        name: "ana".into(),
        digest: [byte; 32],
    };
    let before = Changes {
        tasks: vec![web(task(4, "before"))],
        next_message_id: 1,
        ..Default::default()
    };
    let tokens_before = [TokenChange::Put(token("cy", 1))];
    let group = [
        Changes {
            // Task 1 put here and deleted in the next batch; task 2 put and
            // deleted in this one (deletes come after puts); task 4 deleted
            // here and put again in the last batch.
            tasks: vec![web(task(1, "one")), web(task(2, "two"))],
            tasks_deleted: vec![web(2), web(4)],
            members: vec![web(member("ana", "dev"))],
            messages_added: vec![web(message(1)), web(message(2))],
            next_message_id: 3,
            ..Default::default()
        },
        Changes {
            tasks: vec![web(task(3, "three"))],
            tasks_deleted: vec![web(1)],
            members: vec![web(member("ana", "lead")), web(member("bo", "dev"))],
            messages_acked: vec![1],
            next_message_id: 3,
            ..Default::default()
        },
        Changes {
            tasks: vec![web(task(4, "again")), web(task(3, "three, edited"))],
            next_message_id: 3,
            ..Default::default()
        },
    ];
    let tokens = [
        TokenChange::Put(token("ana", 2)),
        TokenChange::Revoke {
            team: "web".into(),
            name: "ana".into(),
        },
        TokenChange::Revoke {
            team: "web".into(),
            name: "cy".into(),
        },
        TokenChange::Put(token("cy", 3)),
        TokenChange::Put(token("bo", 4)),
        TokenChange::Put(token("bo", 5)),
    ];
    let mut ends = Vec::new();
    for engine in engines() {
        let name = engine.name;
        let mut store = engine.open();
        store.commit([&before], [], &tokens_before).expect("commit");
        store
            .commit(&group, [&credential(1), &credential(2)], &tokens)
            .expect("commit");
        drop(store);
        let mut store = engine.open();
        let snap = store.load().expect("load");
        let mut tasks: Vec<_> = snap
            .tasks
            .iter()
            .map(|(_, t)| (t.id, t.subject.clone()))
            .collect();
        tasks.sort();
        let mut members: Vec<_> = snap
            .members
            .iter()
            .map(|(_, m)| (m.name.clone(), m.role.clone()))
            .collect();
        members.sort();
        let messages: Vec<u64> = snap.messages.iter().map(|(_, m)| m.id).collect();
        let end = (
            tasks,
            members,
            messages,
            store.tokens().expect("tokens"),
            store.credentials().expect("credentials"),
        );
        let expected = (
            vec![(3, "three, edited".to_string()), (4, "again".to_string())],
            vec![
                ("ana".to_string(), "lead".to_string()),
                ("bo".to_string(), "dev".to_string()),
            ],
            vec![2],
            vec![token("bo", 5), token("cy", 3)],
            vec![credential(2)],
        );
        assert_eq!(end, expected, "{name}");
        ends.push((name, end));
    }
    for (name, end) in &ends[1..] {
        assert_eq!(end, &ends[0].1, "{name} ends where {} ends", ends[0].0);
    }
}
