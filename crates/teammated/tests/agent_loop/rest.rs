//! After agent failures the teammate rests before it takes more work, and
//! only until the agent works again.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_success_the_next_ready_task_is_taken_without_resting() {
    let mut board = Board::start(TEAMMATED).await;
    let _alice = spawn(&board, "alice", &[]);
    let crash = board.add("crash", "CRASH", &[]).await;
    board.wait_done(&[crash.id]).await;
    board.wait_idle("alice").await;
    let one = board.add("one", "ANSWER: one", &[]).await;
    let two = board.add("two", "ANSWER: two", &[one.id]).await;
    board.wait_done(&[one.id, two.id]).await;
    let transcript = board.transcript("alice");
    let entries: Vec<Value> = transcript
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let last_of_one = entries
        .iter()
        .rposition(|e| e["task"] == one.id)
        .expect("task one in the transcript");
    let first_of_two = entries
        .iter()
        .position(|e| e["task"] == two.id)
        .expect("task two in the transcript");
    let rested = entries[last_of_one..first_of_two]
        .iter()
        .any(|e| e["text"].as_str().is_some_and(|t| t.starts_with("idle:")));
    assert!(
        !rested,
        "alice went idle between a task that worked and a ready one:\n{transcript}"
    );
}
