//! WAL checkpoints: SQLite's automatic one is off, and boardd's own runs when the
//! daemon is quiet, or regardless once the WAL is past its bound. Real SQLite files
//! and the real writer thread; nothing here sleeps longer than it must, it polls.

use super::{CHECKPOINT_PAGES, CHECKPOINT_PAGES_MAX, CommitMode, Job, ReplyTo, Writer};
use crate::outbox::{Frame, Frames, Outbox};
use crate::reply::Reply;
use crate::store::{HistoryQuery, Store};
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

fn all_events(store: &Store) -> usize {
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

/// A group-commit writer thread on a fresh database.
fn writer() -> (tempfile::TempDir, Writer) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path()).expect("open");
    let writer = Writer::spawn(store, CommitMode::Group, CancellationToken::new()).expect("spawn");
    (dir, writer)
}

#[test]
fn the_wal_grows_past_sqlites_own_checkpoint_until_boardd_checkpoints() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut store = Store::open(dir.path()).expect("open");
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
    assert_eq!(all_events(&store), events);
    drop(store);
    let store = Store::open(dir.path()).expect("reopen");
    assert_eq!(all_events(&store), events, "a checkpoint lost events");
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
    let store = Store::open(dir.path()).expect("reopen");
    assert_eq!(all_events(&store), (seq - 1) as usize);
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
    let store = Store::open(dir.path()).expect("reopen");
    assert_eq!(all_events(&store), (seq - 1) as usize);
}

#[test]
fn a_hello_that_made_a_team_is_answered_once_the_team_is_durable() {
    let (dir, mut writer) = writer();
    let (tx, rx) = tokio::sync::oneshot::channel();
    let mut job = job(1);
    job.changes.teams = vec!["web".into()];
    job.admits.push(super::AdmitTo {
        to: tx,
        authority: crate::auth::Authority::Lead,
    });
    writer.submit(job, false);
    let answer = rx.blocking_recv().expect("the admit is answered");
    assert_eq!(answer, Ok(crate::auth::Authority::Lead));
    // As a restarted boardd reads it: the team is there. (The store is boardd's
    // alone while the writer holds it, so it is read after.)
    writer.finish();
    let mut store = Store::open(dir.path()).expect("open");
    assert_eq!(store.load().expect("load").teams, vec!["web".to_string()]);
}
