//! An agent that hangs while it starts does not hold the teammate: a stop
//! during the start-up ends the agent and the teammate at once. An agent that
//! dies while it starts gives the task back with its last stderr lines.

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_that_dies_while_it_starts_gives_the_task_back_with_its_stderr() {
    let mut board = Board::start(TEAMMATED).await;
    let agent = workspace_bin("fake-acp-agent").display().to_string();
    let home = fake_home(&board).display().to_string();
    let why = "fatal: START-FAILURE-LINE-ONE\nhint: START-FAILURE-LINE-TWO";
    let alice = board.spawn_with_env(
        "alice",
        "dev",
        &["--runtime", "acp", "--agent-cmd", agent.as_str()],
        &[
            ("FAKE_ACP_HOME", home.as_str()),
            ("FAKE_ACP_FAIL_START", why),
        ],
    );
    let t = board.add("anything", "ANSWER: never", &[]).await;
    board.wait_claimed(t.id).await;
    board
        .wait_for("the task given back", |e| {
            e.kind == EventKind::TaskReleased && e.task == Some(t.id)
        })
        .await;
    // The reason goes into the task's history; it says nothing of how far
    // the task got, so it is no note for the next owner.
    let task = board.task(t.id).await;
    assert_eq!(task.handoff, None, "{task:#?}");
    let history = board.lead.get_task(t.id).await.expect("get_task").history;
    let released = history
        .iter()
        .rev()
        .find(|e| e.kind == EventKind::TaskReleased)
        .expect("a release in the history");
    let error = &released.detail;
    assert!(
        error.contains("could not start")
            && error.contains("exit code 4")
            && error.ends_with(
                "its last stderr lines:\nfatal: START-FAILURE-LINE-ONE\nhint: START-FAILURE-LINE-TWO"
            ),
        "{task:#?}\n{}",
        alice.log_text()
    );
    // Not the task's fault: no attempt used.
    assert_eq!(task.attempts, 0, "{task:#?}");
    // The lead hears of it just after the task goes back (settle releases
    // first), so its inbox is waited for, not read once.
    let lead = &board.lead;
    eventually(
        "the lead's error message with the stderr",
        PATIENCE,
        || async {
            let inbox = lead.inbox().await.expect("inbox");
            inbox
                .iter()
                .any(|m| {
                    m.kind == MessageKind::Error && m.content.contains("START-FAILURE-LINE-TWO")
                })
                .then_some(())
        },
    )
    .await;
}
