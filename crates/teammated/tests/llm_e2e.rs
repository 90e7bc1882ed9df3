//! Real `teammated` processes talking to a local mock of the Anthropic and OpenAI
//! APIs: multi-turn tool use through the whole runtime, retries, token accounting,
//! zero model calls while idle, and an LLM that keeps failing.

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
use teamboard_protocol::{MessageKind, TaskStatus};
use teamboard_testkit::mock_llm::{self, MockLlm, MockReply};
use teamboard_testkit::{Board, PATIENCE, eventually};

/// The binary under test, built by cargo for this package's tests.
const TEAMMATED: &str = env!("CARGO_BIN_EXE_teammated");

// Some tests here share files with the commands outside the teammate's workdir
// (marks, pid files), which the sandbox hides: they spawn with `--sandbox
// off`, and `tests/sandbox.rs` tests the sandbox itself.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_teammate_makes_no_model_calls_and_wakes_at_once() {
    let mut board = Board::start(TEAMMATED).await;
    let mock = MockLlm::start(vec![
        MockReply::openai_tool_call("call_1", "complete_task", r#"{"result":"all done"}"#),
        MockReply::openai_text("Finished."),
    ]);
    let url = mock.url();
    // The safety-net poll is a minute: only boardd's push can wake it in time.
    let alice = board.spawn(
        "alice",
        "dev",
        &[
            "--provider",
            "openai",
            "--base-url",
            &url,
            "--poll-interval",
            "60",
        ],
    );
    board.wait_idle("alice").await;
    // Idle for a while: a polling teammate would be calling the model or boardd now.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(mock.calls(), 0, "no model calls while idle");
    let created = Instant::now();
    let t = board.add("ship it", "Do the thing.", &[]).await;
    assert_eq!(board.wait_claimed(t.id).await, "alice");
    let latency = created.elapsed();
    assert!(
        latency < Duration::from_secs(2),
        "claimed after {latency:?}"
    );
    board.wait_done(&[t.id]).await;
    // The model gets one more turn after complete_task; wait for the phase to end.
    board.wait_idle("alice").await;
    let task = board.task(t.id).await;
    assert_eq!(task.status, TaskStatus::Completed, "{}", alice.log_text());
    assert_eq!(task.result.as_deref(), Some("all done"));
    assert_eq!(
        mock.calls(),
        2,
        "one call to act, one after the tool result"
    );
    let first = &mock.requests()[0];
    assert_eq!(first.path, "/chat/completions");
    let text = first.body.to_string();
    assert!(text.contains("[Auto-claimed task #1] ship it"), "{text}");
    assert!(
        first.body["tools"]
            .as_array()
            .is_some_and(|t| t.len() == teammated::tools::specs::all().len()),
        "{text}"
    );
    // The second call carries the tool call and its result.
    let second = &mock.requests()[1].body;
    let msgs = second["messages"].as_array().expect("messages");
    assert!(
        msgs.iter()
            .any(|m| m["role"] == "tool" && m["tool_call_id"] == "call_1"),
        "{second}"
    );
    drop(alice);
    board.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_team_shows_the_model_the_roster_with_tasks_and_connections() {
    let mut board = Board::start(TEAMMATED).await;
    let mock = MockLlm::start(vec![
        MockReply::openai_tool_call("call_1", "list_team", "{}"),
        MockReply::openai_text("Done."),
    ]);
    let url = mock.url();
    // bob is another role, so the task can only be alice's.
    let bob = board.spawn("bob", "ops", &[]);
    board.wait_idle("bob").await;
    let alice = board.spawn(
        "alice",
        "dev",
        &["--provider", "openai", "--base-url", &url],
    );
    board.wait_idle("alice").await;
    let t = board
        .lead
        .add_task(teamboard_protocol::request::NewTask {
            subject: "look around".into(),
            role: Some("dev".into()),
            ..Default::default()
        })
        .await
        .expect("add_task");
    board.wait_done(&[t.id]).await;
    board.wait_idle("alice").await;
    let requests = mock.requests();
    assert_eq!(requests.len(), 2, "{}", alice.log_text());
    let second = &requests[1].body;
    let result = second["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == "call_1")
        .unwrap_or_else(|| panic!("no list_team result in {second}"));
    assert_eq!(
        result["content"],
        "alice [working] role dev, holds #1 look around, connected (you)\n\
         bob [idle] role ops, connected"
    );
    drop((alice, bob));
    board.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anthropic_multi_turn_tool_use_with_a_rate_limit_in_between() {
    let mut board = Board::start(TEAMMATED).await;
    let mock = MockLlm::start(vec![
        MockReply::anthropic_tool_use(
            "toolu_1",
            "bash",
            // `env` too: the key must not be in what the model's commands inherit.
            json!({"command": "echo hello > out.txt && cat out.txt && env"}),
        ),
        MockReply::status(429).with_header("retry-after", "0"),
        MockReply::anthropic_tool_use(
            "toolu_2",
            "complete_task",
            json!({"result": "wrote out.txt"}),
        ),
        MockReply::anthropic_text("Done."),
    ]);
    let url = mock.url();
    // The key comes from the environment, as it would in real use.
    let mut alice = board.spawn_with_env(
        "alice",
        "dev",
        &[
            "--provider",
            "anthropic",
            "--base-url",
            &url,
            "--retry-base-ms",
            "1",
        ],
        &[("ANTHROPIC_API_KEY", "sk-test-secret-key")],
    );
    board.wait_idle("alice").await;
    let t = board
        .add("write a file", "Create out.txt saying hello.", &[])
        .await;
    board.wait_done(&[t.id]).await;
    board.wait_idle("alice").await;
    let task = board.task(t.id).await;
    assert_eq!(task.status, TaskStatus::Completed, "{}", alice.log_text());
    assert_eq!(task.result.as_deref(), Some("wrote out.txt"));
    assert_eq!(
        std::fs::read_to_string(alice.workdir.join("out.txt")).expect("out.txt"),
        "hello\n"
    );
    let requests = mock.requests();
    assert_eq!(requests.len(), 4, "three answers and one 429");
    for r in &requests {
        assert_eq!(r.path, "/v1/messages");
        assert_eq!(r.header("x-api-key"), Some("sk-test-secret-key"));
        assert!(r.header("anthropic-version").is_some());
    }
    // After the bash call the model sees its result, tied to the tool use.
    let results: Vec<_> = requests[1].body["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .filter(|b| b["type"] == "tool_result")
        .collect();
    assert_eq!(results.len(), 1, "{:#?}", requests[1].body);
    assert_eq!(results[0]["tool_use_id"], "toolu_1");
    assert!(
        results[0]["content"]
            .as_str()
            .unwrap_or("")
            .contains("hello")
    );
    // The retried request is the same request.
    assert_eq!(requests[1].body, requests[2].body);
    // Token use reached boardd for the teammate and the task.
    // Two tool-use answers while the task was held count for the task; the final
    // text came after complete_task, so it counts for the teammate only.
    let (ti, to) = mock_llm::TOOL_USAGE;
    let (xi, xo) = mock_llm::TEXT_USAGE;
    assert_eq!(
        (task.tokens.input, task.tokens.output),
        (2 * ti, 2 * to),
        "{task:#?}"
    );
    let team = board.lead.team().await.expect("team");
    let me = team.iter().find(|m| m.name == "alice").expect("alice");
    assert_eq!(
        (me.tokens.input, me.tokens.output),
        (2 * ti + xi, 2 * to + xo)
    );
    // The key is never logged, and never reaches the model through a tool.
    let log = alice.log_text() + &board.transcript("alice");
    assert!(!log.contains("sk-test-secret-key"), "key leaked:\n{log}");
    for r in &requests {
        assert!(
            !r.body.to_string().contains("sk-test-secret-key"),
            "key sent to the model"
        );
    }
    alice.child.kill().await.ok();
    board.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_the_model_cannot_answer_brings_an_error_but_no_second_idle_notice() {
    let mut board = Board::start(TEAMMATED).await;
    let mock = MockLlm::start_with_fallback(Vec::new(), MockReply::status(503));
    let url = mock.url();
    let alice = board.spawn(
        "alice",
        "dev",
        &[
            "--provider",
            "openai",
            "--base-url",
            &url,
            "--retry-base-ms",
            "1",
            "--llm-attempts",
            "2",
        ],
    );
    board.wait_idle("alice").await;
    // Written each time she goes back to waiting, after any notice.
    let waits = |board: &Board| {
        board
            .transcript("alice")
            .matches("idle: waiting for messages")
            .count()
    };
    let before = waits(&board);
    board
        .lead
        .send("alice", MessageKind::Message, "are you there?", None)
        .await
        .expect("send");
    board
        .wait_for("alice's error", |e| {
            e.kind == teamboard_protocol::EventKind::MessageSent
                && e.detail.contains("alice → lead: error")
        })
        .await;
    let seen = &board;
    eventually("alice to wait again", PATIENCE, || async move {
        (waits(seen) > before).then_some(())
    })
    .await;
    // Resting after a model failure is not news when she held no task.
    let inbox = board.lead.inbox().await.expect("inbox");
    let kinds: Vec<MessageKind> = inbox.iter().map(|m| m.kind).collect();
    assert_eq!(
        kinds,
        [MessageKind::IdleNotification, MessageKind::Error],
        "{inbox:#?}\n{}",
        alice.log_text()
    );
    assert_eq!(mock.calls(), 2);
    drop(alice);
    board.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_that_keeps_failing_releases_the_task_until_it_fails_for_good() {
    let mut board = Board::start(TEAMMATED).await;
    let mock = MockLlm::start_with_fallback(Vec::new(), MockReply::status(503));
    let url = mock.url();
    let alice = board.spawn(
        "alice",
        "dev",
        &[
            "--provider",
            "openai",
            "--base-url",
            &url,
            "--retry-base-ms",
            "1",
            "--llm-attempts",
            "2",
        ],
    );
    board.wait_idle("alice").await;
    let t = board.add("doomed", "The model is down.", &[]).await;
    board.wait_done(&[t.id]).await;
    let task = board.task(t.id).await;
    assert_eq!(
        task.status,
        TaskStatus::Failed,
        "{task:#?}\n{}",
        alice.log_text()
    );
    assert_eq!(task.attempts, 3, "boardd's default of three attempts");
    let error = task.last_error.unwrap_or_default();
    assert!(error.contains("503"), "{error}");
    assert_eq!(mock.calls(), 6, "two attempts per claim, three claims");
    // Each release is reported to the lead, after the release itself.
    for _ in 0..3 {
        board
            .wait_for("an error message", |e| {
                e.kind == teamboard_protocol::EventKind::MessageSent
                    && e.detail.contains("→ lead: error")
            })
            .await;
    }
    drop(alice);
    board.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_that_arrive_during_work_reach_the_model_between_rounds() {
    let mut board = Board::start(TEAMMATED).await;
    let mark = board.dir().join("tool-running");
    let mock = MockLlm::start(vec![
        MockReply::anthropic_tool_use(
            "toolu_1",
            "bash",
            json!({"command": format!("touch {}; sleep 0.5", mark.display())}),
        ),
        MockReply::anthropic_tool_use("toolu_2", "complete_task", json!({"result": "ok"})),
        MockReply::anthropic_text("Done."),
    ]);
    let url = mock.url();
    let alice = board.spawn_with_env(
        "alice",
        "dev",
        &[
            "--sandbox",
            "off",
            "--provider",
            "anthropic",
            "--base-url",
            &url,
        ],
        &[("ANTHROPIC_API_KEY", "k")],
    );
    board.wait_idle("alice").await;
    let t = board.add("slow", "Takes a while.", &[]).await;
    alice.wait_for_file(&mark).await;
    let sent = board
        .lead
        .send("alice", MessageKind::Message, "status please", None)
        .await
        .expect("send");
    board.wait_done(&[t.id]).await;
    board.wait_idle("alice").await;
    let requests = mock.requests();
    assert_eq!(requests.len(), 3);
    let needle = format!("[Message #{} from lead (message)] status please", sent.id);
    assert!(!requests[0].body.to_string().contains(&needle));
    let second = requests[1].body.to_string();
    assert_eq!(second.matches(&needle).count(), 1, "{second}");
    // Acknowledged once it was in the context, so it is not delivered again.
    let acked = board
        .lead
        .events(Default::default())
        .await
        .expect("events")
        .into_iter()
        .any(|e| {
            e.kind == teamboard_protocol::EventKind::MessageAcked && e.message == Some(sent.id)
        });
    assert!(acked);
    drop(alice);
    board.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_budget_the_teammate_compacts_and_puts_its_identity_back() {
    let mut board = Board::start(TEAMMATED).await;
    let mock = MockLlm::start(vec![
        MockReply::anthropic_tool_use(
            "toolu_1",
            "bash",
            json!({"command": "head -c 8000 /dev/zero | tr '\\\\0' a"}),
        ),
        MockReply::anthropic_text("SUMMARY-XYZ: printed a lot of a's"),
        MockReply::anthropic_tool_use("toolu_2", "complete_task", json!({"result": "ok"})),
        MockReply::anthropic_text("Done."),
    ]);
    let url = mock.url();
    let alice = board.spawn_with_env(
        "alice",
        "dev",
        &[
            "--provider",
            "anthropic",
            "--base-url",
            &url,
            "--context-budget",
            "1000",
        ],
        &[("ANTHROPIC_API_KEY", "k")],
    );
    board.wait_idle("alice").await;
    let t = board.add("noisy", "Print a lot.", &[]).await;
    board.wait_done(&[t.id]).await;
    board.wait_idle("alice").await;
    assert_eq!(
        board.task(t.id).await.status,
        TaskStatus::Completed,
        "{}",
        alice.log_text()
    );
    let requests = mock.requests();
    assert_eq!(requests.len(), 4, "{}", alice.log_text());
    // The second call is the summary: no tools, the old turns as text.
    let summary = &requests[1].body;
    assert!(summary.get("tools").is_none(), "{summary}");
    // The next call starts with the identity and the summary, and the kept tool
    // use still has its result right after it.
    let next = &requests[2].body;
    let msgs = next["messages"].as_array().expect("messages");
    let head = msgs[0].to_string();
    assert!(
        head.contains("<identity>") && head.contains("You are alice"),
        "{head}"
    );
    assert!(head.contains("[Current task #1] noisy"), "{head}");
    assert!(head.contains("SUMMARY-XYZ"), "{head}");
    let uses: Vec<(usize, String)> = msgs
        .iter()
        .enumerate()
        .flat_map(|(i, m)| {
            m["content"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .filter_map(move |b| {
                    (b["type"] == "tool_use")
                        .then(|| (i, b["id"].as_str().unwrap_or("").to_string()))
                })
        })
        .collect();
    for (i, id) in uses {
        let answered = msgs[i + 1]["content"]
            .as_array()
            .is_some_and(|c| c.iter().any(|b| b["tool_use_id"] == id.as_str()));
        assert!(answered, "tool use {id} lost its result: {next}");
    }
    // The full context was saved before compacting.
    let dir = teamboard_protocol::transcript::teammate_dir(board.state_dir(), "default", "alice");
    let archives = std::fs::read_dir(&dir)
        .expect("teammate dir")
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with("context-"))
        .count();
    assert_eq!(archives, 1);
    let transcript = board.transcript("alice");
    assert!(transcript.contains("compacted:"));
    // What the model now starts from is in the transcript too: the identity put
    // back, and the summary.
    let put_back = transcript
        .lines()
        .find(|l| l.contains("<identity>"))
        .unwrap_or_else(|| panic!("no identity block in the transcript"));
    assert!(
        put_back.contains(r#""kind":"user""#)
            && put_back.contains("You are alice")
            && put_back.contains("[Current task #1] noisy")
            && put_back.contains("SUMMARY-XYZ"),
        "{put_back}"
    );
    drop(alice);
    board.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heartbeats_keep_the_claim_through_a_model_call_longer_than_the_lease() {
    // A two-second lease and a model that takes four and a half to answer: only
    // the teammate's heartbeats (every third of the lease) keep the claim alive.
    let mut board =
        Board::start_with(TEAMMATED, |c| c.board.lease_ttl = Duration::from_secs(2)).await;
    let mock = MockLlm::start(vec![
        MockReply::openai_tool_call("c1", "complete_task", r#"{"result":"slow but done"}"#)
            .with_delay(Duration::from_millis(4500)),
        MockReply::openai_text("Done."),
    ]);
    let url = mock.url();
    let alice = board.spawn(
        "alice",
        "dev",
        &["--provider", "openai", "--base-url", &url],
    );
    board.wait_idle("alice").await;
    let t = board.add("slow", "The model thinks hard.", &[]).await;
    board.wait_done(&[t.id]).await;
    let done = board.task(t.id).await;
    assert_eq!(done.status, TaskStatus::Completed, "{}", alice.log_text());
    assert_eq!(done.attempts, 1, "the lease never lapsed: {done:#?}");
    assert_eq!(done.result.as_deref(), Some("slow but done"));
    drop(alice);
    board.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_cut_off_at_the_output_limit_is_joined_with_its_continuations() {
    let mut board = Board::start(TEAMMATED).await;
    let mock = MockLlm::start(vec![
        MockReply::openai_cut("The plan: first, read the co"),
        MockReply::openai_cut("de; second, fix the bug; "),
        MockReply::openai_text("third, run the tests."),
    ]);
    let url = mock.url();
    let alice = board.spawn(
        "alice",
        "dev",
        &["--provider", "openai", "--base-url", &url],
    );
    board.wait_idle("alice").await;
    let t = board.add("plan", "Write the plan.", &[]).await;
    board.wait_done(&[t.id]).await;
    let task = board.task(t.id).await;
    assert_eq!(task.status, TaskStatus::Completed, "{}", alice.log_text());
    assert_eq!(
        task.result.as_deref(),
        Some("The plan: first, read the code; second, fix the bug; third, run the tests."),
        "the parts form one answer"
    );
    let requests = mock.requests();
    assert_eq!(requests.len(), 3);
    // The model sees its own partial text, then is asked to continue.
    let msgs = requests[1].body["messages"].as_array().expect("messages");
    let n = msgs.len();
    assert_eq!(msgs[n - 2]["role"], "assistant", "{msgs:#?}");
    assert_eq!(msgs[n - 2]["content"], "The plan: first, read the co");
    assert_eq!(msgs[n - 1]["role"], "user");
    let hint = msgs[n - 1]["content"].as_str().unwrap_or_default();
    assert!(hint.contains("cut off at the output limit"), "{hint}");
    // And so does the person reading the transcript.
    let transcript = board.transcript("alice");
    assert_eq!(
        transcript.matches("cut off at the output limit").count(),
        2,
        "{transcript}"
    );
    drop(alice);
    board.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_that_keeps_hitting_the_output_limit_fails_the_task_with_the_reason() {
    let mut board = Board::start_with(TEAMMATED, |c| c.board.max_attempts = 1).await;
    let mock = MockLlm::start_with_fallback(Vec::new(), MockReply::anthropic_cut("and so on, "));
    let url = mock.url();
    let alice = board.spawn_with_env(
        "alice",
        "dev",
        &[
            "--provider",
            "anthropic",
            "--base-url",
            &url,
            "--max-rounds",
            "8",
            "--max-tokens",
            "300",
        ],
        &[("ANTHROPIC_API_KEY", "k")],
    );
    board.wait_idle("alice").await;
    let t = board.add("essay", "Write a long essay.", &[]).await;
    board.wait_done(&[t.id]).await;
    let task = board.task(t.id).await;
    assert_eq!(
        task.status,
        TaskStatus::Failed,
        "cut text is never a result: {task:#?}\n{}",
        alice.log_text()
    );
    let error = task.last_error.unwrap_or_default();
    assert!(
        error.contains("cut off at the output limit (--max-tokens 300) 4 times"),
        "{error}"
    );
    assert!(error.contains("raise --max-tokens"), "{error}");
    assert_eq!(mock.calls(), 4, "the first answer and three continuations");
    drop(alice);
    board.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_output_limit_goes_in_the_field_the_server_knows() {
    let mut board = Board::start(TEAMMATED).await;
    let mock = MockLlm::start(vec![
        MockReply::openai_text("One."),
        MockReply::openai_text("Two."),
    ]);
    let url = mock.url();
    // OpenAI's own API wants max_completion_tokens; a local server (the default
    // off api.openai.com) gets max_tokens, which every compatible server knows.
    let newer = board.spawn(
        "alice",
        "dev",
        &[
            "--provider",
            "openai",
            "--base-url",
            &url,
            "--max-tokens",
            "777",
            "--max-tokens-field",
            "max_completion_tokens",
        ],
    );
    board.wait_idle("alice").await;
    let t = board.add("one", "Say one.", &[]).await;
    board.wait_done(&[t.id]).await;
    let body = &mock.requests()[0].body;
    assert_eq!(body["max_completion_tokens"], 777, "{}", newer.log_text());
    assert!(body.get("max_tokens").is_none(), "{body}");
    let local = board.spawn(
        "bob",
        "dev",
        &[
            "--provider",
            "openai",
            "--base-url",
            &url,
            "--max-tokens",
            "555",
        ],
    );
    drop(newer);
    board.wait_idle("bob").await;
    let t = board.add("two", "Say two.", &[]).await;
    board.wait_done(&[t.id]).await;
    let body = &mock.requests()[1].body;
    assert_eq!(body["max_tokens"], 555, "{}", local.log_text());
    assert!(body.get("max_completion_tokens").is_none(), "{body}");
    drop(local);
    board.stop().await;
}

/// OpenAI's refusal of an output-limit field its model does not take, word for
/// word, naming the field `body` carried.
fn refused_field(body: &serde_json::Value) -> Option<MockReply> {
    let (sent, other) = if body.get("max_tokens").is_some() {
        ("max_tokens", "max_completion_tokens")
    } else {
        ("max_completion_tokens", "max_tokens")
    };
    Some(MockReply::json(
        400,
        json!({"error": {
            "message": format!("Unsupported parameter: '{sent}' is not supported with this model. Use '{other}' instead."),
            "type": "invalid_request_error", "param": sent, "code": "unsupported_parameter"}}),
    ))
}

/// A model that refuses `max_tokens` (OpenAI's reasoning models) is asked again
/// with the field it names, and the teammate keeps to that field: no attempt
/// of the task is spent on it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_that_refuses_the_output_limit_field_is_asked_with_the_one_it_names() {
    let mut board = Board::start(TEAMMATED).await;
    let mock = MockLlm::start(Vec::new());
    mock.set_responder(|r| match r.body.get("max_completion_tokens") {
        Some(_) => Some(MockReply::openai_text("Done.")),
        None => refused_field(&r.body),
    });
    let url = mock.url();
    let alice = board.spawn(
        "alice",
        "dev",
        &[
            "--provider",
            "openai",
            "--base-url",
            &url,
            "--max-tokens",
            "321",
        ],
    );
    board.wait_idle("alice").await;
    for subject in ["one", "two"] {
        let t = board.add(subject, "Say done.", &[]).await;
        board.wait_done(&[t.id]).await;
        let task = board.task(t.id).await;
        assert_eq!(task.status, TaskStatus::Completed, "{}", alice.log_text());
        assert_eq!(task.attempts, 1, "claimed once: {task:#?}");
    }
    let fields: Vec<&str> = mock
        .requests()
        .iter()
        .map(|r| match r.body.get("max_tokens") {
            Some(_) => "max_tokens",
            None => "max_completion_tokens",
        })
        .collect();
    assert_eq!(
        fields,
        [
            "max_tokens",
            "max_completion_tokens",
            "max_completion_tokens"
        ],
        "asked again once, then the learned field only"
    );
    assert_eq!(mock.requests()[1].body["max_completion_tokens"], 321);
    let log = alice.log_text();
    assert!(
        log.contains("--max-tokens-field max_completion_tokens"),
        "{log}"
    );
    drop(alice);
    board.stop().await;
}

/// A server that refuses both output-limit fields is a setup error: the teammate
/// says so once and stops, as for a refused key, and the task keeps its attempts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_refuses_both_output_limit_fields_stops_the_teammate_once() {
    let mut board = Board::start(TEAMMATED).await;
    let mock = MockLlm::start(Vec::new());
    mock.set_responder(|r| refused_field(&r.body));
    let url = mock.url();
    let mut alice = board.spawn(
        "alice",
        "dev",
        &["--provider", "openai", "--base-url", &url],
    );
    board.wait_idle("alice").await;
    let t = board.add("any", "Anything.", &[]).await;
    assert_eq!(alice.exit_code().await, Some(1), "{}", alice.log_text());
    let task = board.task(t.id).await;
    assert_eq!(task.status, TaskStatus::Pending, "{task:#?}");
    assert_eq!(task.attempts, 0, "not the task's fault: {task:#?}");
    assert_eq!(mock.calls(), 2, "each field once");
    let errors = board
        .lead
        .inbox()
        .await
        .expect("inbox")
        .into_iter()
        .filter(|m| m.kind == MessageKind::Error)
        .count();
    assert_eq!(errors, 1, "the lead hears of it once");
    board.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_429_is_held_in_boardd_until_its_retry_after_and_the_transcript_says_so() {
    let mut board = Board::start(TEAMMATED).await;
    let mock = MockLlm::start(vec![
        MockReply::status(429).with_header("retry-after", "3"),
        MockReply::openai_text("Done."),
    ]);
    let url = mock.url();
    let alice = board.spawn(
        "alice",
        "dev",
        &[
            "--provider",
            "openai",
            "--base-url",
            &url,
            "--retry-base-ms",
            "1",
        ],
    );
    board.wait_idle("alice").await;
    let t = board.add("wait", "Rate limited.", &[]).await;
    let state = board.state_dir().to_path_buf();
    let line = eventually("the 429 notice in alice's transcript", PATIENCE, || {
        let text = teamboard_testkit::transcript(&state, "alice");
        async move {
            text.lines()
                .find(|l| l.contains("refused the call"))
                .map(str::to_string)
        }
    })
    .await;
    assert!(
        line.contains("boardd holds its calls until it resets"),
        "{line}"
    );
    board.wait_done(&[t.id]).await;
    assert_eq!(board.task(t.id).await.status, TaskStatus::Completed);
    let calls = mock.requests();
    assert_eq!(calls.len(), 2, "{}", alice.log_text());
    // Not retried by the teammate itself: boardd held the call until the
    // account's block ended, `retry-after` seconds after the 429.
    let gap = calls[1].received_at - calls[0].received_at;
    assert!(
        gap >= Duration::from_millis(2_900),
        "called again after {gap:?}"
    );
    let text = teamboard_testkit::transcript(&state, "alice");
    assert!(text.contains("rate limit"), "{text}");
    drop(alice);
    board.stop().await;
}

/// A server that lists no models (`GET /models` answers 404 or 405) is used all
/// the same: the check at start is advice, which the transcript keeps with what
/// to try should the model calls fail too. A 5xx there is retried as a model
/// call would be, then the teammate goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_without_a_model_list_is_used_all_the_same() {
    let mut board = Board::start(TEAMMATED).await;
    let mock = MockLlm::start(vec![MockReply::openai_text("Listed nothing, did it.")]);
    mock.set_models(MockReply::raw(404, "404 page not found"));
    let url = mock.url();
    let alice = board.spawn(
        "alice",
        "dev",
        &["--provider", "openai", "--base-url", &url],
    );
    board.wait_idle("alice").await;
    let transcript = board.transcript("alice");
    assert!(
        transcript.contains(&format!("GET {url}/models answered HTTP 404"))
            && transcript.contains(&format!("try {url}/v1")),
        "{transcript}\n{}",
        alice.log_text()
    );
    let t = board.add("any", "Anything.", &[]).await;
    board.wait_done(&[t.id]).await;
    assert_eq!(board.task(t.id).await.status, TaskStatus::Completed);
    drop(alice);

    // Anthropic's format, a server that allows no GET there.
    mock.set_models(MockReply::raw(405, "method not allowed"));
    let bob = board.spawn_with_env(
        "bob",
        "dev",
        &["--provider", "anthropic", "--base-url", &url],
        &[("ANTHROPIC_API_KEY", "sk-ant-test-0123456789")],
    );
    board.wait_idle("bob").await;
    let transcript = board.transcript("bob");
    assert!(
        transcript.contains(&format!("GET {url}/v1/models answered HTTP 405")),
        "{transcript}\n{}",
        bob.log_text()
    );
    drop(bob);

    // A server error is retried with the model calls' policy, then let be.
    mock.set_models(MockReply::status(500));
    let listed = mock.model_list_requests().len();
    let carol = board.spawn(
        "carol",
        "dev",
        &[
            "--provider",
            "openai",
            "--base-url",
            &url,
            "--llm-attempts",
            "3",
            "--retry-base-ms",
            "1",
        ],
    );
    board.wait_idle("carol").await;
    assert_eq!(
        mock.model_list_requests().len() - listed,
        3,
        "{}",
        carol.log_text()
    );
    let transcript = board.transcript("carol");
    assert!(
        transcript.contains("HTTP 500") && transcript.contains("gave up after 3 attempts"),
        "{transcript}"
    );
    assert_eq!(mock.calls(), 1, "only alice's task asked the model");
    drop(carol);
    board.stop().await;
}

/// A key the server refuses stops the teammate at start, before it registers,
/// with a message that names the URL and the variable, never the key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_key_stops_the_teammate_at_start_with_the_url() {
    let board = Board::start(TEAMMATED).await;
    let mock = MockLlm::start(Vec::new());
    let url = mock.url();
    mock.set_models(MockReply::json(
        401,
        json!({"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}),
    ));
    let mut carol = board.spawn_with_env(
        "carol",
        "dev",
        &["--provider", "anthropic", "--base-url", &url],
        &[("ANTHROPIC_API_KEY", "sk-ant-wrong-0123456789")],
    );
    assert_eq!(carol.exit_code().await, Some(1), "{}", carol.log_text());
    let log = carol.log_text();
    assert!(
        log.contains(&format!(
            "{url}/v1/models is reachable, but it refused the API key (HTTP 401"
        )),
        "{log}"
    );
    assert!(log.contains("ANTHROPIC_API_KEY"), "{log}");
    assert!(!log.contains("sk-ant-wrong"), "{log}");
    assert_eq!(mock.calls(), 0, "no model call was made");
    assert_eq!(mock.model_list_requests().len(), 1, "a 401 is not retried");
    assert!(
        board.lead.team().await.expect("team").is_empty(),
        "it did not register"
    );
    board.stop().await;
}

/// A model server that cannot be reached at start may come up later (ollama
/// started after the teammate): a warning in the transcript, not a stop.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_base_url_at_start_is_a_warning_in_the_transcript() {
    let mut board = Board::start(TEAMMATED).await;
    let nothing = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("address");
    let url = format!("http://{nothing}/v1");
    let alice = board.spawn(
        "alice",
        "dev",
        &["--provider", "openai", "--base-url", &url],
    );
    board.wait_idle("alice").await;
    let transcript = board.transcript("alice");
    assert!(
        transcript.contains(&format!("cannot check the base URL {url} now")),
        "{transcript}\n{}",
        alice.log_text()
    );
    drop(alice);
    board.stop().await;
}

/// A model the provider does not know is the configuration's fault: the task goes
/// back without using up an attempt, and its history says why, in `teamctl task
/// show` too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_model_leaves_its_reason_in_the_tasks_history() {
    let mut board = Board::start(TEAMMATED).await;
    let mock = MockLlm::start(vec![MockReply::json(
        404,
        json!({"error": {
            "message": "The model `gpt-nope` does not exist or you do not have access to it.",
            "type": "invalid_request_error", "param": null, "code": "model_not_found"}}),
    )]);
    let url = mock.url();
    let mut alice = board.spawn(
        "alice",
        "dev",
        &[
            "--provider",
            "openai",
            "--base-url",
            &url,
            "--model",
            "gpt-nope",
        ],
    );
    board.wait_idle("alice").await;
    let t = board.add("any", "Anything.", &[]).await;
    assert_eq!(alice.exit_code().await, Some(1), "{}", alice.log_text());
    let detail = board.lead.get_task(t.id).await.expect("get_task");
    assert_eq!(detail.task.status, TaskStatus::Pending);
    assert_eq!(detail.task.attempts, 0, "not the task's fault");
    // Nor is it how far the task got: the next owner is not told it.
    assert_eq!(detail.task.handoff, None, "{:#?}", detail.task);
    let released = detail
        .history
        .iter()
        .rev()
        .find(|e| e.kind == teamboard_protocol::EventKind::TaskReleased)
        .expect("a release in the history");
    assert!(
        released.detail.contains("does not exist")
            && released
                .detail
                .contains(&format!("HTTP 404 from {url}/chat/completions")),
        "{released:#?}"
    );
    let socket = board.daemon.socket.clone();
    let id = t.id.to_string();
    let shown = tokio::task::spawn_blocking(move || {
        teamboard_testkit::Teamctl::new(teamboard_testkit::workspace_bin("teamctl"), &socket)
            .ok(&["task", "show", &id])
    })
    .await
    .expect("teamctl");
    assert!(shown.contains("gpt-nope` does not exist"), "{shown}");
    board.stop().await;
}

/// A refused model gives the task back, and the background jobs of the commands
/// the model ran on it are gone before boardd hears of it: the task may be
/// claimed again at once, and its commands never run under two owners.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_given_back_after_a_refused_model_leaves_no_background_job() {
    let mut board = Board::start(TEAMMATED).await;
    let pid_file = board.dir().join("server.pid");
    let command = format!(
        "sh -c 'echo $$ > {p}.tmp && mv {p}.tmp {p}; exec sleep 30' > /dev/null 2>&1 &\n\
         while [ ! -e {p} ]; do sleep 0.01; done",
        p = pid_file.display()
    );
    let mock = MockLlm::start(vec![
        MockReply::openai_tool_call("c1", "bash", &json!({ "command": command }).to_string()),
        MockReply::json(
            404,
            json!({"error": {"message": "The model `gpt-nope` does not exist.",
                "type": "invalid_request_error", "param": null, "code": "model_not_found"}}),
        ),
    ]);
    let url = mock.url();
    let mut alice = board.spawn(
        "alice",
        "dev",
        &[
            "--sandbox",
            "off",
            "--provider",
            "openai",
            "--base-url",
            &url,
        ],
    );
    board.wait_idle("alice").await;
    let t = board.add("start a server", "Start it.", &[]).await;
    let server = eventually("the server's pid", PATIENCE, || async {
        std::fs::read_to_string(&pid_file)
            .ok()?
            .trim()
            .parse::<u32>()
            .ok()
    })
    .await;
    board
        .wait_for("the task given back", |e| {
            e.kind == teamboard_protocol::EventKind::TaskReleased && e.task == Some(t.id)
        })
        .await;
    assert!(
        !teamboard_testkit::alive(server),
        "the server still runs when boardd records the release"
    );
    assert_eq!(alice.exit_code().await, Some(1), "{}", alice.log_text());
    board.stop().await;
}

/// A task the model claims itself comes in the claim's tool result, right after
/// the call: as a user turn of its own it would sit between the tool use and its
/// result, which both APIs refuse.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_claimed_by_the_model_comes_in_the_tool_result() {
    let mut board = Board::start(TEAMMATED).await;
    let go = board.dir().join("go");
    let mock = MockLlm::start(vec![
        // Woken by a message; waits until the test has put a task on the board, so
        // that the teammate (busy, not waiting for work) cannot auto-claim it.
        MockReply::anthropic_tool_use(
            "toolu_1",
            "bash",
            json!({"command": format!("while [ ! -e {} ]; do sleep 0.05; done", go.display())}),
        ),
        MockReply::anthropic_tool_use("toolu_2", "claim_task", json!({"id": 1})),
        MockReply::anthropic_text("Claimed and done."),
    ]);
    let url = mock.url();
    let alice = board.spawn_with_env(
        "alice",
        "dev",
        &[
            "--sandbox",
            "off",
            "--provider",
            "anthropic",
            "--base-url",
            &url,
        ],
        &[("ANTHROPIC_API_KEY", "k")],
    );
    board.wait_idle("alice").await;
    board
        .lead
        .send(
            "alice",
            MessageKind::Message,
            "take task 1 when it is there",
            None,
        )
        .await
        .expect("send");
    board.wait_status("alice", "working").await;
    let t = board.add("picked", "Claimed by hand.", &[]).await;
    std::fs::write(&go, "").expect("go");
    board.wait_done(&[t.id]).await;
    assert_eq!(
        board.task(t.id).await.status,
        TaskStatus::Completed,
        "{}",
        alice.log_text()
    );
    let requests = mock.requests();
    assert_eq!(requests.len(), 3, "{}", alice.log_text());
    let after_claim = &requests[2].body;
    let msgs = after_claim["messages"].as_array().expect("messages");
    let (call, answer) = (&msgs[msgs.len() - 2], &msgs[msgs.len() - 1]);
    assert_eq!(call["content"][1]["id"], "toolu_2", "{after_claim:#}");
    assert_eq!(answer["role"], "user");
    let result = &answer["content"][0];
    assert_eq!(result["type"], "tool_result", "{after_claim:#}");
    assert_eq!(result["tool_use_id"], "toolu_2");
    let text = result["content"].as_str().unwrap_or_default();
    assert!(
        text.contains("[Claimed task #1] picked\nClaimed by hand."),
        "{text}"
    );
    drop(alice);
    board.stop().await;
}

/// A task given back with a note reaches its next owner with the note, in the
/// fresh conversation the task starts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_previous_owners_note_opens_the_next_owners_conversation() {
    let mut board = Board::start(TEAMMATED).await;
    let t = board.add("parser", "Write the parser.", &[]).await;
    // bob claims it first and gives it back with a note, before alice exists.
    let bob = teamboard_testkit::teammate(&board.daemon.socket, "bob", "dev").await;
    let claim = bob.claim_task(t.id).await.expect("claim");
    bob.release_task_with_note(t.id, claim.epoch, "lexer done; the tests for ws fail")
        .await
        .expect("release with a note");
    let mock = MockLlm::start(vec![MockReply::anthropic_text("Finished the parser.")]);
    let url = mock.url();
    let alice = board.spawn_with_env(
        "alice",
        "dev",
        &["--provider", "anthropic", "--base-url", &url],
        &[("ANTHROPIC_API_KEY", "k")],
    );
    board.wait_done(&[t.id]).await;
    assert_eq!(
        board.task(t.id).await.status,
        TaskStatus::Completed,
        "{}",
        alice.log_text()
    );
    let first = &mock.requests()[0].body;
    let msgs = first["messages"].as_array().expect("messages");
    assert_eq!(msgs.len(), 1, "{first:#}");
    let blocks = msgs[0]["content"].as_array().expect("blocks");
    assert_eq!(
        blocks[0]["text"],
        "[Auto-claimed task #1] parser\nWrite the parser."
    );
    assert_eq!(
        blocks[1]["text"],
        "[Note from the previous owner] lexer done; the tests for ws fail"
    );
    drop(alice);
    board.stop().await;
}
