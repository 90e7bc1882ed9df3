//! The claim race of `claim_race.rs` across three real boardd processes on one
//! PostgreSQL database: 64 claimants spread over the three sockets, 1,000 tasks
//! added through a follower. Every task goes to exactly one claimant and is
//! completed once, nobody holds two at once, and the history, read through a
//! follower, shows no task with two owners. Skipped (printing `skipped: …`)
//! without PostgreSQL, unless `TEAMBOARD_REQUIRE_PG=1`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "test code: a panic fails the test, and the harness captures what it prints"
)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;
use teamboard_protocol::{Client, ErrorCode, EventKind, TaskId, TaskStatus};
use teamboard_testkit::boardd::cluster::leadership;
use teamboard_testkit::ownership::{Violation, check};
use teamboard_testkit::pg::database_or_skip;
use teamboard_testkit::{
    Daemon, PATIENCE, code_of, eventually, lead, read_history, short_tempdir, task, teammate,
};
use tokio::sync::Barrier;
use tokio::task::JoinSet;

const NODES: usize = 3;
const CLAIMANTS: usize = 64;
const TASKS: usize = 1000;

/// One boardd of the three: its name, its socket and the process.
struct Node {
    name: String,
    socket: PathBuf,
    daemon: Daemon,
}

fn spawn(dir: &Path, url: &str, i: usize) -> Node {
    let name = format!("n{i}");
    let socket = dir.join(format!("s{i}"));
    let advertise = socket.display().to_string();
    let daemon = Daemon::spawn(
        &socket,
        &dir.join(format!("state{i}")),
        &[
            "--database",
            url,
            "--node",
            &name,
            "--advertise",
            &advertise,
        ],
        &[],
    );
    Node {
        name,
        socket,
        daemon,
    }
}

/// The index of the node that leads now.
async fn leader(url: &str, nodes: &[Node]) -> usize {
    eventually("a leader", PATIENCE, || async {
        let url = url.to_string();
        let now = tokio::task::spawn_blocking(move || {
            let mut db = leadership::connect(&url, "test").expect("connect");
            leadership::current(&mut db).expect("current")
        })
        .await
        .expect("current");
        let i = nodes.iter().position(|n| n.name == now.node)?;
        now.live().then_some(i)
    })
    .await
}

/// Creates `n` tasks through one connection, up to 128 in flight: their ids.
async fn add_tasks(lead: &Arc<Client>, n: usize) -> Vec<TaskId> {
    let mut ids = Vec::with_capacity(n);
    for chunk in (0..n).collect::<Vec<_>>().chunks(128) {
        let mut set = JoinSet::new();
        for &i in chunk {
            let lead = lead.clone();
            set.spawn(async move { lead.add_task(task(format!("race-{i}"))).await });
        }
        while let Some(r) = set.join_next().await {
            ids.push(r.unwrap().expect("add_task").id);
        }
    }
    ids.sort_unstable();
    ids
}

/// Claims and completes until the board has nothing left for `name`: what it
/// completed, in order.
async fn claim_until_drained(
    name: String,
    client: Client,
    start: Arc<Barrier>,
) -> (String, Vec<TaskId>) {
    start.wait().await;
    let mut mine = Vec::new();
    while let Some(claim) = client.claim_next().await.expect("claim_next") {
        let id = claim.task.id;
        assert_eq!(claim.task.status, TaskStatus::InProgress);
        assert_eq!(claim.task.owner.as_deref(), Some(name.as_str()));
        assert_eq!(claim.task.epoch, claim.epoch);
        assert_eq!(
            code_of(client.claim_next().await),
            ErrorCode::AlreadyHoldsTask,
            "{name} got a second claim while holding #{id}"
        );
        let done = client
            .complete_task(id, claim.epoch, &format!("#{id} done by {name}"))
            .await
            .expect("complete_task");
        assert_eq!(done.status, TaskStatus::Completed);
        mine.push(id);
    }
    (name, mine)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixty_four_claimants_on_three_boardd_each_task_claimed_exactly_once() {
    let Some(url) = database_or_skip() else {
        return;
    };
    let setup = Instant::now();
    let dir = short_tempdir();
    let mut nodes: Vec<Node> = (0..NODES).map(|i| spawn(dir.path(), &url, i)).collect();
    for node in &mut nodes {
        node.daemon.wait_ready().await;
    }
    let first = leader(&url, &nodes).await;
    let boss = Arc::new(lead(&nodes[(first + 1) % NODES].socket).await);
    eprintln!("three boardd and a leader after {:.2?}", setup.elapsed());
    let ids = add_tasks(&boss, TASKS).await;
    eprintln!("{TASKS} tasks added after {:.2?}", setup.elapsed());
    assert_eq!(ids.iter().collect::<BTreeSet<_>>().len(), TASKS);

    let mut clients = Vec::new();
    for i in 0..CLAIMANTS {
        let name = format!("w{i:02}");
        let node = &nodes[i % NODES];
        clients.push((name.clone(), teammate(&node.socket, &name, "dev").await));
    }
    // The lead watches the board through the follower meanwhile: at no moment
    // does anyone own two in-progress tasks.
    let racing = Arc::new(AtomicBool::new(true));
    let observer = {
        let (boss, racing) = (boss.clone(), racing.clone());
        tokio::spawn(async move {
            let mut snapshots = 0u32;
            while racing.load(Ordering::Relaxed) {
                let busy = boss.list_tasks(Some(TaskStatus::InProgress)).await.unwrap();
                let mut owners = BTreeSet::new();
                for t in &busy {
                    let owner = t.owner.clone().expect("an in-progress task has an owner");
                    assert!(owners.insert(owner.clone()), "{owner} holds two: {busy:?}");
                }
                snapshots += 1;
            }
            snapshots
        })
    };
    eprintln!(
        "{CLAIMANTS} claimants registered after {:.2?}",
        setup.elapsed()
    );
    let started = Instant::now();
    // Everyone connected and registered first, so that they all race together.
    let start = Arc::new(Barrier::new(CLAIMANTS));
    let mut set = JoinSet::new();
    for (name, client) in clients {
        set.spawn(claim_until_drained(name, client, start.clone()));
    }
    let mut owner_of: BTreeMap<TaskId, String> = BTreeMap::new();
    let mut per_client = BTreeMap::new();
    let mut doubles = Vec::new();
    while let Some(r) = set.join_next().await {
        let (name, mine) = r.expect("claimant panicked");
        per_client.insert(name.clone(), mine.len());
        for id in mine {
            if let Some(first) = owner_of.insert(id, name.clone()) {
                doubles.push(format!("#{id} by {first} and {name}"));
            }
        }
    }
    let wall = started.elapsed();
    racing.store(false, Ordering::Relaxed);
    assert!(observer.await.expect("observer saw a double holder") > 0);
    eprintln!(
        "{TASKS} claim-complete cycles by {CLAIMANTS} claimants on {NODES} boardd in {wall:.2?}: \
         {:.0} cycles/s, {} double claims",
        TASKS as f64 / wall.as_secs_f64(),
        doubles.len()
    );
    assert!(doubles.is_empty(), "claimed twice: {doubles:?}");
    assert_eq!(owner_of.keys().copied().collect::<Vec<_>>(), ids);
    assert_eq!(per_client.len(), CLAIMANTS);

    // The board agrees, through the follower: every task completed once, by
    // its claimant.
    let tasks = boss.list_tasks(None).await.unwrap();
    assert_eq!(tasks.len(), TASKS);
    for t in &tasks {
        assert_eq!(t.status, TaskStatus::Completed, "#{}", t.id);
        assert_eq!(t.attempts, 1, "#{} was claimed {} times", t.id, t.attempts);
        assert_eq!(t.owner.as_ref(), Some(&owner_of[&t.id]), "#{}", t.id);
    }
    assert_eq!(leader(&url, &nodes).await, first, "the leader changed");

    // The history, read through the follower, has no task with two owners.
    let history = read_history(&boss).await.unwrap();
    let replayed = check(&history).unwrap_or_else(|v| panic!("{v}"));
    assert_eq!((replayed.claims, replayed.ends), (TASKS, TASKS));
    assert_eq!((replayed.tasks, replayed.held), (TASKS, 0));

    // The same history with one completion lost: its owner's next claim
    // overlaps, and the checker says so.
    let (i, lost) = history
        .iter()
        .enumerate()
        .find(|(_, e)| {
            e.kind == EventKind::TaskCompleted
                && e.task.is_some_and(|id| per_client[&owner_of[&id]] > 1)
        })
        .expect("a claimant completed two tasks");
    let owner = owner_of[&lost.task.unwrap()].clone();
    let mut corrupted = history.clone();
    corrupted.remove(i);
    match check(&corrupted) {
        Err(Violation::MemberHoldsTwo { member, first, .. }) => {
            assert_eq!((member, Some(first)), (owner, lost.task));
        }
        other => panic!("a lost completion passed: {other:?}"),
    }
}
