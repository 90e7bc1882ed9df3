//! Landings that wait without using an attempt: `blocked` on the person's
//! checkout of the target, `conflict` with the target.

use super::landing::{claim_open, gate, with_repo};
use super::*;
use crate::{Blocked, Completion, Conflict, GateRefusal, LandRefusal, Retried};
use teamboard_protocol::{EventKind, LandingStage, TaskStatus};

fn blocked(paths: &[&str]) -> Blocked {
    Blocked {
        checkout: "/src/app".into(),
        paths: paths.iter().map(|p| p.to_string()).collect(),
    }
}

fn conflict() -> Conflict {
    Conflict {
        paths: vec!["same.txt".into()],
        onto: "abcdef0123456789".into(),
    }
}

#[test]
fn a_blocked_landing_waits_as_boardds_survives_a_restart_and_lands_on_retry() {
    let mut h = with_repo();
    let mut store = Store::default();
    let a = h.add("a");
    let ann = h.join("ann", "dev");
    let c = claim_open(&mut h, ann, a);
    gate(&mut h, ann, &c, "done");
    let now = h.now();
    h.board
        .gate_passed(TEAM, a, c.epoch, "head1".into(), vec![], now)
        .unwrap();
    kept(&mut h, &mut store);
    let again = h
        .board
        .land_blocked(TEAM, a, c.epoch, &blocked(&["README"]), now)
        .unwrap();
    assert!(again, "boardd looks again");
    let t = h.task(a);
    let l = t.landing.clone().unwrap();
    assert_eq!(l.stage, LandingStage::Blocked);
    assert_eq!(l.paths, vec!["README".to_string()]);
    assert_eq!(l.checkout.as_deref(), Some("/src/app"));
    assert_eq!(t.attempts, 1);
    let events = kept(&mut h, &mut store);
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0].kind, EventKind::LandingBlocked);
    assert!(events[0].detail.contains("README"), "{}", events[0].detail);
    // The same look again is no news; other files are.
    h.board
        .land_blocked(TEAM, a, c.epoch, &blocked(&["README"]), now)
        .unwrap();
    assert!(kept(&mut h, &mut store).is_empty());
    // A second completion of the holder waits for the same landing.
    let ctx = h.ctx(ann);
    assert_eq!(
        h.board
            .begin_complete(ctx, a, c.epoch, "again".into())
            .unwrap(),
        Completion::Landing
    );
    // Its lease is not enforced and a closed connection keeps it.
    h.advance(secs(600));
    h.expire();
    let now = h.now();
    h.board.disconnect(ann.session, now);
    assert_eq!(h.task(a).status, TaskStatus::InProgress);
    assert_eq!(h.board.blocked_jobs().len(), 1);

    store.apply(h.board.take_changes());
    let mut board = Board::restore(BoardConfig::default(), store.snapshot(), h.at(secs(1)));
    let t = board.task(TEAM, a).unwrap().clone();
    assert_eq!(t.landing.map(|l| l.stage), Some(LandingStage::Blocked));
    assert_eq!(board.queued_jobs().len(), 1, "it is tried again at start");
    board.expire(h.at(secs(3600)));
    assert_eq!(board.task(TEAM, a).unwrap().status, TaskStatus::InProgress);
    let (_, job) = board.retry_task_with(h.lead(), a).unwrap();
    let Some(Retried::Land(job)) = job else {
        panic!("{job:?}")
    };
    assert_eq!((job.task, job.head.as_str()), (a, "head1"));
    let done = board
        .landed(
            TEAM,
            a,
            job.epoch,
            "old".into(),
            "new".into(),
            h.at(secs(3601)),
        )
        .unwrap();
    assert_eq!((done.status, done.attempts), (TaskStatus::Completed, 1));
}

#[test]
fn a_conflict_stays_with_its_owner_uses_no_attempt_and_ends_when_it_completes_again() {
    let mut h = with_repo();
    let a = h.add("a");
    let ann = h.join("ann", "dev");
    let c = claim_open(&mut h, ann, a);
    gate(&mut h, ann, &c, "done");
    h.events();
    let now = h.now();
    let refusal = GateRefusal::conflict("the branch conflicts", conflict());
    h.board
        .gate_refused(TEAM, a, c.epoch, &refusal, now)
        .unwrap();
    let t = h.task(a);
    assert_eq!((t.status, t.attempts), (TaskStatus::InProgress, 1));
    let l = t.landing.unwrap();
    assert_eq!(l.stage, LandingStage::Conflict);
    assert_eq!(l.paths, vec!["same.txt".to_string()]);
    assert_eq!(l.onto.as_deref(), Some("abcdef0123456789"));
    assert_eq!(kinds(&mut h), [EventKind::MergeConflict]);
    // Resolved, the owner completes again: a new gate.
    let job = gate(&mut h, ann, &c, "resolved");
    assert_eq!(job.author, "ann");
    assert_eq!(
        h.task(a).landing.map(|l| l.stage),
        Some(LandingStage::Checking)
    );

    // A conflict met in the queue, with the owner waiting, is the same.
    let now = h.now();
    h.board
        .gate_passed(TEAM, a, c.epoch, "head2".into(), vec![], now)
        .unwrap();
    let refusal = LandRefusal::conflict("the branch conflicts", conflict());
    h.board
        .land_refused(TEAM, a, c.epoch, &refusal, true, now)
        .unwrap();
    assert_eq!(
        h.task(a).landing.map(|l| l.stage),
        Some(LandingStage::Conflict)
    );
    assert!(h.board.queued_jobs().is_empty());
    // A person who resolved it by hand has it checked and landed for the owner.
    let (_, job) = h.board.retry_task_with(h.lead(), a).unwrap();
    let Some(Retried::Gate(job)) = job else {
        panic!("{job:?}")
    };
    assert_eq!((job.author.as_str(), job.epoch), ("ann", c.epoch));
}

/// The events since the last call, with the changes kept in `store`.
fn kept(h: &mut H, store: &mut Store) -> Vec<Event> {
    let changes = h.board.take_changes();
    let events = changes.events.clone();
    store.apply(changes);
    events
}

fn kinds(h: &mut H) -> Vec<EventKind> {
    h.events().into_iter().map(|e| e.kind).collect()
}

/// Claims `a`, completes it, and has the gate meet a conflict.
fn in_conflict(h: &mut H, m: Mate, a: TaskId) -> u64 {
    let c = claim_open(h, m, a);
    gate(h, m, &c, "done");
    let now = h.now();
    let refusal = GateRefusal::conflict("the branch conflicts", conflict());
    h.board
        .gate_refused(TEAM, a, c.epoch, &refusal, now)
        .unwrap();
    c.epoch
}

#[test]
fn a_conflict_its_owner_gives_up_waits_for_a_person_across_a_restart() {
    let mut h = with_repo();
    let mut store = Store::default();
    let a = h.add("a");
    let ann = h.join("ann", "dev");
    let epoch = in_conflict(&mut h, ann, a);
    store.apply(h.board.take_changes());
    // The owner could not resolve it and gives it back with the refusal.
    h.release(ann, a, epoch, Some("the teammate could not complete it"));
    let t = h.task(a);
    assert_eq!((t.status, t.attempts), (TaskStatus::Pending, 0));
    assert_eq!(
        t.landing.as_ref().map(|l| l.stage),
        Some(LandingStage::Conflict)
    );
    assert!(t.handoff.unwrap().contains("same.txt"));
    assert!(!h.ready(a), "another claim would meet the same conflict");
    assert!(t.last_error.is_none());

    store.apply(h.board.take_changes());
    let mut board = Board::restore(BoardConfig::default(), store.snapshot(), h.at(secs(1)));
    let t = board.task(TEAM, a).unwrap().clone();
    assert_eq!(t.landing.map(|l| l.stage), Some(LandingStage::Conflict));
    assert!(!board.is_ready(TEAM, a));
    // A person resolved it in the worktree: the next owner takes it.
    let (t, job) = board.retry_task_with(h.lead(), a).unwrap();
    assert!(job.is_none());
    assert!(t.landing.is_none() && t.ready, "{t:?}");
    assert!(t.handoff.unwrap().contains("same.txt"));

    // A waiting conflict that is cancelled ends with the task.
    let mut h = with_repo();
    let a = h.add("a");
    let ann = h.join("ann", "dev");
    let epoch = in_conflict(&mut h, ann, a);
    h.release(ann, a, epoch, Some("cannot resolve it"));
    assert!(h.task(a).landing.is_some());
    assert!(h.cancel(a).landing.is_none());
    let (t, _) = h.board.retry_task_with(h.lead(), a).unwrap();
    assert!(t.ready && t.landing.is_none(), "{t:?}");
}

#[test]
fn a_conflict_whose_owner_is_gone_goes_to_the_next_owner_uncounted() {
    let mut h = with_repo();
    let a = h.add("a");
    let ann = h.join("ann", "dev");
    in_conflict(&mut h, ann, a);
    let now = h.now();
    h.board.disconnect(ann.session, now);
    let t = h.task(a);
    assert_eq!((t.status, t.attempts), (TaskStatus::Pending, 0));
    assert!(t.landing.is_none());
    assert!(t.handoff.unwrap().contains("conflicts with the target"));
    assert!(h.ready(a));
    // Cancelling a task in conflict ends it like any landing.
    let bob = h.join("bob", "dev");
    in_conflict(&mut h, bob, a);
    let t = h.cancel(a);
    assert!(t.landing.is_none());
}
