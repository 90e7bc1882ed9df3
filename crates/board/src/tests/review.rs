//! Review before merge (`review.rs`): a completion whose checks pass waits in
//! `landing: review` until a person merges it or sends it back.

use super::*;
use crate::{Completion, GateJob};
use teamboard_protocol::{
    DiffStat, EventKind, LandingStage, MemberStatus, MergeStyle, Repo, TaskStatus, Work,
};

fn repo(review: bool) -> Repo {
    Repo {
        path: "/src/app".into(),
        branch: "main".into(),
        merge: MergeStyle::Rebase,
        checks: vec![],
        check_timeout_ms: 1000,
        worktrees: "/state/worktrees/alpha".into(),
        git_version: "2.47.3".into(),
        set_at: WALL0,
        review,
    }
}

fn with_repo(review: bool) -> H {
    let mut h = H::new();
    let ctx = h.lead();
    h.board.set_repo(ctx, repo(review)).unwrap();
    h
}

const DIFF: DiffStat = DiffStat {
    files: 2,
    added: 10,
    removed: 3,
};

/// Claims `id`, opens its worktree and completes it: its gate is running.
fn complete(h: &mut H, m: Mate, id: TaskId, result: &str) -> (Claim, GateJob) {
    let c = h.claim(m, id);
    let ctx = h.ctx(m);
    h.board
        .worktree_opened(ctx, id, c.epoch, "base0", true, &Default::default())
        .unwrap();
    let job = begin(h, m, &c, result);
    (c, job)
}

fn begin(h: &mut H, m: Mate, c: &Claim, result: &str) -> GateJob {
    let ctx = h.ctx(m);
    match h
        .board
        .begin_complete(ctx, c.task.id, c.epoch, result.into())
        .unwrap()
    {
        Completion::Gate(job) => job,
        other => panic!("not a new gate: {other:?}"),
    }
}

/// The gate passed at `head`: the task waits for review.
fn passed(h: &mut H, id: TaskId, epoch: u64, head: &str) -> Task {
    assert!(h.board.needs_review(TEAM, id));
    let now = h.now();
    h.board
        .await_review(TEAM, id, epoch, head.into(), DIFF, vec![], now)
        .unwrap()
}

fn kinds(h: &mut H) -> Vec<EventKind> {
    h.events().into_iter().map(|e| e.kind).collect()
}

#[test]
fn the_team_or_the_task_asks_for_a_review() {
    let mut h = with_repo(false);
    let plain = h.add("plain");
    let reviewed = h
        .add_task(NewTask {
            review: true,
            ..new_task("reviewed")
        })
        .id;
    assert!(!h.board.needs_review(TEAM, plain));
    assert!(h.board.needs_review(TEAM, reviewed));
    let mut h = with_repo(true);
    let plain = h.add("plain");
    assert!(h.board.needs_review(TEAM, plain));
    // A task without a worktree completes at once: nothing to review.
    let ctx = h.lead();
    let e = h.board.add_task(
        ctx,
        NewTask {
            review: true,
            no_worktree: true,
            ..new_task("x")
        },
    );
    assert_eq!(code(e), ErrorCode::InvalidArgs);
}

#[test]
fn passed_work_waits_without_a_lease_and_the_owner_is_answered_and_idles() {
    let mut h = with_repo(true);
    let a = h.add("a");
    let dep = h.blocked("dep", &[a]);
    let ann = h.join("ann", "dev");
    let (c, _) = complete(&mut h, ann, a, "done");
    h.events();
    let t = passed(&mut h, a, c.epoch, "head1");
    let l = t.landing.clone().unwrap();
    assert_eq!(l.stage, LandingStage::Review);
    assert_eq!(l.head.as_deref(), Some("head1"));
    assert_eq!(l.diff, Some(DIFF));
    assert_eq!(l.review_at, Some(h.now().wall_ms));
    assert_eq!(t.status, TaskStatus::InProgress);
    let events = h.events();
    assert_eq!(events[0].kind, EventKind::ReviewRequested);
    assert!(events[0].detail.contains("2 file(s), +10 -3"), "{events:?}");
    // Nothing lands: the queue has nothing, and the dependent waits.
    assert!(h.board.queued_jobs().is_empty());
    assert!(!h.ready(dep));
    // The owner asking again is answered at once, not held for hours.
    let ctx = h.ctx(ann);
    assert_eq!(
        h.board.begin_complete(ctx, a, c.epoch, "again".into()),
        Ok(Completion::Review(h.task(a)))
    );
    // It waits idle, holding the claim, and takes no other task.
    h.add("other");
    assert_eq!(h.park(ann, 1), None);
    assert_eq!(h.member(ann).status, MemberStatus::Idle);
    assert_eq!(h.member(ann).task, Some(a));
    // Its liveness says whose move it is: the person's, not its own.
    let now = h.now();
    h.board.settle_liveness(now);
    assert_eq!(
        h.member(ann).liveness.map(|l| l.state),
        Some(teamboard_protocol::LiveState::AwaitingApproval)
    );
    // Neither its lease nor its connection decides anything: a person may read
    // for hours, and its owner may die meanwhile.
    h.advance(secs(3600));
    h.expire();
    assert_eq!(h.task(a).status, TaskStatus::InProgress);
    assert_eq!(h.board.next_deadline(), None);
    let now = h.now();
    h.board.disconnect(ann.session, now);
    let t = h.task(a);
    assert_eq!(
        (t.status, t.landing.map(|l| l.stage)),
        (TaskStatus::InProgress, Some(LandingStage::Review))
    );
}

#[test]
fn merge_queues_the_head_that_passed_and_landing_completes_it() {
    let mut h = with_repo(true);
    let a = h.add("a");
    let dep = h.blocked("dep", &[a]);
    let ann = h.join("ann", "dev");
    let (c, _) = complete(&mut h, ann, a, "done");
    passed(&mut h, a, c.epoch, "head1");
    // The owner is gone: merge needs no owner.
    let now = h.now();
    h.board.disconnect(ann.session, now);
    h.events();
    let ctx = h.lead();
    let job = h.board.merge_task(ctx, a).unwrap();
    assert_eq!(
        (job.task, job.epoch, job.head.as_str()),
        (a, c.epoch, "head1")
    );
    assert_eq!(job.message, "a\n\ndone");
    let t = h.task(a);
    assert_eq!(t.landing.unwrap().stage, LandingStage::Queued);
    let events = h.events();
    assert_eq!(events[0].kind, EventKind::MergeQueued);
    assert_eq!(events[0].actor, LEAD);
    // A restart now lands it first thing, like any queued task.
    assert_eq!(h.board.queued_jobs().len(), 1);
    // Merged twice: refused, it no longer waits.
    let ctx = h.lead();
    let e = h.board.merge_task(ctx, a).unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidState);
    assert!(
        e.message.contains("already in the merge queue"),
        "{}",
        e.message
    );
    let now = h.now();
    let t = h
        .board
        .landed(TEAM, a, job.epoch, "old".into(), "new".into(), now)
        .unwrap();
    assert_eq!(t.status, TaskStatus::Completed);
    assert!(h.ready(dep));
}

#[test]
fn review_ops_are_the_leads_and_refuse_what_does_not_wait_in_words() {
    let mut h = with_repo(true);
    let a = h.add("a");
    let pending = h.add("pending");
    let ann = h.join("ann", "dev");
    let (c, _) = complete(&mut h, ann, a, "done");
    // Still checking.
    let ctx = h.lead();
    let e = h.board.merge_task(ctx, a).unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidState);
    assert!(
        e.message.contains("still running its checks"),
        "{}",
        e.message
    );
    let e = h.board.merge_task(ctx, pending).unwrap_err();
    assert_eq!(
        e.message,
        format!("#{pending} is not waiting for review: it is pending")
    );
    assert_eq!(code(h.board.merge_task(ctx, 99)), ErrorCode::NotFound);
    assert_eq!(code(h.board.send_back(ctx, 99, "x")), ErrorCode::NotFound);
    passed(&mut h, a, c.epoch, "head1");
    // A teammate may not review, not even its own work.
    let ctx = h.ctx(ann);
    assert_eq!(
        code(h.board.merge_task(ctx, a)),
        ErrorCode::PermissionDenied
    );
    assert_eq!(
        code(h.board.send_back(ctx, a, "mine")),
        ErrorCode::PermissionDenied
    );
    // Feedback is what the owner works from: it cannot be empty.
    let ctx = h.lead();
    let e = h.board.send_back(ctx, a, "  \n").unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidArgs);
    assert!(e.message.contains("feedback is empty"), "{}", e.message);
    let long = "x".repeat(crate::MAX_FEEDBACK_LEN + 1);
    assert_eq!(
        code(h.board.send_back(ctx, a, &long)),
        ErrorCode::InvalidArgs
    );
    // Nothing of that changed the task.
    assert_eq!(h.task(a).landing.unwrap().stage, LandingStage::Review);
}

#[test]
fn send_back_to_a_connected_owner_keeps_the_claim_and_its_wait_takes_it_up() {
    let mut h = with_repo(true);
    let a = h.add("a");
    let ann = h.join("ann", "dev");
    let (c, _) = complete(&mut h, ann, a, "done");
    passed(&mut h, a, c.epoch, "head1");
    assert_eq!(h.park(ann, 7), None);
    h.events();
    let ctx = h.lead();
    let t = h.board.send_back(ctx, a, "keep the old flag").unwrap();
    assert_eq!(t.status, TaskStatus::InProgress);
    assert_eq!((t.owner.as_deref(), t.epoch), (Some("ann"), c.epoch));
    assert!(t.landing.is_none());
    assert_eq!(
        t.handoff.as_deref(),
        Some("Sent back by review (lead): keep the old flag")
    );
    let events = h.events();
    assert_eq!(events[0].kind, EventKind::SentBack);
    assert_eq!(
        events[0].detail,
        "lead sent #1 back to ann: keep the old flag"
    );
    // The owner's parked wait gets its own task back, with the same epoch.
    let served = h.dispatch();
    assert_eq!(served.len(), 1);
    let (request, Work::Task { claim }) = &served[0] else {
        panic!("not a task: {served:?}");
    };
    assert_eq!((*request, claim.task.id, claim.epoch), (7, a, c.epoch));
    assert_eq!(h.task(a).attempts, 1, "the attempt goes on");
    // Its lease runs again from the hand-over.
    h.advance(secs(31));
    h.expire();
    assert_eq!(h.task(a).status, TaskStatus::Pending);
}

#[test]
fn a_returned_task_waits_for_its_owners_next_wait_and_then_runs_the_gate_and_review_again() {
    let mut h = with_repo(true);
    let a = h.add("a");
    let ann = h.join("ann", "dev");
    let (c, _) = complete(&mut h, ann, a, "done");
    passed(&mut h, a, c.epoch, "head1");
    let ctx = h.lead();
    h.board.send_back(ctx, a, "more tests").unwrap();
    // Not parked: nothing is handed, and the lease waits for the owner.
    assert!(h.dispatch().is_empty());
    h.advance(secs(600));
    h.expire();
    assert_eq!(h.task(a).status, TaskStatus::InProgress);
    let Some(Work::Task { claim }) = h.park(ann, 1) else {
        panic!("the owner's wait does not take its task back");
    };
    assert_eq!(claim.epoch, c.epoch);
    // A second wait does not get it twice.
    assert_eq!(h.park(ann, 2), None);
    let ctx = h.ctx(ann);
    h.board.heartbeat(ctx, a, c.epoch).unwrap();
    let job = begin(&mut h, ann, &c, "with tests");
    assert_eq!(job.epoch, c.epoch);
    let t = passed(&mut h, a, c.epoch, "head2");
    assert_eq!(t.landing.unwrap().head.as_deref(), Some("head2"));
}

#[test]
fn send_back_to_an_owner_that_is_gone_leaves_the_task_to_the_next_owner_with_the_feedback() {
    let mut h = with_repo(true);
    let a = h.add("a");
    let ann = h.join("ann", "dev");
    let (c, _) = complete(&mut h, ann, a, "done");
    passed(&mut h, a, c.epoch, "head1");
    let now = h.now();
    h.board.disconnect(ann.session, now);
    h.events();
    let ctx = h.lead();
    let t = h.board.send_back(ctx, a, "rename it").unwrap();
    assert_eq!(t.status, TaskStatus::Pending);
    assert_eq!(t.owner, None);
    assert_eq!(t.attempts, 0, "sent back is not a failed attempt");
    assert!(t.ready);
    assert!(t.worktree.is_some(), "the work stays for the next owner");
    assert!(t.handoff.as_deref().unwrap().contains("rename it"), "{t:?}");
    assert_eq!(
        kinds(&mut h),
        [EventKind::SentBack, EventKind::TaskReleased]
    );
    let bob = h.join("bob", "dev");
    let next = h.claim(bob, a);
    assert!(next.task.handoff.unwrap().contains("rename it"));
    assert_eq!(next.task.worktree, t.worktree);
}

#[test]
fn a_cancel_while_waiting_for_review_drops_the_landing() {
    let mut h = with_repo(true);
    let a = h.add("a");
    let ann = h.join("ann", "dev");
    let (c, _) = complete(&mut h, ann, a, "done");
    passed(&mut h, a, c.epoch, "head1");
    h.cancel(a);
    assert!(h.task(a).landing.is_none());
    assert_eq!(h.board.take_dropped().len(), 1);
    let ctx = h.lead();
    let e = h.board.merge_task(ctx, a).unwrap_err();
    assert!(e.message.contains("it is cancelled"), "{}", e.message);
}

#[test]
fn a_restart_keeps_what_waits_for_review_waiting_and_lands_nothing() {
    let mut h = with_repo(true);
    let mut store = Store::default();
    let a = h.add("a");
    let ann = h.join("ann", "dev");
    let (c, _) = complete(&mut h, ann, a, "done");
    passed(&mut h, a, c.epoch, "head1");
    store.apply(h.board.take_changes());

    let mut board = Board::restore(BoardConfig::default(), store.snapshot(), h.at(secs(1)));
    let t = board.task(TEAM, a).unwrap().clone();
    let l = t.landing.unwrap();
    assert_eq!(
        (l.stage, l.head.as_deref()),
        (LandingStage::Review, Some("head1"))
    );
    assert_eq!(l.diff, Some(DIFF));
    assert!(board.queued_jobs().is_empty(), "nothing lands");
    // Its owner never comes back, and the restart grace does not end it.
    board.expire(h.at(secs(3600)));
    assert_eq!(board.task(TEAM, a).unwrap().status, TaskStatus::InProgress);
    let ctx = Ctx {
        team: TEAM,
        actor: LEAD,
        session: LEAD_SESSION,
        now: h.at(secs(3600)),
    };
    let job = board.merge_task(ctx, a).unwrap();
    assert_eq!(job.head, "head1");
}

#[test]
fn the_owner_may_shut_down_while_its_work_waits_and_the_review_stays() {
    use teamboard_protocol::request::ShutdownArgs;
    let mut h = with_repo(true);
    let a = h.add("a");
    let b = h.add("b");
    let ann = h.join("ann", "dev");
    let bob = h.join("bob", "dev");
    let (ca, _) = complete(&mut h, ann, a, "done");
    passed(&mut h, a, ca.epoch, "head1");
    let (cb, _) = complete(&mut h, bob, b, "done");
    passed(&mut h, b, cb.epoch, "head2");
    // Asked: ann approves without giving back what is not hers to give.
    let ctx = h.lead();
    let req = h
        .board
        .request_shutdown(
            ctx,
            ShutdownArgs {
                to: "ann".into(),
                ..Default::default()
            },
        )
        .unwrap();
    let ctx = h.ctx(ann);
    h.board
        .respond_shutdown(ctx, req.id, true, None)
        .expect("approving needs no release of a task in review");
    // Forced: bob is stopped, and his review stays.
    let ctx = h.lead();
    h.board
        .request_shutdown(
            ctx,
            ShutdownArgs {
                to: "bob".into(),
                force: true,
                ..Default::default()
            },
        )
        .unwrap();
    for id in [a, b] {
        let t = h.task(id);
        assert_eq!(t.status, TaskStatus::InProgress, "#{id}");
        assert_eq!(t.landing.unwrap().stage, LandingStage::Review, "#{id}");
    }
    let ctx = h.lead();
    h.board.merge_task(ctx, b).unwrap();
    // ann is still connected, but leaving (teammated says so before it
    // exits): sent back, her task goes to the next owner rather than to her.
    let actx = h.ctx(ann);
    h.board.set_status(actx, MemberStatus::Shutdown).unwrap();
    let t = h.board.send_back(ctx, a, "one more test").unwrap();
    assert_eq!((t.status, t.owner), (TaskStatus::Pending, None));
}

#[test]
fn merged_work_that_waits_on_the_persons_checkout_stays_done_for_its_idle_owner() {
    let mut h = with_repo(true);
    let a = h.add("a");
    let ann = h.join("ann", "dev");
    let (c, _) = complete(&mut h, ann, a, "done");
    passed(&mut h, a, c.epoch, "head1");
    let ctx = h.lead();
    h.board.merge_task(ctx, a).unwrap();
    let now = h.now();
    let blocked = crate::Blocked {
        checkout: "/src/app".into(),
        paths: vec!["README.md".into()],
    };
    assert_eq!(
        h.board.land_blocked(TEAM, a, c.epoch, &blocked, now),
        Ok(true)
    );
    // The owner's part is over: it idles and reads as waiting on the person,
    // not as working on a task it no longer touches.
    assert_eq!(h.park(ann, 1), None);
    assert_eq!(h.member(ann).status, MemberStatus::Idle);
    let now = h.now();
    h.board.settle_liveness(now);
    assert_eq!(
        h.member(ann).liveness.map(|l| l.state),
        Some(teamboard_protocol::LiveState::AwaitingApproval)
    );
    // Its connection closing, or its lease running out, loses nothing.
    h.advance(secs(3600));
    h.expire();
    let now = h.now();
    h.board.disconnect(ann.session, now);
    let t = h.task(a);
    assert_eq!(
        (t.status, t.attempts, t.landing.map(|l| l.stage)),
        (TaskStatus::InProgress, 1, Some(LandingStage::Blocked))
    );
}

#[test]
fn an_owner_that_drops_before_taking_up_a_sent_back_task_keeps_it_and_no_attempt_is_used() {
    let mut h = with_repo(true);
    let a = h.add("a");
    let ann = h.join("ann", "dev");
    let (c, _) = complete(&mut h, ann, a, "done");
    passed(&mut h, a, c.epoch, "head1");
    let ctx = h.lead();
    h.board.send_back(ctx, a, "rename it").unwrap();
    let now = h.now();
    h.board.disconnect(ann.session, now);
    let t = h.task(a);
    assert_eq!(
        (t.status, t.owner.as_deref(), t.attempts),
        (TaskStatus::InProgress, Some("ann"), 1)
    );
}

#[test]
fn a_sent_back_task_its_owner_completes_again_without_a_wait_has_its_lease_again() {
    let mut h = with_repo(true);
    let a = h.add("a");
    let ann = h.join("ann", "dev");
    let (c, _) = complete(&mut h, ann, a, "done");
    passed(&mut h, a, c.epoch, "head1");
    let ctx = h.lead();
    h.board.send_back(ctx, a, "more tests").unwrap();
    // The owner completes again before any wait takes the task up: it has
    // taken it up itself, and its checks run like any other completion's.
    begin(&mut h, ann, &c, "with tests");
    let now = h.now();
    let refusal = crate::GateRefusal::new(ErrorCode::CheckFailed, "tests fail");
    h.board
        .gate_refused(TEAM, a, c.epoch, &refusal, now)
        .unwrap();
    // Then it goes silent: the claim lapses, as a working owner's does.
    h.advance(secs(31));
    h.expire();
    let t = h.task(a);
    assert_eq!((t.status, t.owner), (TaskStatus::Pending, None));
}

#[test]
fn a_sent_back_task_completed_again_late_has_a_fresh_lease_for_its_checks() {
    let mut h = with_repo(true);
    let a = h.add("a");
    let ann = h.join("ann", "dev");
    let (c, _) = complete(&mut h, ann, a, "done");
    passed(&mut h, a, c.epoch, "head1");
    let ctx = h.lead();
    h.board.send_back(ctx, a, "more tests").unwrap();
    // The owner works on the feedback longer than a lease, its lease waived
    // meanwhile, then completes again: its checks start with a whole lease.
    h.advance(secs(40));
    h.expire();
    assert_eq!(h.task(a).status, TaskStatus::InProgress);
    begin(&mut h, ann, &c, "with tests");
    h.advance(secs(20));
    h.expire();
    let t = h.task(a);
    assert_eq!(
        (t.status, t.owner.as_deref()),
        (TaskStatus::InProgress, Some("ann"))
    );
}
