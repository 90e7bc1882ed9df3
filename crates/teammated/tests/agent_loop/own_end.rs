//! The agent ends its task itself with `complete_task`: the teammate completes
//! it once the agent's turn has ended, never while the agent may still change
//! the worktree, and a refusal of the completion gate still reaches the agent,
//! which fixes what was wrong and completes again.

use super::*;
use teamboard_protocol::CheckOutcome;
use teamboard_testkit::GitRepo;

/// A board whose team works in a git repository, so that tasks have worktrees
/// and checks.
async fn board_with_repo() -> (Board, GitRepo) {
    let board = Board::start(TEAMMATED).await;
    let repo = board.attach_repo().await;
    (board, repo)
}

async fn add_checked(board: &Board, script: &str, check: &str) -> teamboard_protocol::Task {
    board
        .lead
        .add_task(NewTask {
            subject: "checked".into(),
            description: script.into(),
            checks: vec![check.into()],
            ..NewTask::default()
        })
        .await
        .expect("add")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agents_completion_waits_for_the_end_of_its_turn() {
    let (mut board, repo) = board_with_repo().await;
    let _alice = spawn(&board, "alice", &[]);
    let teamctl = workspace_bin("teamctl").display().to_string();
    // The check holds only once the agent's turn has run to its end: the file
    // is written after the agent called complete_task.
    let script = format!(
        "RUN: {teamctl} task complete 1 --result 'the result given to complete_task'\n\
         RUN: echo late > late.txt\n\
         ANSWER: the turn's last words"
    );
    let t = add_checked(&board, &script, "test -f late.txt").await;
    assert_eq!(t.id, 1);
    board.wait_done(&[t.id]).await;
    let done = board.task(t.id).await;
    let transcript = board.transcript("alice");
    assert_eq!(
        done.status,
        TaskStatus::Completed,
        "{done:#?}\n{transcript}"
    );
    assert_eq!(
        done.result.as_deref(),
        Some("the result given to complete_task"),
        "{transcript}"
    );
    // The gate ran once, after the agent's last write.
    let runs = &done.check_runs;
    assert_eq!(runs.len(), 1, "{runs:#?}\n{transcript}");
    assert_eq!(runs[0].outcome, CheckOutcome::Passed, "{runs:#?}");
    assert_eq!(repo.show("main", "late.txt").as_deref(), Some("late\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_completion_comes_back_to_the_agent_which_fixes_it_and_completes() {
    let (mut board, repo) = board_with_repo().await;
    let _alice = spawn(&board, "alice", &[]);
    let teamctl = workspace_bin("teamctl").display().to_string();
    // The first completion is refused (no `fixed` yet); the agent's next
    // prompt, the refusal, runs the `NEXT:` lines: the fix and a completion.
    let script = format!(
        "RUN: {teamctl} task complete 1 --result 'first try'\n\
         NEXT: RUN: touch fixed\n\
         NEXT: RUN: {teamctl} task complete 1 --result 'second try'\n\
         ANSWER: first turn over"
    );
    let t = add_checked(&board, &script, "test -f fixed").await;
    assert_eq!(t.id, 1);
    board.wait_done(&[t.id]).await;
    let done = board.task(t.id).await;
    let transcript = board.transcript("alice");
    assert_eq!(
        done.status,
        TaskStatus::Completed,
        "{done:#?}\n{transcript}"
    );
    assert_eq!(done.result.as_deref(), Some("second try"), "{transcript}");
    assert_eq!(done.attempts, 1, "the refusal kept the claim: {done:#?}");
    assert_eq!(repo.show("main", "fixed").as_deref(), Some(""));
    // The refusal reached the agent as its next prompt, saying what failed.
    let refusal = prompts(&board)
        .into_iter()
        .find(|p| p.contains("complete_task was refused"))
        .unwrap_or_else(|| panic!("no refusal among {:#?}", prompts(&board)));
    assert!(refusal.contains("test -f fixed"), "{refusal}");
}

/// The agent was told its `complete_task` "completes the task when your turn
/// ends"; a turn that ends in a crash instead still keeps that promise, once
/// the agent is gone. Giving the task back would throw its result away.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_completion_given_before_the_agent_crashed_is_kept() {
    let mut board = Board::start(TEAMMATED).await;
    let alice = spawn(&board, "alice", &[]);
    let teamctl = workspace_bin("teamctl").display().to_string();
    let script = format!("RUN: {teamctl} task complete 1 --result 'done before the crash'\nCRASH");
    let t = board.add("crashes after its result", &script, &[]).await;
    assert_eq!(t.id, 1);
    board.wait_done(&[t.id]).await;
    let done = board.task(t.id).await;
    assert_eq!(
        done.status,
        TaskStatus::Completed,
        "{done:#?}\n{}",
        alice.log_text()
    );
    assert_eq!(done.result.as_deref(), Some("done before the crash"));
    assert_eq!(done.epoch, 1, "completed on its first claim: {done:#?}");
}

/// The same promise holds when a shutdown request ends the phase between the
/// agent's `complete_task` and the end of its turn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_completion_given_before_a_shutdown_request_is_kept() {
    let board = Board::start(TEAMMATED).await;
    let mut alice = spawn(&board, "alice", &[]);
    let teamctl = workspace_bin("teamctl").display().to_string();
    let script = format!(
        "RUN: {teamctl} task complete 1 --result 'done before the shutdown'\nSLEEP: 60\nANSWER: never"
    );
    let t = board.add("long after its result", &script, &[]).await;
    assert_eq!(t.id, 1);
    // The answer to the call: its result is in the prompt too.
    until("the agent's complete_task", || async {
        board
            .transcript("alice")
            .contains("with this result when your turn ends")
    })
    .await;
    board
        .lead
        .request_shutdown(ShutdownArgs {
            to: "alice".into(),
            ..ShutdownArgs::default()
        })
        .await
        .expect("request");
    let code = tokio::time::timeout(PATIENCE, alice.exit_code())
        .await
        .expect("alice leaves");
    assert_eq!(code, Some(0), "{}", alice.log_text());
    let done = board.task(t.id).await;
    assert_eq!(
        done.status,
        TaskStatus::Completed,
        "{done:#?}\n{}",
        board.transcript("alice")
    );
    assert_eq!(done.result.as_deref(), Some("done before the shutdown"));
}
