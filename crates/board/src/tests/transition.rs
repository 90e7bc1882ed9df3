//! The one transition: every change of a task's state moves `updated_at`, keeps
//! readiness exact, wakes waiters, marks the row and records one event; a claim
//! ended by someone else than its holder raises a notice for the holder.

use super::*;
use teamboard_protocol::{EventKind, MemberStatus, TaskStatus, Work};

/// Takes the batch and checks that `id` was written with the batch's time.
#[track_caller]
fn written(h: &mut H, id: TaskId) -> Vec<EventKind> {
    let now = h.now().wall_ms;
    let changes = h.board.take_changes();
    let row = changes
        .tasks
        .iter()
        .find(|(_, t)| t.id == id)
        .unwrap_or_else(|| panic!("#{id} not written: {changes:?}"));
    assert_eq!(row.1.updated_at, now, "updated_at of #{id}");
    changes.events.iter().map(|e| e.kind).collect()
}

#[test]
fn every_change_of_state_writes_the_task_with_its_time_and_one_event() {
    let mut h = H::cfg(|c| c.max_attempts = 2);
    let ann = h.join("ann", "dev");
    h.board.take_changes();
    let a = h.add("a");
    assert_eq!(written(&mut h, a), vec![EventKind::TaskCreated]);
    let b = h.add("b");
    h.board.take_changes();

    h.advance(ms(10));
    let ctx = h.lead();
    h.board.add_dependency(ctx, b, &[a]).unwrap();
    assert_eq!(written(&mut h, b), vec![EventKind::DependencyAdded]);

    h.advance(ms(10));
    let c = h.claim(ann, a);
    let kinds = written(&mut h, a);
    assert_eq!(kinds[0], EventKind::TaskClaimed, "{kinds:?}");

    h.advance(ms(10));
    h.fail(ann, a, c.epoch, "no");
    assert_eq!(written(&mut h, a), vec![EventKind::TaskReleased]);

    h.advance(ms(10));
    let c = h.claim(ann, a);
    h.board.take_changes();
    h.advance(ms(10));
    h.complete(ann, a, c.epoch);
    assert_eq!(written(&mut h, a), vec![EventKind::TaskCompleted]);

    h.advance(ms(10));
    h.cancel(b);
    assert_eq!(written(&mut h, b), vec![EventKind::TaskCancelled]);

    h.advance(ms(10));
    h.retry(b);
    assert_eq!(written(&mut h, b), vec![EventKind::TaskRetried]);
}

#[test]
fn adding_a_dependency_that_exists_changes_nothing() {
    let mut h = H::new();
    let a = h.add("a");
    let b = h.blocked("b", &[a]);
    h.board.take_changes();
    let before = h.task(b);
    h.advance(ms(10));
    let ctx = h.lead();
    let after = h.board.add_dependency(ctx, b, &[a]).unwrap();
    assert_eq!(after, before);
    assert!(!h.board.has_changes());
}

#[test]
fn the_ready_flag_follows_the_board() {
    let mut h = H::new();
    let ann = h.join("ann", "dev");
    let a = h.add("a");
    let b = h.blocked("b", &[a]);
    assert!(h.task(a).ready);
    assert!(!h.task(b).ready);
    let c = h.claim(ann, a);
    assert!(!c.task.ready, "a claimed task is not ready");
    assert!(!h.task(a).ready);
    let done = h.complete(ann, a, c.epoch);
    assert!(!done.ready);
    assert!(h.task(b).ready, "completing the blocker makes #b ready");
    let listed = h.board.tasks(TEAM, None);
    assert_eq!(
        listed.iter().map(|t| (t.id, t.ready)).collect::<Vec<_>>(),
        vec![(a, false), (b, true)]
    );
    h.cancel(b);
    assert!(!h.task(b).ready);
    assert!(h.retry(b).ready);
}

#[test]
fn a_cancel_tells_the_holder_at_once() {
    let mut h = H::new();
    let ann = h.join("ann", "dev");
    let a = h.add("a");
    h.claim(ann, a);
    assert!(h.board.take_notices().is_empty(), "a claim is no notice");
    h.cancel(a);
    let notices = h.board.take_notices();
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert_eq!(notices[0].session, ann.session);
    assert_eq!(notices[0].event.kind, EventKind::TaskCancelled);
    assert_eq!(notices[0].event.task, Some(a));
    // The claim is over: nothing held, no lease left to expire.
    assert_eq!(h.member(ann).task, None);
    assert_eq!(h.board.next_deadline(), None);
    assert!(h.board.take_notices().is_empty(), "taken once");
}

#[test]
fn an_expired_lease_tells_the_holder() {
    let mut h = H::cfg(|c| c.lease_ttl = secs(10));
    let ann = h.join("ann", "dev");
    let a = h.add("a");
    h.claim(ann, a);
    h.advance(secs(11));
    h.expire();
    let notices = h.board.take_notices();
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert_eq!(notices[0].session, ann.session);
    assert_eq!(notices[0].event.kind, EventKind::TaskReleased);
}

#[test]
fn the_holder_ending_its_own_claim_raises_no_notice() {
    let mut h = H::new();
    let ann = h.join("ann", "dev");
    let a = h.add("a");
    let b = h.add("b");
    let c = h.add("c");
    let d = h.add("d");
    let claim = h.claim(ann, a);
    h.complete(ann, a, claim.epoch);
    let claim = h.claim(ann, b);
    h.fail(ann, b, claim.epoch, "no");
    let claim = h.claim(ann, c);
    h.release(ann, c, claim.epoch, None);
    h.claim(ann, d);
    let now = h.now();
    h.board.disconnect(ann.session, now);
    assert!(h.board.take_notices().is_empty());
    assert_eq!(h.task(d).status, TaskStatus::Pending);
}

#[test]
fn an_owner_parked_while_it_works_gets_the_next_task_once_it_completes() {
    let mut h = H::new();
    let ann = h.join("ann", "dev");
    let a = h.add("a");
    let c = h.claim(ann, a);
    // Parked while holding #a: only a message could wake it.
    assert_eq!(h.park(ann, 7), None);
    let b = h.add("b");
    assert!(h.dispatch().is_empty());
    assert_eq!(h.member(ann).status, MemberStatus::Working);
    // Completing frees it, and the waiting request is served.
    h.complete(ann, a, c.epoch);
    let out = h.dispatch();
    assert_eq!(out.len(), 1, "{out:?}");
    assert_eq!(out[0].0, 7);
    match &out[0].1 {
        Work::Task { claim } => assert_eq!(claim.task.id, b),
        other => panic!("expected a task, got {other:?}"),
    }
}
