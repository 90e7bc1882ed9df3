//! A scripted teammate in a team with a git repository: it works in the task's
//! worktree, not in its own directory, and its completion goes through boardd's
//! gate (`docs/design/worktrees.md`), with real git and a real `teammated`.
//!
//! The scripted model's ```` ```complete_task ```` block completes mid-script;
//! when boardd refuses, the blocks after it are the fix (see `llm::scripted`).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "test code: a panic fails the test, and the harness captures what it prints"
)]

use teamboard_protocol::request::NewTask;
use teamboard_protocol::{CheckOutcome, EventKind, MessageKind, Task, TaskStatus};
use teamboard_testkit::{Board, GitRepo};

/// The binary under test, built by cargo for this package's tests.
const TEAMMATED: &str = env!("CARGO_BIN_EXE_teammated");

/// For the tests whose commands share marks with the test outside the
/// worktrees, or resolve a conflict with `git rebase`, which writes the main
/// repository: the sandbox allows neither (docs/tools.md).
const UNSANDBOXED: [&str; 2] = ["--sandbox", "off"];

/// A board whose team works in `repo`, with `main` as the target.
async fn board_with_repo() -> (Board, GitRepo) {
    board_with_repo_tuned(|_| {}).await
}

/// [`board_with_repo`], with boardd's configuration adjusted by `tune`.
async fn board_with_repo_tuned(
    tune: impl FnOnce(&mut teamboard_testkit::boardd::Config),
) -> (Board, GitRepo) {
    let board = Board::start_with(TEAMMATED, tune).await;
    let repo = board.attach_repo().await;
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_next_owner_is_told_what_a_killed_owner_left_in_the_worktree() {
    let (mut board, repo) = board_with_repo().await;
    let alice = board.spawn("alice", "dev", &UNSANDBOXED);
    board.wait_idle("alice").await;
    // The first owner leaves a file uncommitted and hangs until killed; the next
    // finds the file and finishes. The marks live outside the worktree.
    let mark = board.dir().join("started");
    let release = board.dir().join("release");
    let body = format!(
        "if [ -e partial.txt ]; then echo found-$(cat partial.txt); else echo one > partial.txt; \
         touch {m}; while [ ! -e {r} ]; do sleep 0.05; done; fi",
        m = mark.display(),
        r = release.display()
    );
    let t = add(&board, "resume me", &format!("```sh\n{body}\n```\n"), &[]).await;
    assert_eq!(board.wait_claimed(t.id).await, "alice");
    alice.wait_for_file(&mark).await;
    let _bob = board.spawn("bob", "dev", &UNSANDBOXED);
    board.wait_idle("bob").await;
    alice.kill9();
    assert_eq!(board.wait_claimed(t.id).await, "bob");
    board.wait_done(&[t.id]).await;
    let done = board.task(t.id).await;
    let log = board.transcript("bob");
    assert_eq!(done.status, TaskStatus::Completed, "{done:#?}\n{log}");
    assert_eq!(done.result.as_deref(), Some("found-one"), "{log}");
    assert!(
        log.contains("This worktree already holds work from a previous owner: uncommitted changes in partial.txt."),
        "{log}"
    );
    assert_eq!(repo.show("main", "partial.txt").as_deref(), Some("one\n"));
    std::fs::write(&release, "").expect("let the orphan go");
    board.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worktree_git_cannot_create_gives_the_task_back_counted_and_tells_the_lead() {
    let (mut board, _repo) = board_with_repo().await;
    let repo = board
        .lead
        .get_repo()
        .await
        .expect("get_repo")
        .expect("a repo");
    // A file where task #1's worktree is to go: git refuses to create it there.
    std::fs::create_dir_all(&repo.worktrees).expect("worktrees dir");
    std::fs::write(
        std::path::Path::new(&repo.worktrees).join("task-1"),
        "in the way",
    )
    .expect("block the path");
    let ran = board.dir().join("ran");
    let t = add(
        &board,
        "blocked",
        &format!("```sh\ntouch {}\n```\n", ran.display()),
        &[],
    )
    .await;
    assert_eq!(t.id, 1);
    let _alice = board.spawn("alice", "dev", &[]);
    board.wait_done(&[t.id]).await;
    let done = board.task(t.id).await;
    let log = board.transcript("alice");
    // Every attempt counted, so the task failed in the end instead of going round.
    assert_eq!(done.status, TaskStatus::Failed, "{done:#?}\n{log}");
    assert_eq!(done.attempts, 3, "{done:#?}");
    let error = done.last_error.clone().unwrap_or_default();
    assert!(
        error.contains("cannot open the worktree of #1"),
        "{done:#?}"
    );
    // No model call ran the task's command outside its worktree.
    assert!(!ran.exists(), "{log}");
    assert!(!log.contains("touch "), "{log}");
    let inbox = board.lead.inbox().await.expect("inbox");
    assert!(
        inbox.iter().any(|m| m.kind == MessageKind::Error
            && m.from == "alice"
            && m.content
                .contains("released #1: cannot open the worktree of #1")),
        "{inbox:#?}"
    );
    let released = board
        .wait_for("a release", |e| e.kind == EventKind::TaskReleased)
        .await;
    assert_eq!(released.actor, "alice", "{released:?}");
    board.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conflict_with_the_target_comes_back_with_the_path_and_the_rebase_resolves_it() {
    let (mut board, repo) = board_with_repo().await;
    let alice = board.spawn("alice", "dev", &UNSANDBOXED);
    board.wait_idle("alice").await;
    let (written, go) = (board.dir().join("written"), board.dir().join("go"));
    let script = format!(
        "```sh\necho mine > shared.txt && touch {w} && while [ ! -e {g} ]; do sleep 0.05; done\n```\n\
         ```complete_task\nfirst try\n```\n\
         ```sh\ngit rebase main; printf 'theirs\\nmine\\n' > shared.txt && git add shared.txt \
         && GIT_EDITOR=true git rebase --continue\n```\n",
        w = written.display(),
        g = go.display()
    );
    let t = add(&board, "edit shared", &script, &[]).await;
    alice.wait_for_file(&written).await;
    // Someone else lands the same file first.
    repo.commit_on("main", "shared.txt", "theirs\n");
    std::fs::write(&go, "").expect("go on");
    board.wait_done(&[t.id]).await;
    let done = board.task(t.id).await;
    let log = board.transcript("alice");
    assert_eq!(done.status, TaskStatus::Completed, "{done:#?}\n{log}");
    assert_eq!(done.attempts, 1, "the refusal kept the claim: {done:#?}");
    assert!(
        log.contains("complete_task was refused: the branch conflicts with main in shared.txt"),
        "{log}"
    );
    assert!(
        log.contains(
            "The target branch main changed the same lines: run `git rebase main` in your worktree"
        ),
        "{log}"
    );
    assert_eq!(
        repo.show("main", "shared.txt").as_deref(),
        Some("theirs\nmine\n")
    );
    board.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_claim_outlives_a_check_longer_than_the_lease() {
    let lease = std::time::Duration::from_secs(1);
    let (mut board, repo) = board_with_repo_tuned(|c| c.board.lease_ttl = lease).await;
    let _alice = board.spawn("alice", "dev", &[]);
    board.wait_idle("alice").await;
    // complete_task waits for the check, three leases long: only the heartbeat
    // running meanwhile keeps the claim.
    let t = add(
        &board,
        "slow check",
        "```sh\necho x > x.txt\n```\n",
        &["sleep 3"],
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
    assert_eq!(done.attempts, 1, "the lease never lapsed: {done:#?}");
    assert_eq!(done.check_runs[0].outcome, CheckOutcome::Passed);
    assert_eq!(repo.show("main", "x.txt").as_deref(), Some("x\n"));
    board.stop().await;
}

/// A teammate that gives up after a refused completion gives the task back with
/// boardd's reason, so the check's evidence is in the task's history, not only
/// in `check_runs`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_given_back_after_a_refusal_keeps_the_refusal_as_its_error() {
    let (mut board, _repo) = board_with_repo().await;
    let _alice = board.spawn("alice", "dev", &[]);
    board.wait_idle("alice").await;
    let script = "Never passes.\n```sh\necho try > try.txt\n```\n";
    let t = add(&board, "hopeless", script, &["echo nope; exit 4"]).await;
    let released = board
        .wait_for("the task back to pending", |e| {
            e.task == Some(t.id) && e.kind == EventKind::TaskReleased
        })
        .await;
    assert!(
        released
            .detail
            .contains("check `echo nope; exit 4` failed with exit code 4"),
        "{released:#?}\n{}",
        board.transcript("alice")
    );
    let task = board.task(t.id).await;
    assert!(
        task.last_error
            .as_deref()
            .is_some_and(|e| e.contains("exit code 4") && e.contains("nope")),
        "{task:#?}"
    );
    board.stop().await;
}
