//! Each figure counts what it should: a clean history gives zeros, and each
//! kind of fault, fed in by hand, is counted where it belongs.

use super::*;
use crate::soak_board::acks::{Seen, What};
use teamboard_protocol::{EventKind, TaskStatus};

fn ev(seq: u64, kind: EventKind, actor: &str, task: Option<u64>, detail: &str) -> Event {
    Event {
        seq,
        team: "soak".into(),
        at: 0,
        actor: actor.into(),
        kind,
        task,
        member: task.map(|_| actor.to_string()),
        message: None,
        request: None,
        detail: detail.into(),
    }
}

fn msg(seq: u64, kind: EventKind, actor: &str, m: u64) -> Event {
    Event {
        message: Some(m),
        ..ev(seq, kind, actor, None, "")
    }
}

fn line(client: &str, session: u64, what: What) -> Line {
    Line {
        client: client.into(),
        session,
        what,
    }
}

fn task(id: u64, status: TaskStatus) -> Task {
    serde_json::from_value(serde_json::json!({
        "id": id, "subject": "s", "status": status, "created_at": 0, "updated_at": 0
    }))
    .unwrap()
}

const DONE: Seen = Seen {
    epoch: 1,
    status: TaskStatus::Completed,
};

/// A clean run: lead adds #1, d1 claims and completes it; the lead sends
/// d1 a message, which reaches it once and is acked.
fn clean() -> (Vec<Line>, Vec<Event>, Vec<Task>) {
    let log = vec![
        line(
            "lead",
            1,
            What::AddTask {
                id: 1,
                blocked_by: vec![],
            },
        ),
        line("d1", 1, What::Claim { id: 1, epoch: 1 }),
        line(
            "d1",
            1,
            What::Complete {
                id: 1,
                epoch: 1,
                seen: DONE,
            },
        ),
        line(
            "lead",
            1,
            What::Send {
                message: 7,
                to: "d1".into(),
            },
        ),
        line("d1", 1, What::Delivered { messages: vec![7] }),
        line(
            "d1",
            1,
            What::Ack {
                messages: vec![7],
                acked: 1,
            },
        ),
    ];
    let events = vec![
        ev(1, EventKind::TaskCreated, "lead", Some(1), "added"),
        ev(
            2,
            EventKind::TaskClaimed,
            "d1",
            Some(1),
            "d1 claimed #1 (attempt 1, epoch 1)",
        ),
        ev(
            3,
            EventKind::TaskCompleted,
            "d1",
            Some(1),
            "d1 completed #1",
        ),
        msg(4, EventKind::MessageSent, "lead", 7),
        msg(5, EventKind::MessageAcked, "d1", 7),
    ];
    (log, events, vec![task(1, TaskStatus::Completed)])
}

fn figures(log: &[Line], events: &[Event], tasks: &[Task], left: &[Marked]) -> Figures {
    check(&Evidence {
        log,
        events,
        tasks,
        left,
    })
}

#[test]
fn a_clean_history_has_every_figure_at_zero() {
    let (log, events, tasks) = clean();
    let f = figures(&log, &events, &tasks, &[]);
    assert!(f.zero(), "{f:#?}");
}

#[test]
fn a_completion_missing_after_the_restart_is_a_lost_ack() {
    let (log, mut events, _) = clean();
    events.retain(|e| e.kind != EventKind::TaskCompleted);
    let tasks = vec![task(1, TaskStatus::Pending)];
    let f = figures(&log, &events, &tasks, &[]);
    assert_eq!(f.acknowledged_changes_lost.count, 1, "{f:#?}");
    assert_eq!(f.stale_epochs_accepted.count, 0);
}

#[test]
fn a_message_sent_and_acked_without_events_is_lost_twice() {
    let (log, mut events, tasks) = clean();
    events.retain(|e| e.message.is_none());
    let f = figures(&log, &events, &tasks, &[]);
    assert_eq!(f.acknowledged_changes_lost.count, 2, "{f:#?}");
}

#[test]
fn a_message_that_never_reaches_its_driver_is_lost() {
    let (mut log, events, tasks) = clean();
    log.retain(|l| !matches!(l.what, What::Delivered { .. } | What::Ack { .. }));
    let f = figures(&log, &events, &tasks, &[]);
    assert_eq!(f.acknowledged_changes_lost.count, 1, "{f:#?}");
}

#[test]
fn a_claim_while_another_is_open_is_two_owners() {
    let (log, mut events, tasks) = clean();
    let second = ev(
        3,
        EventKind::TaskClaimed,
        "d2",
        Some(1),
        "d2 claimed #1 (attempt 2, epoch 2)",
    );
    events.insert(2, second);
    let f = figures(&log, &events, &tasks, &[]);
    assert_eq!(f.tasks_with_two_owners.count, 1, "{f:#?}");
    // d1 then completes a claim that d2 holds: a stale epoch let through.
    assert_eq!(f.stale_epochs_accepted.count, 1, "{f:#?}");
}

#[test]
fn one_epoch_handed_to_two_clients_is_two_owners() {
    let (mut log, events, tasks) = clean();
    log.push(line("d2", 1, What::Claim { id: 1, epoch: 1 }));
    let f = figures(&log, &events, &tasks, &[]);
    assert_eq!(f.tasks_with_two_owners.count, 1, "{f:#?}");
}

#[test]
fn an_acknowledged_old_epoch_is_a_stale_epoch_accepted() {
    let (mut log, events, tasks) = clean();
    log.push(line(
        "d1",
        1,
        What::StaleTry {
            id: 1,
            epoch: 0,
            acked: true,
        },
    ));
    log.push(line(
        "d1",
        1,
        What::StaleTry {
            id: 1,
            epoch: 0,
            acked: false,
        },
    ));
    let heartbeat = Seen {
        epoch: 2,
        status: TaskStatus::InProgress,
    };
    log.push(line(
        "d1",
        1,
        What::Heartbeat {
            id: 1,
            epoch: 1,
            seen: heartbeat,
        },
    ));
    let f = figures(&log, &events, &tasks, &[]);
    assert_eq!(f.stale_epochs_accepted.count, 2, "{f:#?}");
}

#[test]
fn a_completion_after_the_lease_expired_is_a_stale_epoch_accepted() {
    let (log, mut events, tasks) = clean();
    let expired = ev(
        3,
        EventKind::TaskReleased,
        "boardd",
        Some(1),
        "lease expired",
    );
    events.insert(2, expired);
    let f = figures(&log, &events, &tasks, &[]);
    assert_eq!(f.stale_epochs_accepted.count, 1, "{f:#?}");
}

#[test]
fn a_message_after_its_answered_ack_or_to_another_is_too_often() {
    let (mut log, events, tasks) = clean();
    log.push(line("d1", 2, What::Delivered { messages: vec![7] }));
    log.push(line("d2", 1, What::Delivered { messages: vec![7] }));
    let f = figures(&log, &events, &tasks, &[]);
    assert_eq!(f.messages_delivered_too_often.count, 2, "{f:#?}");
}

#[test]
fn a_redelivery_before_the_ack_was_answered_is_allowed() {
    let (mut log, events, tasks) = clean();
    log.insert(5, line("d1", 2, What::Delivered { messages: vec![7] }));
    let f = figures(&log, &events, &tasks, &[]);
    assert!(f.zero(), "{f:#?}");
}

#[test]
fn a_process_of_the_run_alive_at_the_end_is_left_behind() {
    let (log, events, tasks) = clean();
    let left = [Marked {
        pid: 42,
        comm: "sleep".into(),
    }];
    let f = figures(&log, &events, &tasks, &left);
    assert_eq!(f.processes_left_behind.count, 1);
    assert!(!f.zero());
}

#[test]
fn the_epoch_is_read_from_a_claim_event() {
    assert_eq!(
        claims::epoch_in("d1 claimed #3 (attempt 2, epoch 17)"),
        Some(17)
    );
    assert_eq!(claims::epoch_in("no epoch here"), None);
}
