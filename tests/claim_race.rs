//! Many claimants race for the same tasks: every task goes to exactly one of them,
//! nobody ever holds two, and nothing is lost.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "test code: a panic fails the test, and the harness captures what it prints"
)]

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;
use teamboard_protocol::{Client, ErrorCode, TaskId, TaskStatus, Work};
use teamboard_testkit::{
    InProc, check_ownership, code_of, lead, park, read_history, task, teammate,
};
use tokio::task::JoinSet;

const CLAIMANTS: usize = 64;
const TASKS: usize = 1000;

/// Creates `n` tasks named `{prefix}-{i}` through one lead connection, with up to
/// 128 requests in flight, and returns their ids.
async fn add_tasks(lead: &Arc<Client>, prefix: &str, n: usize) -> Vec<TaskId> {
    let mut ids = Vec::with_capacity(n);
    for chunk in (0..n).collect::<Vec<_>>().chunks(128) {
        let mut set = JoinSet::new();
        for &i in chunk {
            let lead = lead.clone();
            let subject = format!("{prefix}-{i}");
            set.spawn(async move { lead.add_task(task(subject)).await });
        }
        while let Some(r) = set.join_next().await {
            ids.push(r.unwrap().expect("add_task").id);
        }
    }
    ids.sort_unstable();
    ids
}

/// One claim as the claimant saw it.
#[derive(Debug, Clone)]
struct Claimed {
    task: TaskId,
    by: String,
    result: String,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixty_four_claimants_each_task_claimed_exactly_once() {
    let daemon = InProc::start().await;
    let lead = Arc::new(lead(&daemon.socket).await);
    let ids = add_tasks(&lead, "race", TASKS).await;
    assert_eq!(ids.len(), TASKS);
    assert_eq!(
        ids.iter().copied().collect::<BTreeSet<_>>().len(),
        TASKS,
        "task ids are unique"
    );

    // Connect and register everyone first, so that they all start racing together.
    let mut clients = Vec::new();
    for i in 0..CLAIMANTS {
        let name = format!("w{i:02}");
        clients.push((name.clone(), teammate(&daemon.socket, &name, "dev").await));
    }
    let start = Arc::new(tokio::sync::Barrier::new(CLAIMANTS));
    // Meanwhile the lead watches the board: at no moment does anyone own two
    // in-progress tasks.
    let racing = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let observer = {
        let lead = lead.clone();
        let racing = racing.clone();
        tokio::spawn(async move {
            let mut snapshots = 0u32;
            while racing.load(std::sync::atomic::Ordering::Relaxed) {
                let busy = lead.list_tasks(Some(TaskStatus::InProgress)).await.unwrap();
                let mut owners = BTreeSet::new();
                for t in &busy {
                    let owner = t.owner.clone().expect("an in-progress task has an owner");
                    assert!(
                        owners.insert(owner.clone()),
                        "{owner} holds two tasks: {busy:?}"
                    );
                }
                snapshots += 1;
            }
            snapshots
        })
    };
    let mut set = JoinSet::new();
    for (name, client) in clients {
        let start = start.clone();
        set.spawn(async move {
            start.wait().await;
            let mut mine: Vec<Claimed> = Vec::new();
            let mut holding: Option<TaskId> = None;
            loop {
                let Some(claim) = client.claim_next().await.expect("claim_next") else {
                    break;
                };
                let id = claim.task.id;
                if let Some(held) = holding.replace(id) {
                    panic!("{name} was handed #{id} while holding #{held}");
                }
                assert_eq!(claim.task.status, TaskStatus::InProgress);
                assert_eq!(claim.task.owner.as_deref(), Some(name.as_str()));
                assert_eq!(claim.task.epoch, claim.epoch);
                // The server must refuse a second claim while this one is held.
                let again = client.claim_next().await;
                assert_eq!(
                    code_of(again),
                    ErrorCode::AlreadyHoldsTask,
                    "{name} got a second claim while holding #{id}"
                );
                let result = format!("#{id} done by {name}");
                let done = client
                    .complete_task(id, claim.epoch, &result)
                    .await
                    .expect("complete_task");
                assert_eq!(done.status, TaskStatus::Completed);
                assert_eq!(holding.take(), Some(id));
                mine.push(Claimed {
                    task: id,
                    by: name.clone(),
                    result,
                });
            }
            // claim_next answered None: the board is drained for this claimant.
            (name, mine)
        });
    }
    let mut all: Vec<Claimed> = Vec::new();
    let mut per_client: BTreeMap<String, usize> = BTreeMap::new();
    while let Some(r) = set.join_next().await {
        let (name, mine) = r.expect("claimant task panicked");
        per_client.insert(name, mine.len());
        all.extend(mine);
    }
    racing.store(false, std::sync::atomic::Ordering::Relaxed);
    let snapshots = observer.await.expect("observer saw a double holder");
    assert!(snapshots > 0);

    // Every task claimed exactly once.
    assert_eq!(all.len(), TASKS, "claims in total");
    let mut seen = BTreeMap::new();
    for c in &all {
        if let Some(first) = seen.insert(c.task, c.by.clone()) {
            panic!("#{} claimed twice: by {first} and {}", c.task, c.by);
        }
    }
    assert_eq!(
        seen.keys().copied().collect::<Vec<_>>(),
        ids,
        "the claimed ids are exactly the created ids"
    );
    assert_eq!(per_client.len(), CLAIMANTS);

    // The board agrees: every task completed once, by its claimant, with its result.
    let tasks = lead.list_tasks(None).await.unwrap();
    assert_eq!(tasks.len(), TASKS);
    let by_id: BTreeMap<TaskId, &Claimed> = all.iter().map(|c| (c.task, c)).collect();
    for t in &tasks {
        let c = by_id[&t.id];
        assert_eq!(t.status, TaskStatus::Completed, "#{}", t.id);
        assert_eq!(t.attempts, 1, "#{} was claimed {} times", t.id, t.attempts);
        assert_eq!(t.owner.as_deref(), Some(c.by.as_str()), "#{}", t.id);
        assert_eq!(t.result.as_deref(), Some(c.result.as_str()), "#{}", t.id);
    }
    let status = lead.status().await.unwrap();
    let team = status
        .teams
        .iter()
        .find(|t| t.name == teamboard_testkit::TEAM)
        .expect("the team is in the status");
    assert_eq!(team.completed, TASKS as u64);
    assert_eq!(team.pending + team.in_progress + team.ready, 0);
    assert_eq!(team.members, CLAIMANTS as u64);
    // Every add, register, claim and complete was answered after a durable commit,
    // and each of those answers is counted once.
    let writes = TASKS * 3 + CLAIMANTS;
    let commits = status.commits;
    assert!(commits.transactions >= 1, "{commits:?}");
    assert!(commits.requests >= writes as u64, "{commits:?}");
    assert!(commits.requests >= commits.transactions, "{commits:?}");
    // Nobody is left holding anything.
    for m in lead.team().await.unwrap() {
        assert_eq!(m.task, None, "{} still holds a task", m.name);
    }
    // And the history agrees: no task ever had two owners at once.
    let history = read_history(&lead).await.unwrap();
    let replayed = check_ownership(&history).unwrap_or_else(|v| panic!("{v}"));
    assert_eq!((replayed.claims, replayed.ends), (TASKS, TASKS));
    assert_eq!((replayed.tasks, replayed.held), (TASKS, 0));
}

const WAITERS: usize = 16;
const HANDED_OUT: usize = 200;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn parked_waiters_each_task_handed_to_exactly_one() {
    let daemon = InProc::start().await;
    let lead = Arc::new(lead(&daemon.socket).await);

    let (parked_tx, mut parked_rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    let (done_tx, mut done_rx) = tokio::sync::mpsc::unbounded_channel::<(String, TaskId)>();
    let mut set = JoinSet::new();
    for i in 0..WAITERS {
        let name = format!("idle{i:02}");
        let client = teammate(&daemon.socket, &name, "dev").await;
        let parked_tx = parked_tx.clone();
        let done_tx = done_tx.clone();
        set.spawn(async move {
            let mut wait = park(&client).await;
            parked_tx.send(name.clone()).unwrap();
            loop {
                let work = wait.await.expect("wait_for_work");
                let claim = match work {
                    Work::Task { claim } => claim,
                    other => panic!("{name} expected a task, got {other:?}"),
                };
                assert_eq!(claim.task.owner.as_deref(), Some(name.as_str()));
                assert_eq!(claim.task.status, TaskStatus::InProgress);
                // While it holds the task, the server refuses another claim.
                assert_eq!(
                    code_of(client.claim_next().await),
                    ErrorCode::AlreadyHoldsTask
                );
                client
                    .complete_task(claim.task.id, claim.epoch, &name)
                    .await
                    .expect("complete_task");
                done_tx.send((name.clone(), claim.task.id)).unwrap();
                wait = Box::pin(client.wait_for_work(None));
            }
        });
    }
    drop(parked_tx);
    drop(done_tx);
    let mut parked = BTreeSet::new();
    while parked.len() < WAITERS {
        let name = tokio::time::timeout(Duration::from_secs(10), parked_rx.recv())
            .await
            .expect("all waiters park within 10 s")
            .expect("a waiter died before parking");
        parked.insert(name);
    }
    // Nothing was handed out yet: there was nothing to hand out.
    assert!(lead.list_tasks(None).await.unwrap().is_empty());

    let ids = add_tasks(&lead, "handoff", HANDED_OUT).await;

    let mut handed: BTreeMap<TaskId, String> = BTreeMap::new();
    while handed.len() < HANDED_OUT {
        let (name, id) = tokio::time::timeout(Duration::from_secs(20), done_rx.recv())
            .await
            .unwrap_or_else(|_| {
                panic!(
                    "only {} of {HANDED_OUT} tasks handed out within 20 s",
                    handed.len()
                )
            })
            .expect("a waiter died");
        if let Some(other) = handed.insert(id, name.clone()) {
            panic!("#{id} handed to both {other} and {name}");
        }
    }
    assert_eq!(handed.keys().copied().collect::<Vec<_>>(), ids);
    // Waiters are served first come, first served, and a served waiter goes to the
    // back of the queue: every one of the 16 got work.
    let served: BTreeSet<&String> = handed.values().collect();
    assert_eq!(served.len(), WAITERS, "waiters that got a task: {served:?}");

    let tasks = lead.list_tasks(None).await.unwrap();
    assert_eq!(tasks.len(), HANDED_OUT);
    for t in &tasks {
        assert_eq!(t.status, TaskStatus::Completed, "#{}", t.id);
        assert_eq!(t.attempts, 1, "#{}", t.id);
        assert_eq!(t.owner.as_ref(), Some(&handed[&t.id]), "#{}", t.id);
    }
    set.abort_all();
    daemon.stop().await;
}
