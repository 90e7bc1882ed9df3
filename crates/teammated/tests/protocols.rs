//! The team protocols through real `teammated` processes: the plan gate at the
//! tools, plan decisions reaching a parked teammate, and a shutdown that a working
//! teammate rejects. The model is the offline scripted one, or a local mock of the
//! Anthropic API where the test needs a model that decides.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "test code: a panic fails the test, and the harness captures what it prints"
)]

use serde_json::json;
use std::time::{Duration, Instant};
use teamboard_protocol::request::{ListRequestsArgs, NewTask, ShutdownArgs};
use teamboard_protocol::{MessageKind, RequestKind, RequestState, TaskStatus, TeamRequest};
use teamboard_testkit::mock_llm::{MockLlm, MockReply};
use teamboard_testkit::{Board, PATIENCE, Teammate};

/// The binary under test, built by cargo for this package's tests.
const TEAMMATED: &str = env!("CARGO_BIN_EXE_teammated");

/// Spawns `alice` on the mock Anthropic server at `url`.
fn alice_on(board: &Board, url: &str, extra: &[&str]) -> Teammate {
    let mut args = vec!["--provider", "anthropic", "--base-url", url];
    args.extend_from_slice(extra);
    board.spawn_with_env("alice", "dev", &args, &[("ANTHROPIC_API_KEY", "test-key")])
}

async fn add_planned(board: &Board, subject: &str, description: &str) -> u64 {
    board
        .lead
        .add_task(NewTask {
            subject: subject.into(),
            description: description.into(),
            require_plan: true,
            ..Default::default()
        })
        .await
        .expect("add_task")
        .id
}

/// Waits until a plan for `task` is pending, and returns it.
async fn pending_plan(board: &Board, task: u64) -> TeamRequest {
    let start = Instant::now();
    loop {
        let plans = board
            .lead
            .list_requests(ListRequestsArgs {
                state: Some(RequestState::Pending),
                kind: Some(RequestKind::Plan),
                task: Some(task),
            })
            .await
            .expect("list_requests");
        if let Some(p) = plans.into_iter().next() {
            return p;
        }
        assert!(start.elapsed() < PATIENCE, "no plan for #{task}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Offline: a scripted teammate submits its blocks as the plan and runs nothing
/// until the lead approves. A rejection gets the plan submitted again, under the
/// same claim, with the lead's words: it spends none of the task's attempts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scripted_teammate_plans_first_and_waits_for_the_decision() {
    let mut board = Board::start(TEAMMATED).await;
    let alice = board.spawn("alice", "dev", &[]);
    board.wait_idle("alice").await;
    // In its workdir: the only place its sandbox lets it write.
    let mark = alice.workdir.join("ran");
    let script = format!("Touch it.\n```sh\ntouch {}\necho ok\n```\n", mark.display());
    let id = add_planned(&board, "guarded", &script).await;
    let first = pending_plan(&board, id).await;
    assert_eq!(first.from, "alice");
    assert!(
        first.plan.as_deref().unwrap_or_default().contains("touch "),
        "{first:#?}"
    );
    // Parked on the decision: nothing ran.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!mark.exists(), "a gated command ran before approval");
    let lead_inbox = board.lead.inbox().await.expect("inbox");
    assert!(
        lead_inbox
            .iter()
            .any(|m| m.kind == MessageKind::PlanApprovalRequest
                && m.request_id == Some(first.id.to_string())),
        "{lead_inbox:#?}"
    );
    // Rejected: the plan comes again, on the same claim, answering the feedback.
    board
        .lead
        .review_plan(first.id, false, Some("say why first"))
        .await
        .expect("reject");
    let second = pending_plan(&board, id).await;
    assert_ne!(second.id, first.id);
    assert_eq!(second.epoch, first.epoch, "the same claim: {second:#?}");
    let plan = second.plan.as_deref().unwrap_or_default();
    assert!(
        plan.contains("say why first") && plan.contains("touch "),
        "{second:#?}"
    );
    let task = board.task(id).await;
    assert_eq!(task.attempts, 1, "claimed once: {task:#?}");
    assert_eq!(task.last_error, None, "{task:#?}");
    assert!(!mark.exists());
    // Approved: the blocks run and the task completes.
    board
        .lead
        .review_plan(second.id, true, None)
        .await
        .expect("approve");
    let done = board.wait_done(&[id]).await;
    let task = done.iter().find(|t| t.id == id).expect("task");
    assert_eq!(task.status, TaskStatus::Completed, "{}", alice.log_text());
    assert_eq!(task.attempts, 1, "{task:#?}");
    assert!(mark.exists());
    let detail = board.lead.get_task(id).await.expect("get_task");
    let states: Vec<RequestState> = detail.plans.iter().map(|p| p.state).collect();
    assert_eq!(states, vec![RequestState::Rejected, RequestState::Approved]);
    board.stop().await;
}

/// A model that reaches for `bash` before planning gets a tool error that says
/// what to do; after `submit_plan` it makes no call until the lead decides, and
/// its next call comes right after the approval.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gate_refuses_workspace_tools_until_the_plan_is_approved() {
    let mut board = Board::start(TEAMMATED).await;
    let mock = MockLlm::start(vec![
        MockReply::anthropic_tool_use("t1", "bash", json!({"command": "touch early"})),
        MockReply::anthropic_tool_use("t2", "read_file", json!({"path": "README"})),
        MockReply::anthropic_tool_use("t3", "submit_plan", json!({"plan": "touch late"})),
        MockReply::anthropic_tool_use("t4", "bash", json!({"command": "touch late"})),
        MockReply::anthropic_tool_use("t5", "complete_task", json!({"result": "touched"})),
        MockReply::anthropic_text("Done."),
    ]);
    let url = mock.url();
    let workdir = board.workdir("alice");
    std::fs::create_dir_all(&workdir).expect("workdir");
    std::fs::write(workdir.join("README"), "read me\n").expect("readme");
    let alice = alice_on(&board, &url, &[]);
    board.wait_idle("alice").await;
    let id = add_planned(&board, "guarded", "Touch a file called late.").await;
    let plan = pending_plan(&board, id).await;
    assert_eq!(plan.plan.as_deref(), Some("touch late"));
    let calls = mock.calls();
    assert_eq!(calls, 3, "bash refused, read_file open, then the plan");
    assert!(!workdir.join("early").exists(), "the gate let bash through");
    let second = mock.requests()[1].body.to_string();
    assert!(second.contains("bash is closed"), "{second}");
    assert!(second.contains("submit_plan"), "{second}");
    let third = mock.requests()[2].body.to_string();
    assert!(third.contains("read me"), "read_file stays open: {third}");
    // Waiting for the decision costs no model calls.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(mock.calls(), calls);
    let approved = Instant::now();
    board
        .lead
        .review_plan(plan.id, true, Some("go ahead"))
        .await
        .expect("approve");
    let start = Instant::now();
    while mock.calls() == calls {
        assert!(start.elapsed() < PATIENCE, "no call after the approval");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let latency = approved.elapsed();
    eprintln!("approval to the next model call: {latency:?}");
    board.wait_done(&[id]).await;
    let task = board.task(id).await;
    assert_eq!(task.status, TaskStatus::Completed, "{}", alice.log_text());
    assert!(workdir.join("late").exists());
    let fourth = mock.requests()[3].body.to_string();
    assert!(
        fourth.contains("go ahead"),
        "the feedback reached the model: {fourth}"
    );
    drop(alice);
    board.stop().await;
}

/// A working teammate is asked to shut down at its next tool round, and its model
/// may say no: the lead gets the reason, and the teammate finishes its task.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_working_teammate_may_reject_a_shutdown_with_a_reason() {
    let mut board = Board::start(TEAMMATED).await;
    // In alice's workdir: the only place her sandbox lets her write.
    let mark = board.workdir("alice").join("started");
    let mock = MockLlm::start(vec![
        MockReply::anthropic_tool_use(
            "t1",
            "bash",
            json!({"command": format!("touch {}; sleep 1", mark.display())}),
        ),
        MockReply::anthropic_tool_use(
            "t2",
            "respond_shutdown",
            json!({"approve": false, "note": "halfway through the migration"}),
        ),
        MockReply::anthropic_tool_use("t3", "complete_task", json!({"result": "migrated"})),
        MockReply::anthropic_text("Done."),
    ]);
    let url = mock.url();
    let alice = alice_on(&board, &url, &[]);
    board.wait_idle("alice").await;
    let t = board.add("migrate", "Migrate the data.", &[]).await;
    board.wait_claimed(t.id).await;
    alice.wait_for_file(&mark).await;
    let req = board
        .lead
        .request_shutdown(ShutdownArgs {
            to: "alice".into(),
            reason: Some("wrapping up".into()),
            ..Default::default()
        })
        .await
        .expect("request_shutdown");
    board.wait_done(&[t.id]).await;
    let settled = board.lead.get_request(req.id).await.expect("request");
    assert_eq!(settled.state, RequestState::Rejected, "{settled:#?}");
    assert_eq!(
        settled.feedback.as_deref(),
        Some("halfway through the migration")
    );
    let second = mock.requests()[1].body.to_string();
    assert!(
        second.contains(&format!("asks you to shut down (request r{})", req.id)),
        "the model was asked at its next round: {second}"
    );
    assert!(
        !second.contains("[Message #"),
        "the protocol message never reaches the model as chat: {second}"
    );
    let inbox = board.lead.inbox().await.expect("inbox");
    assert!(
        inbox
            .iter()
            .any(|m| m.kind == MessageKind::ShutdownResponse
                && m.content.contains("halfway through")),
        "{inbox:#?}"
    );
    assert_eq!(board.task(t.id).await.status, TaskStatus::Completed);
    // Still running: it said no.
    assert!(
        teamboard_testkit::alive(alice.pid()),
        "{}",
        alice.log_text()
    );
    drop(alice);
    board.stop().await;
}

/// A teammate asked to shut down while working, whose model finishes the task
/// without answering, approves once it holds nothing, as if it had been asked
/// while idle: the request does not stay pending until boardd stops it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_teammate_that_finishes_without_answering_approves_the_shutdown() {
    let mut board = Board::start(TEAMMATED).await;
    // In alice's workdir: the only place her sandbox lets her write.
    let mark = board.workdir("alice").join("started");
    let mock = MockLlm::start(vec![
        MockReply::anthropic_tool_use(
            "t1",
            "bash",
            json!({"command": format!("touch {}; sleep 1", mark.display())}),
        ),
        MockReply::anthropic_text("Migrated."),
    ]);
    let url = mock.url();
    let mut alice = alice_on(&board, &url, &[]);
    board.wait_idle("alice").await;
    let t = board.add("migrate", "Migrate the data.", &[]).await;
    board.wait_claimed(t.id).await;
    alice.wait_for_file(&mark).await;
    let req = board
        .lead
        .request_shutdown(ShutdownArgs {
            to: "alice".into(),
            // Far beyond the test: only the teammate can settle it in time.
            timeout_ms: Some(600_000),
            ..Default::default()
        })
        .await
        .expect("request_shutdown");
    board.wait_done(&[t.id]).await;
    assert_eq!(board.task(t.id).await.status, TaskStatus::Completed);
    assert_eq!(alice.exit_code().await, Some(0), "{}", alice.log_text());
    let settled = board.lead.get_request(req.id).await.expect("request");
    assert_eq!(settled.state, RequestState::Approved, "{settled:#?}");
    assert_eq!(settled.answered_by.as_deref(), Some("alice"));
    assert!(!settled.forced, "{settled:#?}");
    board.stop().await;
}

/// A plan the lead withdraws (`cancel_request`, which sends no message) does not
/// park its author for good: the wait's safety net reads the request, and the
/// model hears that the plan is off.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_withdrawn_plan_ends_the_wait_for_the_decision() {
    let mut board = Board::start(TEAMMATED).await;
    let mock = MockLlm::start(vec![
        MockReply::anthropic_tool_use("t1", "submit_plan", json!({"plan": "touch late"})),
        MockReply::anthropic_tool_use("t2", "fail_task", json!({"reason": "plan withdrawn"})),
        MockReply::anthropic_text("Stopped."),
    ]);
    let url = mock.url();
    let alice = alice_on(&board, &url, &["--poll-interval", "0.2"]);
    board.wait_idle("alice").await;
    let id = add_planned(&board, "guarded", "Touch a file called late.").await;
    let plan = pending_plan(&board, id).await;
    assert_eq!(mock.calls(), 1);
    board
        .lead
        .cancel_request(plan.id)
        .await
        .expect("cancel_request");
    let start = Instant::now();
    while mock.calls() < 2 {
        assert!(
            start.elapsed() < PATIENCE,
            "the teammate still waits on a withdrawn plan: {}",
            alice.log_text()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let second = mock.requests()[1].body.to_string();
    assert!(second.contains("was cancelled"), "{second}");
    drop(alice);
    board.stop().await;
}

/// A message read while the teammate waits for its plan's decision is
/// acknowledged there. When the wait is cut short (here the lead cancels the
/// task), it must still reach the model, not vanish with the dropped call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_read_during_the_plan_wait_survives_a_lost_claim() {
    use teamboard_protocol::EventKind;
    let mut board = Board::start(TEAMMATED).await;
    let mock = MockLlm::start(vec![
        MockReply::anthropic_tool_use("t1", "submit_plan", json!({"plan": "touch late"})),
        MockReply::anthropic_text("Noted."),
    ]);
    let url = mock.url();
    let alice = alice_on(&board, &url, &[]);
    board.wait_idle("alice").await;
    let id = add_planned(&board, "guarded", "Touch a file called late.").await;
    pending_plan(&board, id).await;
    let sent = board
        .lead
        .send("alice", MessageKind::Message, "use the blue config", None)
        .await
        .expect("send");
    board
        .wait_for("alice reads the message in the wait", |e| {
            e.kind == EventKind::MessageAcked && e.message == Some(sent.id)
        })
        .await;
    board.lead.cancel_task(id).await.expect("cancel_task");
    board.wait_idle("alice").await;
    board
        .lead
        .send("alice", MessageKind::Message, "anything new?", None)
        .await
        .expect("send");
    let start = Instant::now();
    while mock.calls() < 2 {
        assert!(start.elapsed() < PATIENCE, "{}", alice.log_text());
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let second = mock.requests()[1].body.to_string();
    assert!(
        second.contains("use the blue config"),
        "the message read in the wait never reached the model: {second}"
    );
    drop(alice);
    board.stop().await;
}
