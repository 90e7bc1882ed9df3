//! The real Claude Code as a person's own session on the board: `claude -p` with
//! `teamctl mcp --name me` in its MCP configuration, against the mock LLM,
//! offline. The scripted model takes task 1 with `get_task {claim: true}` and
//! completes it; the board shows it completed by `me`, and the model was handed
//! the tool's JSON.

use crate::{Cli, TEAMCTL};
use serde_json::{Value, json};
use std::process::{Command, Stdio};
use teamboard_testkit::agents::{self, agent_cli};
use teamboard_testkit::mock_llm::{MockLlm, MockReply};

#[test]
fn claude_code_takes_and_completes_a_task_through_the_board_tools() {
    let Some(claude) = agent_cli(agents::Cli::Claude) else {
        return;
    };
    let d = Cli::start();
    d.ok(&["task", "add", "Write the parser", "-d", "in src/parse.rs"]);
    let mock = d.block_on(async {
        MockLlm::start_with_fallback(
            vec![
                MockReply::anthropic_tool_use(
                    "toolu_1",
                    "mcp__teamboard__get_task",
                    json!({"id": 1, "claim": true}),
                ),
                MockReply::anthropic_tool_use(
                    "toolu_2",
                    "mcp__teamboard__complete_task",
                    json!({"result": "parser written in src/parse.rs"}),
                ),
            ],
            MockReply::anthropic_text("Task 1 is completed."),
        )
    });
    let home = teamboard_testkit::short_tempdir();
    let mcp = json!({"mcpServers": {"teamboard": {
        "type": "stdio",
        "command": TEAMCTL,
        "args": ["--socket", d.socket, "mcp", "--name", "me"],
        "env": {"TEAMBOARD_LEAD_KEY": teamboard_testkit::lead_key_path(&d.socket)},
    }}});
    let out = Command::new(&claude)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home.path())
        .env("CLAUDE_CONFIG_DIR", home.path().join(".claude"))
        .env("ANTHROPIC_BASE_URL", mock.url())
        .env("ANTHROPIC_API_KEY", "test")
        .envs([
            ("DISABLE_TELEMETRY", "1"),
            ("DISABLE_AUTOUPDATER", "1"),
            ("DISABLE_ERROR_REPORTING", "1"),
            ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
            ("DISABLE_BUG_COMMAND", "1"),
            ("DO_NOT_TRACK", "1"),
            ("CLAUDE_CODE_MAX_RETRIES", "0"),
            // MCP tools are otherwise deferred behind a tool search, and a
            // scripted model cannot search.
            ("ENABLE_TOOL_SEARCH", "false"),
        ])
        .current_dir(home.path())
        .args(["-p", "Take task 1 from the board and complete it."])
        .args(["--output-format", "json", "--max-turns", "5"])
        .args(["--strict-mcp-config", "--mcp-config", &mcp.to_string()])
        .args(["--allowedTools", "mcp__teamboard"])
        .stdin(Stdio::null())
        .output()
        .expect("claude runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let answer: Value = serde_json::from_str(stdout.trim()).expect("claude's JSON result");
    assert_eq!(answer["result"], "Task 1 is completed.", "{answer}");

    let task = d.json(&["task", "show", "1"]);
    assert_eq!(task["status"], "completed", "{task}");
    assert_eq!(task["owner"], "me");
    assert_eq!(task["result"], "parser written in src/parse.rs");

    // The model was offered the seven tools, and handed get_task's JSON.
    let calls = mock.requests();
    let offered: Vec<&str> = calls[0].body["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .filter(|n| n.starts_with("mcp__teamboard__"))
        .collect();
    assert_eq!(offered.len(), 7, "{offered:?}");
    // Claude Code hands the model `structuredContent` when a result has it (as
    // compact JSON): the task, claimed by `me`.
    let handed = calls[1].body["messages"]
        .as_array()
        .and_then(|m| m.last())
        .and_then(|m| m["content"].as_array())
        .and_then(|blocks| blocks.iter().find(|b| b["type"] == "tool_result"))
        .and_then(|b| b["content"].as_str())
        .unwrap_or_else(|| panic!("a tool result: {}", calls[1].body));
    let handed: Value = serde_json::from_str(handed).expect("the tool's JSON");
    assert_eq!(
        (handed["id"].clone(), handed["owner"].clone()),
        (json!(1), json!("me")),
        "{handed}"
    );
}
