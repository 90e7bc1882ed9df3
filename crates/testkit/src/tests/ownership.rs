//! The ownership checker on hand-made histories: the ones the board writes
//! pass, and each kind of overlap is caught with the task, owners and seqs.

use crate::ownership::{Replayed, Violation, check};
use teamboard_protocol::{Event, EventKind, TaskId};

fn event(seq: u64, kind: EventKind, task: TaskId, member: Option<&str>, detail: &str) -> Event {
    Event {
        seq,
        team: crate::TEAM.to_string(),
        at: 0,
        actor: member.unwrap_or("lead").to_string(),
        kind,
        task: Some(task),
        member: member.map(str::to_string),
        message: None,
        request: None,
        detail: detail.to_string(),
    }
}

/// A claim as `board` words it.
fn claimed(seq: u64, task: TaskId, by: &str, epoch: u64) -> Event {
    let detail = format!("{by} claimed #{task} (attempt 1, epoch {epoch})");
    event(seq, EventKind::TaskClaimed, task, Some(by), &detail)
}

fn ended(seq: u64, kind: EventKind, task: TaskId, by: Option<&str>) -> Event {
    event(seq, kind, task, by, "")
}

/// Two tasks, claimed, released by lease expiry, claimed again, failed,
/// retried, claimed, completed; a third cancelled while held.
fn good() -> Vec<Event> {
    vec![
        event(1, EventKind::TaskCreated, 1, None, "created #1"),
        event(2, EventKind::TaskCreated, 2, None, "created #2"),
        event(3, EventKind::TaskCreated, 3, None, "created #3"),
        claimed(4, 1, "a", 1),
        claimed(5, 2, "b", 1),
        ended(6, EventKind::TaskReleased, 1, Some("a")),
        claimed(7, 1, "b2", 2),
        ended(8, EventKind::TaskCompleted, 2, Some("b")),
        claimed(9, 3, "b", 1),
        ended(10, EventKind::TaskFailed, 1, Some("b2")),
        event(
            11,
            EventKind::TaskRetried,
            1,
            None,
            "retried #1 (was failed)",
        ),
        claimed(12, 1, "a", 3),
        ended(13, EventKind::TaskCancelled, 3, None),
        ended(14, EventKind::TaskCompleted, 1, Some("a")),
        // A landing of an earlier claim's work completes a pending task.
        ended(15, EventKind::TaskCompleted, 2, None),
    ]
}

#[test]
fn a_history_the_board_writes_passes() {
    assert_eq!(
        check(&good()),
        Ok(Replayed {
            claims: 5,
            ends: 5,
            tasks: 3,
            held: 0
        })
    );
    // Still held at the end is not a violation.
    assert_eq!(check(&good()[..5]).map(|r| r.held), Ok(2));
}

#[test]
fn a_double_claim_is_caught() {
    let history = vec![
        claimed(1, 7, "a", 1),
        claimed(2, 7, "b", 2),
        ended(3, EventKind::TaskCompleted, 7, Some("b")),
    ];
    let err = check(&history).unwrap_err();
    assert_eq!(
        err,
        Violation::TwoOwners {
            task: 7,
            first: "a".into(),
            first_seq: 1,
            second: "b".into(),
            second_seq: 2
        }
    );
    assert_eq!(
        err.to_string(),
        "#7 had two owners at once: a claimed it at seq 1, b at seq 2"
    );
}

#[test]
fn an_epoch_that_goes_backwards_or_repeats_is_caught() {
    for epoch in [1, 2] {
        let history = vec![
            claimed(1, 7, "a", 2),
            ended(2, EventKind::TaskReleased, 7, Some("a")),
            claimed(3, 7, "b", epoch),
        ];
        let err = check(&history).unwrap_err();
        assert_eq!(
            err,
            Violation::EpochNotRaised {
                task: 7,
                previous: 2,
                previous_seq: 1,
                by: "b".into(),
                epoch,
                seq: 3
            }
        );
        assert!(err.to_string().contains("#7's epoch did not rise"), "{err}");
    }
}

#[test]
fn a_member_holding_two_tasks_is_caught() {
    let history = vec![claimed(1, 1, "a", 1), claimed(2, 2, "a", 1)];
    assert_eq!(
        check(&history),
        Err(Violation::MemberHoldsTwo {
            member: "a".into(),
            first: 1,
            first_seq: 1,
            second: 2,
            second_seq: 2
        })
    );
}

#[test]
fn an_end_by_someone_else_or_of_nothing_is_caught() {
    let history = vec![
        claimed(1, 1, "a", 1),
        ended(2, EventKind::TaskCompleted, 1, Some("b")),
    ];
    assert!(matches!(
        check(&history),
        Err(Violation::NotTheHolder { task: 1, seq: 2, ref holder, .. }) if holder == "a"
    ));
    let history = vec![ended(1, EventKind::TaskReleased, 1, Some("a"))];
    assert!(matches!(
        check(&history),
        Err(Violation::NotHeld {
            task: 1,
            seq: 1,
            ..
        })
    ));
}

#[test]
fn an_unreadable_claim_or_a_disordered_history_is_refused() {
    let mut claim = claimed(1, 1, "a", 1);
    claim.detail = "a claimed #1".into();
    assert!(matches!(
        check(&[claim]),
        Err(Violation::Unreadable { seq: 1, .. })
    ));
    let history = vec![claimed(2, 1, "a", 1), claimed(2, 2, "b", 1)];
    assert_eq!(
        check(&history),
        Err(Violation::OutOfOrder {
            previous: 2,
            seq: 2
        })
    );
}

/// Every single-event corruption of a good history that moves a claim (a lost
/// end, a claim given to another member, an epoch lowered) is caught.
#[test]
fn corrupting_a_good_history_is_caught() {
    let good = good();
    let mut caught = 0;
    for (i, e) in good.iter().enumerate() {
        match e.kind {
            EventKind::TaskReleased | EventKind::TaskFailed => {
                // The end is lost: the next claim of the task overlaps.
                let mut bad = good.clone();
                bad.remove(i);
                let err = check(&bad).unwrap_err();
                assert!(
                    matches!(err, Violation::TwoOwners { task, .. } if Some(task) == e.task),
                    "{err}"
                );
                caught += 1;
            }
            EventKind::TaskClaimed if e.detail.contains("epoch 1)") => {}
            EventKind::TaskClaimed => {
                // The epoch goes back to the first claim's.
                let mut bad = good.clone();
                let by = e.member.as_deref().unwrap_or_default();
                bad[i] = claimed(e.seq, e.task.unwrap_or_default(), by, 1);
                let err = check(&bad).unwrap_err();
                assert!(matches!(err, Violation::EpochNotRaised { .. }), "{err}");
                caught += 1;
            }
            _ => {}
        }
    }
    assert_eq!(caught, 4);
}

/// A real board's history, with every way a claim ends (a lease that expired,
/// a failure, a release, a cancellation, a completion), passes: the checker
/// reads the board's own wording, epochs included.
#[tokio::test(start_paused = true)]
async fn a_real_boards_history_passes() {
    use crate::{InProc, lead, read_history, task, teammate};
    use std::time::Duration;
    use teamboard_protocol::TaskStatus;
    const TTL: Duration = Duration::from_secs(30);
    let daemon = InProc::start_paused(|c| c.board.lease_ttl = TTL).await;
    let boss = lead(&daemon.socket).await;
    let one = boss.add_task(task("one")).await.expect("add").id;
    let two = boss.add_task(task("two")).await.expect("add").id;
    let ana = teammate(&daemon.socket, "ana", "dev").await;
    let bo = teammate(&daemon.socket, "bo", "dev").await;

    // ana's claim on #1 lapses; bo takes it and fails.
    ana.claim_task(one).await.expect("claim");
    tokio::time::sleep(TTL + Duration::from_secs(1)).await;
    let t = boss.get_task(one).await.expect("get").task;
    assert_eq!(t.status, TaskStatus::Pending, "the lease expired");
    let claim = bo.claim_task(one).await.expect("claim");
    assert_eq!(claim.epoch, 2);
    bo.fail_task(one, claim.epoch, "broken")
        .await
        .expect("fail");
    // ana takes #2 and gives it back; bo takes it, the lead cancels it.
    let claim = ana.claim_task(two).await.expect("claim");
    ana.release_task(two, claim.epoch, None)
        .await
        .expect("release");
    bo.claim_task(two).await.expect("claim");
    boss.cancel_task(two).await.expect("cancel");
    // ana completes #1 at its third epoch.
    let claim = ana.claim_task(one).await.expect("claim");
    assert_eq!(claim.epoch, 3);
    ana.complete_task(one, claim.epoch, "done")
        .await
        .expect("complete");

    let history = read_history(&boss).await.expect("history");
    let replayed = check(&history).unwrap_or_else(|v| panic!("{v}: {history:#?}"));
    assert_eq!(
        replayed,
        Replayed {
            claims: 5,
            ends: 5,
            tasks: 2,
            held: 0
        }
    );
    daemon.stop().await;
}
