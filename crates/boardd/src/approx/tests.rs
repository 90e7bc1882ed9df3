use super::*;
use crate::reply::Empty;
use teamboard_protocol::{EventKind, TaskStatus, TokenUsage};

fn task(description: &str) -> Task {
    Task {
        id: 12,
        subject: "Write the parser".into(),
        description: description.into(),
        status: TaskStatus::InProgress,
        owner: Some("alice".into()),
        blocked_by: vec![1, 2, 3],
        priority: -4,
        role: Some("dev".into()),
        attempts: 2,
        result: None,
        last_error: Some("tests do not compile".into()),
        epoch: 7,
        tokens: TokenUsage {
            input: 123_456,
            output: 7_890,
            ..Default::default()
        },
        cost: Default::default(),
        created_at: 1_795_978_697_919,
        updated_at: 1_795_978_697_930,
        ready: false,
        handoff: None,
        no_worktree: false,
        worktree: None,
        checks: vec![],
        proposed_checks: vec![],
        check_runs: vec![],
        landing: None,
        require_plan: false,
        review: false,
    }
}

fn event() -> Event {
    Event {
        seq: 123_456,
        team: "default".into(),
        at: 1_795_978_697_934,
        actor: "alice".into(),
        kind: EventKind::TaskReleased,
        task: Some(2),
        member: Some("alice".into()),
        message: None,
        detail: "#2 back to pending (failed, alice): tests do not compile".into(),
        request: None,
    }
}

/// Within a factor of two of the real size either way: enough for a budget.
fn close_to(estimate: usize, encoded: usize) {
    assert!(
        estimate >= encoded / 2 && estimate <= encoded * 2,
        "estimated {estimate} bytes for {encoded}"
    );
}

#[test]
fn estimates_are_near_the_encoded_size() {
    let short: Result<Reply, ErrorBody> = Ok(Reply::Task(Box::new(task(""))));
    let long: Result<Reply, ErrorBody> = Ok(Reply::Tasks(vec![task(&"d".repeat(2048)); 100]));
    let events: Result<Reply, ErrorBody> = Ok(Reply::Events(vec![event(); 50]));
    let done: Result<Reply, ErrorBody> = Ok(Reply::Done(Empty {}));
    let error: Result<Reply, ErrorBody> = Err(ErrorBody::new(
        teamboard_protocol::ErrorCode::Busy,
        "read your responses",
    ));
    for result in [short, long, events, done, error] {
        let mut buf = bytes::BytesMut::new();
        crate::wire::reply(&mut buf, 42, &result);
        close_to(result.approx_len(), buf.len());
    }
    let mut buf = bytes::BytesMut::new();
    crate::wire::event(&mut buf, &event());
    close_to(event_frame(&event()), buf.len());
}
