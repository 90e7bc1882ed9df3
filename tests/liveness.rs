//! A claim lives as long as its claimant: a closed connection gives the task back at
//! once, and a connected but silent claimant loses it when its lease runs out.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "test code: a panic fails the test, and the harness captures what it prints"
)]

use std::time::{Duration, Instant};
use teamboard_protocol::{ErrorCode, Event, EventKind, MemberStatus, TaskStatus};
use teamboard_testkit::{InProc, code_of, eventually, lead, park, task, teammate};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_connection_returns_the_task_at_once() {
    let daemon = InProc::start().await;
    let lead = lead(&daemon.socket).await;
    let id = lead.add_task(task("survive a crash")).await.unwrap().id;

    let alice = teammate(&daemon.socket, "alice", "dev").await;
    // While alice is connected, nobody else can register as alice.
    let impostor = teamboard_testkit::connect(&daemon.socket, "alice").await;
    assert_eq!(
        code_of(impostor.register("dev", None).await),
        ErrorCode::AlreadyConnected
    );
    drop(impostor);
    let note = lead
        .send(
            "alice",
            teamboard_protocol::MessageKind::Message,
            "keep me",
            None,
        )
        .await
        .unwrap();
    let claim = alice.claim_next().await.unwrap().expect("a ready task");
    assert_eq!(claim.task.id, id);
    let me = lead.team().await.unwrap();
    assert_eq!(me[0].status, MemberStatus::Working);
    assert_eq!(me[0].task, Some(id));

    let closed = Instant::now();
    drop(alice);
    let detail = eventually(
        "the task to go back to pending",
        Duration::from_secs(2),
        || async {
            let d = lead.get_task(id).await.unwrap();
            (d.task.status == TaskStatus::Pending).then_some(d)
        },
    )
    .await;
    let took = closed.elapsed();
    eprintln!("task back to pending {took:?} after the connection closed");
    assert_eq!(detail.task.owner, None);
    assert_eq!(detail.task.attempts, 1, "the abandoned attempt counts");
    assert!(
        detail
            .task
            .last_error
            .as_deref()
            .is_some_and(|e| e.contains("alice")),
        "last_error names the claimant: {:?}",
        detail.task.last_error
    );
    assert!(
        detail
            .history
            .iter()
            .any(|e| e.kind == EventKind::TaskReleased),
        "the history records the release: {:?}",
        detail.history
    );

    // The member is offline, holds nothing, and is still on the roster.
    let alice_now = eventually("alice to show offline", Duration::from_secs(2), || async {
        let team = lead.team().await.unwrap();
        team.into_iter()
            .find(|m| m.name == "alice" && m.status == MemberStatus::Offline)
    })
    .await;
    assert!(!alice_now.connected);
    assert_eq!(alice_now.task, None);

    // The task is ready again: someone else claims it, with a new epoch.
    let bob = teammate(&daemon.socket, "bob", "dev").await;
    let again = bob
        .claim_next()
        .await
        .unwrap()
        .expect("the task is ready again");
    assert_eq!(again.task.id, id);
    assert!(again.epoch > claim.epoch);

    // The name is free to register again at once, and its messages waited for it.
    let alice = teammate(&daemon.socket, "alice", "dev").await;
    assert_eq!(alice.inbox().await.unwrap(), vec![note]);
    let back = lead.team().await.unwrap();
    let back = back.iter().find(|m| m.name == "alice").unwrap();
    assert!(back.connected);
    assert_eq!(back.status, MemberStatus::Idle);
    daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_waiter_is_not_handed_work() {
    // A teammate that closes while parked in wait_for_work must not be handed a
    // task afterwards: the next task goes to the live one.
    let daemon = InProc::start().await;
    let lead = lead(&daemon.socket).await;
    let gone = teammate(&daemon.socket, "gone", "dev").await;
    let wait = park(&gone).await;
    drop(wait);
    drop(gone);
    eventually("gone to disconnect", Duration::from_secs(2), || async {
        let team = lead.team().await.unwrap();
        team.iter()
            .any(|m| m.name == "gone" && !m.connected)
            .then_some(())
    })
    .await;
    let id = lead.add_task(task("for the living")).await.unwrap().id;
    let live = teammate(&daemon.socket, "live", "dev").await;
    let work = live.wait_for_work(Some(2000)).await.unwrap();
    match work {
        teamboard_protocol::Work::Task { claim } => assert_eq!(claim.task.id, id),
        other => panic!("expected the task, got {other:?}"),
    }
    daemon.stop().await;
}

/// A daemon whose leases last 300 ms.
async fn short_leases() -> InProc {
    InProc::start_with(|c| c.board.lease_ttl = Duration::from_millis(300)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_claimant_loses_its_claim_when_the_lease_expires() {
    let daemon = short_leases().await;
    let lead = lead(&daemon.socket).await;
    let id = lead.add_task(task("hang")).await.unwrap().id;
    let hung = teammate(&daemon.socket, "hung", "dev").await;
    // The lease starts when the daemon grants the claim, which is after this.
    let claimed = Instant::now();
    let claim = hung.claim_next().await.unwrap().expect("a ready task");

    // The connection stays open, but no heartbeat comes.
    let detail = eventually("the lease to expire", Duration::from_secs(3), || async {
        let d = lead.get_task(id).await.unwrap();
        (d.task.status == TaskStatus::Pending).then_some(d)
    })
    .await;
    let took = claimed.elapsed();
    eprintln!("lease of 300 ms expired after {took:?}");
    assert!(
        took >= Duration::from_millis(300),
        "the claim ended after {took:?}, before its 300 ms lease"
    );
    assert!(
        took < Duration::from_secs(1),
        "the lease took {took:?} to expire"
    );
    assert_eq!(detail.task.owner, None);
    assert!(
        detail
            .task
            .last_error
            .as_deref()
            .is_some_and(|e| e.contains("lease")),
        "{:?}",
        detail.task.last_error
    );

    // The old claim is fenced off: complete, heartbeat and release are stale.
    assert_eq!(
        code_of(hung.complete_task(id, claim.epoch, "too late").await),
        ErrorCode::StaleEpoch
    );
    assert_eq!(
        code_of(hung.heartbeat(id, claim.epoch).await),
        ErrorCode::StaleEpoch
    );
    let after = lead.get_task(id).await.unwrap().task;
    assert_eq!(after.status, TaskStatus::Pending);
    assert_eq!(after.result, None);

    // The hung teammate no longer holds it and may claim again, with a new epoch.
    let again = hung.claim_next().await.unwrap().expect("ready again");
    assert_eq!(again.task.id, id);
    assert!(again.epoch > claim.epoch);
    daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lease_expires_while_other_clients_keep_the_daemon_busy() {
    // A steady stream of requests must not starve the lease timer.
    let daemon = short_leases().await;
    let lead = lead(&daemon.socket).await;
    let id = lead.add_task(task("hang under load")).await.unwrap().id;
    let hung = std::sync::Arc::new(teammate(&daemon.socket, "hung", "dev").await);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut noise = tokio::task::JoinSet::new();
    for i in 0..5 {
        // The hung claimant itself chatters too: only heartbeats extend a lease.
        let client = if i == 0 {
            hung.clone()
        } else {
            std::sync::Arc::new(teammate(&daemon.socket, &format!("noisy{i}"), "other").await)
        };
        let stop = stop.clone();
        noise.spawn(async move {
            let mut n = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                client.inbox().await.expect("inbox");
                client.team().await.expect("team");
                n += 2;
            }
            n
        });
    }
    let claimed = Instant::now();
    let claim = hung.claim_next().await.unwrap().expect("a ready task");
    eventually(
        "the lease to expire under load",
        Duration::from_secs(3),
        || async {
            let t = lead.get_task(id).await.unwrap().task;
            (t.status == TaskStatus::Pending).then_some(())
        },
    )
    .await;
    let took = claimed.elapsed();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let mut requests = 0;
    while let Some(n) = noise.join_next().await {
        requests += n.unwrap();
    }
    eprintln!("lease expired after {took:?} amid {requests} other requests");
    assert!(
        took < Duration::from_secs(1),
        "the lease took {took:?} under load"
    );
    assert_eq!(
        code_of(hung.complete_task(id, claim.epoch, "late").await),
        ErrorCode::StaleEpoch
    );
    daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heartbeats_keep_a_claim_alive() {
    // A 1 s lease with a beat every 100 ms leaves 900 ms of slack, so a loaded CI
    // machine that delays a beat cannot make this fail.
    let daemon = InProc::start_with(|c| c.board.lease_ttl = Duration::from_secs(1)).await;
    let lead = lead(&daemon.socket).await;
    let id = lead.add_task(task("long job")).await.unwrap().id;
    let busy = teammate(&daemon.socket, "busy", "dev").await;
    let claim = busy.claim_next().await.unwrap().expect("a ready task");

    // Heartbeat every 100 ms for 2.5 s: two and a half lease lengths. The
    // waiting here is the thing under test, not synchronisation.
    let start = Instant::now();
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    let mut beats = 0;
    while start.elapsed() < Duration::from_millis(2500) {
        tick.tick().await;
        let t = busy.heartbeat(id, claim.epoch).await.expect("heartbeat");
        assert_eq!(t.status, TaskStatus::InProgress);
        beats += 1;
    }
    assert!(beats >= 20);
    let t = lead.get_task(id).await.unwrap().task;
    assert_eq!(t.status, TaskStatus::InProgress);
    assert_eq!(t.owner.as_deref(), Some("busy"));
    assert_eq!(t.epoch, claim.epoch, "the claim was never lost");
    let done = busy
        .complete_task(id, claim.epoch, "finished")
        .await
        .expect("complete with the original epoch");
    assert_eq!(done.status, TaskStatus::Completed);
    assert_eq!(done.attempts, 1);
    daemon.stop().await;
}

/// The next pushed event of `client`, or `None` if none comes within `wait`.
async fn pushed(client: &teamboard_protocol::Client, wait: Duration) -> Option<Event> {
    tokio::time::timeout(wait, client.next_event())
        .await
        .ok()
        .flatten()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_holder_hears_at_once_when_someone_else_ends_its_claim_without_subscribing() {
    let daemon = short_leases().await;
    let lead = lead(&daemon.socket).await;
    let first = lead.add_task(task("cancelled")).await.unwrap().id;
    let alice = teammate(&daemon.socket, "alice", "dev").await;
    let bob = teammate(&daemon.socket, "bob", "dev").await;
    let claim = alice.claim_next().await.unwrap().expect("a ready task");
    assert_eq!(claim.task.id, first);

    // The lead's cancel reaches alice as an event frame; she never subscribed.
    lead.cancel_task(first).await.unwrap();
    let event = pushed(&alice, Duration::from_secs(5))
        .await
        .expect("the cancel pushed to the holder");
    assert_eq!(event.kind, EventKind::TaskCancelled, "{event:?}");
    assert_eq!(event.task, Some(first));
    assert_eq!(event.actor, "lead");

    // An expired lease is pushed too, with boardd as the actor.
    let second = lead.add_task(task("expires")).await.unwrap().id;
    let claim = alice.claim_next().await.unwrap().expect("ready");
    assert_eq!(claim.task.id, second);
    let event = pushed(&alice, Duration::from_secs(5))
        .await
        .expect("the expiry pushed to the holder");
    assert_eq!(event.kind, EventKind::TaskReleased, "{event:?}");
    assert_eq!(event.task, Some(second));
    assert_eq!(event.actor, "boardd");

    // A claim its holder ends itself pushes nothing, and nobody else hears of any.
    let claim = alice.claim_task(second).await.unwrap();
    alice
        .complete_task(second, claim.epoch, "done")
        .await
        .unwrap();
    assert_eq!(pushed(&alice, Duration::from_millis(200)).await, None);
    assert_eq!(pushed(&bob, Duration::from_millis(200)).await, None);
    daemon.stop().await;
}
