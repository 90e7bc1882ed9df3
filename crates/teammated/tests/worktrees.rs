//! A scripted teammate in a team with a git repository: it works in the task's
//! worktree, not in its own directory, and its completion goes through boardd's
//! gate (`docs/design/worktrees.md`), with real git and a real `teammated`.

use teamboard_protocol::request::{NewTask, SetRepoArgs};
use teamboard_protocol::{CheckOutcome, Task, TaskStatus};
use teamboard_testkit::{Board, GitRepo};

/// The binary under test, built by cargo for this package's tests.
const TEAMMATED: &str = env!("CARGO_BIN_EXE_teammated");

/// A board whose team works in `repo`, with `main` as the target.
async fn board_with_repo() -> (Board, GitRepo) {
    let board = Board::start(TEAMMATED).await;
    let repo = GitRepo::new(board.dir());
    board
        .lead
        .set_repo(SetRepoArgs {
            path: repo.path.display().to_string(),
            branch: Some("main".into()),
            merge: None,
            checks: Vec::new(),
            check_timeout_ms: None,
        })
        .await
        .expect("set_repo");
    (board, repo)
}

async fn add(board: &Board, subject: &str, description: &str, checks: &[&str]) -> Task {
    board
        .lead
        .add_task(NewTask {
            subject: subject.into(),
            description: description.into(),
            checks: checks.iter().map(|c| c.to_string()).collect(),
            ..NewTask::default()
        })
        .await
        .expect("add_task")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_teammate_writes_in_the_tasks_worktree_and_the_work_lands_on_the_target() {
    let (mut board, repo) = board_with_repo().await;
    let alice = board.spawn("alice", "dev", &[]);
    board.wait_idle("alice").await;
    let t = add(
        &board,
        "say hello",
        "Write the file.\n```sh\necho hello > hello.txt && pwd\n```\n",
        &[],
    )
    .await;
    board.wait_done(&[t.id]).await;
    let done = board.task(t.id).await;
    assert_eq!(
        done.status,
        TaskStatus::Completed,
        "{done:#?}\n{}",
        board.transcript("alice")
    );
    let tree = done
        .worktree
        .clone()
        .expect("the claim reserved a worktree");
    let path = std::fs::canonicalize(&tree.path).expect("the worktree exists");
    // The command ran there: its output (pwd) is the result.
    assert_eq!(done.result.as_deref(), Some(path.to_str().expect("utf-8")));
    assert_eq!(
        std::fs::read_to_string(path.join("hello.txt")).expect("written in the worktree"),
        "hello\n"
    );
    assert!(!alice.workdir.join("hello.txt").exists());
    assert_eq!(repo.show("main", "hello.txt").as_deref(), Some("hello\n"));
    assert_eq!(tree.merged.as_deref(), Some(repo.head("main").as_str()));
    let log = board.transcript("alice");
    let opening = format!(
        "[Worktree] You work on task #{} in the git worktree {} (branch {}",
        t.id,
        path.display(),
        tree.branch
    );
    assert!(log.contains(&opening), "{log}");

    // The task is over: the next one, without a worktree, is back in alice's own
    // directory.
    let home = board
        .lead
        .add_task(NewTask {
            subject: "at home".into(),
            description: "```sh\necho back > back.txt\n```\n".into(),
            no_worktree: true,
            ..NewTask::default()
        })
        .await
        .expect("add_task");
    board.wait_done(&[home.id]).await;
    assert_eq!(board.task(home.id).await.status, TaskStatus::Completed);
    assert!(
        alice.workdir.join("back.txt").is_file(),
        "{}",
        board.transcript("alice")
    );
    assert!(!path.join("back.txt").exists());
    board.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_check_comes_back_to_the_teammate_which_fixes_it_and_completes() {
    let (mut board, repo) = board_with_repo().await;
    let _alice = board.spawn("alice", "dev", &[]);
    board.wait_idle("alice").await;
    let script = "Complete too early, then fix it.\n\
                  ```sh\necho note > note.txt\n```\n\
                  ```complete_task\nfirst try\n```\n\
                  ```sh\ntouch must-exist\n```\n";
    let t = add(&board, "gated", script, &["test -f must-exist"]).await;
    board.wait_done(&[t.id]).await;
    let done = board.task(t.id).await;
    let log = board.transcript("alice");
    assert_eq!(done.status, TaskStatus::Completed, "{done:#?}\n{log}");
    assert_eq!(done.attempts, 1, "the refusal kept the claim: {done:#?}");
    // The model was told, as a tool error, which check failed and what to do.
    assert!(
        log.contains(
            "complete_task was refused: check `test -f must-exist` failed with exit code 1"
        ),
        "{log}"
    );
    assert!(
        log.contains("fix the problem in your worktree and call complete_task again"),
        "{log}"
    );
    let runs = &done.check_runs;
    assert_eq!(runs.len(), 1, "{runs:#?}");
    assert_eq!(runs[0].command, "test -f must-exist");
    assert_eq!(runs[0].outcome, CheckOutcome::Passed);
    assert_eq!(repo.show("main", "must-exist").as_deref(), Some(""));
    assert_eq!(repo.show("main", "note.txt").as_deref(), Some("note\n"));
    board.stop().await;
}
