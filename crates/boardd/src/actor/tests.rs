//! Actor tests under tokio's paused clock: leases, wait timeouts and the restart
//! grace period, without sleeping. The actor runs with a real SQLite store that
//! commits inline (see [`Writer::inline`]), so no other thread can make the paused
//! runtime look idle and jump the clock.

use crate::actor::{Actor, Cmd, DaemonInfo};
use crate::outbox::{Frame, Frames, Outbox};
use crate::store::Store;
use crate::writer::{CommitMode, Writer};
use std::sync::Arc;
use std::time::Duration;
use teamboard_board::{Board, BoardConfig};
use teamboard_protocol::request::*;
use teamboard_protocol::{Claim, ErrorCode, Request, Task, TaskStatus, Work};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

const TTL: Duration = Duration::from_secs(30);

struct Harness {
    tx: mpsc::Sender<Cmd>,
    stop: CancellationToken,
    actor: tokio::task::JoinHandle<()>,
    next_id: u64,
    _dir: tempfile::TempDir,
}

/// One fake connection: its session id and the frames the actor sends it.
struct Session {
    id: u64,
    rx: Frames,
}

impl Harness {
    fn start_in(dir: tempfile::TempDir) -> Harness {
        let mut store = Store::open(dir.path()).expect("open store");
        let snap = store.load().expect("load");
        let config = BoardConfig {
            lease_ttl: TTL,
            restart_grace: Duration::from_secs(10),
            ..BoardConfig::default()
        };
        let board = Board::restore(config, snap, Actor::now());
        let fatal = CancellationToken::new();
        let writer = Writer::inline(store, fatal);
        let info = DaemonInfo {
            started: std::time::Instant::now(),
            socket: dir.path().join("s"),
            state_dir: dir.path().to_path_buf(),
            live: Arc::default(),
            commits: writer.counters(),
        };
        let actor = Actor::new(board, writer, CommitMode::Group, info);
        let (tx, rx) = mpsc::channel(64);
        let stop = CancellationToken::new();
        let actor = tokio::spawn(actor.run(rx, stop.clone()));
        Harness {
            tx,
            stop,
            actor,
            next_id: 1,
            _dir: dir,
        }
    }

    fn start() -> Harness {
        Self::start_in(tempfile::tempdir().expect("tempdir"))
    }

    async fn stop(self) -> tempfile::TempDir {
        self.stop.cancel();
        let _ = self.actor.await;
        self._dir
    }

    /// Opens a session, as a connection does after its hello.
    async fn session(&self, id: u64, name: &'static str) -> Session {
        let (out, rx) = Outbox::detached();
        let open = Cmd::Open {
            session: id,
            team: "default".into(),
            name: name.into(),
            out,
        };
        self.tx.send(open).await.expect("actor alive");
        Session { id, rx }
    }

    async fn send(&mut self, s: &Session, request: Request) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        let cmd = Cmd::Request {
            session: s.id,
            id,
            request,
        };
        self.tx.send(cmd).await.expect("actor alive");
        id
    }

    /// Sends a request and returns its answer as JSON, or the error code.
    async fn call(
        &mut self,
        s: &mut Session,
        request: Request,
    ) -> Result<serde_json::Value, ErrorCode> {
        let id = self.send(s, request).await;
        answer(s, id).await
    }

    async fn disconnect(&mut self, s: &Session) {
        self.tx
            .send(Cmd::Close { session: s.id })
            .await
            .expect("actor alive");
    }
}

async fn answer(s: &mut Session, want: u64) -> Result<serde_json::Value, ErrorCode> {
    loop {
        match s.rx.recv().await.expect("outbox open") {
            Frame::Reply { id, result, .. } if id == want => {
                return result
                    .map(|r| serde_json::to_value(r).expect("serialise"))
                    .map_err(|e| e.code);
            }
            _ => continue,
        }
    }
}

fn decode<T: serde::de::DeserializeOwned>(v: serde_json::Value) -> T {
    serde_json::from_value(v).expect("decode")
}

async fn task(h: &mut Harness, lead: &mut Session, id: u64) -> Task {
    let v = h
        .call(lead, Request::GetTask(TaskRef { id }))
        .await
        .expect("get_task");
    decode(v)
}

async fn add(h: &mut Harness, lead: &mut Session, subject: &str) -> Task {
    let new = NewTask {
        subject: subject.into(),
        ..Default::default()
    };
    decode(h.call(lead, Request::AddTask(new)).await.expect("add"))
}

fn register(role: &str) -> Request {
    Request::Register(RegisterArgs {
        role: role.into(),
        pid: None,
    })
}

#[tokio::test(start_paused = true)]
async fn lease_expires_without_heartbeat_and_not_before() {
    let mut h = Harness::start();
    let mut lead = h.session(1, "lead").await;
    let mut w = h.session(2, "w1").await;
    let t = add(&mut h, &mut lead, "work").await;
    h.call(&mut w, register("dev")).await.expect("register");
    let claim: Option<Claim> = decode(
        h.call(&mut w, Request::ClaimNext(NoArgs {}))
            .await
            .expect("claim"),
    );
    let claim = claim.expect("a ready task");
    assert_eq!(claim.task.id, t.id);

    // A heartbeat just before expiry extends the lease by a full TTL.
    tokio::time::advance(TTL - Duration::from_secs(1)).await;
    let hb = ClaimRef {
        id: t.id,
        epoch: claim.epoch,
    };
    h.call(&mut w, Request::Heartbeat(hb))
        .await
        .expect("heartbeat");
    tokio::time::advance(TTL - Duration::from_secs(1)).await;
    assert_eq!(
        task(&mut h, &mut lead, t.id).await.status,
        TaskStatus::InProgress
    );

    // Now stop heartbeating: one TTL later the claim is gone.
    tokio::time::advance(Duration::from_secs(2)).await;
    let after = task(&mut h, &mut lead, t.id).await;
    assert_eq!(after.status, TaskStatus::Pending);
    assert_eq!(after.owner, None);
    assert!(
        after
            .last_error
            .unwrap_or_default()
            .contains("lease expired")
    );

    // The late claimant is fenced off.
    let late = CompleteArgs {
        id: t.id,
        epoch: claim.epoch,
        result: "too late".into(),
    };
    let err = h
        .call(&mut w, Request::CompleteTask(late))
        .await
        .unwrap_err();
    assert_eq!(err, ErrorCode::StaleEpoch);
    h.stop().await;
}

#[tokio::test(start_paused = true)]
async fn wait_for_work_times_out_then_wakes_on_new_task() {
    let mut h = Harness::start();
    let mut lead = h.session(1, "lead").await;
    let mut w = h.session(2, "w1").await;
    h.call(&mut w, register("dev")).await.expect("register");

    let wait = Request::WaitForWork(WaitArgs {
        timeout_ms: Some(60_000),
    });
    let work: Work = decode(h.call(&mut w, wait.clone()).await.expect("wait"));
    assert_eq!(work, Work::Timeout);

    // Parked with a long timeout, the waiter is woken by the task, not the clock.
    let id = h.send(&w, wait).await;
    let t = add(&mut h, &mut lead, "new").await;
    let work: Work = decode(answer(&mut w, id).await.expect("woken"));
    match work {
        Work::Task { claim } => assert_eq!(claim.task.id, t.id),
        other => panic!("expected a task, got {other:?}"),
    }
    h.stop().await;
}

#[tokio::test(start_paused = true)]
async fn restart_grace_keeps_a_claim_for_its_owner_and_then_lets_go() {
    let mut h = Harness::start();
    let mut lead = h.session(1, "lead").await;
    let mut w = h.session(2, "w1").await;
    let kept = add(&mut h, &mut lead, "kept").await;
    let lost = add(&mut h, &mut lead, "lost").await;
    let mut other = h.session(3, "w2").await;
    h.call(&mut w, register("dev")).await.expect("register");
    h.call(&mut other, register("dev")).await.expect("register");
    let c1: Claim = decode(
        h.call(&mut w, Request::ClaimTask(TaskRef { id: kept.id }))
            .await
            .expect("claim"),
    );
    h.call(&mut other, Request::ClaimTask(TaskRef { id: lost.id }))
        .await
        .expect("claim");
    // Stop the daemon without disconnecting anyone, as a crash would.
    let dir = h.stop().await;

    let mut h = Harness::start_in(dir);
    let mut lead = h.session(10, "lead").await;
    let mut w = h.session(11, "w1").await;
    tokio::time::advance(Duration::from_secs(5)).await;
    assert_eq!(
        task(&mut h, &mut lead, kept.id).await.status,
        TaskStatus::InProgress
    );
    h.call(&mut w, register("dev")).await.expect("re-register");
    tokio::time::advance(Duration::from_secs(6)).await;
    // w1 came back within the grace period and keeps its claim; w2 did not.
    assert_eq!(
        task(&mut h, &mut lead, lost.id).await.status,
        TaskStatus::Pending
    );
    let done = CompleteArgs {
        id: kept.id,
        epoch: c1.epoch,
        result: "done".into(),
    };
    let t: Task = decode(
        h.call(&mut w, Request::CompleteTask(done))
            .await
            .expect("complete"),
    );
    assert_eq!(t.status, TaskStatus::Completed);
    h.disconnect(&w).await;
    h.stop().await;
}
