//! The same bad call of a board tool gets the same words from each front end
//! that offers a model the board: teammated's native loop and the lead (both
//! through the mock LLM, as a model's tool call), and the board's MCP server
//! (`teamctl mcp`, as an MCP client's `tools/call`).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "test code: a panic fails the test, and the harness captures what it prints"
)]

use serde_json::{Value, json};
use std::io::{BufRead as _, BufReader, Write as _};
use std::process::{Command, Stdio};
use std::time::Duration;
use teamboard_protocol::TaskStatus;
use teamboard_testkit::mock_llm::{self, MockLlm, MockReply};
use teamboard_testkit::{Board, InProc, PATIENCE, workspace_bin};
use teammated::backoff::RetryPolicy;
use teammated::config::{ProviderConfig, ProviderKind};
use teammated::lead::{LeadConfig, SpawnConfig};
use tokio_util::sync::CancellationToken;

const TEAMMATED: &str = env!("CARGO_BIN_EXE_teammated");

/// Calls of tools all three front ends offer, each wrong in its own way.
fn bad_calls() -> Vec<(&'static str, Value)> {
    vec![
        ("get_task", json!({"id": "three"})),
        ("get_task", json!({})),
        ("list_tasks", json!({"status": "done"})),
        ("list_tasks", json!({"state": "pending"})),
        ("create_task", json!({"subject": "x", "checks": [1]})),
        ("create_task", json!({"subject": "  "})),
        (
            "create_task",
            json!({"subject": "x", "blocked_by": ["first"]}),
        ),
    ]
}

/// One model turn that makes every bad call.
fn the_bad_calls() -> MockReply {
    let uses: Vec<Value> = bad_calls()
        .into_iter()
        .enumerate()
        .map(|(i, (name, input))| {
            json!({"type": "tool_use", "id": format!("toolu_{i}"), "name": name, "input": input})
        })
        .collect();
    MockReply::json(
        200,
        mock_llm::anthropic_message(Value::Array(uses), "tool_use", mock_llm::TOOL_USAGE),
    )
}

/// What the model was told of each bad call: the tool results in the request
/// that came after the turn that made them, in the calls' order.
fn told(mock: &MockLlm) -> Vec<String> {
    let requests = mock.requests();
    let results: Vec<(String, String, bool)> = requests
        .iter()
        .flat_map(|r| r.body["messages"].as_array().cloned().unwrap_or_default())
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .filter(|b| b["type"] == "tool_result")
        .map(|b| {
            let text = match &b["content"] {
                Value::String(s) => s.clone(),
                other => other[0]["text"].as_str().unwrap_or_default().to_string(),
            };
            (
                b["tool_use_id"].as_str().unwrap_or_default().to_string(),
                text,
                b["is_error"] == true,
            )
        })
        .collect();
    (0..bad_calls().len())
        .map(|i| {
            let id = format!("toolu_{i}");
            let (_, text, is_error) = results
                .iter()
                .find(|(of, ..)| *of == id)
                .unwrap_or_else(|| panic!("no result for {id} in {requests:#?}"));
            assert!(is_error, "{id}: {text}");
            text.clone()
        })
        .collect()
}

fn provider(url: String) -> ProviderConfig {
    ProviderConfig {
        kind: ProviderKind::Anthropic,
        model: Some("mock-model".into()),
        base_url: Some(url),
        api_key: Some("sk-test".into()),
        max_tokens: 1024,
        max_tokens_field: None,
        request_timeout: Duration::from_secs(10),
        retry: RetryPolicy::default(),
        account: Default::default(),
    }
}

async fn the_native_loop() -> Vec<String> {
    let mut board = Board::start(TEAMMATED).await;
    let mock = MockLlm::start(vec![the_bad_calls(), MockReply::anthropic_text("Done.")]);
    let url = mock.url();
    let alice = board.spawn_with_env(
        "alice",
        "dev",
        &["--provider", "anthropic", "--base-url", &url],
        &[("ANTHROPIC_API_KEY", "k")],
    );
    let t = board
        .add("make bad calls", "Call the board wrongly.", &[])
        .await;
    board.wait_done(&[t.id]).await;
    assert_eq!(
        board.task(t.id).await.status,
        TaskStatus::Completed,
        "{}",
        alice.log_text()
    );
    let told = told(&mock);
    drop(alice);
    board.stop().await;
    told
}

/// The lead makes the calls in the turn after "start", where it may change the board.
async fn the_lead() -> Vec<String> {
    let daemon = InProc::start().await;
    let mock = MockLlm::start_with_fallback(
        vec![
            MockReply::anthropic_text("The plan: nothing."),
            the_bad_calls(),
        ],
        MockReply::anthropic_text("Nothing more to do."),
    );
    let work = daemon.dir().join("work");
    std::fs::create_dir_all(&work).expect("workdir");
    let cfg = LeadConfig {
        team: teamboard_testkit::TEAM.to_string(),
        socket: daemon.socket.clone(),
        remote: None,
        state_dir: daemon.dir().join("state"),
        state_dir_given: true,
        provider: provider(mock.url()),
        spawn: SpawnConfig {
            teamctl: workspace_bin("teamctl"),
            provider: Some("scripted".into()),
            model: None,
            base_url: None,
            workdir: work,
            idle_timeout: Some(0),
            runtime: None,
            sandbox: None,
            no_network: false,
        },
        goal: Some("Make bad calls.".into()),
        yes: true,
        give_up_after: None,
        max_rounds: 10,
        context_budget: 100_000,
        review_plans: Default::default(),
        new_team: false,
    };
    let ran = tokio::time::timeout(
        PATIENCE,
        teammated::lead::run(cfg, tokio::io::empty(), false, CancellationToken::new()),
    )
    .await
    .expect("the lead finishes in time");
    ran.expect("the lead runs");
    told(&mock)
}

/// `teamctl mcp` for a person's own session, one `tools/call` per bad call.
async fn the_mcp_server() -> Vec<String> {
    let daemon = InProc::start().await;
    let socket = daemon.socket.clone();
    tokio::task::spawn_blocking(move || {
        let (key_var, key) = teamboard_testkit::lead_key_env(&socket);
        let mut child = Command::new(workspace_bin("teamctl"))
            .arg("--socket")
            .arg(&socket)
            .args(["mcp", "--name", "me"])
            .env(key_var, key)
            .env_remove("TEAMBOARD_SOCKET")
            .env_remove("TEAMBOARD_TEAM")
            .env_remove("TEAMBOARD_MEMBER_SOCKET")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("teamctl mcp starts");
        let mut stdin = child.stdin.take().expect("stdin");
        let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let mut send = move |msg: Value| {
            writeln!(stdin, "{msg}").expect("written");
            stdin.flush().expect("flushed");
        };
        let mut answer = |id: usize| -> Value {
            let line = lines.next().expect("an answer").expect("a line");
            let answer: Value = serde_json::from_str(&line).expect("JSON");
            assert_eq!(answer["id"], id, "{answer}");
            answer["result"].clone()
        };
        send(
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "test", "version": "0"},
            }}),
        );
        answer(0);
        send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        let told: Vec<String> = bad_calls()
            .into_iter()
            .enumerate()
            .map(|(i, (name, arguments))| {
                let id = i + 1;
                send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                    "params": {"name": name, "arguments": arguments}}));
                let result = answer(id);
                assert_eq!(result["isError"], true, "{name}: {result}");
                result["content"][0]["text"]
                    .as_str()
                    .expect("a text")
                    .to_string()
            })
            .collect();
        drop(send);
        let _ = child.wait();
        told
    })
    .await
    .expect("the MCP client ran")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_bad_call_gets_the_same_words_from_every_front_end() {
    let native = the_native_loop().await;
    let lead = the_lead().await;
    let mcp = the_mcp_server().await;
    for (i, (tool, args)) in bad_calls().into_iter().enumerate() {
        assert_eq!(native[i], mcp[i], "{tool} {args}: native loop and MCP");
        assert_eq!(lead[i], mcp[i], "{tool} {args}: lead and MCP");
    }
    assert!(
        mcp[0].contains("'id' of get_task must be a task id"),
        "{}",
        mcp[0]
    );
}
