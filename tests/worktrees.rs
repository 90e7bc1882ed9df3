//! Worktrees, completion gates and the merge queue, through a real boardd on a
//! real socket, with real git repositories (`docs/design/worktrees.md`).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "test code: a panic fails the test, and the harness captures what it prints"
)]

use std::path::Path;
use teamboard_protocol::request::{NewTask, SetRepoArgs};
use teamboard_protocol::{CheckOutcome, Client, ErrorCode, MergeStyle, TaskStatus};
use teamboard_testkit::{GitRepo, InProc, code_of, lead, short_tempdir, task, teammate};

/// Claims `id` for `who` and opens its worktree; answers the epoch and path.
async fn claim_and_open(who: &Client, id: u64) -> (u64, std::path::PathBuf) {
    let claim = who.claim_task(id).await.expect("claim");
    let w = claim.task.worktree.as_ref().expect("reserved at claim");
    assert!(w.base.is_none(), "created only when opened: {w:?}");
    let opened = who.open_worktree(id, claim.epoch).await.expect("open");
    assert!(opened.fresh);
    (claim.epoch, opened.worktree.path.into())
}

fn write(dir: &Path, file: &str, content: &str) {
    std::fs::write(dir.join(file), content).expect("write");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_works_in_its_own_worktree_and_lands_before_its_dependents_are_ready() {
    let dir = short_tempdir();
    let repo = GitRepo::new(dir.path());
    let daemon = InProc::start().await;
    let lead = lead(&daemon.socket).await;
    let set = lead.set_repo(repo.repo_args()).await.expect("set_repo");
    assert_eq!(set.branch, "main");
    assert_eq!(set.merge, MergeStyle::Rebase);
    assert_eq!(lead.get_repo().await.expect("get"), Some(set.clone()));

    let first = lead.add_task(task("config")).await.expect("add").id;
    let then = lead
        .add_task(NewTask {
            blocked_by: vec![first],
            ..task("tests")
        })
        .await
        .expect("add")
        .id;
    let alice = teammate(&daemon.socket, "alice", "coder").await;
    let (epoch, wt) = claim_and_open(&alice, first).await;
    assert!(wt.starts_with(&set.worktrees), "{}", wt.display());
    write(&wt, "config.toml", "port = 1\n");
    // Nothing of the task's is on the target, or in the person's checkout.
    assert!(repo.show("main", "config.toml").is_none());
    assert!(!repo.path.join("config.toml").exists());

    let done = alice
        .complete_task(first, epoch, "added the config")
        .await
        .expect("complete lands");
    assert_eq!(done.status, TaskStatus::Completed);
    let w = done.worktree.expect("worktree");
    assert_eq!(w.merged.as_deref(), Some(repo.head("main").as_str()));
    assert_eq!(
        repo.show("main", "config.toml").as_deref(),
        Some("port = 1\n")
    );
    assert_eq!(repo.log("main")[0], "config");

    // The dependent starts from the landed work.
    let bob = teammate(&daemon.socket, "bob", "coder").await;
    let (_, wt2) = claim_and_open(&bob, then).await;
    assert_eq!(
        std::fs::read_to_string(wt2.join("config.toml")).expect("landed work is there"),
        "port = 1\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_target_that_is_checked_out_is_taken_and_a_missing_one_is_refused_with_the_fix() {
    let dir = short_tempdir();
    let repo = GitRepo::new(dir.path());
    teamboard_testkit::git::git(&repo.path, &["switch", "-q", "main"]);
    let daemon = InProc::start().await;
    let lead = lead(&daemon.socket).await;
    // The person's own checkout of the target: landing updates it.
    let set = lead.set_repo(repo.repo_args()).await.expect("checked out");
    assert_eq!(set.branch, "main");

    // Without a branch: no default, but the refusal names what to pass, with
    // every other option given.
    let no_branch = SetRepoArgs {
        branch: None,
        checks: vec!["make test".into()],
        ..repo.repo_args()
    };
    let e = lead
        .set_repo(no_branch.clone())
        .await
        .expect_err("no branch");
    assert_eq!(e.code(), Some(ErrorCode::InvalidArgs), "{e}");
    for says in ["'main'", "--branch main --check 'make test'"] {
        assert!(e.to_string().contains(says), "{says}: {e}");
    }
    teamboard_testkit::git::git(&repo.path, &["switch", "-q", "--detach"]);
    let e = lead.set_repo(no_branch).await.expect_err("no branch");
    assert_eq!(e.code(), Some(ErrorCode::InvalidArgs), "{e}");
    assert!(e.to_string().contains("--branch main"), "{e}");

    let plain = dir.path().join("plain");
    std::fs::create_dir_all(&plain).expect("dir");
    let e = lead
        .set_repo(SetRepoArgs {
            path: plain.display().to_string(),
            ..repo.repo_args()
        })
        .await
        .expect_err("not a repo");
    assert_eq!(e.code(), Some(ErrorCode::Git), "{e}");
    assert!(e.to_string().contains("not inside a git repository"), "{e}");
    assert_eq!(lead.get_repo().await.expect("get"), Some(set));

    let alice = teammate(&daemon.socket, "alice", "coder").await;
    assert_eq!(
        code_of(alice.set_repo(repo.repo_args()).await),
        ErrorCode::PermissionDenied
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_teammates_editing_one_file_one_lands_and_the_other_gets_the_path() {
    let dir = short_tempdir();
    let repo = GitRepo::new(dir.path());
    let daemon = InProc::start().await;
    let lead = lead(&daemon.socket).await;
    lead.set_repo(repo.repo_args()).await.expect("set_repo");
    let a = lead.add_task(task("readme a")).await.expect("add").id;
    let b = lead.add_task(task("readme b")).await.expect("add").id;
    let alice = teammate(&daemon.socket, "alice", "coder").await;
    let bob = teammate(&daemon.socket, "bob", "coder").await;
    let (ea, wa) = claim_and_open(&alice, a).await;
    let (eb, wb) = claim_and_open(&bob, b).await;
    write(&wa, "README.md", "alice was here\n");
    write(&wb, "README.md", "bob was here\n");

    alice.complete_task(a, ea, "a").await.expect("first lands");
    let e = bob.complete_task(b, eb, "b").await.expect_err("conflict");
    assert_eq!(e.code(), Some(ErrorCode::MergeConflict), "{e}");
    assert!(e.to_string().contains("README.md"), "{e}");
    // Bob keeps the task and his work, committed on his branch.
    let detail = bob.get_task(b).await.expect("get");
    assert_eq!(detail.task.status, TaskStatus::InProgress);
    assert_eq!(detail.task.owner.as_deref(), Some("bob"));
    assert_eq!(detail.task.attempts, 1);
    let landing = detail.task.landing.clone().expect("it waits in conflict");
    assert_eq!(landing.stage, teamboard_protocol::LandingStage::Conflict);
    assert_eq!(landing.paths, vec!["README.md".to_string()]);
    assert_eq!(landing.onto, Some(repo.head("main")));
    assert_eq!(
        std::fs::read_to_string(wb.join("README.md")).expect("kept"),
        "bob was here\n"
    );
    assert_eq!(
        repo.show("main", "README.md").as_deref(),
        Some("alice was here\n")
    );
    assert!(
        detail
            .history
            .iter()
            .any(|e| e.kind == teamboard_protocol::EventKind::MergeConflict),
        "{:?}",
        detail.history
    );

    // He resolves it the way the refusal says, and lands.
    // It stops on the conflict, which is what the resolution starts from.
    let stopped = teamboard_testkit::git::git_command(&wb)
        .args(["rebase", "main"])
        .output()
        .expect("rebase");
    assert!(!stopped.status.success());
    write(&wb, "README.md", "alice and bob were here\n");
    teamboard_testkit::git::git(&wb, &["add", "README.md"]);
    teamboard_testkit::git::git_command(&wb)
        .args(["-c", "core.editor=true", "rebase", "--continue"])
        .output()
        .expect("continue");
    let done = bob.complete_task(b, eb, "b").await.expect("lands now");
    assert_eq!(done.status, TaskStatus::Completed);
    assert_eq!(
        repo.show("main", "README.md").as_deref(),
        Some("alice and bob were here\n")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_check_refuses_completion_with_its_evidence() {
    let dir = short_tempdir();
    let repo = GitRepo::new(dir.path());
    let daemon = InProc::start().await;
    let lead = lead(&daemon.socket).await;
    lead.set_repo(SetRepoArgs {
        checks: vec!["test -f README.md".into()],
        ..repo.repo_args()
    })
    .await
    .expect("set_repo");
    let id = lead
        .add_task(NewTask {
            checks: vec!["echo checking the answer; grep -q 42 answer.txt".into()],
            ..task("answer")
        })
        .await
        .expect("add")
        .id;
    let alice = teammate(&daemon.socket, "alice", "coder").await;
    let (epoch, wt) = claim_and_open(&alice, id).await;
    write(&wt, "answer.txt", "41\n");
    let e = alice
        .complete_task(id, epoch, "answered")
        .await
        .expect_err("the check fails");
    assert_eq!(e.code(), Some(ErrorCode::CheckFailed), "{e}");
    let text = e.to_string();
    assert!(text.contains("grep -q 42 answer.txt"), "{text}");
    assert!(text.contains("exit code 1"), "{text}");
    assert!(text.contains("checking the answer"), "{text}");
    let task = alice.get_task(id).await.expect("get").task;
    assert_eq!(task.status, TaskStatus::InProgress);
    let outcomes: Vec<CheckOutcome> = task.check_runs.iter().map(|r| r.outcome).collect();
    assert_eq!(outcomes, [CheckOutcome::Passed, CheckOutcome::Failed]);
    assert!(repo.show("main", "answer.txt").is_none(), "nothing landed");

    write(&wt, "answer.txt", "42\n");
    let done = alice
        .complete_task(id, epoch, "answered")
        .await
        .expect("passes now");
    assert_eq!(done.status, TaskStatus::Completed);
    assert_eq!(repo.show("main", "answer.txt").as_deref(), Some("42\n"));
    assert!(
        done.check_runs
            .iter()
            .all(|r| r.outcome == CheckOutcome::Passed),
        "{:?}",
        done.check_runs
    );
}

/// git runs on the repository's worker, never on boardd's request path: while a
/// slow `git worktree add` (a `post-checkout` hook that sleeps) holds one
/// teammate's `open_worktree`, everyone else is served at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_git_never_delays_other_clients() {
    let dir = short_tempdir();
    let repo = GitRepo::new(dir.path());
    let hook = repo.path.join(".git/hooks/post-checkout");
    let started = dir.path().join("hook-started");
    std::fs::write(
        &hook,
        format!("#!/bin/sh\ntouch '{}'\nsleep 3\n", started.display()),
    )
    .expect("hook");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let daemon = InProc::start().await;
    let lead = lead(&daemon.socket).await;
    lead.set_repo(repo.repo_args()).await.expect("set_repo");
    let a = lead.add_task(task("slow")).await.expect("add").id;
    let b = lead.add_task(task("other")).await.expect("add").id;
    let alice = teammate(&daemon.socket, "alice", "coder").await;
    let bob = teammate(&daemon.socket, "bob", "coder").await;
    let claim = alice.claim_task(a).await.expect("claim");
    let opening = tokio::spawn(async move {
        let t0 = std::time::Instant::now();
        let r = alice.open_worktree(a, claim.epoch).await;
        (r, t0.elapsed())
    });
    teamboard_testkit::eventually("the hook runs", teamboard_testkit::PATIENCE, || async {
        started.exists().then_some(())
    })
    .await;
    // The hook sleeps now; boardd answers others as if it did not.
    let t0 = std::time::Instant::now();
    let c = bob.claim_task(b).await.expect("bob claims meanwhile");
    lead.list_tasks(None).await.expect("list");
    bob.heartbeat(b, c.epoch).await.expect("beat");
    let others = t0.elapsed();
    let (opened, slow) = opening.await.expect("join");
    opened.expect("opened in the end");
    assert!(slow >= std::time::Duration::from_secs(3), "{slow:?}");
    assert!(
        others < std::time::Duration::from_secs(1),
        "other clients waited {others:?} for a slow git"
    );
}

/// A landed task's worktree directory removed by hand leaves its branch behind;
/// prune takes the branch once its commits are all on the target, and keeps an
/// open task's branch whatever became of its directory.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prune_takes_the_branch_of_a_landed_task_whose_directory_was_removed_by_hand() {
    let dir = short_tempdir();
    let repo = GitRepo::new(dir.path());
    let daemon = InProc::start().await;
    let lead = lead(&daemon.socket).await;
    lead.set_repo(repo.repo_args()).await.expect("set_repo");
    let landed = lead.add_task(task("landed")).await.expect("add").id;
    let open = lead.add_task(task("open")).await.expect("add").id;
    let alice = teammate(&daemon.socket, "alice", "coder").await;
    let bob = teammate(&daemon.socket, "bob", "coder").await;
    let (epoch, wt) = claim_and_open(&alice, landed).await;
    write(&wt, "a.txt", "a\n");
    alice
        .complete_task(landed, epoch, "a")
        .await
        .expect("lands");
    let (_, wt2) = claim_and_open(&bob, open).await;
    write(&wt2, "b.txt", "b\n");
    teamboard_testkit::git::git(&wt2, &["add", "b.txt"]);
    teamboard_testkit::git::git(&wt2, &["commit", "-q", "-m", "b"]);
    std::fs::remove_dir_all(&wt).expect("rm landed");
    std::fs::remove_dir_all(&wt2).expect("rm open");

    let pruned = lead.prune_worktrees(false).await.expect("prune");
    let removed: Vec<u64> = pruned.removed.iter().map(|e| e.task).collect();
    assert_eq!(removed, [landed], "{pruned:#?}");
    assert_eq!(pruned.kept.len(), 1);
    assert_eq!(
        pruned.kept[0].state,
        teamboard_protocol::WorktreeState::Missing
    );
    let branches = teamboard_testkit::git::git(&repo.path, &["branch", "--list", "teamboard/*"]);
    assert!(!branches.contains("task-1"), "{branches}");
    assert!(
        branches.contains("task-2"),
        "the open task's commit is kept: {branches}"
    );
    assert!(!teamboard_testkit::git::git(&repo.path, &["worktree", "list"]).contains("task-1"));
}

/// Checks often leave files behind (caches, reports). Untracked files never
/// land, so they do not hold up the queue, and the target gets only the work.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_a_check_leaves_untracked_do_not_stop_the_landing() {
    let dir = short_tempdir();
    let repo = GitRepo::new(dir.path());
    let daemon = InProc::start().await;
    let lead = lead(&daemon.socket).await;
    lead.set_repo(SetRepoArgs {
        checks: vec!["mkdir -p .cache && echo x > .cache/run && echo report > report.txt".into()],
        ..repo.repo_args()
    })
    .await
    .expect("set_repo");
    let id = lead.add_task(task("work")).await.expect("add").id;
    let alice = teammate(&daemon.socket, "alice", "coder").await;
    let (epoch, wt) = claim_and_open(&alice, id).await;
    write(&wt, "work.txt", "done\n");
    let done = alice
        .complete_task(id, epoch, "done")
        .await
        .expect("lands despite the check's leftovers");
    assert_eq!(done.status, TaskStatus::Completed);
    assert_eq!(repo.show("main", "work.txt").as_deref(), Some("done\n"));
    assert!(
        repo.show("main", "report.txt").is_none(),
        "untracked stays out"
    );
    assert!(wt.join("report.txt").exists(), "and is not deleted either");
}
