//! A frugal team, end to end: `teamctl spawn` starts a real `teammated` on the
//! anthropic or openai provider against the mock LLM server, which simulates prompt
//! caching. Each task starts from a fresh context unless `--carry-context`, and the
//! cached input the provider reports reaches the roster and the task.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "test code: a panic fails the test, and the harness captures what it prints"
)]

use serde_json::{Value, json};
use std::path::Path;
use teamboard_protocol::TaskStatus;
use teamboard_protocol::request::NewTask;
use teamboard_testkit::mock_llm::{MockLlm, MockReply};
use teamboard_testkit::{
    Daemon, PATIENCE, Teamctl, alive, eventually, lead, short_tempdir, workspace_bin,
};

fn teamctl(socket: &Path, state: &Path) -> Teamctl {
    Teamctl::new(workspace_bin("teamctl"), socket).with_state_dir(state)
}

/// One small task as the mock plays it: a `bash` call, then the final answer.
fn task_replies(n: usize, anthropic: bool) -> Vec<MockReply> {
    let command = format!("echo part-{n} > part-{n}.txt");
    if anthropic {
        vec![
            MockReply::anthropic_tool_use(
                &format!("toolu_{n}"),
                "bash",
                json!({ "command": command }),
            ),
            MockReply::anthropic_text(&format!("Wrote part-{n}.txt.")),
        ]
    } else {
        vec![
            MockReply::openai_tool_call(
                &format!("call_{n}"),
                "bash",
                &json!({ "command": command }).to_string(),
            ),
            MockReply::openai_text(&format!("Wrote part-{n}.txt.")),
        ]
    }
}

/// Runs two tasks, one after the other, through one teammate spawned with
/// `spawn_args`, and returns the mock (with its recorded requests), the member
/// and the two tasks as `teamctl --json` shows them, and the text of `teamctl team`
/// and `teamctl task show` for the second task.
async fn two_tasks(anthropic: bool, spawn_args: &[&str]) -> (MockLlm, Value, Vec<Value>, String) {
    let dir = short_tempdir();
    let (socket, state) = (dir.path().join("s"), dir.path().join("state"));
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let _daemon = Daemon::start(&socket, &state, &[]).await;
    let mut replies = task_replies(1, anthropic);
    replies.extend(task_replies(2, anthropic));
    let mock = MockLlm::start(replies);
    mock.simulate_prompt_cache();
    let url = mock.url();
    let teamctl = teamctl(&socket, &state);
    let provider = if anthropic { "anthropic" } else { "openai" };
    let out = teamctl
        .command()
        .env("ANTHROPIC_API_KEY", "sk-test")
        .env_remove("OPENAI_API_KEY")
        .args(["spawn", "alice", "--role", "dev", "--json"])
        .args(["--provider", provider, "--base-url", &url])
        .arg("--workdir")
        .arg(&work)
        .args(spawn_args)
        .output()
        .expect("teamctl runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let spawned: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let pid = spawned["pid"].as_u64().expect("pid") as u32;
    let boss = lead(&socket).await;
    // One at a time: the second task is taken only after the first is done.
    let mut ids = Vec::new();
    for n in 1..=2 {
        let t = boss
            .add_task(NewTask {
                subject: format!("part {n}"),
                description: format!("Write part-{n}.txt."),
                ..NewTask::default()
            })
            .await
            .unwrap();
        eventually(format!("task #{} to complete", t.id), PATIENCE, || async {
            let t = boss.get_task(t.id).await.ok()?.task;
            (t.status == TaskStatus::Completed).then_some(())
        })
        .await;
        ids.push(t.id);
    }
    let member = eventually("alice to be idle again", PATIENCE, || async {
        let team = teamctl.json(&["team"]);
        let alice = team.as_array()?.first()?.clone();
        (alice["status"] == "idle").then_some(alice)
    })
    .await;
    let tasks = ids
        .iter()
        .map(|id| teamctl.json(&["task", "show", &id.to_string()]))
        .collect();
    let text = teamctl.ok(&["team"]) + &teamctl.ok(&["task", "show", &ids[1].to_string()]);
    // SAFETY: kill(2) has no memory-safety preconditions.
    unsafe { libc::kill(pid as i32, libc::SIGTERM) };
    eventually("alice to exit", PATIENCE, || async {
        (!alive(pid)).then_some(())
    })
    .await;
    assert_eq!(mock.requests().len(), 4, "two calls per task");
    (mock, member, tasks, text)
}

/// The sum of a usage field over every answer the mock sent.
fn answered(mock: &MockLlm, field: &str) -> u64 {
    mock.requests()
        .iter()
        .map(|r| r.answered_usage[field].as_u64().unwrap_or(0))
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_task_starts_afresh_and_cached_input_reaches_the_roster() {
    let (mock, member, tasks, text) = two_tasks(true, &[]).await;
    let requests = mock.requests();
    // The second task's first call carries none of the first task's conversation:
    // one user turn with the task, after the system prompt and the tools.
    let first_of_second = &requests[2].body;
    let messages = first_of_second["messages"].as_array().expect("messages");
    assert_eq!(messages.len(), 1, "{first_of_second:#}");
    let seen = first_of_second.to_string();
    assert!(seen.contains("[Auto-claimed task #2] part 2"), "{seen}");
    for old in ["part 1", "part-1", "toolu_1"] {
        assert!(!seen.contains(old), "{old} carried over: {seen}");
    }
    // The stable prefix and the tail are marked for caching.
    assert_eq!(
        first_of_second["system"][0]["cache_control"]["type"],
        "ephemeral"
    );
    let tools = first_of_second["tools"].as_array().expect("tools");
    assert_eq!(tools.last().unwrap()["cache_control"]["type"], "ephemeral");
    assert_eq!(
        messages[0]["content"][0]["cache_control"]["type"],
        "ephemeral"
    );
    // The mock served the tools and the system prompt from its cache on every
    // call after the first, and the teammate recorded fresh, read and written
    // input apart: on the member, exactly what the answers said.
    let usage = |r: usize, f: &str| requests[r].answered_usage[f].as_u64().unwrap_or(0);
    assert_eq!(usage(0, "cache_read_input_tokens"), 0);
    for (r, request) in requests.iter().enumerate().skip(1) {
        assert!(
            usage(r, "cache_read_input_tokens") > 1000,
            "{:#}",
            request.answered_usage
        );
    }
    let tokens = &member["tokens"];
    assert_eq!(
        tokens["cache_read"].as_u64(),
        Some(answered(&mock, "cache_read_input_tokens")),
        "{member:#}"
    );
    assert_eq!(
        tokens["cache_write"].as_u64(),
        Some(answered(&mock, "cache_creation_input_tokens"))
    );
    assert_eq!(
        tokens["input"].as_u64(),
        Some(answered(&mock, "input_tokens"))
    );
    assert!(tokens["cache_read"].as_u64() > tokens["input"].as_u64());
    // The task's share: its first call already reads the shared prefix.
    let second = &tasks[1]["tokens"];
    assert!(
        second["cache_read"].as_u64().unwrap_or(0) > 1000,
        "{second}"
    );
    // Both texts show cached input apart from fresh input.
    assert_eq!(text.matches(" cached, ").count(), 2, "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn carry_context_runs_the_conversation_on_and_openai_reports_cached_tokens() {
    let (mock, member, _, _) = two_tasks(false, &["--carry-context"]).await;
    let requests = mock.requests();
    let first_of_second = requests[2].body.to_string();
    assert!(
        first_of_second.contains("[Auto-claimed task #1] part 1")
            && first_of_second.contains("call_1")
            && first_of_second.contains("[Auto-claimed task #2] part 2"),
        "{first_of_second}"
    );
    // OpenAI caches on its own: the calls after the first share their prefix
    // with an earlier one, and prompt_tokens counted the cached part too.
    let cached =
        answered(&mock, "prompt_tokens") - member["tokens"]["input"].as_u64().expect("input");
    assert!(cached > 0, "{member:#}");
    assert_eq!(member["tokens"]["cache_read"].as_u64(), Some(cached));
    assert_eq!(member["tokens"]["cache_write"].as_u64(), Some(0));
}
