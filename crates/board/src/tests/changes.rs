//! What `take_changes` hands to the store.

use super::*;
use teamboard_protocol::{EventKind, MemberStatus, TaskStatus};

#[test]
fn rows_carry_their_final_values() {
    let mut h = H::new();
    let ann = h.join("ann", "dev");
    let a = h.add("a");
    let c = h.claim(ann, a);
    h.advance(secs(1));
    h.complete(ann, a, c.epoch);
    let changes = h.board.take_changes();
    assert_eq!(changes.tasks, vec![(TEAM.to_string(), h.task(a))]);
    assert_eq!(changes.tasks[0].1.status, TaskStatus::Completed);
    assert_eq!(changes.members, vec![(TEAM.to_string(), h.member(ann))]);
    assert_eq!(changes.members[0].1.task, None);
    let kinds: Vec<EventKind> = changes.events.iter().map(|e| e.kind).collect();
    assert_eq!(
        kinds,
        vec![
            EventKind::MemberRegistered,
            EventKind::TaskCreated,
            EventKind::TaskClaimed,
            EventKind::MemberStatus,
            EventKind::TaskCompleted,
        ]
    );
    assert!(!h.board.has_changes());
    assert!(h.board.take_changes().is_empty());
}

#[test]
fn event_seqs_increase_across_batches_and_carry_actor_and_time() {
    let mut h = H::new();
    let ann = h.join("ann", "dev");
    let a = h.add("a");
    let first = h.board.take_changes();
    h.advance(secs(2));
    let c = h.claim(ann, a);
    h.complete(ann, a, c.epoch);
    let second = h.board.take_changes();
    let seqs: Vec<u64> = first
        .events
        .iter()
        .chain(&second.events)
        .map(|e| e.seq)
        .collect();
    assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1), "{seqs:?}");
    assert_eq!(seqs[0], 1);
    let created = &first.events[1];
    assert_eq!(
        (created.kind, created.actor.as_str()),
        (EventKind::TaskCreated, LEAD)
    );
    assert_eq!(created.task, Some(a));
    assert_eq!(created.at, WALL0);
    assert!(
        second
            .events
            .iter()
            .all(|e| e.at == WALL0 + 2000 && e.actor == "ann")
    );
    assert!(second.events.iter().all(|e| e.team == TEAM));
}

#[test]
fn a_message_sent_and_acked_in_one_batch_is_never_written() {
    let mut h = H::new();
    let ann = h.join("ann", "dev");
    let gone = h.send(h.lead(), "ann", "gone");
    let kept = h.send(h.lead(), "ann", "kept");
    let ctx = h.ctx(ann);
    h.board.ack(ctx, &[gone.id]);
    let changes = h.board.take_changes();
    assert_eq!(
        changes.messages_added,
        vec![(TEAM.to_string(), kept.clone())]
    );
    assert!(!changes.messages_added.iter().any(|(_, m)| m.id == gone.id));
    assert_eq!(changes.next_message_id, kept.id + 1);
    // Acked in a later batch: the earlier row is deleted.
    let ctx = h.ctx(ann);
    h.board.ack(ctx, &[kept.id]);
    let changes = h.board.take_changes();
    assert!(changes.messages_added.is_empty());
    assert_eq!(changes.messages_acked, vec![kept.id]);
    assert_eq!(changes.next_message_id, kept.id + 1);
}

#[test]
fn refused_operations_change_nothing() {
    let mut h = H::new();
    let a = h.add("a");
    let ann = h.join("ann", "dev");
    let bob = h.join("bob", "dev");
    let c = h.claim(ann, a);
    h.board.take_changes();
    let ctx = h.ctx(bob);
    let _ = h.board.claim_task(ctx, a);
    let ctx = h.ctx(bob);
    let _ = h.board.complete_task(ctx, a, c.epoch, String::new());
    let ctx = h.ctx(ann);
    let _ = h.board.claim_next(ctx);
    let ctx = h.lead();
    let _ = h.board.add_dependency(ctx, a, &[a]);
    let ctx = h.lead();
    let _ = h.board.retry_task(ctx, a);
    let ctx = h.ctx(bob);
    let _ = h.board.cancel_task(ctx, a);
    let ctx = h.lead();
    let _ = h.board.send(
        ctx,
        "nobody",
        teamboard_protocol::MessageKind::Message,
        String::new(),
        None,
    );
    let twin = h.stranger(TEAM, "ann");
    let ctx = h.ctx(twin);
    let _ = h.board.register(ctx, "dev", None);
    let ctx = h.lead();
    let _ = h.board.add_task(ctx, new_task(""));
    assert!(!h.board.has_changes(), "{:?}", h.board.take_changes());
}

#[test]
fn a_heartbeat_is_not_written() {
    let mut h = H::new();
    let a = h.add("a");
    let ann = h.join("ann", "dev");
    let c = h.claim(ann, a);
    h.board.take_changes();
    h.advance(secs(1));
    let ctx = h.ctx(ann);
    h.board.heartbeat(ctx, a, c.epoch).unwrap();
    assert!(!h.board.has_changes());
}

#[test]
fn only_changed_rows_are_written() {
    let mut h = H::new();
    let a = h.add("a");
    let b = h.add("b");
    let ann = h.join("ann", "dev");
    let bob = h.join("bob", "dev");
    h.board.take_changes();
    let c = h.claim(ann, b);
    let changes = h.board.take_changes();
    assert_eq!(changes.tasks.len(), 1);
    assert_eq!(changes.tasks[0].1.id, b);
    // The member's task and `working` status are recomputed or reset by a
    // restart, so a claim does not write the member row.
    assert!(changes.members.is_empty(), "{:?}", changes.members);
    assert_eq!(h.member(ann).status, MemberStatus::Working);
    let _ = (a, bob, c);
}

#[test]
fn completing_a_blocker_writes_the_blocker_only() {
    // Dependents' rows do not change when they become ready: readiness is derived.
    let mut h = H::new();
    let a = h.add("a");
    let b = h.blocked("b", &[a]);
    let ann = h.join("ann", "dev");
    let c = h.claim(ann, a);
    h.board.take_changes();
    h.complete(ann, a, c.epoch);
    let changes = h.board.take_changes();
    let ids: Vec<TaskId> = changes.tasks.iter().map(|(_, t)| t.id).collect();
    assert_eq!(ids, vec![a]);
    assert!(h.ready(b));
}
