//! Completion checks that do not finish: a check that runs past its time limit,
//! one whose claim ends while it runs, and one whose boardd is killed. None is
//! ever recorded as passed, none leaves a process behind, and the owner's
//! waiting `complete_task` is answered promptly (`docs/design/worktrees.md`,
//! issue 15). Real boardd, real git, real processes.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "test code: a panic fails the test, and the harness captures what it prints"
)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use teamboard_protocol::request::SetRepoArgs;
use teamboard_protocol::{CheckOutcome, Client, ErrorCode, TaskStatus};
// Owners register with their sandbox off (`unsandboxed_teammate`): the
// checks here share pids and files with the test outside the worktree.
use teamboard_testkit::{
    Daemon, GitRepo, InProc, PATIENCE, Pause, complete_in_background, eventually, group_members,
    lead, process_group, short_tempdir, task, unsandboxed_teammate,
};

/// The longest an owner may wait for the answer once its check was stopped:
/// the check's grace between SIGTERM and SIGKILL is 2 s, and `sleep` dies of
/// SIGTERM at once.
const PROMPTLY: Duration = Duration::from_secs(5);

fn repo_args(repo: &GitRepo, checks: Vec<String>, timeout_ms: Option<u64>) -> SetRepoArgs {
    SetRepoArgs {
        checks,
        check_timeout_ms: timeout_ms,
        ..repo.repo_args()
    }
}

/// A check that writes its shell's pid to `marker` and then sleeps for a
/// minute in a child process, as a test runner would.
fn sleeping_check(marker: &Path) -> String {
    format!(
        "echo $$ > '{m}.tmp' && mv '{m}.tmp' '{m}'; sleep 60; true",
        m = marker.display()
    )
}

/// Waits until the check started by [`sleeping_check`] runs; answers its
/// process group.
async fn check_started(marker: &Path) -> u32 {
    eventually("the check to start", PATIENCE, || async {
        let pid = std::fs::read_to_string(marker).ok()?.trim().parse().ok()?;
        process_group(pid)
    })
    .await
}

/// Claims `id`, opens its worktree and writes a file; answers the epoch.
async fn claim_and_write(who: &Client, id: u64) -> u64 {
    let claim = who.claim_task(id).await.expect("claim");
    let opened = who.open_worktree(id, claim.epoch).await.expect("open");
    std::fs::write(
        PathBuf::from(opened.worktree.path).join("work.txt"),
        "work\n",
    )
    .expect("write");
    claim.epoch
}

/// Nothing of the check's is left running, shortly after it was stopped.
async fn no_process_left_in(group: u32) {
    eventually(
        format!("nothing left in process group {group}"),
        PROMPTLY,
        || async { group_members(group).is_empty().then_some(()) },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_check_past_its_time_limit_times_out_and_refuses_the_completion() {
    let dir = short_tempdir();
    let repo = GitRepo::new(dir.path());
    let marker = dir.path().join("check");
    let daemon = InProc::start().await;
    let lead = lead(&daemon.socket).await;
    lead.set_repo(repo_args(&repo, vec![sleeping_check(&marker)], Some(500)))
        .await
        .expect("set_repo");
    let id = lead.add_task(task("slow")).await.expect("add").id;
    let alice = Arc::new(unsandboxed_teammate(&daemon.socket, "alice", "coder").await);
    let epoch = claim_and_write(&alice, id).await;

    let asked = Instant::now();
    let waiting = complete_in_background(&alice, id, epoch);
    let group = check_started(&marker).await;
    let e = tokio::time::timeout(PATIENCE, waiting)
        .await
        .expect("answered")
        .expect("join")
        .expect_err("the check times out");
    let took = asked.elapsed();
    assert_eq!(e.code(), Some(ErrorCode::CheckFailed), "{e}");
    assert!(e.to_string().contains("timed out after 500 ms"), "{e}");
    assert!(took < PROMPTLY, "answered after {took:?}");
    no_process_left_in(group).await;

    let t = alice.get_task(id).await.expect("get").task;
    assert_eq!(t.status, TaskStatus::InProgress, "the owner keeps the task");
    assert_eq!(t.owner.as_deref(), Some("alice"));
    assert!(t.landing.is_none());
    let [run] = t.check_runs.as_slice() else {
        panic!("one run: {:?}", t.check_runs);
    };
    assert_eq!(run.outcome, CheckOutcome::TimedOut);
    assert!(run.duration_ms >= 500, "{run:?}");
    assert!(run.tail.contains("timed out"), "{run:?}");
    assert!(repo.show("main", "work.txt").is_none(), "nothing landed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_task_while_its_check_runs_stops_the_check_and_answers_the_owner() {
    let dir = short_tempdir();
    let repo = GitRepo::new(dir.path());
    let marker = dir.path().join("check");
    let daemon = InProc::start().await;
    let lead = lead(&daemon.socket).await;
    lead.set_repo(repo_args(&repo, vec![sleeping_check(&marker)], None))
        .await
        .expect("set_repo");
    let id = lead.add_task(task("slow")).await.expect("add").id;
    let alice = Arc::new(unsandboxed_teammate(&daemon.socket, "alice", "coder").await);
    let epoch = claim_and_write(&alice, id).await;

    let waiting = complete_in_background(&alice, id, epoch);
    let group = check_started(&marker).await;
    assert!(!group_members(group).is_empty());
    let cancelled = Instant::now();
    lead.cancel_task(id).await.expect("cancel");
    let answer = tokio::time::timeout(PATIENCE, waiting)
        .await
        .expect("the owner is answered")
        .expect("join");
    let took = cancelled.elapsed();
    let e = answer.expect_err("the claim ended");
    assert_eq!(e.code(), Some(ErrorCode::StaleEpoch), "{e}");
    assert!(took < PROMPTLY, "answered {took:?} after the cancel");
    no_process_left_in(group).await;

    let t = lead.get_task(id).await.expect("get").task;
    assert_eq!(t.status, TaskStatus::Cancelled);
    assert!(t.landing.is_none());
    assert!(
        t.check_runs
            .iter()
            .all(|r| r.outcome != CheckOutcome::Passed),
        "{:?}",
        t.check_runs
    );
    assert!(repo.show("main", "work.txt").is_none(), "nothing landed");
}

/// The claim ends while the gate still commits the owner's work, before the
/// checks start: they must not start as if nothing had happened. The owner
/// is answered at once either way; what the checks did shows in boardd's log
/// (the only place a stale gate's runs go), so this runs the real binary.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_task_before_its_checks_start_never_runs_them() {
    let dir = short_tempdir();
    let repo = GitRepo::new(dir.path());
    let marker = dir.path().join("check");
    let commit = Pause::new(dir.path(), "commit");
    repo.hook("pre-commit", &commit.script());
    let socket = dir.path().join("s");
    let daemon = Daemon::start(&socket, &dir.path().join("state"), &[]).await;
    let lead = lead(&socket).await;
    lead.set_repo(repo_args(&repo, vec![sleeping_check(&marker)], None))
        .await
        .expect("set_repo");
    let id = lead.add_task(task("slow")).await.expect("add").id;
    let alice = Arc::new(unsandboxed_teammate(&socket, "alice", "coder").await);
    let epoch = claim_and_write(&alice, id).await;

    let waiting = complete_in_background(&alice, id, epoch);
    commit.reached().await;
    lead.cancel_task(id).await.expect("cancel");
    let answer = tokio::time::timeout(PROMPTLY, waiting)
        .await
        .expect("the owner is answered promptly")
        .expect("join");
    let e = answer.expect_err("the claim ended");
    assert_eq!(e.code(), Some(ErrorCode::StaleEpoch), "{e}");

    // The gate goes on to its checks, which stop before they start.
    commit.release();
    let ran = eventually(
        "the check to be reported as interrupted",
        PROMPTLY,
        || async {
            daemon
                .log()
                .lines()
                .find(|l| l.contains("check ran"))
                .map(str::to_string)
        },
    )
    .await;
    assert!(ran.contains("interrupted"), "{ran}");
    assert!(!marker.exists(), "the check never started");
    let t = lead.get_task(id).await.expect("get").task;
    assert_eq!(t.status, TaskStatus::Cancelled);
    assert!(
        t.check_runs
            .iter()
            .all(|r| r.outcome != CheckOutcome::Passed),
        "{:?}",
        t.check_runs
    );
}

/// boardd killed while a check runs: the check dies with it, the whole of
/// it (a test runner's children too), and after the restart the owner
/// completes again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_check_running_when_boardd_is_killed_dies_with_it() {
    let dir = short_tempdir();
    let repo = GitRepo::new(dir.path());
    let marker = dir.path().join("check");
    let socket = dir.path().join("s");
    let state = dir.path().join("state");
    let args = ["--restart-grace", "20"];
    let mut daemon = Daemon::start(&socket, &state, &args).await;
    let lead = lead(&socket).await;
    lead.set_repo(repo_args(&repo, vec![sleeping_check(&marker)], None))
        .await
        .expect("set_repo");
    let id = lead.add_task(task("slow")).await.expect("add").id;
    let alice = Arc::new(unsandboxed_teammate(&socket, "alice", "coder").await);
    let epoch = claim_and_write(&alice, id).await;

    let waiting = complete_in_background(&alice, id, epoch);
    let group = check_started(&marker).await;
    daemon.kill9();
    assert!(waiting.await.expect("join").is_err());
    no_process_left_in(group).await;

    let _daemon = Daemon::start(&socket, &state, &args).await;
    let alice = unsandboxed_teammate(&socket, "alice", "coder").await;
    let t = alice.get_task(id).await.expect("get").task;
    assert_eq!(t.status, TaskStatus::InProgress, "alice is back in time");
    assert!(t.landing.is_none(), "the check ended with boardd");
    assert!(
        t.check_runs
            .iter()
            .all(|r| r.outcome != CheckOutcome::Passed),
        "{:?}",
        t.check_runs
    );
}
