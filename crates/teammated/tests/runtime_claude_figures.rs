//! Figures for the `claude` runtime, measured with the real Claude Code against
//! the mock Messages API: how long a message takes to reach a busy agent, and
//! what a task costs against the native runtime on the same mock. They print
//! their figures and check only that the work was done; being slow, they are
//! ignored by default:
//!
//! ```sh
//! TEAMBOARD_AGENTS_DIR=... cargo test -p teammated --test runtime_claude_figures \
//!     -- --ignored --nocapture --test-threads 1
//! ```
//!
//! The figures go to `docs/benchmarks.md`.

mod claude_e2e;

use claude_e2e::*;
use serde_json::json;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use teamboard_protocol::request::NewTask;
use teamboard_protocol::{EventKind, MessageKind, TaskStatus};
use teamboard_testkit::agents::{Cli, agent_cli};
use teamboard_testkit::mock_llm::RecordedRequest;

/// The value at quantile `q` of `values` (sorted here).
fn quantile(values: &mut [Duration], q: f64) -> Duration {
    values.sort();
    let i = ((values.len() as f64 - 1.0) * q).round() as usize;
    values[i.min(values.len() - 1)]
}

fn epoch_ms(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement: run with --ignored --nocapture"]
async fn message_latency_to_a_busy_agent() {
    let Some(claude) = agent_cli(Cli::Claude) else {
        return;
    };
    const SENDS: usize = 20;
    let mut t = ClaudeBoard::start(claude).await;
    let calls = AtomicU64::new(0);
    // The agent runs short tools back to back until it is told to stop.
    t.mock.set_responder(move |req| {
        let last = last_user(&req.body);
        let text = text_of(last);
        Some(if text.contains("LAT-STOP") {
            say("FINAL: stopped")
        } else if text.contains("FIG-LAT")
            || !tool_results(last).is_empty()
            || text.contains("LAT-")
        {
            let n = calls.fetch_add(1, Ordering::Relaxed);
            bash(&format!("toolu_lat_{n}"), "echo tick && sleep 0.4")
        } else {
            say("(mock) nothing scripted for this")
        })
    });
    let alice = t.spawn_with("alice", "dev", "alice", &["--max-rounds", "200"]);
    t.board.wait_idle("alice").await;
    let task = t.board.add("busy", "FIG-LAT: keep busy", &[]).await;
    t.board.wait_claimed(task.id).await;
    let mock = &t.mock;
    teamboard_testkit::eventually(
        "the agent to call the model",
        teamboard_testkit::PATIENCE,
        || async { (mock.calls() > 0).then_some(()) },
    )
    .await;
    let mut sent = Vec::new();
    for i in 0..SENDS {
        tokio::time::sleep(Duration::from_millis(100 + (i as u64 * 137) % 400)).await;
        let text = format!("LAT-{i:02}: a message");
        let at = (Instant::now(), SystemTime::now());
        let msg = t
            .board
            .lead
            .send("alice", MessageKind::Message, &text, None)
            .await
            .expect("send");
        sent.push((format!("LAT-{i:02}:"), msg.id, at));
    }
    t.board
        .lead
        .send("alice", MessageKind::Message, "LAT-STOP", None)
        .await
        .expect("send");
    t.board.wait_done(&[task.id]).await;
    let done = t.board.task(task.id).await;
    assert_eq!(
        done.status,
        TaskStatus::Completed,
        "{done:#?}\n{}",
        alice.log_text()
    );
    let requests = t.mock.requests();
    let mut in_session = Vec::new();
    let mut acked = Vec::new();
    for (needle, id, (instant, wall)) in &sent {
        let r = requests
            .iter()
            .find(|r| text_of(last_user(&r.body)).contains(needle.as_str()))
            .unwrap_or_else(|| panic!("{needle} never reached the agent"));
        in_session.push(r.received_at.duration_since(*instant));
        let ack = t
            .board
            .wait_for("the message's ack", |e| {
                e.kind == EventKind::MessageAcked && e.message == Some(*id)
            })
            .await;
        acked.push(Duration::from_millis(
            (ack.at - epoch_ms(*wall)).max(0) as u64
        ));
    }
    eprintln!(
        "message → busy claude agent ({SENDS} sends, tools of 0.4 s): in the session's next request p50 {:?} p95 {:?}; acked p50 {:?} p95 {:?}",
        quantile(&mut in_session, 0.5),
        quantile(&mut in_session, 0.95),
        quantile(&mut acked, 0.5),
        quantile(&mut acked, 0.95),
    );
    drop(alice);
    t.board.stop().await;
}

/// What the mock saw of one runtime: model calls, request bytes, and the input
/// tokens its prompt-cache simulation counted (fresh + cached).
fn sent(requests: &[&RecordedRequest]) -> (usize, usize, u64) {
    let bytes = requests.iter().map(|r| r.body.to_string().len()).sum();
    let tokens = requests
        .iter()
        .map(|r| {
            let u = &r.answered_usage;
            [
                "input_tokens",
                "cache_read_input_tokens",
                "cache_creation_input_tokens",
            ]
            .iter()
            .map(|k| u[*k].as_u64().unwrap_or(0))
            .sum::<u64>()
        })
        .sum();
    (requests.len(), bytes, tokens)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement: run with --ignored --nocapture"]
async fn task_cost_against_the_native_runtime() {
    let Some(claude) = agent_cli(Cli::Claude) else {
        return;
    };
    const TASKS: usize = 5;
    let mut t = ClaudeBoard::start(claude).await;
    t.mock.simulate_prompt_cache();
    // One bash call and a final answer, in each runtime's terms.
    t.mock.set_responder(|req| {
        let last = last_user(&req.body);
        let results = tool_results(last);
        let claude = req.header("x-claude-code-session-id").is_some();
        Some(if claude {
            if result_of(&results, "toolu_c_bash").is_some() {
                say("FINAL")
            } else {
                bash("toolu_c_bash", "echo hi")
            }
        } else if result_of(&results, "toolu_n_done").is_some() {
            say("Done.")
        } else if result_of(&results, "toolu_n_bash").is_some() {
            call("toolu_n_done", "complete_task", json!({"result": "FINAL"}))
        } else {
            call("toolu_n_bash", "bash", json!({"command": "echo hi"}))
        })
    });
    let url = t.mock.url();
    let native = t.board.spawn_with_env(
        "nat",
        "native",
        &["--provider", "anthropic", "--base-url", &url],
        &[("ANTHROPIC_API_KEY", "test")],
    );
    let agent = t.spawn_with("cc", "claude", "cc", &[]);
    // The same with Claude Code's built-in tools cut to four.
    let lean = t.spawn_with(
        "lean",
        "claude-lean",
        "lean",
        &["--agent-arg=--tools", "--agent-arg=Bash,Read,Edit,Write"],
    );
    for name in ["nat", "cc", "lean"] {
        t.board.wait_idle(name).await;
    }
    let mut report = Vec::new();
    for role in ["native", "claude", "claude-lean"] {
        let before = t.mock.calls();
        let mut walls = Vec::new();
        for i in 0..TASKS {
            let started = Instant::now();
            let task = t
                .board
                .lead
                .add_task(NewTask {
                    subject: format!("{role} task {i}"),
                    description: "FIG-TASK: run echo hi, then report".into(),
                    role: Some(role.into()),
                    ..NewTask::default()
                })
                .await
                .expect("add_task");
            t.board.wait_done(&[task.id]).await;
            walls.push(started.elapsed());
            let done = t.board.task(task.id).await;
            assert_eq!(done.status, TaskStatus::Completed, "{done:#?}");
            assert_eq!(done.result.as_deref(), Some("FINAL"));
        }
        let requests = t.mock.requests();
        let mine: Vec<&RecordedRequest> = requests[before..].iter().collect();
        let (calls, bytes, tokens) = sent(&mine);
        report.push(format!(
            "{role}: wall per task p50 {:?} (max {:?}); per task {} model calls, {} KB sent, ~{} input tokens",
            quantile(&mut walls, 0.5),
            walls.iter().max().copied().unwrap_or_default(),
            calls / TASKS,
            bytes / TASKS / 1024,
            tokens / TASKS as u64,
        ));
    }
    eprintln!("{}", report.join("\n"));
    drop(native);
    drop(agent);
    drop(lean);
    t.board.stop().await;
}
