//! What wakes a parked `wait_for_work`, and above all what does not: a quiet team
//! stays quiet only if nothing but real work (a message for the waiter, a task it
//! may claim) ever answers a wait. Each test parks a waiter, does something that
//! must not wake it, checks that dispatch answers nobody, and then proves the
//! waiter is still parked by giving it real work.

use super::*;
use teamboard_protocol::{MemberStatus, MessageKind, TokenUsage, Work};

/// Asserts that dispatch answers nobody, then that `request` is still parked:
/// the next message for `name` goes to it.
#[track_caller]
fn still_parked(h: &mut H, name: &'static str, request: u64) {
    assert_eq!(h.dispatch(), vec![], "woken without work");
    let m = h.send(h.lead(), name, "real work");
    let out = h.dispatch();
    assert_eq!(out.len(), 1, "{out:?}");
    assert_eq!(out[0].0, request);
    assert_eq!(out[0].1, Work::Messages { messages: vec![m] });
}

#[test]
fn the_lead_acknowledging_a_teammates_messages_does_not_wake_it() {
    let mut h = H::new();
    let ann = h.join("ann", "dev");
    // ann's result and idle notification, sent while it worked.
    let ctx = h.ctx(ann);
    let result = h
        .board
        .send(ctx, LEAD, MessageKind::Result, "#1 done".into(), None)
        .unwrap();
    let idle = h
        .board
        .send(
            ctx,
            LEAD,
            MessageKind::IdleNotification,
            "idle".into(),
            None,
        )
        .unwrap();
    assert_eq!(h.park(ann, 1), None);
    // Sending them woke the team; the pass found nothing for ann.
    assert_eq!(h.dispatch(), vec![]);
    // The lead reads its inbox, the roster and the board, and acks.
    assert_eq!(
        h.board.inbox(TEAM, LEAD),
        vec![result.clone(), idle.clone()]
    );
    h.board.members(TEAM);
    h.board.tasks(TEAM, None);
    h.board.summary(TEAM);
    let ctx = h.lead();
    assert_eq!(h.board.ack(ctx, &[result.id, idle.id]), 2);
    still_parked(&mut h, "ann", 1);
}

#[test]
fn a_teammates_own_bookkeeping_does_not_wake_it() {
    let mut h = H::new();
    let ann = h.join("ann", "dev");
    assert_eq!(h.park(ann, 1), None);
    // What teammated does around a wait on the same connection: its status, its
    // token use, reading its inbox.
    let ctx = h.ctx(ann);
    h.board.set_status(ctx, MemberStatus::Idle).unwrap();
    h.board.set_status(ctx, MemberStatus::Working).unwrap();
    h.board.set_status(ctx, MemberStatus::Idle).unwrap();
    let tokens = TokenUsage {
        input: 10,
        output: 5,
        ..Default::default()
    };
    h.board.record_usage(ctx, None, tokens, false).unwrap();
    assert!(h.board.inbox(TEAM, "ann").is_empty());
    still_parked(&mut h, "ann", 1);
}

#[test]
fn a_message_to_oneself_is_refused_and_changes_nothing() {
    let mut h = H::new();
    let ann = h.join("ann", "dev");
    h.board.take_changes();
    for ctx in [h.ctx(ann), h.lead()] {
        let who = ctx.actor;
        let e = h
            .board
            .send(ctx, who, MessageKind::Message, "note to self".into(), None)
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidArgs);
        assert!(e.message.contains("itself"), "{}", e.message);
        assert!(h.board.inbox(TEAM, who).is_empty());
    }
    assert!(!h.board.has_changes());
    // Parked, ann is not woken by its own attempt either.
    assert_eq!(h.park(ann, 1), None);
    let ctx = h.ctx(ann);
    h.board
        .send(ctx, "ann", MessageKind::Message, "again".into(), None)
        .unwrap_err();
    // No message id was used up.
    let m = h.send(h.lead(), "ann", "first real message");
    assert_eq!(m.id, 1);
    let out = h.dispatch();
    assert_eq!(out, vec![(1, Work::Messages { messages: vec![m] })]);
}

#[test]
fn a_teammates_broadcast_wakes_the_others_but_not_itself() {
    let mut h = H::new();
    let ann = h.join("ann", "dev");
    let bob = h.join("bob", "dev");
    assert_eq!(h.park(ann, 1), None);
    assert_eq!(h.park(bob, 2), None);
    let ctx = h.ctx(ann);
    let sent = h.board.broadcast(ctx, "the API changed".into()).unwrap();
    let out = h.dispatch();
    assert_eq!(out, vec![(2, Work::Messages { messages: sent })]);
    still_parked(&mut h, "ann", 1);
}

#[test]
fn a_task_a_teammate_cannot_claim_does_not_wake_it() {
    let mut h = H::new();
    let ann = h.join("ann", "dev");
    let blocker = h.add("blocker");
    let helper = h.join("helper", "dev");
    h.claim(helper, blocker);
    assert_eq!(h.park(ann, 1), None);
    // ann creates (on its own connection) a task for another role, and one that
    // waits for a task in progress; the lead creates one for another role too.
    let ctx = h.ctx(ann);
    let ops = h
        .board
        .add_task(
            ctx,
            NewTask {
                role: Some("ops".into()),
                ..new_task("deploy")
            },
        )
        .unwrap();
    let ctx = h.ctx(ann);
    h.board
        .add_task(
            ctx,
            NewTask {
                blocked_by: vec![blocker],
                ..new_task("after the blocker")
            },
        )
        .unwrap();
    h.add_role("monitor", "ops");
    assert!(h.ready(ops.id));
    still_parked(&mut h, "ann", 1);
}

#[test]
fn messages_between_others_do_not_wake_a_bystander() {
    let mut h = H::new();
    let ann = h.join("ann", "dev");
    let bob = h.join("bob", "dev");
    let cat = h.join("cat", "dev");
    assert_eq!(h.park(ann, 1), None);
    let ctx = h.ctx(bob);
    h.board
        .send(ctx, LEAD, MessageKind::Result, "#3 done".into(), None)
        .unwrap();
    h.board
        .send(ctx, "cat", MessageKind::Message, "see #3".into(), None)
        .unwrap();
    let ctx = h.ctx(cat);
    h.board.ack(ctx, &[2]);
    h.send(h.lead(), "bob", "thanks");
    still_parked(&mut h, "ann", 1);
}

#[test]
fn a_dispatch_that_finds_nothing_leaves_the_wait_and_its_deadline_alone() {
    let mut h = H::new();
    let ann = h.join("ann", "dev");
    let ctx = h.ctx(ann);
    assert_eq!(h.board.park(ctx, 7, Some(h.base + secs(2))).unwrap(), None);
    // Wake the team for something that is not ann's, several times over.
    for n in 0..3 {
        let ctx = h.ctx(ann);
        h.board
            .send(ctx, LEAD, MessageKind::Message, format!("ping {n}"), None)
            .unwrap();
        h.add_role("not for dev", "ops");
        assert_eq!(h.dispatch(), vec![], "pass {n}");
    }
    assert_eq!(h.board.next_deadline(), Some(h.base + secs(2)));
    h.t = secs(1);
    assert!(h.expire().is_empty());
    // The one answer it gets is its timeout, at its deadline.
    h.t = secs(2);
    assert_eq!(h.expire(), vec![7]);
    assert_eq!(h.dispatch(), vec![]);
}
