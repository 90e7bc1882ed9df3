//! Cancel and retry: the lead's tools.

use super::*;
use teamboard_protocol::{EventKind, TaskStatus};

#[test]
fn only_the_lead_may_cancel_or_retry() {
    let mut h = H::cfg(|c| c.max_attempts = 1);
    let a = h.add("a");
    let b = h.add("b");
    let ann = h.join("ann", "dev");
    let ctx = h.ctx(ann);
    let e = h.board.cancel_task(ctx, a).unwrap_err();
    assert_eq!(e.code, ErrorCode::PermissionDenied);
    assert!(e.message.contains("lead"), "{}", e.message);
    assert_eq!(h.task(a).status, TaskStatus::Pending);
    // Not even a session whose claimed name is unregistered.
    let stranger = h.stranger(TEAM, "boss");
    let ctx = h.ctx(stranger);
    assert_eq!(
        code(h.board.cancel_task(ctx, a)),
        ErrorCode::PermissionDenied
    );

    let c = h.claim(ann, b);
    h.fail(ann, b, c.epoch, "no");
    assert_eq!(h.task(b).status, TaskStatus::Failed);
    let ctx = h.ctx(ann);
    assert_eq!(
        code(h.board.retry_task(ctx, b)),
        ErrorCode::PermissionDenied
    );
    assert_eq!(h.task(b).status, TaskStatus::Failed);
    h.retry(b);
    assert_eq!(h.task(b).status, TaskStatus::Pending);
}

#[test]
fn cancel_withdraws_a_pending_task() {
    let mut h = H::new();
    let a = h.add("a");
    h.board.take_changes();
    let t = h.cancel(a);
    assert_eq!(t.status, TaskStatus::Cancelled);
    assert!(!h.ready(a));
    let ann = h.join("ann", "dev");
    assert_eq!(h.claim_next(ann), None);
    let s = h.board.summary(TEAM);
    assert_eq!((s.cancelled, s.ready, s.pending), (1, 0, 0));
    // Twice is refused; so is an unknown task.
    let ctx = h.lead();
    assert_eq!(code(h.board.cancel_task(ctx, a)), ErrorCode::InvalidState);
    let ctx = h.lead();
    assert_eq!(code(h.board.cancel_task(ctx, 9)), ErrorCode::NotFound);
}

#[test]
fn a_completed_task_cannot_be_cancelled() {
    let mut h = H::new();
    let a = h.add("a");
    let ann = h.join("ann", "dev");
    h.run_next(ann).unwrap();
    let ctx = h.lead();
    assert_eq!(code(h.board.cancel_task(ctx, a)), ErrorCode::InvalidState);
    assert_eq!(h.task(a).status, TaskStatus::Completed);
}

#[test]
fn cancelling_an_in_progress_task_fences_its_owner() {
    let mut h = H::cfg(|c| c.lease_ttl = secs(10));
    let a = h.add("a");
    let b = h.add("b");
    let ann = h.join("ann", "dev");
    let c = h.claim(ann, a);
    let t = h.cancel(a);
    assert_eq!(t.status, TaskStatus::Cancelled);
    assert_eq!(t.owner, None);
    assert_eq!(h.member(ann).task, None);
    for r in [
        {
            let ctx = h.ctx(ann);
            h.board.complete_task(ctx, a, c.epoch, "late".into())
        },
        {
            let ctx = h.ctx(ann);
            h.board.fail_task(ctx, a, c.epoch, "late".into())
        },
        {
            let ctx = h.ctx(ann);
            h.board.release_task(ctx, a, c.epoch, None, None)
        },
        {
            let ctx = h.ctx(ann);
            h.board.heartbeat(ctx, a, c.epoch)
        },
    ] {
        assert_eq!(code(r), ErrorCode::StaleEpoch);
    }
    assert_eq!(h.task(a).status, TaskStatus::Cancelled);
    assert_eq!(h.task(a).result, None);
    // The lease went with the claim: expiry later does not resurrect the task.
    assert_eq!(h.board.next_deadline(), None);
    h.advance(secs(60));
    h.expire();
    assert_eq!(h.task(a).status, TaskStatus::Cancelled);
    // The owner is free to take other work.
    assert_eq!(h.claim_next(ann).unwrap().task.id, b);
}

#[test]
fn retry_resets_attempts() {
    let mut h = H::cfg(|c| c.max_attempts = 2);
    let a = h.add("a");
    let ann = h.join("ann", "dev");
    let mut last_epoch = 0;
    for _ in 0..2 {
        let c = h.claim(ann, a);
        last_epoch = c.epoch;
        h.fail(ann, a, c.epoch, "boom");
    }
    assert_eq!(h.task(a).status, TaskStatus::Failed);
    h.board.take_changes();
    let t = h.retry(a);
    assert_eq!(t.status, TaskStatus::Pending);
    assert_eq!(t.attempts, 0);
    assert_eq!(t.owner, None);
    assert!(h.ready(a));
    let changes = h.board.take_changes();
    assert_eq!(changes.events[0].kind, EventKind::TaskRetried);
    assert_eq!(changes.events[0].actor, LEAD);
    // A fresh budget: one failure does not fail it again.
    let c = h.claim(ann, a);
    assert!(c.epoch > last_epoch, "epochs never go back");
    assert_eq!(c.task.attempts, 1);
    assert_eq!(h.fail(ann, a, c.epoch, "again").status, TaskStatus::Pending);
    let c = h.claim(ann, a);
    assert_eq!(
        h.fail(ann, a, c.epoch, "and again").status,
        TaskStatus::Failed
    );
}

#[test]
fn retry_of_a_cancelled_in_progress_task_keeps_the_old_claim_fenced() {
    let mut h = H::new();
    let a = h.add("a");
    let ann = h.join("ann", "dev");
    let bob = h.join("bob", "dev");
    let old = h.claim(ann, a);
    h.cancel(a);
    h.retry(a);
    let ctx = h.ctx(ann);
    assert_eq!(
        code(h.board.complete_task(ctx, a, old.epoch, String::new())),
        ErrorCode::StaleEpoch,
        "pending after retry, the old claim is still dead"
    );
    let new = h.claim(bob, a);
    assert!(new.epoch > old.epoch);
    let ctx = h.ctx(ann);
    assert_eq!(
        code(h.board.complete_task(ctx, a, old.epoch, String::new())),
        ErrorCode::StaleEpoch
    );
    h.complete(bob, a, new.epoch);
}

#[test]
fn retry_only_applies_to_failed_or_cancelled_tasks() {
    let mut h = H::new();
    let pending = h.add("pending");
    let running = h.add("running");
    let done = h.add("done");
    let ann = h.join("ann", "dev");
    let bob = h.join("bob", "dev");
    h.claim(ann, running);
    let c = h.claim(bob, done);
    h.complete(bob, done, c.epoch);
    for id in [pending, running, done] {
        let before = h.task(id);
        let ctx = h.lead();
        assert_eq!(
            code(h.board.retry_task(ctx, id)),
            ErrorCode::InvalidState,
            "#{id}"
        );
        assert_eq!(h.task(id), before);
    }
    let ctx = h.lead();
    assert_eq!(code(h.board.retry_task(ctx, 42)), ErrorCode::NotFound);
}

#[test]
fn a_retried_task_with_open_blockers_is_not_ready() {
    let mut h = H::new();
    let a = h.add("a");
    let b = h.blocked("b", &[a]);
    h.cancel(b);
    h.retry(b);
    assert_eq!(h.task(b).status, TaskStatus::Pending);
    assert!(!h.ready(b));
    let ann = h.join("ann", "dev");
    assert_eq!(h.run_next(ann), Some(a));
    assert!(h.ready(b));
}

#[test]
fn a_failed_task_can_be_cancelled_and_then_retried() {
    let mut h = H::cfg(|c| c.max_attempts = 1);
    let a = h.add("a");
    let ann = h.join("ann", "dev");
    let c = h.claim(ann, a);
    h.fail(ann, a, c.epoch, "x");
    assert_eq!(h.cancel(a).status, TaskStatus::Cancelled);
    assert_eq!(h.retry(a).status, TaskStatus::Pending);
    assert!(h.ready(a));
}
