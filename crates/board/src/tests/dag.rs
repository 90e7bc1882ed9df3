//! Dependencies: blockers, computed readiness, cycles, and failed or cancelled blockers.

use super::*;
use teamboard_protocol::TaskStatus;

#[test]
fn blockers_must_exist() {
    let mut h = H::new();
    let a = h.add("a");
    let ctx = h.lead();
    let new = NewTask {
        blocked_by: vec![a, 7],
        ..new_task("b")
    };
    let e = h.board.add_task(ctx, new).unwrap_err();
    assert_eq!(e.code, ErrorCode::NotFound);
    assert!(e.message.contains("#7"), "{}", e.message);
    assert_eq!(h.board.tasks(TEAM, None).len(), 1);
}

#[test]
fn blocked_task_is_not_ready_until_its_blocker_completes() {
    let mut h = H::new();
    let a = h.add("a");
    let b = h.blocked("b", &[a]);
    assert!(h.ready(a));
    assert!(!h.ready(b));
    assert_eq!(h.task(b).status, TaskStatus::Pending);
    assert_eq!(h.board.summary(TEAM).ready, 1);

    let ann = h.join("ann", "dev");
    let ctx = h.ctx(ann);
    let e = h.board.claim_task(ctx, b).unwrap_err();
    assert_eq!(e.code, ErrorCode::Conflict);
    assert!(e.message.contains("blocked by #1"), "{}", e.message);

    let claim = h.claim_next(ann).unwrap();
    assert_eq!(claim.task.id, a);
    // In progress is not completed: b is still blocked, and nothing else is ready.
    assert!(!h.ready(b));
    let bob = h.join("bob", "dev");
    assert_eq!(h.claim_next(bob), None);

    h.complete(ann, a, claim.epoch);
    assert!(h.ready(b));
    assert_eq!(h.claim_next(bob).unwrap().task.id, b);
}

#[test]
fn a_task_waits_for_all_of_its_blockers() {
    let mut h = H::new();
    let a = h.add("a");
    let b = h.add("b");
    // Duplicates collapse into one edge.
    let c = h.blocked("c", &[b, a, b]);
    assert_eq!(h.task(c).blocked_by, vec![a, b]);
    let ann = h.join("ann", "dev");
    assert_eq!(h.run_next(ann), Some(a));
    assert!(!h.ready(c));
    assert_eq!(h.run_next(ann), Some(b));
    assert!(h.ready(c));
    assert_eq!(h.run_next(ann), Some(c));
    assert_eq!(h.run_next(ann), None);
}

#[test]
fn diamond_becomes_ready_in_order() {
    let mut h = H::new();
    let a = h.add("a");
    let b = h.blocked("b", &[a]);
    let c = h.blocked("c", &[a]);
    let d = h.blocked("d", &[b, c]);
    let ann = h.join("ann", "dev");
    let order: Vec<TaskId> = std::iter::from_fn(|| h.run_next(ann)).collect();
    assert_eq!(order, vec![a, b, c, d]);
    assert_eq!(h.board.summary(TEAM).completed, 4);
}

#[test]
fn a_task_blocked_by_a_completed_task_is_ready_at_once() {
    let mut h = H::new();
    let a = h.add("a");
    let ann = h.join("ann", "dev");
    h.run_next(ann).unwrap();
    let b = h.blocked("b", &[a]);
    assert!(h.ready(b));
}

#[test]
fn add_dependency_refuses_a_self_edge() {
    let mut h = H::new();
    let a = h.add("a");
    let ctx = h.lead();
    assert_eq!(code(h.board.add_dependency(ctx, a, &[a])), ErrorCode::Cycle);
    assert!(h.task(a).blocked_by.is_empty());
    assert!(h.ready(a));
}

#[test]
fn add_dependency_refuses_cycles() {
    let mut h = H::new();
    let a = h.add("a");
    let b = h.blocked("b", &[a]);
    let c = h.blocked("c", &[b]);
    h.board.take_changes();
    // a <- b <- c: making a wait for c closes the loop.
    let ctx = h.lead();
    let e = h.board.add_dependency(ctx, a, &[c]).unwrap_err();
    assert_eq!(e.code, ErrorCode::Cycle);
    let ctx = h.lead();
    assert_eq!(code(h.board.add_dependency(ctx, a, &[b])), ErrorCode::Cycle);
    let ctx = h.lead();
    assert_eq!(code(h.board.add_dependency(ctx, b, &[c])), ErrorCode::Cycle);
    // One bad edge among good ones refuses them all.
    let d = h.add("d");
    let ctx = h.lead();
    assert_eq!(
        code(h.board.add_dependency(ctx, a, &[d, c])),
        ErrorCode::Cycle
    );
    // Nothing changed.
    assert!(h.task(a).blocked_by.is_empty());
    assert!(h.ready(a));
    let changes = h.board.take_changes();
    assert_eq!(changes.tasks.len(), 1, "only d's creation: {changes:?}");
    // A redundant edge in the same direction is fine.
    let ctx = h.lead();
    let t = h.board.add_dependency(ctx, c, &[a]).unwrap();
    assert_eq!(t.blocked_by, vec![a, b]);
}

#[test]
fn add_dependency_makes_a_ready_task_wait() {
    let mut h = H::new();
    let a = h.add("a");
    let b = h.add("b");
    assert!(h.ready(b));
    let ctx = h.lead();
    let t = h.board.add_dependency(ctx, b, &[a, a]).unwrap();
    assert_eq!(t.blocked_by, vec![a]);
    assert!(!h.ready(b));
    // Adding an edge that exists changes nothing.
    let ctx = h.lead();
    assert_eq!(
        h.board.add_dependency(ctx, b, &[a]).unwrap().blocked_by,
        vec![a]
    );
    let ann = h.join("ann", "dev");
    assert_eq!(h.run_next(ann), Some(a));
    assert!(h.ready(b));
    assert_eq!(h.run_next(ann), Some(b));
}

#[test]
fn add_dependency_on_an_in_progress_blocker() {
    let mut h = H::new();
    let a = h.add("a");
    let b = h.add("b");
    let ann = h.join("ann", "dev");
    let claim = h.claim(ann, a);
    let ctx = h.lead();
    h.board.add_dependency(ctx, b, &[a]).unwrap();
    assert!(!h.ready(b));
    h.complete(ann, a, claim.epoch);
    assert!(h.ready(b));
}

#[test]
fn add_dependency_on_a_completed_blocker_keeps_the_task_ready() {
    let mut h = H::new();
    let a = h.add("a");
    let ann = h.join("ann", "dev");
    h.run_next(ann).unwrap();
    let b = h.add("b");
    let ctx = h.lead();
    h.board.add_dependency(ctx, b, &[a]).unwrap();
    assert!(h.ready(b));
}

#[test]
fn add_dependency_checks_its_arguments() {
    let mut h = H::new();
    let a = h.add("a");
    let ctx = h.lead();
    assert_eq!(
        code(h.board.add_dependency(ctx, a, &[])),
        ErrorCode::InvalidArgs
    );
    let ctx = h.lead();
    assert_eq!(
        code(h.board.add_dependency(ctx, 9, &[a])),
        ErrorCode::NotFound
    );
    let ctx = h.lead();
    assert_eq!(
        code(h.board.add_dependency(ctx, a, &[9])),
        ErrorCode::NotFound
    );
    let ctx = h.lead_in("nowhere");
    assert_eq!(
        code(h.board.add_dependency(ctx, a, &[a])),
        ErrorCode::NotFound
    );
}

#[test]
fn add_dependency_refuses_tasks_that_are_not_pending() {
    let mut h = H::cfg(|c| c.max_attempts = 1);
    let blocker = h.add("blocker");
    let running = h.add("running");
    let done = h.add("done");
    let failed = h.add("failed");
    let cancelled = h.add("cancelled");
    let ann = h.join("ann", "dev");
    let bob = h.join("bob", "dev");
    let cat = h.join("cat", "dev");
    h.claim(ann, running);
    let c = h.claim(bob, done);
    h.complete(bob, done, c.epoch);
    let c = h.claim(cat, failed);
    h.fail(cat, failed, c.epoch, "boom");
    h.cancel(cancelled);
    for id in [running, done, failed, cancelled] {
        let ctx = h.lead();
        let e = h.board.add_dependency(ctx, id, &[blocker]).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidState, "#{id}");
        assert!(h.task(id).blocked_by.is_empty());
    }
}

#[test]
fn a_failed_blocker_keeps_dependents_waiting_until_retried_and_completed() {
    let mut h = H::cfg(|c| c.max_attempts = 1);
    let a = h.add("a");
    let b = h.blocked("b", &[a]);
    let ann = h.join("ann", "dev");
    let claim = h.claim_next(ann).unwrap();
    h.fail(ann, a, claim.epoch, "boom");
    assert_eq!(h.task(a).status, TaskStatus::Failed);
    assert_eq!(h.task(b).status, TaskStatus::Pending);
    assert!(!h.ready(b));
    assert_eq!(h.claim_next(ann), None);
    let ctx = h.ctx(ann);
    assert_eq!(code(h.board.claim_task(ctx, b)), ErrorCode::Conflict);

    h.retry(a);
    assert!(!h.ready(b), "a retried blocker is pending, not completed");
    let claim = h.claim_next(ann).unwrap();
    assert_eq!(claim.task.id, a);
    assert!(!h.ready(b));
    h.complete(ann, a, claim.epoch);
    assert!(h.ready(b));
    assert_eq!(h.run_next(ann), Some(b));
}

#[test]
fn a_cancelled_blocker_keeps_dependents_waiting_until_retried_and_completed() {
    let mut h = H::new();
    let a = h.add("a");
    let b = h.blocked("b", &[a]);
    let c = h.blocked("c", &[b]);
    h.cancel(a);
    assert!(!h.ready(a));
    assert!(!h.ready(b));
    let ann = h.join("ann", "dev");
    assert_eq!(h.claim_next(ann), None);
    // A new dependency on the cancelled task waits as well.
    let d = h.blocked("d", &[a]);
    assert!(!h.ready(d));

    h.retry(a);
    assert!(h.ready(a));
    assert!(!h.ready(b));
    assert_eq!(h.run_next(ann), Some(a));
    assert!(h.ready(b) && h.ready(d));
    assert!(!h.ready(c));
    assert_eq!(h.run_next(ann), Some(b));
    assert!(h.ready(c));
}

#[test]
fn a_cancelled_dependent_does_not_become_ready() {
    let mut h = H::new();
    let a = h.add("a");
    let b = h.blocked("b", &[a]);
    h.cancel(b);
    let ann = h.join("ann", "dev");
    assert_eq!(h.run_next(ann), Some(a));
    assert!(!h.ready(b));
    assert_eq!(h.task(b).status, TaskStatus::Cancelled);
    assert_eq!(h.claim_next(ann), None);
    // Retried after its blocker completed, it is ready at once.
    h.retry(b);
    assert!(h.ready(b));
}

#[test]
fn many_dependents_of_one_blocker() {
    let mut h = H::new();
    let root = h.add("root");
    let deps: Vec<TaskId> = (0..50)
        .map(|i| h.blocked(&format!("d{i}"), &[root]))
        .collect();
    assert_eq!(h.board.summary(TEAM).ready, 1);
    let ann = h.join("ann", "dev");
    assert_eq!(h.run_next(ann), Some(root));
    assert_eq!(h.board.summary(TEAM).ready, 50);
    assert!(deps.iter().all(|d| h.ready(*d)));
}

#[test]
fn add_task_validates_its_input() {
    let mut h = H::new();
    let t = h.add_task(NewTask {
        description: "more".into(),
        priority: -4,
        role: Some("dev".into()),
        ..new_task("  padded subject  ")
    });
    assert_eq!(t.subject, "padded subject");
    assert_eq!(t.description, "more");
    assert_eq!((t.priority, t.role.as_deref()), (-4, Some("dev")));
    assert_eq!(
        (t.status, t.owner.clone(), t.attempts, t.epoch),
        (TaskStatus::Pending, None, 0, 0)
    );
    assert_eq!((t.created_at, t.updated_at), (WALL0, WALL0));
    for bad in [
        new_task(""),
        new_task(" \t "),
        new_task("two\nlines"),
        new_task(&"s".repeat(crate::tasks::MAX_SUBJECT_LEN + 1)),
    ] {
        let ctx = h.lead();
        assert_eq!(code(h.board.add_task(ctx, bad)), ErrorCode::InvalidArgs);
    }
    let ok = new_task(&"s".repeat(crate::tasks::MAX_SUBJECT_LEN));
    assert_eq!(h.add_task(ok).id, 2);
}
