//! WAL checkpoints: SQLite's automatic one is off, and boardd's own runs when the
//! daemon is quiet, or regardless once the WAL is past its bound. Real SQLite files
//! and the real writer thread; nothing here sleeps longer than it must, it polls.
//! The WAL is SQLite's own, so those tests run on SQLite only; the rest run on
//! every engine (see `store/tests.rs`).

use super::{CHECKPOINT_PAGES, CHECKPOINT_PAGES_MAX, CommitMode, Job, ReplyTo, Writer};
use crate::outbox::{Frame, Frames, Outbox};
use crate::reply::Reply;
use crate::store::tests::engines;
use crate::store::{Database, HistoryQuery, Store};
use std::path::Path;
use std::time::{Duration, Instant};
use teamboard_board::Changes;
use teamboard_protocol::{Event, EventKind};
use tokio_util::sync::CancellationToken;

/// Events per job, each with a detail of `DETAIL` bytes: about 16 pages a job.
const EVENTS_PER_JOB: usize = 100;
const DETAIL: usize = 600;

fn job(first_seq: u64) -> Job {
    let events = (0..EVENTS_PER_JOB as u64)
        .map(|i| Event {
            seq: first_seq + i,
            team: "default".into(),
            at: 0,
            actor: "lead".into(),
            kind: EventKind::TaskCreated,
            task: Some(first_seq + i),
            member: None,
            message: None,
            detail: "x".repeat(DETAIL),
            request: None,
        })
        .collect();
    Job {
        changes: Changes {
            events,
            next_message_id: 1,
            ..Changes::default()
        },
        ..Job::default()
    }
}

/// Submits the job of events from `first_seq` on and waits until it is
/// acknowledged, as one client with one request at a time would.
///
/// Trap: an answer is not always an acknowledgement. A commit that fails (a full
/// disk) answers this job and every later one with a `storage` error at once, and
/// a test that counted those would end with fewer events in the store than jobs
/// "answered", which reads like a lost write when it is a refused one.
fn submit_and_wait(writer: &mut Writer, out: &Outbox, rx: &Frames, first_seq: u64, id: u64) {
    let mut job = job(first_seq);
    let result = Ok(Reply::Tasks(Vec::new()));
    job.replies.push(ReplyTo::new(out.clone(), id, result));
    writer.submit(job, false);
    // No runtime here to wait on: poll, briefly enough that the writer never sees
    // a quiet millisecond because of it.
    let deadline = Instant::now() + Duration::from_secs(10);
    let answer = loop {
        if let Some(frame) = rx.try_recv() {
            break frame;
        }
        assert!(Instant::now() < deadline, "no answer within 10 s");
        std::thread::sleep(Duration::from_micros(50));
    };
    match answer {
        Frame::Reply {
            id: answered,
            result: Ok(_),
            ..
        } if answered == id => {}
        Frame::Reply { result: Err(e), .. } => {
            panic!("job {id} was refused, not acknowledged: {}", e.message)
        }
        other => panic!("job {id} got {other:?} instead of its acknowledgement"),
    }
}

fn wal_len(dir: &Path) -> u64 {
    std::fs::metadata(dir.join(format!("{}-wal", crate::store::DB_FILE))).map_or(0, |m| m.len())
}

fn all_events(store: &mut Store) -> usize {
    store
        .history(&HistoryQuery {
            team: "default".into(),
            since: Some(0),
            task: None,
            limit: u64::MAX,
        })
        .expect("history")
        .len()
}

fn sqlite(dir: &Path) -> Result<Store, crate::store::StoreError> {
    Store::open(&Database::Sqlite, dir)
}

/// A group-commit writer thread on a fresh database.
fn writer() -> (tempfile::TempDir, Writer) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = sqlite(dir.path()).expect("open");
    let writer = Writer::spawn(store, CommitMode::Group, CancellationToken::new()).expect("spawn");
    (dir, writer)
}

#[test]
fn the_wal_grows_past_sqlites_own_checkpoint_until_boardd_checkpoints() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut store = sqlite(dir.path()).expect("open");
    let mut seq = 1;
    while store.wal_pages() < 2 * CHECKPOINT_PAGES {
        let before = store.wal_pages();
        store.commit([&job(seq).changes], [], []).expect("commit");
        seq += EVENTS_PER_JOB as u64;
        // SQLite would have checkpointed (and the count dropped) at 1,000 pages.
        assert!(
            store.wal_pages() > before,
            "the WAL was checkpointed behind boardd's back"
        );
    }
    store.checkpoint().expect("checkpoint");
    assert_eq!(store.wal_pages(), 0);
    let events = (seq - 1) as usize;
    assert_eq!(all_events(&mut store), events);
    drop(store);
    let mut store = sqlite(dir.path()).expect("reopen");
    assert_eq!(all_events(&mut store), events, "a checkpoint lost events");
}

#[test]
fn the_writer_checkpoints_once_nothing_has_come_for_a_moment() {
    let (dir, mut writer) = writer();
    let (out, rx) = Outbox::detached();
    let mut seq = 1;
    // One answered job at a time until the WAL is seen past the threshold (and
    // below the hard bound), so the test knows a checkpoint is due when it stops.
    // A slow machine may already checkpoint in a gap between two jobs; the loop
    // then simply goes on until it sees the threshold crossed again.
    let mut id = 0;
    while writer.wal_pages() < CHECKPOINT_PAGES {
        assert!(id < 1000, "the WAL never reached {CHECKPOINT_PAGES} pages");
        submit_and_wait(&mut writer, &out, &rx, seq, id);
        seq += EVENTS_PER_JOB as u64;
        id += 1;
    }
    // Nothing more comes: the checkpoint must follow within the quiet time.
    let deadline = Instant::now() + Duration::from_secs(10);
    while writer.wal_pages() != 0 {
        assert!(
            Instant::now() < deadline,
            "no checkpoint 10 s after the last job (WAL at {} pages)",
            writer.wal_pages()
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    writer.finish();
    let mut store = sqlite(dir.path()).expect("reopen");
    assert_eq!(all_events(&mut store), (seq - 1) as usize);
}

#[test]
fn under_endless_load_the_wal_stays_bounded() {
    let (dir, mut writer) = writer();
    let (out, rx) = Outbox::detached();
    let mut seq = 1;
    // Three times the bound as a stream, like one busy client: each job goes in as
    // soon as the one before is answered, so the writer never has a quiet moment
    // and only the bound makes it checkpoint. (On a machine so slow that a gap
    // does reach the quiet time, the checkpoint only comes earlier.)
    let jobs = 3 * CHECKPOINT_PAGES_MAX as u64 / 16;
    for id in 0..jobs {
        submit_and_wait(&mut writer, &out, &rx, seq, id);
        seq += EVENTS_PER_JOB as u64;
    }
    // The WAL file is reused from the start after a checkpoint and never
    // truncated while boardd runs (closing the store removes it), so its length
    // is the most it ever held: the bound plus the one job that crossed it.
    let len = wal_len(dir.path());
    let bound = (u64::from(CHECKPOINT_PAGES_MAX) + 32) * (4096 + 24) + 32;
    assert!(len <= bound, "WAL grew to {len} bytes, over {bound}");
    writer.finish();
    let mut store = sqlite(dir.path()).expect("reopen");
    assert_eq!(all_events(&mut store), (seq - 1) as usize);
}

#[test]
fn a_hello_that_made_a_team_is_answered_once_the_team_is_durable() {
    for engine in engines() {
        let store = engine.open();
        let mut writer =
            Writer::spawn(store, CommitMode::Group, CancellationToken::new()).expect("spawn");
        let (tx, rx) = tokio::sync::oneshot::channel();
        let mut job = job(1);
        job.changes.teams = vec!["web".into()];
        job.admits.push(super::AdmitTo {
            to: tx,
            authority: crate::auth::Authority::Lead,
        });
        writer.submit(job, false);
        let answer = rx.blocking_recv().expect("the admit is answered");
        assert_eq!(answer, Ok(crate::auth::Authority::Lead), "{}", engine.name);
        // As a restarted boardd reads it: the team is there. (The store is boardd's
        // alone while the writer holds it, so it is read after.)
        writer.finish();
        let mut store = engine.open();
        let teams = store.load().expect("load").teams;
        assert_eq!(teams, vec!["web".to_string()], "{}", engine.name);
    }
}

#[test]
fn a_failed_commit_acknowledges_nothing_and_refuses_what_follows() {
    for engine in engines() {
        let mut store = engine.open();
        // What makes a commit fail differs by engine; here, a row that cannot be
        // written: a task table that is gone.
        crate::store::tests::raw(&mut store, "DROP TABLE tasks", &[]);
        let fatal = CancellationToken::new();
        let mut writer = Writer::spawn(store, CommitMode::Group, fatal.clone()).expect("spawn");
        let (out, rx) = Outbox::detached();
        let mut failing = job(1);
        failing.changes.tasks = vec![("default".into(), task(1))];
        failing
            .replies
            .push(ReplyTo::new(out.clone(), 1, Ok(Reply::Tasks(Vec::new()))));
        let mut after = job(2);
        after
            .replies
            .push(ReplyTo::new(out.clone(), 2, Ok(Reply::Tasks(Vec::new()))));
        writer.submit(failing, false);
        writer.submit(after, false);
        writer.finish();
        for id in [1, 2] {
            match rx.try_recv() {
                Some(Frame::Reply {
                    id: answered,
                    result: Err(e),
                    ..
                }) if answered == id => {
                    assert_eq!(
                        e.code,
                        teamboard_protocol::ErrorCode::Storage,
                        "{}",
                        engine.name
                    )
                }
                other => panic!("{}: job {id} got {other:?}", engine.name),
            }
        }
        assert!(fatal.is_cancelled(), "{}: boardd goes on", engine.name);
        let mut store = engine.open();
        assert_eq!(
            all_events(&mut store),
            0,
            "{}: a failed batch was written",
            engine.name
        );
    }
}

/// A boardd deposed by another (the leadership term moved) refuses its next
/// batch with a `storage` error, writes none of it, and stops.
#[test]
fn a_deposed_writer_acknowledges_nothing_and_stops() {
    let Some(url) = teamboard_testkit::pg::database_or_skip() else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let database = Database::Postgres(url.clone());
    let mut store = Store::open(&database, dir.path()).expect("open");
    if let Store::Pg(pg) = &mut store {
        pg.set_fence(Some(0));
    }
    let fatal = CancellationToken::new();
    let mut writer = Writer::spawn(store, CommitMode::Group, fatal.clone()).expect("spawn");
    let (out, rx) = Outbox::detached();
    submit_and_wait(&mut writer, &out, &rx, 1, 1);
    postgres::Client::connect(&url, postgres::NoTls)
        .and_then(|mut c| c.execute("UPDATE leadership SET term = 1 WHERE id = 1", &[]))
        .expect("another boardd takes over");
    let mut deposed = job(1 + EVENTS_PER_JOB as u64);
    deposed
        .replies
        .push(ReplyTo::new(out.clone(), 2, Ok(Reply::Tasks(Vec::new()))));
    writer.submit(deposed, false);
    writer.finish();
    match rx.try_recv() {
        Some(Frame::Reply {
            id: 2,
            result: Err(e),
            ..
        }) => assert!(e.message.contains("deposed"), "{}", e.message),
        other => panic!("the deposed batch got {other:?}"),
    }
    assert!(fatal.is_cancelled(), "a deposed boardd goes on");
    let mut store = Store::open(&database, dir.path()).expect("reopen");
    assert_eq!(
        all_events(&mut store),
        EVENTS_PER_JOB,
        "the deposed batch was written"
    );
}

/// The database server drops boardd's connection: the next commit fails, is
/// refused with a `storage` error, boardd stops, and a restart reloads what was
/// acknowledged before.
#[test]
fn a_lost_database_connection_stops_the_writer_and_loses_nothing_acknowledged() {
    let Some(url) = teamboard_testkit::pg::database_or_skip() else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let database = Database::Postgres(url.clone());
    let store = Store::open(&database, dir.path()).expect("open");
    let fatal = CancellationToken::new();
    let mut writer = Writer::spawn(store, CommitMode::Group, fatal.clone()).expect("spawn");
    let (out, rx) = Outbox::detached();
    submit_and_wait(&mut writer, &out, &rx, 1, 1);
    let cut = postgres::Client::connect(&url, postgres::NoTls).and_then(|mut c| {
        c.query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
             WHERE datname = current_database() AND application_name = 'boardd'",
            &[],
        )
    });
    assert_eq!(cut.expect("terminate boardd's connection").len(), 1);
    let mut lost = job(1 + EVENTS_PER_JOB as u64);
    lost.replies
        .push(ReplyTo::new(out.clone(), 2, Ok(Reply::Tasks(Vec::new()))));
    writer.submit(lost, false);
    writer.finish();
    match rx.try_recv() {
        Some(Frame::Reply {
            id: 2,
            result: Err(e),
            ..
        }) => assert_eq!(e.code, teamboard_protocol::ErrorCode::Storage),
        other => panic!("the batch after the cut got {other:?}"),
    }
    assert!(fatal.is_cancelled(), "boardd goes on without its database");
    let mut store = Store::open(&database, dir.path()).expect("reopen");
    assert_eq!(all_events(&mut store), EVENTS_PER_JOB);
}

fn task(id: u64) -> teamboard_protocol::Task {
    serde_json::from_value(serde_json::json!({
        "id": id, "subject": "s", "description": "", "status": "pending",
        "owner": null, "blocked_by": [], "priority": 0, "attempts": 0,
        "created_at": 0, "updated_at": 0
    }))
    .expect("a task")
}
