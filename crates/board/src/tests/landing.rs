//! Worktrees reserved by claims, completion gates and the merge queue, as board
//! state (`docs/design/worktrees.md`). git itself is the repo worker's: here its
//! reports are made up.

use super::*;
use crate::{Completion, GateJob, GateRefusal, LandRefusal};
use teamboard_protocol::{
    CheckOutcome, CheckRun, EventKind, Found, LandingStage, MergeStyle, Repo, TaskStatus,
    WorktreeState,
};

pub(super) fn repo() -> Repo {
    Repo {
        path: "/src/app".into(),
        branch: "main".into(),
        merge: MergeStyle::Rebase,
        checks: vec!["make lint".into()],
        check_timeout_ms: 1000,
        worktrees: "/state/worktrees/alpha".into(),
        git_version: "2.47.3".into(),
        set_at: WALL0,
        review: false,
    }
}

pub(super) fn with_repo() -> H {
    let mut h = H::new();
    let ctx = h.lead();
    h.board.set_repo(ctx, repo()).unwrap();
    h
}

/// Claims `id` and records that the worker created its worktree.
pub(super) fn claim_open(h: &mut H, m: Mate, id: TaskId) -> Claim {
    let c = h.claim(m, id);
    let ctx = h.ctx(m);
    h.board
        .worktree_opened(ctx, id, c.epoch, "base0", true, &Found::default())
        .unwrap();
    c
}

pub(super) fn gate(h: &mut H, m: Mate, c: &Claim, result: &str) -> GateJob {
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

fn run(outcome: CheckOutcome) -> CheckRun {
    CheckRun {
        command: "make lint".into(),
        outcome,
        exit_code: Some(if outcome == CheckOutcome::Passed {
            0
        } else {
            2
        }),
        tail: "lint: 1 problem".into(),
        duration_ms: 5,
        commit: "head1".into(),
        at: WALL0,
    }
}

fn kinds(h: &mut H) -> Vec<EventKind> {
    h.events().into_iter().map(|e| e.kind).collect()
}

#[test]
fn a_claim_reserves_a_worktree_only_in_a_team_with_a_repository() {
    let mut h = H::new();
    let plain = h.add("plain");
    let ann = h.join("ann", "dev");
    assert!(h.claim(ann, plain).task.worktree.is_none());

    let mut h = with_repo();
    let a = h.add("a");
    let reader = h.add_task(NewTask {
        no_worktree: true,
        ..new_task("summary")
    });
    let ann = h.join("ann", "dev");
    let c = h.claim(ann, a);
    let w = c.task.worktree.clone().expect("reserved");
    assert_eq!(w.path, "/state/worktrees/alpha/task-1");
    assert_eq!(w.branch, "teamboard/alpha/task-1");
    assert_eq!(w.base, None);
    // In the claim's own change, so in the claim's commit.
    let changes = h.board.take_changes();
    let stored = &changes.tasks.iter().find(|(_, t)| t.id == a).unwrap().1;
    assert_eq!(stored.worktree, Some(w.clone()));

    // A re-claim keeps it, with the base the first open recorded.
    let ctx = h.ctx(ann);
    h.board
        .worktree_opened(ctx, a, c.epoch, "base0", true, &Found::default())
        .unwrap();
    h.release(ann, a, c.epoch, None);
    let bob = h.join("bob", "dev");
    let c2 = h.claim(bob, a);
    let w2 = c2.task.worktree.unwrap();
    assert_eq!(w2.path, w.path);
    assert_eq!(w2.base.as_deref(), Some("base0"));
    let ctx = h.ctx(bob);
    h.board
        .worktree_opened(ctx, a, c2.epoch, "base1", false, &Found::default())
        .unwrap();
    assert_eq!(h.task(a).worktree.unwrap().base.as_deref(), Some("base0"));

    // A task that opted out completes at once, as without a repository.
    let cat = h.join("cat", "dev");
    let c3 = h.claim(cat, reader.id);
    assert!(c3.task.worktree.is_none());
    let ctx = h.ctx(cat);
    let done = h
        .board
        .begin_complete(ctx, reader.id, c3.epoch, "summed up".into())
        .unwrap();
    assert!(matches!(done, Completion::Done(t) if t.status == TaskStatus::Completed));
}

#[test]
fn only_the_holder_opens_and_only_the_lead_attaches_a_repository() {
    let mut h = with_repo();
    let a = h.add("a");
    let ann = h.join("ann", "dev");
    let bob = h.join("bob", "dev");
    let c = h.claim(ann, a);
    assert_eq!(
        code(h.board.open_job(&h.ctx(bob), a, c.epoch)),
        ErrorCode::StaleEpoch
    );
    assert_eq!(
        code(h.board.open_job(&h.ctx(ann), a, c.epoch + 1)),
        ErrorCode::StaleEpoch
    );
    let job = h.board.open_job(&h.ctx(ann), a, c.epoch).unwrap();
    assert_eq!(job.repo, repo());
    let ctx = h.ctx(bob);
    assert_eq!(
        code(h.board.set_repo(ctx, repo())),
        ErrorCode::PermissionDenied
    );
    assert_eq!(
        code(h.board.may_set_repo(&h.ctx(bob))),
        ErrorCode::PermissionDenied
    );
}

#[test]
fn completing_runs_the_gate_and_dependents_wait_for_the_landing() {
    let mut h = with_repo();
    let a = h.add_task(NewTask {
        checks: vec!["cargo test".into()],
        ..new_task("config")
    });
    let dep = h.blocked("tests", &[a.id]);
    let ann = h.join("ann", "dev");
    let c = claim_open(&mut h, ann, a.id);
    h.events();

    let job = gate(&mut h, ann, &c, "done");
    assert_eq!(job.checks, ["make lint", "cargo test"], "the team's first");
    assert_eq!(job.message, "config\n\ndone");
    assert_eq!(job.author, "ann");
    assert_eq!(h.task(a.id).landing.unwrap().stage, LandingStage::Checking);
    // One landing at a time: the holder asking again (after a reconnect) waits
    // for the same one; heartbeats go on while it lands.
    let ctx = h.ctx(ann);
    assert_eq!(
        h.board.begin_complete(ctx, a.id, c.epoch, "again".into()),
        Ok(Completion::Landing)
    );
    assert_eq!(h.task(a.id).landing.unwrap().result, "done");
    let ctx = h.ctx(ann);
    h.board.heartbeat(ctx, a.id, c.epoch).unwrap();

    let now = h.now();
    let land = h
        .board
        .gate_passed(
            TEAM,
            a.id,
            c.epoch,
            "head1".into(),
            vec![run(CheckOutcome::Passed)],
            now,
        )
        .unwrap();
    assert_eq!(land.head, "head1");
    let t = h.task(a.id);
    assert_eq!(t.status, TaskStatus::InProgress);
    assert_eq!(t.landing.as_ref().unwrap().stage, LandingStage::Queued);
    assert_eq!(t.check_runs.len(), 1);
    assert!(!h.ready(dep), "completed is not enough: it must land");
    assert_eq!(kinds(&mut h), [EventKind::MergeQueued]);

    let now = h.now();
    let t = h
        .board
        .landed(TEAM, a.id, land.epoch, "old".into(), "new".into(), now)
        .unwrap();
    assert_eq!(t.status, TaskStatus::Completed);
    assert_eq!(t.result.as_deref(), Some("done"));
    assert!(t.landing.is_none());
    let w = t.worktree.unwrap();
    assert_eq!(
        (w.landed_on.as_deref(), w.merged.as_deref()),
        (Some("old"), Some("new"))
    );
    assert!(h.ready(dep));
    assert_eq!(h.member(ann).task, None);
    // The holder is answered, not notified: it asked for this.
    assert!(h.board.take_notices().is_empty());
    assert!(h.board.take_dropped().is_empty());
}

#[test]
fn a_task_never_opened_cannot_complete_through_the_gate() {
    let mut h = with_repo();
    let a = h.add("a");
    let ann = h.join("ann", "dev");
    let c = h.claim(ann, a);
    let ctx = h.ctx(ann);
    let e = h
        .board
        .begin_complete(ctx, a, c.epoch, "x".into())
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidState);
    assert!(e.message.contains("open_worktree"), "{}", e.message);
}

#[test]
fn a_refused_gate_leaves_the_task_with_its_owner_and_the_evidence_in_it() {
    let mut h = with_repo();
    let a = h.add("a");
    let ann = h.join("ann", "dev");
    let c = claim_open(&mut h, ann, a);
    gate(&mut h, ann, &c, "done");
    h.events();
    let refusal = GateRefusal {
        runs: vec![run(CheckOutcome::Failed)],
        ..GateRefusal::new(
            ErrorCode::CheckFailed,
            "check `make lint` failed with exit code 2",
        )
    };
    let now = h.now();
    h.board
        .gate_refused(TEAM, a, c.epoch, &refusal, now)
        .unwrap();
    let t = h.task(a);
    assert_eq!(t.status, TaskStatus::InProgress);
    assert!(t.landing.is_none());
    assert_eq!(t.check_runs[0].outcome, CheckOutcome::Failed);
    let events = h.events();
    assert_eq!(events[0].kind, EventKind::ChecksFailed);
    assert!(events[0].detail.contains("exit code 2"));
    // It may complete again.
    gate(&mut h, ann, &c, "fixed");
}

#[test]
fn a_claim_that_ends_while_checking_drops_the_landing_and_stale_reports_are_refused() {
    let mut h = with_repo();
    let a = h.add("a");
    let ann = h.join("ann", "dev");
    let c = claim_open(&mut h, ann, a);
    gate(&mut h, ann, &c, "done");
    h.cancel(a);
    let dropped = h.board.take_dropped();
    assert_eq!(dropped.len(), 1);
    assert_eq!((dropped[0].task, dropped[0].epoch), (a, c.epoch));
    assert!(h.task(a).landing.is_none());
    let now = h.now();
    let passed = h
        .board
        .gate_passed(TEAM, a, c.epoch, "head1".into(), vec![], now);
    assert_eq!(code(passed), ErrorCode::StaleEpoch);
    let refusal = GateRefusal::new(ErrorCode::CheckFailed, "x");
    assert_eq!(
        code(h.board.gate_refused(TEAM, a, c.epoch, &refusal, now)),
        ErrorCode::StaleEpoch
    );
}

#[test]
fn a_queued_task_is_boardds_to_land_whatever_its_owner_does() {
    let mut h = with_repo();
    let a = h.add("a");
    let ann = h.join("ann", "dev");
    let c = claim_open(&mut h, ann, a);
    gate(&mut h, ann, &c, "done");
    let now = h.now();
    h.board
        .gate_passed(TEAM, a, c.epoch, "head1".into(), vec![], now)
        .unwrap();
    // Its lease is not enforced, and does not wake the actor either.
    assert_eq!(h.board.next_deadline(), None);
    h.advance(secs(600));
    h.expire();
    assert_eq!(h.task(a).status, TaskStatus::InProgress);
    // A closed connection does not give it back.
    let now = h.now();
    h.board.disconnect(ann.session, now);
    assert_eq!(h.task(a).status, TaskStatus::InProgress);
    assert!(h.board.take_dropped().is_empty());
    // It lands without its owner.
    let now = h.now();
    let t = h
        .board
        .landed(TEAM, a, c.epoch, "old".into(), "new".into(), now)
        .unwrap();
    assert_eq!(t.status, TaskStatus::Completed);
    assert_eq!(t.owner.as_deref(), Some("ann"));
}

#[test]
fn a_landing_of_an_earlier_claim_is_not_taken_for_the_new_holders_act() {
    let mut h = with_repo();
    let a = h.add("a");
    let ann = h.join("ann", "dev");
    let c = claim_open(&mut h, ann, a);
    gate(&mut h, ann, &c, "done");
    let now = h.now();
    h.board
        .gate_passed(TEAM, a, c.epoch, "head1".into(), vec![], now)
        .unwrap();
    // The job is out with the git worker when the lead cancels, retries, and
    // bob takes the task up again.
    h.cancel(a);
    h.retry(a);
    let bob = h.join("bob", "dev");
    let again = h.claim(bob, a);
    assert!(again.epoch > c.epoch);
    h.board.take_notices();
    h.events();

    let now = h.now();
    let t = h
        .board
        .landed(TEAM, a, c.epoch, "old".into(), "new".into(), now)
        .unwrap();
    assert_eq!(t.status, TaskStatus::Completed);
    let events = h.events();
    let done = events
        .iter()
        .find(|e| e.kind == EventKind::TaskCompleted)
        .expect("a completion event");
    assert_eq!(done.actor, "boardd", "{done:?}");
    assert!(done.detail.contains("an earlier claim"), "{}", done.detail);
    // bob's claim ended under him: his session is told so, at once.
    let notices = h.board.take_notices();
    assert!(
        notices.iter().any(|n| n.session == bob.session),
        "{notices:?}"
    );
}

#[test]
fn a_landing_that_conflicts_goes_back_to_a_waiting_owner_or_else_to_pending() {
    let conflict = LandRefusal::new(
        ErrorCode::MergeConflict,
        "the branch conflicts with main in README.md",
    );
    // The owner waits: it keeps the task, with a fresh lease.
    let mut h = with_repo();
    let a = h.add("a");
    let ann = h.join("ann", "dev");
    let c = claim_open(&mut h, ann, a);
    gate(&mut h, ann, &c, "done");
    let now = h.now();
    h.board
        .gate_passed(TEAM, a, c.epoch, "head1".into(), vec![], now)
        .unwrap();
    h.advance(secs(600));
    let now = h.now();
    h.board
        .land_refused(TEAM, a, c.epoch, &conflict, true, now)
        .unwrap();
    let t = h.task(a);
    assert_eq!(
        (t.status, t.landing.clone()),
        (TaskStatus::InProgress, None)
    );
    h.advance(secs(1));
    h.expire();
    assert_eq!(
        h.task(a).status,
        TaskStatus::InProgress,
        "the lease was renewed"
    );
    let ctx = h.ctx(ann);
    h.board.heartbeat(ctx, a, c.epoch).unwrap();

    // The owner is gone: back to pending, uncounted, with the paths as the note.
    let mut h = with_repo();
    let a = h.add("a");
    let ann = h.join("ann", "dev");
    let c = claim_open(&mut h, ann, a);
    gate(&mut h, ann, &c, "done");
    let now = h.now();
    h.board
        .gate_passed(TEAM, a, c.epoch, "head1".into(), vec![], now)
        .unwrap();
    h.board.disconnect(ann.session, now);
    h.board
        .land_refused(TEAM, a, c.epoch, &conflict, false, now)
        .unwrap();
    let t = h.task(a);
    assert_eq!(t.status, TaskStatus::Pending);
    assert_eq!(t.attempts, 0, "not the task's fault");
    assert!(t.handoff.unwrap().contains("README.md"));
    assert!(t.worktree.unwrap().base.is_some(), "the worktree is kept");
    assert!(h.ready(a));
}

/// The worker created the worktree, but the claim ended before its report
/// came back: the board still learns that it exists. Trap: with no base it
/// stayed `reserved`, which list and prune never look at on disk, so a
/// cancelled task's worktree and branch were left behind for good.
#[test]
fn a_worktree_opened_for_a_claim_that_ended_meanwhile_is_still_recorded() {
    let mut h = with_repo();
    let a = h.add("a");
    let ann = h.join("ann", "dev");
    let c = h.claim(ann, a);
    h.release(ann, a, c.epoch, None);
    let ctx = h.ctx(ann);
    let e = h
        .board
        .worktree_opened(ctx, a, c.epoch, "base0", true, &Found::default())
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::StaleEpoch);
    assert_eq!(h.task(a).worktree.unwrap().base.as_deref(), Some("base0"));
    let changes = h.board.take_changes();
    assert!(changes.tasks.iter().any(|(_, t)| t.id == a), "persisted");
    h.cancel(a);
    let states: Vec<WorktreeState> = h
        .board
        .worktree_tasks(TEAM)
        .iter()
        .map(|e| e.state)
        .collect();
    assert_eq!(states, [WorktreeState::Unmerged]);
}

/// The queue's report on an earlier claim's landing (cancelled while queued,
/// then retried, claimed and completed again before the worker got to it)
/// must leave the new claim and its landing alone.
#[test]
fn a_refused_landing_of_an_earlier_claim_leaves_the_new_one_alone() {
    let mut h = with_repo();
    let a = h.add("a");
    let ann = h.join("ann", "dev");
    let c = claim_open(&mut h, ann, a);
    gate(&mut h, ann, &c, "done");
    let now = h.now();
    h.board
        .gate_passed(TEAM, a, c.epoch, "head1".into(), vec![], now)
        .unwrap();
    h.cancel(a);
    h.retry(a);
    let bob = h.join("bob", "dev");
    let c2 = h.claim(bob, a);
    gate(&mut h, bob, &c2, "done again");
    h.board.take_dropped();
    h.events();

    let stale = LandRefusal::new(
        ErrorCode::StaleEpoch,
        "the claim ended while it waited in the merge queue",
    );
    let now = h.now();
    h.board
        .land_refused(TEAM, a, c.epoch, &stale, false, now)
        .unwrap();
    let t = h.task(a);
    assert_eq!(t.status, TaskStatus::InProgress);
    assert_eq!((t.owner.as_deref(), t.epoch), (Some("bob"), c2.epoch));
    assert_eq!(t.landing.map(|l| l.stage), Some(LandingStage::Checking));
    assert!(kinds(&mut h).is_empty(), "nothing happened to the task");
}

#[test]
fn a_restart_ends_running_checks_and_requeues_queued_landings() {
    let mut h = with_repo();
    let mut store = Store::default();
    let a = h.add("a");
    let b = h.add("b");
    let ann = h.join("ann", "dev");
    let bob = h.join("bob", "dev");
    let ca = claim_open(&mut h, ann, a);
    let cb = claim_open(&mut h, bob, b);
    gate(&mut h, ann, &ca, "a done");
    gate(&mut h, bob, &cb, "b done");
    let now = h.now();
    h.board
        .gate_passed(TEAM, b, cb.epoch, "headb".into(), vec![], now)
        .unwrap();
    store.apply(h.board.take_changes());
    assert_eq!(store.repos.get(TEAM), Some(&repo()));

    let mut board = Board::restore(BoardConfig::default(), store.snapshot(), h.at(secs(1)));
    assert_eq!(board.repo(TEAM), Some(&repo()));
    // a's checks died with the old daemon: its owner completes again.
    assert!(board.task(TEAM, a).unwrap().landing.is_none());
    // b lands first thing.
    let jobs = board.queued_jobs();
    assert_eq!(jobs.len(), 1);
    assert_eq!((jobs[0].task, jobs[0].head.as_str()), (b, "headb"));
    assert_eq!(jobs[0].message, "b\n\nb done");
    // Past the restart grace, a lapses and b does not.
    board.expire(h.at(secs(3600)));
    assert_eq!(board.task(TEAM, a).unwrap().status, TaskStatus::Pending);
    assert_eq!(board.task(TEAM, b).unwrap().status, TaskStatus::InProgress);
    let events = board.take_changes().events;
    assert!(
        events
            .iter()
            .any(|e| e.kind == EventKind::ChecksFailed && e.detail.contains("restarted")),
        "{events:?}"
    );
}

#[test]
fn worktree_states_follow_the_tasks_and_discard_is_the_leads_word() {
    let mut h = with_repo();
    let landed = h.add("landed");
    let kept = h.add("cancelled");
    let thrown = h.add("discarded");
    let open = h.add("open");
    let reserved = h.add("reserved");
    let ann = h.join("ann", "dev");
    let c = claim_open(&mut h, ann, landed);
    gate(&mut h, ann, &c, "x");
    let now = h.now();
    h.board
        .gate_passed(TEAM, landed, c.epoch, "h".into(), vec![], now)
        .unwrap();
    h.board
        .landed(TEAM, landed, c.epoch, "o".into(), "n".into(), now)
        .unwrap();
    for id in [kept, thrown] {
        let c = claim_open(&mut h, ann, id);
        h.release(ann, id, c.epoch, None);
    }
    h.cancel(kept);
    let ctx = h.lead();
    let t = h.board.cancel_task_with(ctx, thrown, true).unwrap();
    assert!(t.worktree.unwrap().discard);
    claim_open(&mut h, ann, open);
    let bob = h.join("bob", "dev");
    h.claim(bob, reserved);

    let states: Vec<(TaskId, WorktreeState)> = h
        .board
        .worktree_tasks(TEAM)
        .into_iter()
        .map(|e| (e.task, e.state))
        .collect();
    assert_eq!(
        states,
        [
            (landed, WorktreeState::Merged),
            (kept, WorktreeState::Unmerged),
            (thrown, WorktreeState::Discarded),
            (open, WorktreeState::Active),
            (reserved, WorktreeState::Reserved),
        ]
    );
    // Pruned ones leave the list; pruning is the lead's.
    let removed: Vec<_> = h
        .board
        .worktree_tasks(TEAM)
        .into_iter()
        .filter(|e| e.state.prunable())
        .collect();
    let ctx = h.ctx(ann);
    assert_eq!(
        code(h.board.worktrees_pruned(ctx, &removed)),
        ErrorCode::PermissionDenied
    );
    let ctx = h.lead();
    h.board.worktrees_pruned(ctx, &removed).unwrap();
    let left: Vec<TaskId> = h
        .board
        .worktree_tasks(TEAM)
        .iter()
        .map(|e| e.task)
        .collect();
    assert_eq!(left, [kept, open, reserved]);
}

#[test]
fn discard_can_come_after_the_cancel_and_a_retry_takes_it_back() {
    let mut h = with_repo();
    let a = h.add("a");
    let ann = h.join("ann", "dev");
    let c = claim_open(&mut h, ann, a);
    h.release(ann, a, c.epoch, None);
    h.cancel(a);
    assert!(!h.task(a).worktree.unwrap().discard);
    let ctx = h.lead();
    let t = h.board.cancel_task_with(ctx, a, true).unwrap();
    assert_eq!(t.status, TaskStatus::Cancelled);
    assert!(t.worktree.unwrap().discard);
    let t = h.retry(a);
    assert!(!t.worktree.unwrap().discard, "wanted again: not prunable");
    // A plain second cancel is still refused.
    h.cancel(a);
    let ctx = h.lead();
    assert_eq!(code(h.board.cancel_task(ctx, a)), ErrorCode::InvalidState);
}

#[test]
fn checks_are_shell_commands_of_bounded_size() {
    let mut h = H::new();
    for bad in [
        vec!["  ".to_string()],
        vec!["x".repeat(5000)],
        vec!["true".to_string(); 33],
    ] {
        let ctx = h.lead();
        let r = h.board.add_task(
            ctx,
            NewTask {
                checks: bad,
                ..new_task("a")
            },
        );
        assert_eq!(code(r), ErrorCode::InvalidArgs);
    }
}
