//! Task ids, message ids and event sequence numbers; teams are independent.

use super::*;
use teamboard_protocol::{MessageKind, TaskStatus};

#[test]
fn task_ids_start_at_one_and_increase() {
    let mut h = H::new();
    let ids: Vec<TaskId> = (0..5).map(|i| h.add(&format!("t{i}"))).collect();
    assert_eq!(ids, vec![1, 2, 3, 4, 5]);
    let listed: Vec<TaskId> = h.board.tasks(TEAM, None).iter().map(|t| t.id).collect();
    assert_eq!(listed, ids);
}

#[test]
fn task_ids_are_never_reused() {
    let mut h = H::new();
    let a = h.add("a");
    let b = h.add("b");
    h.cancel(b);
    let mate = h.join("ann", "dev");
    h.run_next(mate).unwrap();
    let c = h.add("c");
    assert_eq!((a, b, c), (1, 2, 3));
    // A refused creation does not consume an id either.
    let ctx = h.lead();
    assert_eq!(
        code(h.board.add_task(ctx, new_task("  "))),
        ErrorCode::InvalidArgs
    );
    let bad = NewTask {
        blocked_by: vec![99],
        ..new_task("d")
    };
    let ctx = h.lead();
    assert_eq!(code(h.board.add_task(ctx, bad)), ErrorCode::NotFound);
    assert_eq!(h.add("e"), 4);
}

#[test]
fn teams_are_independent() {
    let mut h = H::new();
    let a1 = h.add("alpha one");
    let a2 = h.add("alpha two");
    let ctx = h.lead_in("beta");
    let b1 = h.board.add_task(ctx, new_task("beta one")).unwrap();
    assert_eq!((a1, a2, b1.id), (1, 2, 1));
    assert_eq!(h.board.task(TEAM, 1).unwrap().subject, "alpha one");
    assert_eq!(h.board.task("beta", 1).unwrap().subject, "beta one");
    assert_eq!(code(h.board.task("beta", 2)), ErrorCode::NotFound);
    assert_eq!(h.board.tasks("beta", None).len(), 1);

    // A member of alpha is not a member of beta, even under the same name.
    let ann = h.join("ann", "dev");
    let ann_in_beta = Mate {
        team: "beta",
        ..ann
    };
    let ctx = h.ctx(ann_in_beta);
    assert_eq!(code(h.board.claim_next(ctx)), ErrorCode::NotRegistered);
    assert!(!h.board.is_member("beta", "ann"));
    let ctx = h.lead_in("beta");
    assert_eq!(
        code(
            h.board
                .send(ctx, "ann", MessageKind::Message, "hi".into(), None)
        ),
        ErrorCode::UnknownRecipient
    );

    // The same name may register in both teams; claims do not cross teams.
    let ann_b = h.join_in("beta", "ann", "dev");
    let claim = h.claim(ann, 1);
    assert_eq!(claim.task.subject, "alpha one");
    assert!(h.board.is_ready("beta", 1));
    assert_eq!(h.board.task("beta", 1).unwrap().status, TaskStatus::Pending);
    let claim_b = h.claim(ann_b, 1);
    assert_eq!(claim_b.task.subject, "beta one");
    h.complete(ann_b, 1, claim_b.epoch);
    assert_eq!(h.task(1).status, TaskStatus::InProgress);
    // Completing beta's #1 did not touch alpha's #1 and its owner.
    h.complete(ann, 1, claim.epoch);
    assert_eq!(h.board.summary(TEAM).completed, 1);
    assert_eq!(h.board.summary("beta").completed, 1);
    assert_eq!(
        h.board.team_names(),
        vec!["alpha".to_string(), "beta".to_string()]
    );
}

#[test]
fn cycle_check_and_readiness_do_not_cross_teams() {
    let mut h = H::new();
    // beta: 2 waits for 1. alpha: 1 waits for 2 is no cycle.
    let ctx = h.lead_in("beta");
    h.board.add_task(ctx, new_task("b1")).unwrap();
    let ctx = h.lead_in("beta");
    h.board
        .add_task(
            ctx,
            NewTask {
                blocked_by: vec![1],
                ..new_task("b2")
            },
        )
        .unwrap();
    h.add("a1");
    h.add("a2");
    let ctx = h.lead();
    h.board.add_dependency(ctx, 1, &[2]).unwrap();
    assert!(!h.ready(1));
    assert!(h.ready(2));
    assert!(h.board.is_ready("beta", 1));
    assert!(!h.board.is_ready("beta", 2));
    // Blockers must exist in the same team.
    let ctx = h.lead_in("gamma");
    let bad = NewTask {
        blocked_by: vec![1],
        ..new_task("g")
    };
    assert_eq!(code(h.board.add_task(ctx, bad)), ErrorCode::NotFound);
}

#[test]
fn message_ids_are_daemon_wide_and_increase() {
    let mut h = H::new();
    let ann = h.join("ann", "dev");
    let bob = h.join_in("beta", "bob", "dev");
    let m1 = h.send(h.lead(), "ann", "one");
    let m2 = h.send(h.lead_in("beta"), "bob", "two");
    let m3 = h.send(h.ctx(bob), "lead", "three");
    let ctx = h.ctx(ann);
    assert_eq!(h.board.ack(ctx, &[m1.id]), 1);
    let m4 = h.send(h.lead(), "ann", "four");
    assert_eq!(
        vec![m1.id, m2.id, m3.id, m4.id],
        vec![1, 2, 3, 4],
        "acknowledged ids are not reused"
    );
}

#[test]
fn event_seqs_are_daemon_wide_and_strictly_increasing() {
    let mut h = H::new();
    h.add("a");
    let ctx = h.lead_in("beta");
    h.board.add_task(ctx, new_task("b")).unwrap();
    let ann = h.join("ann", "dev");
    let first = h.events();
    h.run_next(ann).unwrap();
    let second = h.events();
    let all: Vec<u64> = first.iter().chain(&second).map(|e| e.seq).collect();
    assert!(!first.is_empty() && !second.is_empty());
    assert_eq!(all, (1..=all.len() as u64).collect::<Vec<_>>());
    assert!(first.iter().any(|e| e.team == "beta"));
}
