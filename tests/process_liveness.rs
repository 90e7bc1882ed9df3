//! Liveness through the real binaries: a real boardd, real teammated processes
//! on the scripted provider, and signals. A `kill -9`ed teammate reads `dead`
//! within a second, with the signal; a `SIGSTOP`ped one reads `stalled` within
//! its lease plus a second and never `working` while stopped; continued, it
//! reads `working` again. Times are measured from the signal to the event's
//! arrival at a subscribed client, and printed.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "test code: a panic fails the test, and the harness captures what it prints"
)]

use std::path::Path;
use std::time::{Duration, Instant};
use teamboard_protocol::request::NewTask;
use teamboard_protocol::{Client, Event, EventKind, LiveState, Liveness};
use teamboard_testkit::{
    Daemon, PATIENCE, Teammate, Teammated, eventually, lead, short_tempdir, workspace_bin,
};

/// Short, so that the stall comes quickly; a third of it is the teammate's beat.
const LEASE: Duration = Duration::from_secs(6);

fn signal(t: &Teammate, sig: libc::c_int) {
    // SAFETY: kill(2) has no memory-safety preconditions; the pid is our own
    // unreaped child's, so it cannot have been reused.
    let rc = unsafe { libc::kill(t.pid() as libc::pid_t, sig) };
    assert_eq!(rc, 0, "signal {sig} to {}", t.name);
}

/// The next liveness event about `name`, within `within`.
async fn next_state(boss: &Client, name: &str, within: Duration) -> Option<Event> {
    tokio::time::timeout(within, async {
        loop {
            let e = boss.next_event().await.expect("the event stream is open");
            if e.kind == EventKind::MemberStatus
                && e.actor == "boardd"
                && e.member.as_deref() == Some(name)
            {
                return e;
            }
        }
    })
    .await
    .ok()
}

/// Waits for `name` to reach `state`, and returns the time from `from`, with
/// every state it passed on the way.
async fn until(
    boss: &Client,
    name: &str,
    state: LiveState,
    from: Instant,
    within: Duration,
) -> (Duration, Vec<String>) {
    let needle = format!("{name} is now {state}");
    let mut seen = Vec::new();
    let deadline = from + within;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let Some(e) = next_state(boss, name, left).await else {
            panic!("{name} did not turn {state} within {within:?}; saw {seen:?}");
        };
        seen.push(e.detail.clone());
        if e.detail.starts_with(&needle) {
            return (from.elapsed(), seen);
        }
    }
}

async fn liveness(boss: &Client, name: &str) -> Liveness {
    let team = boss.team().await.unwrap();
    let m = team.into_iter().find(|m| m.name == name).unwrap();
    m.liveness.expect("boardd reports liveness")
}

fn spawn(kit: &Teammated, name: &str, dir: &Path) -> Teammate {
    let work = dir.join(name);
    std::fs::create_dir_all(&work).unwrap();
    kit.spawn(
        name,
        name,
        &work,
        &dir.join(format!("{name}.log")),
        &[],
        &[],
    )
}

/// A task for `role` that holds its claim for a minute.
fn long_task(role: &str) -> NewTask {
    NewTask {
        subject: format!("{role} works for a while"),
        description: "```sh\ntouch started; sleep 30\n```".into(),
        role: Some(role.into()),
        ..NewTask::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_stopped_and_continued_teammates_read_dead_stalled_and_working() {
    let dir = short_tempdir();
    let (socket, state) = (dir.path().join("s"), dir.path().join("state"));
    let lease = LEASE.as_secs().to_string();
    let _daemon = Daemon::start(&socket, &state, &["--lease-ttl", &lease]).await;
    let kit = Teammated::new(workspace_bin("teammated"), &socket, &state);
    let boss = lead(&socket).await;
    boss.subscribe().await.unwrap();

    // kill -9 a teammate parked in wait_for_work: dead within a second, with
    // the signal (the test is its parent, and reaps it only afterwards).
    let bob = spawn(&kit, "bob", dir.path());
    until(&boss, "bob", LiveState::Idle, Instant::now(), PATIENCE).await;
    let killed = Instant::now();
    bob.kill9();
    let (took, seen) = until(&boss, "bob", LiveState::Dead, killed, PATIENCE).await;
    eprintln!("kill -9 -> dead: {took:?} ({seen:?})");
    assert!(took < Duration::from_secs(1), "{took:?}");
    let dead = liveness(&boss, "bob").await;
    assert_eq!(dead.state, LiveState::Dead);
    assert_eq!(dead.exit.as_deref(), Some("killed by SIGKILL"));
    drop(bob);

    // SIGSTOP a working teammate: stalled within its lease plus a second, and
    // nothing says working while it is stopped.
    let ann = spawn(&kit, "ann", dir.path());
    boss.add_task(long_task("ann")).await.unwrap();
    let started = dir.path().join("ann").join("started");
    ann.wait_for_file(&started).await;
    // Reads ann's events up to now, so that what follows is the stop's.
    until(&boss, "ann", LiveState::Working, Instant::now(), PATIENCE).await;
    let stopped = Instant::now();
    signal(&ann, libc::SIGSTOP);
    let (took, seen) = until(&boss, "ann", LiveState::Stalled, stopped, PATIENCE).await;
    eprintln!("SIGSTOP -> stalled: {took:?} ({seen:?})");
    assert!(took < LEASE + Duration::from_secs(1), "{took:?}");
    assert_eq!(seen.len(), 1, "nothing before stalled: {seen:?}");
    assert_eq!(liveness(&boss, "ann").await.state, LiveState::Stalled);

    // Continued before its lease runs out: working again, on the same claim.
    let continued = Instant::now();
    signal(&ann, libc::SIGCONT);
    let (took, seen) = until(&boss, "ann", LiveState::Working, continued, PATIENCE).await;
    eprintln!("SIGCONT -> working: {took:?} ({seen:?})");
    assert_eq!(seen.len(), 1, "straight back to working: {seen:?}");
    let tasks = boss.list_tasks(None).await.unwrap();
    assert_eq!(tasks[0].attempts, 1, "the claim survived the stop");
}

/// Stopped past its lease, a teammate loses its claim and stays stalled, never
/// `idle` or `working`, for as long as it is stopped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_teammate_stopped_past_its_lease_stays_stalled_until_continued() {
    let dir = short_tempdir();
    let (socket, state) = (dir.path().join("s"), dir.path().join("state"));
    let _daemon = Daemon::start(&socket, &state, &["--lease-ttl", "3"]).await;
    let kit = Teammated::new(workspace_bin("teammated"), &socket, &state);
    let boss = lead(&socket).await;
    boss.subscribe().await.unwrap();
    let cat = spawn(&kit, "cat", dir.path());
    boss.add_task(long_task("cat")).await.unwrap();
    cat.wait_for_file(&dir.path().join("cat").join("started"))
        .await;
    signal(&cat, libc::SIGSTOP);
    let stopped = Instant::now();
    until(&boss, "cat", LiveState::Stalled, stopped, PATIENCE).await;
    // Past the lease, the claim goes back; the member stays stalled.
    eventually("the claim to go back", PATIENCE, || async {
        let t = boss.list_tasks(None).await.ok()?;
        t[0].owner.is_none().then_some(())
    })
    .await;
    let quiet = next_state(&boss, "cat", Duration::from_secs(2)).await;
    assert!(quiet.is_none(), "still stopped, yet {quiet:?}");
    assert_eq!(liveness(&boss, "cat").await.state, LiveState::Stalled);
    signal(&cat, libc::SIGCONT);
    until(&boss, "cat", LiveState::Working, Instant::now(), PATIENCE).await;
}
