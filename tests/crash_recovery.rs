//! `kill -9` under load: everything boardd acknowledged survives, ids are never
//! reused, and claims held at the crash lapse after the restart grace unless their
//! owner comes back in time.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "test code: a panic fails the test, and the harness captures what it prints"
)]

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use teamboard_protocol::request::EventsArgs;
use teamboard_protocol::{Client, EventKind, MessageKind, TaskId, TaskStatus, Work};
use teamboard_testkit::{Daemon, connect, lead, short_tempdir, task, teammate};
use tokio::task::JoinSet;

/// Seconds a claim survives the restart without its owner.
const GRACE: &str = "3";

/// What the clients were told: only acknowledged changes go in here.
#[derive(Default)]
struct Acked {
    /// Task id → subject.
    created: BTreeMap<TaskId, String>,
    /// Task id → (who completed it, result).
    completed: BTreeMap<TaskId, (String, String)>,
    /// Message id → content, sent to the mailbox.
    sent: BTreeMap<u64, String>,
    /// Messages whose ack was sent, answered or not.
    ack_tried: BTreeSet<u64>,
    /// Messages whose ack was answered.
    ack_done: BTreeSet<u64>,
}

struct Load {
    acked: Mutex<Acked>,
    ops: AtomicUsize,
    /// Set once the daemon was killed: errors from then on are expected.
    killed: AtomicBool,
}

impl Load {
    fn record(&self, f: impl FnOnce(&mut Acked)) {
        f(&mut self.acked.lock().unwrap());
        self.ops.fetch_add(1, Ordering::Relaxed);
    }

    /// An error is expected only once the daemon is gone.
    fn check<T>(&self, who: &str, r: Result<T, teamboard_protocol::ClientError>) -> Option<T> {
        match r {
            Ok(v) => Some(v),
            Err(e) => {
                assert!(
                    self.killed.load(Ordering::SeqCst),
                    "{who} failed before the crash: {e}"
                );
                None
            }
        }
    }
}

/// The lead adds tasks, a few at a time.
async fn lead_load(client: Client, load: Arc<Load>) {
    let client = Arc::new(client);
    for round in 0u64.. {
        let mut set = JoinSet::new();
        for i in 0..4 {
            let client = client.clone();
            let subject = format!("load {round}.{i}");
            set.spawn(async move { (subject.clone(), client.add_task(task(subject)).await) });
        }
        let mut failed = false;
        while let Some(r) = set.join_next().await {
            let (subject, r) = r.unwrap();
            match load.check("lead", r) {
                Some(t) => {
                    assert_eq!(t.subject, subject);
                    load.record(|a| {
                        assert!(a.created.insert(t.id, subject).is_none(), "id reused");
                    });
                }
                None => failed = true,
            }
        }
        if failed {
            return;
        }
    }
}

/// A worker waits for work, completes it, and waits again.
async fn worker_load(name: String, client: Client, load: Arc<Load>) {
    loop {
        let Some(work) = load.check(&name, client.wait_for_work(Some(200)).await) else {
            return;
        };
        let claim = match work {
            Work::Task { claim } => claim,
            Work::Timeout => continue,
            Work::Messages { messages } => panic!("{name} got messages: {messages:?}"),
        };
        let result = format!("#{} by {name}", claim.task.id);
        let r = client
            .complete_task(claim.task.id, claim.epoch, &result)
            .await;
        let Some(t) = load.check(&name, r) else {
            return;
        };
        assert_eq!(t.status, TaskStatus::Completed);
        load.record(|a| {
            a.completed.insert(t.id, (name.clone(), result));
        });
    }
}

/// A sender messages the mailbox; the mailbox acknowledges every other message.
async fn message_load(sender: Client, mailbox: Client, load: Arc<Load>) {
    for n in 0u64.. {
        let content = format!("message {n}");
        let r = sender
            .send("mailbox", MessageKind::Message, &content, None)
            .await;
        let Some(m) = load.check("sender", r) else {
            return;
        };
        load.record(|a| {
            a.sent.insert(m.id, content);
        });
        if n % 2 == 1 {
            load.acked.lock().unwrap().ack_tried.insert(m.id);
            let Some(acked) = load.check("mailbox", mailbox.ack(vec![m.id]).await) else {
                return;
            };
            assert_eq!(acked.acked, 1);
            load.record(|a| {
                a.ack_done.insert(m.id);
            });
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kill_dash_nine_loses_nothing_acknowledged() {
    let dir = short_tempdir();
    let socket = dir.path().join("s");
    let state = dir.path().join("state");
    let args = ["--restart-grace", GRACE];
    let mut daemon = Daemon::start(&socket, &state, &args).await;

    // Two claims taken before the load starts: one owner comes back after the
    // crash, the other never does.
    let boss = lead(&socket).await;
    let kept = boss.add_task(task("kept across the crash")).await.unwrap();
    let lost = boss.add_task(task("lapses after the crash")).await.unwrap();
    let keeper = teammate(&socket, "keeper", "solo").await;
    let keeper_claim = keeper.claim_task(kept.id).await.unwrap();
    let loser = teammate(&socket, "loser", "solo").await;
    let loser_claim = loser.claim_task(lost.id).await.unwrap();

    let load = Arc::new(Load {
        acked: Mutex::default(),
        ops: AtomicUsize::new(0),
        killed: AtomicBool::new(false),
    });
    load.record(|a| {
        a.created.insert(kept.id, kept.subject.clone());
        a.created.insert(lost.id, lost.subject.clone());
    });
    let mut set = JoinSet::new();
    set.spawn(lead_load(lead(&socket).await, load.clone()));
    for i in 0..3 {
        let name = format!("worker{i}");
        let client = teammate(&socket, &name, "dev").await;
        set.spawn(worker_load(name, client, load.clone()));
    }
    let mailbox = teammate(&socket, "mailbox", "inbox").await;
    set.spawn(message_load(lead(&socket).await, mailbox, load.clone()));

    // Let the load run for some hundreds of acknowledged operations (or a second,
    // on a slow machine), then pull the plug mid-flight.
    let started = Instant::now();
    teamboard_testkit::eventually("load to build up", Duration::from_secs(10), || {
        let enough =
            load.ops.load(Ordering::Relaxed) >= 600 || started.elapsed() > Duration::from_secs(1);
        async move { enough.then_some(()) }
    })
    .await;
    load.killed.store(true, Ordering::SeqCst);
    daemon.kill9();
    let ops_at_kill = load.ops.load(Ordering::Relaxed);
    // Every client sees its connection close and stops.
    tokio::time::timeout(Duration::from_secs(10), async {
        while let Some(r) = set.join_next().await {
            r.expect("a load client panicked");
        }
    })
    .await
    .expect("load clients stop once the daemon is gone");
    let acked = std::mem::take(&mut *load.acked.lock().unwrap());
    eprintln!(
        "killed after {ops_at_kill} acknowledged ops ({} tasks created, {} completed, {} messages, {} acks)",
        acked.created.len(),
        acked.completed.len(),
        acked.sent.len(),
        acked.ack_done.len()
    );
    assert!(acked.created.len() > 2, "the load created tasks");
    assert!(!acked.completed.is_empty(), "the load completed tasks");
    assert!(!acked.sent.is_empty(), "the load sent messages");
    drop((boss, keeper, loser));

    // Restart on the same state directory; the socket file is stale.
    assert!(socket.exists(), "kill -9 leaves the socket file behind");
    let restarted_at = Instant::now();
    let _daemon = Daemon::start(&socket, &state, &args).await;

    // The keeper comes back within the grace period and keeps its claim. Until it
    // registers, its connection cannot use the claim.
    let keeper = connect(&socket, "keeper").await;
    assert_eq!(
        teamboard_testkit::code_of(keeper.heartbeat(kept.id, keeper_claim.epoch).await),
        teamboard_protocol::ErrorCode::StaleEpoch
    );
    keeper.register("solo", None).await.expect("register again");
    assert!(
        restarted_at.elapsed() < Duration::from_secs(2),
        "the keeper took {:?} to come back; the grace is {GRACE} s",
        restarted_at.elapsed()
    );
    let me = keeper.team().await.unwrap();
    let me = me.iter().find(|m| m.name == "keeper").unwrap();
    assert_eq!(me.task, Some(kept.id), "the keeper holds its task again");
    let t = keeper
        .heartbeat(kept.id, keeper_claim.epoch)
        .await
        .expect("the adopted claim keeps its epoch");
    assert_eq!(t.epoch, keeper_claim.epoch);

    let boss = lead(&socket).await;
    let tasks: BTreeMap<TaskId, _> = boss
        .list_tasks(None)
        .await
        .unwrap()
        .into_iter()
        .map(|t| (t.id, t))
        .collect();

    // Every acknowledged task exists with its subject.
    for (id, subject) in &acked.created {
        let t = tasks
            .get(id)
            .unwrap_or_else(|| panic!("acknowledged task #{id} is gone"));
        assert_eq!(&t.subject, subject, "#{id}");
    }
    // Every acknowledged completion is there, by its owner, with its result.
    for (id, (owner, result)) in &acked.completed {
        let t = &tasks[id];
        assert_eq!(t.status, TaskStatus::Completed, "#{id}");
        assert_eq!(t.owner.as_deref(), Some(owner.as_str()), "#{id}");
        assert_eq!(t.result.as_deref(), Some(result.as_str()), "#{id}");
    }
    // Every acknowledged message is still in the mailbox unless its ack went out;
    // no acknowledged ack is undone.
    let mailbox = connect(&socket, "mailbox").await;
    let inbox: BTreeMap<u64, _> = mailbox
        .inbox()
        .await
        .unwrap()
        .into_iter()
        .map(|m| (m.id, m))
        .collect();
    for (id, content) in &acked.sent {
        if acked.ack_tried.contains(id) {
            continue;
        }
        let m = inbox
            .get(id)
            .unwrap_or_else(|| panic!("acknowledged message #{id} is gone"));
        assert_eq!(&m.content, content);
        assert_eq!(m.from, "lead");
    }
    for id in &acked.ack_done {
        assert!(
            !inbox.contains_key(id),
            "message #{id} came back after its ack"
        );
    }

    // The history survived too: every acknowledged task has its creation event, the
    // kept task its claim, and event sequence numbers are unique and increasing.
    let events = boss
        .events(EventsArgs {
            limit: Some(100_000),
            ..Default::default()
        })
        .await
        .unwrap();
    assert!(events.windows(2).all(|w| w[0].seq < w[1].seq));
    let created_events: BTreeSet<TaskId> = events
        .iter()
        .filter(|e| e.kind == EventKind::TaskCreated)
        .filter_map(|e| e.task)
        .collect();
    for id in acked.created.keys() {
        assert!(created_events.contains(id), "no creation event for #{id}");
    }
    let history = boss.get_task(kept.id).await.unwrap().history;
    assert!(
        history
            .iter()
            .any(|e| e.kind == EventKind::TaskClaimed && e.actor == "keeper"),
        "{history:?}"
    );
    let max_seq = events.last().map_or(0, |e| e.seq);

    // Ids continue: nothing is reused.
    let max_task = *tasks.keys().max().unwrap();
    let fresh = boss.add_task(task("after the crash")).await.unwrap();
    let fresh_events = boss
        .events(EventsArgs {
            task: Some(fresh.id),
            ..Default::default()
        })
        .await
        .unwrap();
    assert!(
        fresh_events.iter().all(|e| e.seq > max_seq),
        "event seqs continue after #{max_seq}: {fresh_events:?}"
    );
    assert!(
        fresh.id > max_task && fresh.id > *acked.created.keys().max().unwrap(),
        "new task #{} after #{max_task}",
        fresh.id
    );
    let max_msg = *acked.sent.keys().max().unwrap();
    let fresh_msg = boss
        .send("mailbox", MessageKind::Message, "after the crash", None)
        .await
        .unwrap();
    assert!(
        fresh_msg.id > max_msg,
        "new message #{} after #{max_msg}",
        fresh_msg.id
    );

    // The loser never comes back: after the grace its task is pending again.
    let lapsed = teamboard_testkit::eventually(
        "the unclaimed task to lapse",
        Duration::from_secs(10),
        || async {
            let t = boss.get_task(lost.id).await.unwrap().task;
            (t.status == TaskStatus::Pending).then_some(t)
        },
    )
    .await;
    let after = restarted_at.elapsed();
    eprintln!("orphaned claim lapsed {after:?} after the restart");
    assert!(
        after >= Duration::from_secs(2),
        "lapsed after {after:?}, before the grace ended"
    );
    assert_eq!(lapsed.owner, None);
    assert_eq!(lapsed.epoch, loser_claim.epoch);
    assert_eq!(lapsed.attempts, 1, "the lapsed attempt counts");
    assert!(
        lapsed
            .last_error
            .as_deref()
            .is_some_and(|e| e.contains("loser")),
        "{:?}",
        lapsed.last_error
    );

    // Every other claim from before the crash lapsed with it: its owners never
    // came back. Only the keeper still holds a task.
    let busy = boss.list_tasks(Some(TaskStatus::InProgress)).await.unwrap();
    assert_eq!(
        busy.iter().map(|t| t.id).collect::<Vec<_>>(),
        vec![kept.id],
        "in progress after the grace: {busy:?}"
    );
    let roster = boss.team().await.unwrap();
    let names: BTreeSet<&str> = roster.iter().map(|m| m.name.as_str()).collect();
    for name in [
        "keeper", "loser", "mailbox", "worker0", "worker1", "worker2",
    ] {
        assert!(
            names.contains(name),
            "{name} is still on the roster: {names:?}"
        );
    }
    for m in roster {
        if m.name == "keeper" {
            assert_eq!(m.task, Some(kept.id));
            assert!(m.connected);
        } else {
            assert_eq!(m.task, None, "{} still holds a task", m.name);
        }
        if m.name == "loser" {
            assert_eq!(m.status, teamboard_protocol::MemberStatus::Offline);
            assert!(!m.connected);
        }
    }

    // The keeper's claim outlived the grace, and its old epoch still works.
    let t = boss.get_task(kept.id).await.unwrap().task;
    assert_eq!(t.status, TaskStatus::InProgress);
    assert_eq!(t.owner.as_deref(), Some("keeper"));
    let done = keeper
        .complete_task(kept.id, keeper_claim.epoch, "finished after the crash")
        .await
        .expect("complete with the epoch from before the crash");
    assert_eq!(done.status, TaskStatus::Completed);
    assert_eq!(done.attempts, 1);
}
