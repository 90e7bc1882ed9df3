//! What the codex runtime costs per task against the native one, on the same
//! mock and the same work (one shell command, then the answer): wall time from
//! the task's creation to its completion, model calls, and the prompt tokens
//! the mock received (estimated by the mock's prompt-cache simulation, the same
//! estimate for both). A measurement, not a check: run it with
//! `cargo test -p teammated --test runtime_codex -- --ignored --nocapture`.

use crate::harness::{CodexHome, TEAMMATED, exec};
use serde_json::json;
use std::time::{Duration, Instant};
use teamboard_protocol::TaskStatus;
use teamboard_testkit::Board;
use teamboard_testkit::agents::{Cli, agent_cli};
use teamboard_testkit::mock_llm::responses::function_call_output;
use teamboard_testkit::mock_llm::{MockLlm, MockReply};

const TASKS: usize = 5;

struct Figures {
    wall: Duration,
    calls: usize,
    prompt_tokens: u64,
    request_bytes: usize,
}

impl std::fmt::Display for Figures {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = TASKS as u32;
        write!(
            f,
            "{:?} per task, {:.1} model calls, {} prompt tokens, {} request bytes",
            self.wall / n,
            self.calls as f64 / TASKS as f64,
            self.prompt_tokens / TASKS as u64,
            self.request_bytes / TASKS
        )
    }
}

/// Runs [`TASKS`] tasks one after the other on teammate `alice`.
async fn run(board: &mut Board, mock: &MockLlm, alice_log: impl Fn() -> String) -> Figures {
    let mut wall = Duration::ZERO;
    for i in 0..TASKS {
        let started = Instant::now();
        let t = board
            .add(&format!("proof {i}"), "Write proof.txt.", &[])
            .await;
        board.wait_done(&[t.id]).await;
        wall += started.elapsed();
        assert_eq!(
            board.task(t.id).await.status,
            TaskStatus::Completed,
            "{}",
            alice_log()
        );
    }
    let requests = mock.requests();
    let prompt_tokens = requests
        .iter()
        .map(|r| {
            let u = &r.answered_usage;
            u["input_tokens"]
                .as_u64()
                .or_else(|| u["prompt_tokens"].as_u64())
                .unwrap_or(0)
        })
        .sum();
    Figures {
        wall,
        calls: requests.len(),
        prompt_tokens,
        request_bytes: requests.iter().map(|r| r.body.to_string().len()).sum(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement: run with --ignored --nocapture"]
async fn codex_against_native_on_the_same_mock() {
    let Some(program) = agent_cli(Cli::Codex) else {
        return;
    };
    let codex = CodexHome::new(program);
    codex.mock.simulate_prompt_cache();
    codex.mock.set_responder(|req| {
        if function_call_output(&req.body).is_some() {
            return Some(MockReply::responses_text("Wrote proof.txt."));
        }
        Some(exec("call_1", "echo proof > proof.txt && cat proof.txt"))
    });
    let mut board = Board::start(TEAMMATED).await;
    let alice = codex.spawn(&board, "alice", &[]);
    let with_codex = run(&mut board, &codex.mock, || alice.log_text()).await;
    drop(alice);
    board.stop().await;

    let mock = MockLlm::start(vec![]);
    mock.simulate_prompt_cache();
    mock.set_responder(|req| {
        let last = req.body["messages"].as_array()?.last()?.clone();
        let reply = match (last["role"].as_str(), last["tool_call_id"].as_str()) {
            (Some("tool"), Some("call_bash")) => MockReply::openai_tool_call(
                "call_done",
                "complete_task",
                &json!({"result": "Wrote proof.txt."}).to_string(),
            ),
            (Some("tool"), _) => MockReply::openai_text("Finished."),
            _ => MockReply::openai_tool_call(
                "call_bash",
                "bash",
                &json!({"command": "echo proof > proof.txt && cat proof.txt"}).to_string(),
            ),
        };
        Some(reply)
    });
    let mut board = Board::start(TEAMMATED).await;
    let url = mock.url();
    let alice = board.spawn(
        "alice",
        "dev",
        &["--provider", "openai", "--base-url", &url],
    );
    let native = run(&mut board, &mock, || alice.log_text()).await;
    drop(alice);
    board.stop().await;

    eprintln!("codex : {with_codex}");
    eprintln!("native: {native}");
}
