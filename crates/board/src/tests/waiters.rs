//! Waiting for work: inbox before tasks, first come first served, atomic claims.

use super::*;
use teamboard_protocol::{EventKind, MemberStatus, TaskStatus, Work};

#[track_caller]
fn claimed(work: &Work) -> &Claim {
    match work {
        Work::Task { claim } => claim,
        other => panic!("expected a task, got {other:?}"),
    }
}

#[track_caller]
fn messages(work: &Work) -> &[Message] {
    match work {
        Work::Messages { messages } => messages,
        other => panic!("expected messages, got {other:?}"),
    }
}

#[test]
fn park_with_nothing_to_do_parks() {
    let mut h = H::new();
    let ann = h.join("ann", "dev");
    assert_eq!(h.park(ann, 1), None);
    assert!(h.dispatch().is_empty());
    // Still parked: work that arrives later goes to it.
    let a = h.add("a");
    let out = h.dispatch();
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].0, 1);
    assert_eq!(claimed(&out[0].1).task.id, a);
}

#[test]
fn park_answers_at_once_when_there_is_work() {
    let mut h = H::new();
    let a = h.add("a");
    let ann = h.join("ann", "dev");
    let work = h.park(ann, 1).unwrap();
    let claim = claimed(&work);
    assert_eq!(claim.task.id, a);
    assert_eq!(h.task(a).owner.as_deref(), Some("ann"));
    // It was not parked.
    h.add("b");
    assert!(h.dispatch().is_empty());
}

#[test]
fn dispatch_hands_a_new_task_to_the_first_waiter_and_claims_it() {
    let mut h = H::new();
    let ann = h.join("ann", "dev");
    let bob = h.join("bob", "dev");
    assert_eq!(h.park(ann, 10), None);
    assert_eq!(h.park(bob, 11), None);
    let a = h.add("a");
    h.board.take_changes();
    let now = h.advance(ms(1));
    let out = requests(h.board.dispatch(now));
    assert_eq!(out.len(), 1, "one task, one waiter served: {out:?}");
    let (token, work) = &out[0];
    assert_eq!(*token, 10);
    let claim = claimed(work);
    assert_eq!(claim.epoch, 1);
    assert_eq!(claim.task.id, a);
    assert_eq!(claim.task.status, TaskStatus::InProgress);
    assert_eq!(claim.task.owner.as_deref(), Some("ann"));
    assert_eq!(h.task(a), claim.task);
    assert_eq!(h.member(ann).task, Some(a));
    assert_eq!(h.member(ann).status, MemberStatus::Working);
    // The claim is real and durable: it is in the changes, and its epoch works.
    let changes = h.board.take_changes();
    assert!(
        changes
            .tasks
            .iter()
            .any(|(_, t)| t.id == a && t.status == TaskStatus::InProgress)
    );
    assert!(
        changes
            .events
            .iter()
            .any(|e| e.kind == EventKind::TaskClaimed)
    );
    h.complete(ann, a, claim.epoch);

    // Bob is still parked, and gets the next one.
    assert!(h.dispatch().is_empty());
    let b = h.add("b");
    let out = h.dispatch();
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].0, 11);
    assert_eq!(claimed(&out[0].1).task.id, b);
    assert_eq!(h.task(b).owner.as_deref(), Some("bob"));
}

#[test]
fn two_tasks_two_waiters_each_gets_one() {
    let mut h = H::new();
    let ann = h.join("ann", "dev");
    let bob = h.join("bob", "dev");
    h.park(ann, 1);
    h.park(bob, 2);
    let a = h.add_prio("a", 1);
    let b = h.add_prio("b", 5);
    let out = h.dispatch();
    let got: Vec<(u64, TaskId)> = out.iter().map(|(t, w)| (*t, claimed(w).task.id)).collect();
    // First come takes the best task.
    assert_eq!(got, vec![(1, b), (2, a)]);
}

#[test]
fn waiters_are_served_in_token_order() {
    let mut h = H::new();
    let ann = h.join("ann", "dev");
    let bob = h.join("bob", "dev");
    let cat = h.join("cat", "dev");
    h.park(cat, 7);
    h.park(ann, 8);
    h.park(bob, 9);
    h.add("a");
    h.add("b");
    let out = h.dispatch();
    let tokens: Vec<u64> = out.iter().map(|(t, _)| *t).collect();
    assert_eq!(tokens, vec![7, 8]);
    assert_eq!(h.task(1).owner.as_deref(), Some("cat"));
    assert_eq!(h.task(2).owner.as_deref(), Some("ann"));
}

#[test]
fn inbox_comes_before_tasks() {
    let mut h = H::new();
    let ann = h.join("ann", "dev");
    let a = h.add("a");
    let m = h.send(h.lead(), "ann", "read me first");
    let work = h.park(ann, 1).unwrap();
    assert_eq!(messages(&work), std::slice::from_ref(&m));
    assert!(h.ready(a), "no task was claimed");
    assert_eq!(h.member(ann).task, None);
    // Unacknowledged, the message is handed out again.
    let work = h.park(ann, 2).unwrap();
    assert_eq!(messages(&work), std::slice::from_ref(&m));
    let ctx = h.ctx(ann);
    h.board.ack(ctx, &[m.id]);
    let work = h.park(ann, 3).unwrap();
    assert_eq!(claimed(&work).task.id, a);
}

#[test]
fn dispatch_prefers_messages_to_a_task_that_arrived_in_the_same_batch() {
    let mut h = H::new();
    let ann = h.join("ann", "dev");
    assert_eq!(h.park(ann, 1), None);
    let a = h.add("a");
    let m1 = h.send(h.lead(), "ann", "one");
    let m2 = h.send(h.lead(), "ann", "two");
    let out = h.dispatch();
    assert_eq!(out.len(), 1);
    assert_eq!(messages(&out[0].1), [m1, m2]);
    assert!(h.ready(a));
    assert_eq!(h.task(a).status, TaskStatus::Pending);
}

#[test]
fn a_message_wakes_only_its_recipient() {
    let mut h = H::new();
    let ann = h.join("ann", "dev");
    let bob = h.join("bob", "dev");
    h.park(ann, 1);
    h.park(bob, 2);
    h.send(h.lead(), "bob", "for bob");
    let out = h.dispatch();
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].0, 2);
    assert_eq!(messages(&out[0].1)[0].to, "bob");
    // Ann is still parked.
    h.add("a");
    assert_eq!(h.dispatch()[0].0, 1);
}

#[test]
fn a_waiter_that_holds_a_task_is_woken_only_by_messages() {
    let mut h = H::new();
    let a = h.add("a");
    let ann = h.join("ann", "dev");
    let c = h.claim(ann, a);
    assert_eq!(h.park(ann, 1), None);
    h.add("b");
    assert!(h.dispatch().is_empty());
    h.send(h.lead(), "ann", "how is it going?");
    let out = h.dispatch();
    assert_eq!(out.len(), 1);
    messages(&out[0].1);
    h.complete(ann, a, c.epoch);
}

#[test]
fn waiters_only_get_tasks_their_role_allows() {
    let mut h = H::new();
    let dev = h.join("dev1", "dev");
    let ops = h.join("ops1", "ops");
    h.park(dev, 1);
    h.park(ops, 2);
    let t = h.add_role("deploy", "ops");
    let out = h.dispatch();
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].0, 2);
    assert_eq!(claimed(&out[0].1).task.id, t);
}

#[test]
fn completing_a_blocker_wakes_a_waiter_for_the_dependent() {
    let mut h = H::new();
    let a = h.add("a");
    let b = h.blocked("b", &[a]);
    let ann = h.join("ann", "dev");
    let bob = h.join("bob", "dev");
    let c = h.claim(ann, a);
    assert_eq!(h.park(bob, 1), None);
    assert!(h.dispatch().is_empty());
    h.complete(ann, a, c.epoch);
    let out = h.dispatch();
    assert_eq!(out.len(), 1);
    assert_eq!(claimed(&out[0].1).task.id, b);
    assert_eq!(h.task(b).owner.as_deref(), Some("bob"));
}

#[test]
fn a_task_returned_by_expiry_or_disconnect_wakes_a_waiter() {
    let mut h = H::cfg(|c| c.lease_ttl = secs(10));
    let a = h.add("a");
    let b = h.add("b");
    let ann = h.join("ann", "dev");
    let bob = h.join("bob", "dev");
    let cat = h.join("cat", "dev");
    h.claim(ann, a);
    h.claim(bob, b);
    h.park(cat, 1);
    h.advance(secs(10));
    let now = h.now();
    h.board.disconnect(bob.session, now);
    let now = h.now();
    h.board.expire(now);
    let out = h.dispatch();
    assert_eq!(out.len(), 1);
    // Either could have been handed out; the best (lowest id) goes first.
    assert_eq!(claimed(&out[0].1).task.id, a);
    assert_eq!(claimed(&out[0].1).task.attempts, 2);
}

#[test]
fn a_retried_task_wakes_a_waiter() {
    let mut h = H::cfg(|c| c.max_attempts = 1);
    let a = h.add("a");
    let ann = h.join("ann", "dev");
    let c = h.claim(ann, a);
    h.fail(ann, a, c.epoch, "x");
    h.park(ann, 1);
    assert!(h.dispatch().is_empty());
    h.retry(a);
    let out = h.dispatch();
    assert_eq!(claimed(&out[0].1).task.id, a);
}

#[test]
fn a_waiter_deadline_expires() {
    let mut h = H::new();
    let ann = h.join("ann", "dev");
    let bob = h.join("bob", "dev");
    let ctx = h.ctx(ann);
    assert_eq!(h.board.park(ctx, 5, Some(h.base + secs(30))).unwrap(), None);
    let ctx = h.ctx(bob);
    assert_eq!(h.board.park(ctx, 6, None).unwrap(), None);
    assert_eq!(h.board.next_deadline(), Some(h.base + secs(30)));
    h.t = secs(29);
    assert!(h.expire().is_empty());
    h.t = secs(30);
    assert_eq!(h.expire(), vec![5]);
    assert_eq!(h.board.next_deadline(), None);
    // Expired once, then gone; bob waits forever.
    h.advance(secs(3600));
    assert!(h.expire().is_empty());
    h.add("a");
    let out = h.dispatch();
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].0, 6);
}

#[test]
fn the_earliest_deadline_is_reported() {
    let mut h = H::cfg(|c| c.lease_ttl = secs(20));
    let a = h.add("a");
    let ann = h.join("ann", "dev");
    let bob = h.join("bob", "dev");
    assert_eq!(h.board.next_deadline(), None);
    h.claim(ann, a);
    assert_eq!(h.board.next_deadline(), Some(h.base + secs(20)));
    let ctx = h.ctx(bob);
    h.board.park(ctx, 1, Some(h.base + secs(5))).unwrap();
    assert_eq!(h.board.next_deadline(), Some(h.base + secs(5)));
}

#[test]
fn unpark_and_disconnect_drop_the_waiter() {
    let mut h = H::new();
    let ann = h.join("ann", "dev");
    let bob = h.join("bob", "dev");
    let ctx = h.ctx(ann);
    h.board.park(ctx, 1, Some(h.base + secs(1))).unwrap();
    let ctx = h.ctx(bob);
    h.board.park(ctx, 2, Some(h.base + secs(1))).unwrap();
    h.board.unpark(ann.session);
    let now = h.now();
    h.board.disconnect(bob.session, now);
    h.add("a");
    assert!(h.dispatch().is_empty());
    h.advance(secs(5));
    assert!(h.expire().is_empty(), "no timeout for dropped waiters");
    assert!(h.ready(1));
}

#[test]
fn parking_makes_a_working_member_idle() {
    let mut h = H::new();
    let a = h.add("a");
    let ann = h.join("ann", "dev");
    let c = h.claim(ann, a);
    assert_eq!(h.member(ann).status, MemberStatus::Working);
    h.complete(ann, a, c.epoch);
    h.board.take_changes();
    assert_eq!(h.park(ann, 1), None);
    assert_eq!(h.member(ann).status, MemberStatus::Idle);
    let changes = h.board.take_changes();
    // `idle` does not outlive a restart, so only the event records it.
    assert!(changes.members.is_empty());
    assert_eq!(changes.events.len(), 1);
    assert_eq!(changes.events[0].kind, EventKind::MemberStatus);
    // Parking an idle member writes nothing.
    h.board.unpark(ann.session);
    assert_eq!(h.park(ann, 2), None);
    assert!(!h.board.has_changes());
    // And a handoff makes it working again.
    h.add("b");
    h.dispatch();
    assert_eq!(h.member(ann).status, MemberStatus::Working);
}

#[test]
fn park_needs_registration() {
    let mut h = H::new();
    h.add("a");
    let nobody = h.stranger(TEAM, "nobody");
    let ctx = h.ctx(nobody);
    assert_eq!(code(h.board.park(ctx, 1, None)), ErrorCode::NotRegistered);
    let ctx = h.lead();
    assert_eq!(code(h.board.park(ctx, 2, None)), ErrorCode::NotRegistered);
    assert!(h.ready(1));
    assert!(h.dispatch().is_empty());
}

#[test]
fn dispatch_with_nothing_claimable_serves_nobody() {
    let mut h = H::new();
    let ann = h.join("ann", "dev");
    let helper = h.join("helper", "dev");
    h.park(ann, 1);
    // A new task that the helper claims before dispatch runs, and one blocked by it.
    let blocker = h.add("blocker");
    h.claim(helper, blocker);
    let a = h.blocked("a", &[blocker]);
    assert!(!h.ready(a));
    assert!(h.dispatch().is_empty());
    assert!(h.dispatch().is_empty());
    assert_eq!(h.member(ann).task, None);
}

#[test]
fn one_wait_at_a_time_per_connection() {
    let mut h = H::new();
    let ann = h.join("ann", "dev");
    assert_eq!(h.park(ann, 1), None);
    let ctx = h.ctx(ann);
    let err = h.board.park(ctx, 2, None).unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidState);
    // The first wait is still parked and still gets the work.
    h.add("a");
    let handed = requests(h.board.dispatch(h.now()));
    assert_eq!(handed.len(), 1);
    assert_eq!(handed[0].0, 1);
}
