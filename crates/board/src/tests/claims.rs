//! Claims: one owner, one task per claimant, roles, order, and epochs as fences.

use super::*;
use teamboard_protocol::{MemberStatus, TaskStatus};

#[test]
fn a_claim_sets_owner_epoch_attempts_and_the_member_task() {
    let mut h = H::new();
    let a = h.add("a");
    let ann = h.join("ann", "dev");
    h.advance(secs(5));
    let claim = h.claim(ann, a);
    assert_eq!(claim.epoch, 1);
    assert_eq!(claim.task.epoch, 1);
    assert_eq!(claim.task.status, TaskStatus::InProgress);
    assert_eq!(claim.task.owner.as_deref(), Some("ann"));
    assert_eq!(claim.task.attempts, 1);
    assert_eq!(claim.task.updated_at, WALL0 + 5000);
    assert_eq!(claim.task, h.task(a));
    assert!(!h.ready(a));
    let m = h.member(ann);
    assert_eq!(m.task, Some(a));
    assert_eq!(m.status, MemberStatus::Working);
}

#[test]
fn exactly_one_owner() {
    let mut h = H::new();
    let a = h.add("a");
    let ann = h.join("ann", "dev");
    let bob = h.join("bob", "dev");
    h.claim(ann, a);
    let ctx = h.ctx(bob);
    let e = h.board.claim_task(ctx, a).unwrap_err();
    assert_eq!(e.code, ErrorCode::Conflict);
    assert!(e.message.contains("ann"), "{}", e.message);
    assert_eq!(h.claim_next(bob), None);
    assert_eq!(h.task(a).owner.as_deref(), Some("ann"));
    assert_eq!(h.member(bob).task, None);
}

#[test]
fn a_claimant_holds_at_most_one_task() {
    let mut h = H::new();
    let a = h.add("a");
    let b = h.add("b");
    let ann = h.join("ann", "dev");
    let claim = h.claim_next(ann).unwrap();
    assert_eq!(claim.task.id, a);
    let ctx = h.ctx(ann);
    assert_eq!(code(h.board.claim_next(ctx)), ErrorCode::AlreadyHoldsTask);
    let ctx = h.ctx(ann);
    assert_eq!(
        code(h.board.claim_task(ctx, b)),
        ErrorCode::AlreadyHoldsTask
    );
    assert!(h.ready(b));
    h.complete(ann, a, claim.epoch);
    assert_eq!(h.member(ann).task, None);
    assert_eq!(h.claim_next(ann).unwrap().task.id, b);
}

#[test]
fn roles_restrict_who_may_claim() {
    let mut h = H::new();
    let test = h.add_role("test it", "tester");
    let code_it = h.add_role("code it", "coder");
    let any = h.add("anyone");
    let coder = h.join("cody", "coder");
    let tester = h.join("tess", "tester");
    let ctx = h.ctx(coder);
    let e = h.board.claim_task(ctx, test).unwrap_err();
    assert_eq!(e.code, ErrorCode::RoleMismatch);
    // Equal priority: lowest id among what the role allows.
    assert_eq!(h.run_next(coder), Some(code_it));
    // A claimant with a role takes roleless tasks too.
    assert_eq!(h.run_next(coder), Some(any));
    // The tester's task is left for the tester.
    assert_eq!(h.claim_next(coder), None);
    assert!(h.ready(test));
    assert_eq!(h.run_next(tester), Some(test));
}

#[test]
fn a_roleless_task_goes_to_any_role() {
    let mut h = H::new();
    let a = h.add("a");
    let writer = h.join("wendy", "writer");
    let claim = h.claim(writer, a);
    assert_eq!(claim.task.role, None);
}

#[test]
fn role_check_comes_from_the_registration() {
    let mut h = H::new();
    let t = h.add_role("review", "reviewer");
    let ann = h.join("ann", "dev");
    assert_eq!(h.claim_next(ann), None);
    // Re-registering on the same session with another role changes what it may claim.
    h.register(ann, "reviewer");
    assert_eq!(h.claim_next(ann).unwrap().task.id, t);
}

#[test]
fn claim_next_takes_highest_priority_then_lowest_id() {
    let mut h = H::new();
    let p1 = h.add_prio("p1", 1);
    let p5a = h.add_prio("p5a", 5);
    let p5b = h.add_prio("p5b", 5);
    let p3 = h.add_prio("p3", 3);
    let neg = h.add_prio("neg", -2);
    let p0 = h.add_prio("p0", 0);
    let ann = h.join("ann", "dev");
    let order: Vec<TaskId> = std::iter::from_fn(|| h.run_next(ann)).collect();
    assert_eq!(order, vec![p5a, p5b, p3, p1, p0, neg]);
}

#[test]
fn claim_next_merges_role_and_roleless_queues_by_priority_then_id() {
    let mut h = H::new();
    let any5 = h.add_prio("any5", 5);
    let role5 = h.add_task(NewTask {
        priority: 5,
        role: Some("dev".into()),
        ..new_task("role5")
    });
    let role9 = h.add_task(NewTask {
        priority: 9,
        role: Some("dev".into()),
        ..new_task("role9")
    });
    let any1 = h.add_prio("any1", 1);
    let role0 = h.add_task(NewTask {
        priority: 0,
        role: Some("dev".into()),
        ..new_task("role0")
    });
    let other = h.add_task(NewTask {
        priority: 100,
        role: Some("ops".into()),
        ..new_task("other role")
    });
    let ann = h.join("ann", "dev");
    let order: Vec<TaskId> = std::iter::from_fn(|| h.run_next(ann)).collect();
    assert_eq!(order, vec![role9.id, any5, role5.id, any1, role0.id]);
    assert!(h.ready(other.id));
}

#[test]
fn ties_break_by_lowest_id_even_across_release() {
    let mut h = H::new();
    let a = h.add("a");
    let b = h.add("b");
    let ann = h.join("ann", "dev");
    let bob = h.join("bob", "dev");
    let claim = h.claim_next(ann).unwrap();
    assert_eq!(claim.task.id, a);
    // Released, a is the best again.
    h.release(ann, a, claim.epoch, None);
    assert_eq!(h.claim_next(bob).unwrap().task.id, a);
    assert_eq!(h.claim_next(ann).unwrap().task.id, b);
}

#[test]
fn claiming_a_task_that_is_not_ready_is_a_conflict() {
    let mut h = H::cfg(|c| c.max_attempts = 1);
    let blocker = h.add("blocker");
    let blocked = h.blocked("blocked", &[blocker]);
    let running = h.add("running");
    let done = h.add("done");
    let failed = h.add("failed");
    let cancelled = h.add("cancelled");
    let ann = h.join("ann", "dev");
    let bob = h.join("bob", "dev");
    let cat = h.join("cat", "dev");
    let c = h.claim(ann, done);
    h.complete(ann, done, c.epoch);
    let c = h.claim(ann, failed);
    h.fail(ann, failed, c.epoch, "no");
    h.cancel(cancelled);
    h.claim(bob, running);
    for id in [blocked, running, done, failed, cancelled] {
        let ctx = h.ctx(cat);
        let e = h.board.claim_task(ctx, id).unwrap_err();
        assert_eq!(e.code, ErrorCode::Conflict, "#{id}: {}", e.message);
    }
    let ctx = h.ctx(cat);
    assert_eq!(code(h.board.claim_task(ctx, 99)), ErrorCode::NotFound);
    assert_eq!(h.member(cat).task, None);
    assert_eq!(h.claim_next(cat).unwrap().task.id, blocker);
}

#[test]
fn an_unregistered_session_cannot_claim() {
    let mut h = H::new();
    let a = h.add("a");
    let ann = h.join("ann", "dev");
    h.board.take_changes();
    let nobody = h.stranger(TEAM, "nobody");
    let ctx = h.ctx(nobody);
    assert_eq!(code(h.board.claim_next(ctx)), ErrorCode::NotRegistered);
    let ctx = h.ctx(nobody);
    assert_eq!(code(h.board.claim_task(ctx, a)), ErrorCode::NotRegistered);
    // A registered name on another session is not registered on this one.
    let impostor = Mate {
        session: h.new_session(),
        ..ann
    };
    let ctx = h.ctx(impostor);
    assert_eq!(code(h.board.claim_next(ctx)), ErrorCode::NotRegistered);
    // The lead is never a claimant.
    let ctx = h.lead();
    assert_eq!(code(h.board.claim_next(ctx)), ErrorCode::NotRegistered);
    assert!(h.ready(a));
    assert!(!h.board.has_changes());
}

#[test]
fn complete_records_the_result_and_frees_the_claimant() {
    let mut h = H::new();
    let a = h.add("a");
    let ann = h.join("ann", "dev");
    let claim = h.claim(ann, a);
    h.advance(secs(3));
    let ctx = h.ctx(ann);
    let t = h
        .board
        .complete_task(ctx, a, claim.epoch, "it works".into())
        .unwrap();
    assert_eq!(t.status, TaskStatus::Completed);
    assert_eq!(t.result.as_deref(), Some("it works"));
    assert_eq!(
        t.owner.as_deref(),
        Some("ann"),
        "owner records who completed it"
    );
    assert_eq!(t.updated_at, WALL0 + 3000);
    assert_eq!(h.member(ann).task, None);
    // Completing twice is refused as stale.
    let ctx = h.ctx(ann);
    assert_eq!(
        code(h.board.complete_task(ctx, a, claim.epoch, "again".into())),
        ErrorCode::StaleEpoch
    );
    assert_eq!(h.task(a).result.as_deref(), Some("it works"));
}

#[test]
fn an_oversized_result_is_refused_and_the_claim_stays() {
    let mut h = H::cfg(|c| c.max_message_len = 10);
    let a = h.add("a");
    let ann = h.join("ann", "dev");
    let claim = h.claim(ann, a);
    let ctx = h.ctx(ann);
    let e = h
        .board
        .complete_task(ctx, a, claim.epoch, "x".repeat(11))
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidArgs);
    assert_eq!(h.task(a).status, TaskStatus::InProgress);
    assert_eq!(h.member(ann).task, Some(a));
    let ctx = h.ctx(ann);
    h.board
        .complete_task(ctx, a, claim.epoch, "x".repeat(10))
        .unwrap();
}

/// Every fenced operation with the given context and epoch.
fn fenced_ops(
    h: &mut H,
    ctx: Ctx<'static>,
    id: TaskId,
    epoch: u64,
) -> Vec<(&'static str, ErrorCode)> {
    vec![
        ("heartbeat", code(h.board.heartbeat(ctx, id, epoch))),
        (
            "complete",
            code(h.board.complete_task(ctx, id, epoch, "r".into())),
        ),
        ("fail", code(h.board.fail_task(ctx, id, epoch, "e".into()))),
        (
            "release",
            code(h.board.release_task(ctx, id, epoch, None, None)),
        ),
        (
            "release with error",
            code(h.board.release_task(ctx, id, epoch, Some("e".into()), None)),
        ),
    ]
}

#[track_caller]
fn assert_all_stale(results: Vec<(&'static str, ErrorCode)>) {
    for (op, c) in results {
        assert_eq!(c, ErrorCode::StaleEpoch, "{op}");
    }
}

#[test]
fn a_wrong_epoch_is_refused() {
    let mut h = H::new();
    let a = h.add("a");
    let ann = h.join("ann", "dev");
    let claim = h.claim(ann, a);
    h.board.take_changes();
    for epoch in [0, claim.epoch + 1, claim.epoch + 100] {
        let ctx = h.ctx(ann);
        assert_all_stale(fenced_ops(&mut h, ctx, a, epoch));
    }
    assert!(!h.board.has_changes(), "refused operations change nothing");
    assert_eq!(h.task(a), claim.task);
    h.complete(ann, a, claim.epoch);
}

#[test]
fn another_member_or_session_is_refused() {
    let mut h = H::new();
    let a = h.add("a");
    let ann = h.join("ann", "dev");
    let bob = h.join("bob", "dev");
    let claim = h.claim(ann, a);
    let ctx = h.ctx(bob);
    assert_all_stale(fenced_ops(&mut h, ctx, a, claim.epoch));
    // The right name on a session that does not hold the claim.
    let ghost = Mate {
        session: h.new_session(),
        ..ann
    };
    let ctx = h.ctx(ghost);
    assert_all_stale(fenced_ops(&mut h, ctx, a, claim.epoch));
    // The lead cannot finish a teammate's attempt either.
    let ctx = h.lead();
    assert_all_stale(fenced_ops(&mut h, ctx, a, claim.epoch));
    assert_eq!(h.task(a), claim.task);
    assert_eq!(
        h.complete(ann, a, claim.epoch).status,
        TaskStatus::Completed
    );
}

#[test]
fn fenced_operations_on_an_unknown_task_are_not_found() {
    let mut h = H::new();
    let ann = h.join("ann", "dev");
    let ctx = h.ctx(ann);
    for (op, c) in fenced_ops(&mut h, ctx, 42, 1) {
        assert_eq!(c, ErrorCode::NotFound, "{op}");
    }
}

#[test]
fn a_reclaim_bumps_the_epoch_and_fences_the_old_claim() {
    let mut h = H::new();
    let a = h.add("a");
    let ann = h.join("ann", "dev");
    let bob = h.join("bob", "dev");
    let first = h.claim(ann, a);
    h.release(ann, a, first.epoch, None);
    assert_eq!(h.task(a).epoch, first.epoch, "release keeps the last epoch");
    let second = h.claim(bob, a);
    assert_eq!(second.epoch, first.epoch + 1);
    let ctx = h.ctx(ann);
    assert_all_stale(fenced_ops(&mut h, ctx, a, first.epoch));
    // Even the same claimant cannot use an old epoch after reclaiming.
    h.release(bob, a, second.epoch, None);
    let third = h.claim(bob, a);
    assert_eq!(third.epoch, second.epoch + 1);
    let ctx = h.ctx(bob);
    assert_all_stale(fenced_ops(&mut h, ctx, a, second.epoch));
    assert_eq!(h.task(a).owner.as_deref(), Some("bob"));
    h.complete(bob, a, third.epoch);
}

#[test]
fn a_claim_lost_to_lease_expiry_is_stale() {
    let mut h = H::cfg(|c| c.lease_ttl = secs(10));
    let a = h.add("a");
    let ann = h.join("ann", "dev");
    let bob = h.join("bob", "dev");
    let old = h.claim(ann, a);
    h.advance(secs(10));
    h.expire();
    // Before anyone reclaims it, and after.
    let ctx = h.ctx(ann);
    assert_all_stale(fenced_ops(&mut h, ctx, a, old.epoch));
    let new = h.claim(bob, a);
    let ctx = h.ctx(ann);
    assert_all_stale(fenced_ops(&mut h, ctx, a, old.epoch));
    assert_eq!(h.complete(bob, a, new.epoch).owner.as_deref(), Some("bob"));
}

#[test]
fn set_status_and_usage_need_registration() {
    let mut h = H::new();
    let a = h.add("a");
    let ann = h.join("ann", "dev");
    let nobody = h.stranger(TEAM, "nobody");
    let ctx = h.ctx(nobody);
    assert_eq!(
        code(h.board.set_status(ctx, MemberStatus::Shutdown)),
        ErrorCode::NotRegistered
    );
    let ctx = h.ctx(nobody);
    assert_eq!(
        code(h.board.record_usage(ctx, None, Default::default(), false)),
        ErrorCode::NotRegistered
    );
    let usage = teamboard_protocol::TokenUsage {
        input: 10,
        output: 5,
        ..Default::default()
    };
    let ctx = h.ctx(ann);
    let m = h.board.record_usage(ctx, Some(a), usage, false).unwrap();
    assert_eq!(m.tokens.total(), 15);
    let ctx = h.ctx(ann);
    h.board.record_usage(ctx, Some(a), usage, false).unwrap();
    assert_eq!(h.task(a).tokens.total(), 30);
    assert_eq!(h.member(ann).tokens.input, 20);
    // Cached input is summed apart from fresh input, on the member and the task.
    let cached = teamboard_protocol::TokenUsage {
        input: 1,
        output: 2,
        cache_read: 300,
        cache_write: 40,
    };
    let ctx = h.ctx(ann);
    h.board.record_usage(ctx, Some(a), cached, false).unwrap();
    let ctx = h.ctx(ann);
    h.board.record_usage(ctx, Some(a), cached, false).unwrap();
    for tokens in [h.task(a).tokens, h.member(ann).tokens] {
        assert_eq!(
            (
                tokens.input,
                tokens.output,
                tokens.cache_read,
                tokens.cache_write
            ),
            (22, 14, 600, 80)
        );
    }
    let ctx = h.ctx(ann);
    assert_eq!(
        code(h.board.record_usage(ctx, Some(99), usage, false)),
        ErrorCode::NotFound
    );
    assert_eq!(h.member(ann).tokens.total(), 30 + 2 * 343);
}
