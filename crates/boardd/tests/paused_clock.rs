//! Leases, wait timeouts and the restart grace period under tokio's paused clock:
//! the daemon runs in the test's runtime (committing inline, see
//! `InProc::start_paused`), clients talk to it over its real socket, and virtual
//! time passes without sleeping.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "test code: a panic fails the test, and the harness captures what it prints"
)]

use std::time::Duration;
use teamboard_protocol::{ErrorCode, TaskStatus, Work};
use teamboard_testkit::{InProc, code_of, lead, task, teammate};

const TTL: Duration = Duration::from_secs(30);
const GRACE: Duration = Duration::from_secs(10);

async fn daemon() -> InProc {
    InProc::start_paused(|c| {
        c.board.lease_ttl = TTL;
        c.board.restart_grace = GRACE;
    })
    .await
}

#[tokio::test(start_paused = true)]
async fn lease_expires_without_heartbeat_and_not_before() {
    let daemon = daemon().await;
    let boss = lead(&daemon.socket).await;
    let w = teammate(&daemon.socket, "w1", "dev").await;
    let t = boss.add_task(task("work")).await.expect("add");
    let claim = w.claim_next().await.expect("claim").expect("a ready task");
    assert_eq!(claim.task.id, t.id);

    // A heartbeat just before expiry extends the lease by a full TTL.
    tokio::time::advance(TTL - Duration::from_secs(1)).await;
    w.heartbeat(t.id, claim.epoch).await.expect("heartbeat");
    tokio::time::advance(TTL - Duration::from_secs(1)).await;
    let now = boss.get_task(t.id).await.expect("get").task;
    assert_eq!(now.status, TaskStatus::InProgress);

    // Now stop heartbeating: one TTL later the claim is gone.
    tokio::time::advance(Duration::from_secs(2)).await;
    let after = boss.get_task(t.id).await.expect("get").task;
    assert_eq!(after.status, TaskStatus::Pending);
    assert_eq!(after.owner, None);
    assert!(
        after
            .last_error
            .unwrap_or_default()
            .contains("lease expired")
    );

    // The late claimant is fenced off.
    let late = w.complete_task(t.id, claim.epoch, "too late").await;
    assert_eq!(code_of(late), ErrorCode::StaleEpoch);
    daemon.stop().await;
}

#[tokio::test(start_paused = true)]
async fn wait_for_work_times_out_then_wakes_on_new_task() {
    let daemon = daemon().await;
    let boss = lead(&daemon.socket).await;
    let w = teammate(&daemon.socket, "w1", "dev").await;
    let work = w.wait_for_work(Some(60_000)).await.expect("wait");
    assert_eq!(work, Work::Timeout);

    // Parked with a long timeout, the waiter is woken by the task, not the clock.
    let (work, t) = tokio::join!(w.wait_for_work(Some(60_000)), async {
        // Let the wait reach the daemon and park first.
        tokio::time::sleep(Duration::from_millis(10)).await;
        boss.add_task(task("new")).await.expect("add")
    });
    match work.expect("woken") {
        Work::Task { claim } => assert_eq!(claim.task.id, t.id),
        other => panic!("expected a task, got {other:?}"),
    }
    daemon.stop().await;
}

#[tokio::test(start_paused = true)]
async fn restart_grace_keeps_a_claim_for_its_owner_and_then_lets_go() {
    let mut daemon = daemon().await;
    let boss = lead(&daemon.socket).await;
    let kept = boss.add_task(task("kept")).await.expect("add");
    let lost = boss.add_task(task("lost")).await.expect("add");
    let w = teammate(&daemon.socket, "w1", "dev").await;
    let other = teammate(&daemon.socket, "w2", "dev").await;
    let c1 = w.claim_task(kept.id).await.expect("claim");
    other.claim_task(lost.id).await.expect("claim");
    // Stop and start the daemon without releasing anyone's claims, as a crash
    // would.
    daemon.restart().await;

    let boss = lead(&daemon.socket).await;
    tokio::time::advance(Duration::from_secs(5)).await;
    let now = boss.get_task(kept.id).await.expect("get").task;
    assert_eq!(now.status, TaskStatus::InProgress);
    let w = teammate(&daemon.socket, "w1", "dev").await;
    tokio::time::advance(Duration::from_secs(6)).await;
    // w1 came back within the grace period and keeps its claim; w2 did not.
    let now = boss.get_task(lost.id).await.expect("get").task;
    assert_eq!(now.status, TaskStatus::Pending);
    let t = w
        .complete_task(kept.id, c1.epoch, "done")
        .await
        .expect("complete with the same epoch");
    assert_eq!(t.status, TaskStatus::Completed);
    daemon.stop().await;
}
