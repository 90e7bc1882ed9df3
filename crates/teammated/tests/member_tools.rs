//! The board's tools in an agent's hands, end to end: a real teammated with the
//! kit's `fake-acp-agent` as its agent, whose script runs the real `teamctl`
//! twins and `teamctl mcp` as shell commands, as an agent would. They find the
//! teammate through `TEAMBOARD_MEMBER_SOCKET` in the agent's environment, and the
//! task ends by the teammate's claim, with the agent's result.
//!
//! What the command prints is not checked here: the teammate stops the agent, and
//! everything it started, as soon as the task has ended, which may be before the
//! command wrote its answer. The JSON of each tool and twin is checked in
//! teammated's `member` tests and teamctl's `mcp` tests.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "test code: a panic fails the test, and the harness captures what it prints"
)]

use teamboard_protocol::{MessageKind, TaskStatus};
use teamboard_testkit::{Board, PATIENCE, Teammate, eventually, workspace_bin};

const TEAMMATED: &str = env!("CARGO_BIN_EXE_teammated");

/// `teammated --runtime acp --agent-cmd fake-acp-agent` as `name`.
fn spawn(board: &Board, name: &str) -> Teammate {
    let agent = workspace_bin("fake-acp-agent").display().to_string();
    let home = board.dir().join("fake-acp");
    std::fs::create_dir_all(&home).expect("fake home");
    let home = home.display().to_string();
    board.spawn_with_env(
        name,
        "dev",
        &["--runtime", "acp", "--agent-cmd", agent.as_str()],
        &[("FAKE_ACP_HOME", home.as_str())],
    )
}

fn teamctl() -> String {
    workspace_bin("teamctl").display().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_ends_its_task_itself_with_the_teamctl_twin() {
    let mut board = Board::start(TEAMMATED).await;
    let _alice = spawn(&board, "alice");
    let script = format!(
        "RUN: {} task complete 1 --result 'done by the twin'\nANSWER: not this one",
        teamctl()
    );
    let t = board.add("finish through the twin", &script, &[]).await;
    assert_eq!(t.id, 1);
    board.wait_done(&[t.id]).await;
    let done = board.task(t.id).await;
    assert_eq!(done.status, TaskStatus::Completed, "{done:#?}");
    assert_eq!(done.result.as_deref(), Some("done by the twin"));
    assert_eq!(done.owner.as_deref(), Some("alice"));
    // The teammate reports it to the lead, as an answer of its own.
    let lead = &board.lead;
    eventually("the result for the lead", PATIENCE, || async move {
        let inbox = lead.inbox().await.expect("inbox");
        inbox
            .iter()
            .any(|m| m.kind == MessageKind::Result && m.content.contains("done by the twin"))
            .then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_ends_its_task_itself_through_the_boards_mcp_server() {
    let mut board = Board::start(TEAMMATED).await;
    let _alice = spawn(&board, "alice");
    let call = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"complete_task","arguments":{"result":"done over MCP"}}}"#;
    let script = format!(
        "RUN: printf '%s\\n' '{call}' | {} mcp --name alice\nANSWER: not this one",
        teamctl()
    );
    let t = board.add("finish over MCP", &script, &[]).await;
    board.wait_done(&[t.id]).await;
    let done = board.task(t.id).await;
    assert_eq!(done.status, TaskStatus::Completed, "{done:#?}");
    assert_eq!(done.result.as_deref(), Some("done over MCP"));
    let board = &board;
    eventually("the call in alice's transcript", PATIENCE, || async move {
        board
            .transcript("alice")
            .contains("\"complete_task\"")
            .then_some(())
    })
    .await;
}
