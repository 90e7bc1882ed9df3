//! Liveness under tokio's paused clock: boardd's timer fires at the very moment a
//! silent member becomes stalled (twice its declared beat), a request brings it
//! back, and a client that declares no beat is never stalled for its silence.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "test code: a panic fails the test, and the harness captures what it prints"
)]

use std::time::Duration;
use teamboard_protocol::request::{NewTask, RegisterArgs};
use teamboard_protocol::{Client, Event, EventKind, LiveState};
use teamboard_testkit::{InProc, connect, lead, park, task};
use tokio::time::Instant;

const TTL: Duration = Duration::from_secs(30);
const BEAT: Duration = Duration::from_secs(1);

async fn daemon() -> InProc {
    InProc::start_paused(|c| c.board.lease_ttl = TTL).await
}

async fn member(daemon: &InProc, name: &str, beat: Option<Duration>) -> Client {
    let c = connect(&daemon.socket, name).await;
    c.register_with(RegisterArgs {
        role: name.into(),
        beat_ms: beat.map(|b| b.as_millis() as u64),
        ..RegisterArgs::default()
    })
    .await
    .unwrap();
    c
}

/// The next liveness event (`member_status` by boardd).
async fn next_liveness(boss: &Client) -> Event {
    loop {
        let e = boss.next_event().await.expect("the stream is open");
        if e.kind == EventKind::MemberStatus && e.actor == "boardd" {
            return e;
        }
    }
}

async fn state_of(boss: &Client, name: &str) -> LiveState {
    let team = boss.team().await.unwrap();
    let m = team.iter().find(|m| m.name == name).unwrap();
    m.liveness.as_ref().unwrap().state
}

#[tokio::test(start_paused = true)]
async fn a_silent_member_turns_stalled_at_twice_its_beat_exactly_and_back_when_heard() {
    let daemon = daemon().await;
    let boss = lead(&daemon.socket).await;
    boss.subscribe().await.unwrap();
    let ann = member(&daemon, "ann", Some(BEAT)).await;
    let _wait = park(&ann).await;
    let heard = Instant::now();
    assert_eq!(next_liveness(&boss).await.detail, "ann is now idle");

    // Nothing but the timer can wake the test: virtual time runs to it.
    let stalled = next_liveness(&boss).await;
    assert_eq!(heard.elapsed(), 2 * BEAT, "fired at the overdue moment");
    assert_eq!(stalled.detail, "ann is now stalled (last heard 0s ago)");
    assert_eq!(state_of(&boss, "ann").await, LiveState::Stalled);

    tokio::time::advance(Duration::from_secs(5)).await;
    ann.ping().await.unwrap();
    assert_eq!(next_liveness(&boss).await.detail, "ann is now idle");
    assert_eq!(state_of(&boss, "ann").await, LiveState::Idle);
    daemon.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_member_that_beats_is_never_stalled() {
    let daemon = daemon().await;
    let boss = lead(&daemon.socket).await;
    let ann = member(&daemon, "ann", Some(BEAT)).await;
    let _wait = park(&ann).await;
    for _ in 0..60 {
        tokio::time::advance(BEAT).await;
        ann.ping().await.unwrap();
        assert_eq!(state_of(&boss, "ann").await, LiveState::Idle);
    }
    daemon.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_client_that_declares_no_beat_is_stalled_only_by_its_lease() {
    let daemon = daemon().await;
    let boss = lead(&daemon.socket).await;
    let old = member(&daemon, "old", None).await;
    let idle = member(&daemon, "idle", None).await;
    let _wait = park(&idle).await;
    tokio::time::advance(Duration::from_secs(3600)).await;
    assert_eq!(state_of(&boss, "idle").await, LiveState::Idle);

    boss.subscribe().await.unwrap();
    let build = NewTask {
        role: Some("old".into()),
        ..task("build")
    };
    boss.add_task(build).await.unwrap();
    let claimed = Instant::now();
    old.claim_next().await.unwrap().expect("a ready task");
    assert_eq!(next_liveness(&boss).await.detail, "old is now working");
    let stalled = next_liveness(&boss).await;
    assert_eq!(claimed.elapsed(), TTL, "when the lease ran out");
    assert_eq!(stalled.detail, "old is now stalled (last heard 0s ago)");
    daemon.stop().await;
}
