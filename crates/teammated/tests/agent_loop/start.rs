//! An agent that hangs while it starts does not hold the teammate: a stop
//! during the start-up ends the agent and the teammate at once.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_while_the_agent_starts_ends_it_without_waiting_for_the_start() {
    let mut board = Board::start(TEAMMATED).await;
    let marker = format!("tb-hung-start-{}", std::process::id());
    // An "agent" that never answers `initialize`.
    let hung = marked_sleep(board.dir(), &marker);
    let mut alice = board.spawn(
        "alice",
        "dev",
        &[
            "--runtime",
            "acp",
            "--agent-cmd",
            "/bin/sh",
            "--agent-arg=-c",
            &format!("--agent-arg=exec {hung}"),
        ],
    );
    let t = board.add("anything", "ANSWER: never", &[]).await;
    board.wait_claimed(t.id).await;
    // teammated's own command line names the agent too.
    let alice_pid = alice.pid();
    let agent = || {
        marked(&marker)
            .into_iter()
            .filter(|p| *p != alice_pid)
            .count()
    };
    until("the agent runs", || async { agent() > 0 }).await;
    // SAFETY: kill(2) on our own unreaped child.
    unsafe { libc::kill(alice.pid() as i32, libc::SIGTERM) };
    let code = tokio::time::timeout(std::time::Duration::from_secs(20), alice.exit_code())
        .await
        .expect("alice leaves without waiting for her agent's start-up");
    assert_eq!(code, Some(0), "{}", alice.log_text());
    until("the agent is gone", || async { agent() == 0 }).await;
    let task = board.task(t.id).await;
    assert_eq!(task.status, TaskStatus::Pending, "{task:#?}");
}
