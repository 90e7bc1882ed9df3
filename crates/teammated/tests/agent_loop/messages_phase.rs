//! A teammate that holds no task and talks with its agent about messages does
//! not take a task in the middle of it: the agent's answer is not cut short,
//! and the task starts afterwards, normally.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_that_becomes_ready_while_the_agent_answers_messages_waits_for_the_answer() {
    let mut board = Board::start(TEAMMATED).await;
    let _alice = spawn(&board, "alice", &[]);
    board.wait_idle("alice").await;
    let answered = board.dir().join("answered.txt");
    // The lead asks for a follow-up task. The agent files it through the
    // board's MCP server, so it is ready while the agent still works on its
    // answer, and then finishes the answer.
    let call = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "create_task", "arguments": {
            "subject": "follow-up", "description": "ANSWER: follow-up done"}}});
    let teamctl = workspace_bin("teamctl").display().to_string();
    let text = format!(
        "please file a follow-up\n\
         RUN: printf '%s\\n' '{call}' | {teamctl} mcp --name alice\n\
         SLEEP: 1\n\
         RUN: echo answered > {}\n\
         ANSWER: filed it",
        answered.display()
    );
    let sent = board
        .lead
        .send("alice", MessageKind::Message, &text, None)
        .await
        .expect("send");
    let follow_up = eventually("the follow-up on the board", PATIENCE, || async {
        board
            .lead
            .list_tasks(None)
            .await
            .ok()?
            .into_iter()
            .find(|t| t.subject == "follow-up")
    })
    .await;
    board.wait_done(&[follow_up.id]).await;
    let done = board.task(follow_up.id).await;
    assert_eq!(done.status, TaskStatus::Completed, "{done:#?}");
    assert_eq!(done.result.as_deref(), Some("follow-up done"));
    assert_eq!(done.owner.as_deref(), Some("alice"));
    // The answer to the messages was finished, before the task was taken.
    let transcript = board.transcript("alice");
    assert!(
        answered.exists(),
        "the agent's answer to the message was cut short:\n{transcript}"
    );
    let entries: Vec<Value> = transcript
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let answer = entries
        .iter()
        .position(|e| e["text"] == "filed it")
        .expect("the agent's answer in the transcript");
    let task = entries
        .iter()
        .position(|e| e["task"] == follow_up.id)
        .expect("the follow-up in the transcript");
    assert!(answer < task, "{transcript}");
    // The message was taken once, and acknowledged.
    board
        .wait_for("the message acknowledged", |e| {
            e.kind == EventKind::MessageAcked && e.message == Some(sent.id)
        })
        .await;
    let taken = prompts(&board)
        .iter()
        .filter(|p| p.contains("please file a follow-up"))
        .count();
    assert_eq!(taken, 1, "{:#?}", prompts(&board));
}
