//! `kill -9` of a teammate or of boardd while a task works in its worktree or
//! lands, with the real boardd binary, real child processes and real git
//! (`docs/design/worktrees.md`, issue 15): nothing uncommitted is lost, the
//! target is at its old head or the landed one and nothing in between, and
//! the merge queue resumes after a restart.
//!
//! Git is stopped at a known step by a hook that waits for the test
//! ([`Pause`]), so that every kill lands exactly where the test says.

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
use teamboard_protocol::request::SetRepoArgs;
use teamboard_protocol::{Client, EventKind, LandingStage, MergeStyle, Task, TaskStatus};
use teamboard_testkit::git::manifest;
// Owners register with their sandbox off (`unsandboxed_teammate`): the
// checks here share pids and files with the test outside the worktree.
use teamboard_testkit::{
    Daemon, GitRepo, PATIENCE, Pause, WorktreeTeammate, add_held_task, alive, claim_and_write,
    complete_in_background, connect, eventually, kill9, lead, pause_main_update,
    register_unsandboxed, short_tempdir, stage_is, task, unsandboxed_teammate,
};

async fn boardd(dir: &Path) -> Daemon {
    Daemon::start(
        &dir.join("s"),
        &dir.join("state"),
        &["--restart-grace", "20"],
    )
    .await
}

/// Boardd again on the same state, as after a crash.
async fn restart(dir: &Path) -> Daemon {
    boardd(dir).await
}

/// Waits until `id` is in `status`, and answers it.
async fn task_in(client: &Client, id: u64, status: TaskStatus) -> Task {
    eventually(format!("#{id} to be {status:?}"), PATIENCE, || async {
        let t = client.get_task(id).await.expect("get_task").task;
        (t.status == status).then_some(t)
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_teammate_killed_with_uncommitted_work_leaves_it_to_the_next_owner() {
    let dir = short_tempdir();
    let repo = GitRepo::new(dir.path());
    let daemon = boardd(dir.path()).await;
    let lead = lead(&daemon.socket).await;
    lead.set_repo(repo.repo_args()).await.expect("set_repo");
    let id = lead.add_task(task("notes")).await.expect("add").id;

    // A new file, an edit of a tracked one and a file in a new directory.
    let files = [
        ("notes.txt", "half a thought\n"),
        ("README.md", "hello\nand more\n"),
        ("src/deep/mod.rs", "pub fn unfinished() {}\n"),
    ];
    let mut doomed = WorktreeTeammate::spawn(&daemon.socket, "alice", id, &files);
    let before = manifest(&doomed.worktree);
    assert_eq!(
        before.keys().collect::<Vec<_>>(),
        ["README.md", "notes.txt", "src/deep/mod.rs"],
        "{before:?}"
    );
    doomed.kill9();

    // The connection closed with the process: the claim ends, the worktree stays.
    let pending = task_in(&lead, id, TaskStatus::Pending).await;
    assert_eq!(pending.owner, None);
    let reserved = pending
        .worktree
        .clone()
        .expect("the worktree stays reserved");
    assert_eq!(Path::new(&reserved.path), doomed.worktree);
    assert!(reserved.base.is_some());
    assert_eq!(manifest(&doomed.worktree), before, "nothing was touched");

    let bob = unsandboxed_teammate(&daemon.socket, "bob", "coder").await;
    let claim = bob.claim_task(id).await.expect("claim");
    assert!(claim.epoch > doomed.epoch);
    assert_eq!(
        claim.task.worktree.as_ref(),
        Some(&reserved),
        "the same worktree"
    );
    let opened = bob.open_worktree(id, claim.epoch).await.expect("open");
    assert!(!opened.fresh, "{opened:?}");
    assert_eq!(opened.found.commits, 0);
    assert_eq!(opened.found.in_progress, None);
    // `git status` names a new directory, not each file in it.
    assert_eq!(
        opened.found.changed,
        ["README.md", "notes.txt", "src/"],
        "{:?}",
        opened.found
    );
    assert_eq!(
        manifest(&doomed.worktree),
        before,
        "every file, byte for byte"
    );

    let history = bob.get_task(id).await.expect("get").history;
    let event = history
        .iter()
        .rfind(|e| e.kind == EventKind::WorktreeOpened)
        .expect("a worktree_opened event");
    assert_eq!(event.actor, "bob");
    for path in ["README.md", "notes.txt", "src/"] {
        assert!(event.detail.contains(path), "{}", event.detail);
    }

    let done = bob
        .complete_task(id, claim.epoch, "finished alice's notes")
        .await
        .expect("lands");
    assert_eq!(done.status, TaskStatus::Completed);
    let main = repo.head("main");
    assert_eq!(done.worktree.and_then(|w| w.merged), Some(main));
    for (path, content) in files {
        assert_eq!(repo.show("main", path).as_deref(), Some(content), "{path}");
    }
    assert_eq!(repo.log("main"), ["notes", "first"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn boardd_killed_while_git_moves_the_target_lands_it_once_after_the_restart() {
    killed_while_git_moves_the_target(MergeStyle::Rebase).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn boardd_killed_while_git_lands_a_merge_commit_lands_it_once_after_the_restart() {
    killed_while_git_moves_the_target(MergeStyle::Merge).await;
}

/// boardd is killed while its `update-ref` of the target holds the lock;
/// that git, no child of boardd's to take down with it, finishes by itself.
async fn killed_while_git_moves_the_target(style: MergeStyle) {
    let dir = short_tempdir();
    let repo = GitRepo::new(dir.path());
    let pause = Pause::new(dir.path(), "land");
    pause_main_update(&repo, &pause, "prepared");
    let mut daemon = boardd(dir.path()).await;
    let lead = lead(&daemon.socket).await;
    lead.set_repo(SetRepoArgs {
        merge: Some(style),
        ..repo.repo_args()
    })
    .await
    .expect("set_repo");
    let id = lead.add_task(task("config")).await.expect("add").id;
    let alice = Arc::new(unsandboxed_teammate(&daemon.socket, "alice", "coder").await);
    let (epoch, _) = claim_and_write(&alice, id, &[("config.toml", "port = 1\n")]).await;
    let old = repo.head("main");

    let waiting = complete_in_background(&alice, id, epoch);
    let paused = pause.reached().await;
    // git holds the lock with the new value in it; the ref has not moved.
    assert_eq!(repo.head("main"), old);
    assert_eq!(repo.lock_files(), ["refs/heads/main.lock"]);
    let queued = lead.get_task(id).await.expect("get").task;
    assert_eq!(
        queued.landing.as_ref().map(|l| l.stage),
        Some(LandingStage::Queued)
    );
    daemon.kill9();
    assert!(
        waiting.await.expect("join").is_err(),
        "the connection closed"
    );

    // boardd's git outlives it: let it finish, as it would on its own.
    assert!(
        alive(paused.git),
        "git is not boardd's to take down with it"
    );
    assert_eq!(repo.head("main"), old);
    pause.release();
    eventually("the orphaned git to finish", PATIENCE, || async {
        (!alive(paused.git)).then_some(())
    })
    .await;
    let landed = repo.head("main");
    assert_ne!(landed, old, "git finished moving the target");
    assert_eq!(
        repo.show("main", "config.toml").as_deref(),
        Some("port = 1\n")
    );
    assert_eq!(repo.lock_files(), Vec::<String>::new());
    repo.fsck();

    // The restarted queue finds the work on the target and completes the task.
    let _daemon = restart(dir.path()).await;
    let lead = connect(&_daemon.socket, "lead").await;
    let done = task_in(&lead, id, TaskStatus::Completed).await;
    let w = done.worktree.expect("worktree");
    assert_eq!(w.merged.as_deref(), Some(landed.as_str()));
    assert_eq!(
        w.landed_on.as_deref(),
        Some(old.as_str()),
        "landed_on..merged is its change"
    );
    assert_eq!(repo.head("main"), landed, "nothing landed twice");
    match style {
        MergeStyle::Rebase => assert_eq!(repo.log("main"), ["config", "first"]),
        MergeStyle::Merge => {
            // The merge commit (with the task's subject) and the task's
            // commit, once each: the merge's first parent is the old head.
            let git = |args: &[&str]| teamboard_testkit::git::git(&repo.path, args);
            assert_eq!(git(&["rev-list", "--count", &format!("{old}..main")]), "2");
            assert_eq!(git(&["rev-parse", "main^1"]), old);
            assert_eq!(repo.commits_with_subject("main", "config"), 2);
        }
    }
    repo.fsck();

    // The owner, back after the restart, finds its task completed.
    let alice = connect(&_daemon.socket, "alice").await;
    register_unsandboxed(&alice, "coder")
        .await
        .expect("register");
    let seen = alice.get_task(id).await.expect("get");
    assert_eq!(seen.task.status, TaskStatus::Completed);
    assert_eq!(seen.task.owner.as_deref(), Some("alice"));
    assert!(
        seen.history
            .iter()
            .any(|e| e.kind == EventKind::TaskCompleted),
        "{:?}",
        seen.history
    );
}

/// Where git is stopped in `paused`: boardd is killed, and so is its git, as
/// when the whole service is killed (a power cut, or a kill of its cgroup).
fn kill_boardd_and_its_git(daemon: &mut Daemon, paused: teamboard_testkit::Paused) {
    daemon.kill9();
    kill9(paused.git);
    kill9(paused.hook);
}

async fn gone(pid: u32) {
    eventually(format!("process {pid} to end"), PATIENCE, || async {
        (!alive(pid)).then_some(())
    })
    .await;
}

/// The stale lock is git's, not boardd's: `update-ref` took it, wrote the new
/// value into it and was killed before renaming it into place. The target
/// stays at its old head, and every later update of it (boardd's or a
/// person's) fails until someone removes the lock; boardd does not guess
/// that a lock is stale.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn boardd_and_its_git_killed_holding_the_target_lock_leave_it_at_the_old_head() {
    let dir = short_tempdir();
    let repo = GitRepo::new(dir.path());
    let pause = Pause::new(dir.path(), "land");
    pause_main_update(&repo, &pause, "prepared");
    let mut daemon = boardd(dir.path()).await;
    let lead = lead(&daemon.socket).await;
    lead.set_repo(repo.repo_args()).await.expect("set_repo");
    let id = lead.add_task(task("config")).await.expect("add").id;
    let alice = Arc::new(unsandboxed_teammate(&daemon.socket, "alice", "coder").await);
    let (epoch, wt) = claim_and_write(&alice, id, &[("config.toml", "port = 1\n")]).await;
    let old = repo.head("main");

    let waiting = complete_in_background(&alice, id, epoch);
    let paused = pause.reached().await;
    kill_boardd_and_its_git(&mut daemon, paused);
    assert!(
        waiting.await.expect("join").is_err(),
        "the connection closed"
    );
    gone(paused.git).await;
    pause.release();

    // All or nothing: nothing.
    assert_eq!(repo.head("main"), old);
    assert!(repo.show("main", "config.toml").is_none());
    repo.fsck();
    assert_eq!(repo.lock_files(), ["refs/heads/main.lock"]);
    let lock = repo.path.join(".git/refs/heads/main.lock");
    let committed = teamboard_testkit::git::git(&wt, &["rev-parse", "HEAD"]);
    assert_eq!(
        std::fs::read_to_string(&lock).expect("lock").trim(),
        committed,
        "git had written the new value into the lock"
    );

    // The restarted queue cannot move the target: the landing is refused with
    // git's words, which name the lock, and the task goes back to pending
    // with them as its note (no owner waits for the answer after a restart).
    let daemon = restart(dir.path()).await;
    let lead = connect(&daemon.socket, "lead").await;
    let back = task_in(&lead, id, TaskStatus::Pending).await;
    assert!(back.landing.is_none());
    assert_eq!(back.attempts, 0, "a refused landing does not count");
    let note = back.handoff.clone().unwrap_or_default();
    assert!(note.contains("main.lock"), "{note}");
    assert!(note.contains("remove the file manually"), "{note}");
    assert_eq!(repo.head("main"), old);
    assert_eq!(back.worktree.as_ref().and_then(|w| w.merged.as_ref()), None);
    // The work is committed on the task's branch, and the worktree kept.
    assert_eq!(
        repo.show(&committed, "config.toml").as_deref(),
        Some("port = 1\n")
    );
    assert!(manifest(&wt).is_empty());

    // Once a person removes the lock, the next owner lands the work, once.
    std::fs::remove_file(&lock).expect("remove the stale lock");
    let alice = unsandboxed_teammate(&daemon.socket, "alice", "coder").await;
    let claim = alice.claim_task(id).await.expect("claim");
    let opened = alice.open_worktree(id, claim.epoch).await.expect("open");
    assert_eq!(opened.found.commits, 1, "{opened:?}");
    let done = alice
        .complete_task(id, claim.epoch, "done")
        .await
        .expect("lands");
    assert_eq!(done.status, TaskStatus::Completed);
    assert_eq!(repo.log("main"), ["config", "first"]);
    let w = done.worktree.expect("worktree");
    assert_eq!(w.landed_on.as_deref(), Some(old.as_str()));
    assert_eq!(w.merged, Some(repo.head("main")));
    assert!(repo.lock_files().is_empty());
    repo.fsck();
}

/// A task that waited in the queue behind a landing that boardd did not
/// finish: after the restart both land, in the order they joined the queue.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn boardd_killed_with_a_task_queued_behind_a_landing_lands_both_in_order() {
    let dir = short_tempdir();
    let repo = GitRepo::new(dir.path());
    let pause = Pause::new(dir.path(), "land");
    // Stopped once the target has moved and its lock is gone.
    pause_main_update(&repo, &pause, "committed");
    let mut daemon = boardd(dir.path()).await;
    let lead = lead(&daemon.socket).await;
    lead.set_repo(repo.repo_args()).await.expect("set_repo");
    let (first, check_a) = add_held_task(&lead, dir.path(), "config").await;
    let (second, check_b) = add_held_task(&lead, dir.path(), "docs").await;
    let alice = Arc::new(unsandboxed_teammate(&daemon.socket, "alice", "coder").await);
    let bob = Arc::new(unsandboxed_teammate(&daemon.socket, "bob", "coder").await);
    let (ea, _) = claim_and_write(&alice, first, &[("config.toml", "port = 1\n")]).await;
    let (eb, _) = claim_and_write(&bob, second, &[("docs.md", "# docs\n")]).await;
    let old = repo.head("main");

    // Both gates commit and start their checks; the first passes and starts
    // landing (the repository's worker is busy with it from then on), then
    // the second passes and queues behind it.
    let a = complete_in_background(&alice, first, ea);
    let b = complete_in_background(&bob, second, eb);
    check_a.reached().await;
    check_b.reached().await;
    check_a.release();
    let paused = pause.reached().await;
    check_b.release();
    stage_is(&lead, second, LandingStage::Queued).await;
    let moved = repo.head("main");
    assert_ne!(moved, old, "the first landing moved the target");
    kill_boardd_and_its_git(&mut daemon, paused);
    assert!(a.await.expect("join").is_err());
    assert!(b.await.expect("join").is_err());
    gone(paused.git).await;
    pause.release();
    assert_eq!(repo.head("main"), moved);
    assert!(repo.lock_files().is_empty(), "{:?}", repo.lock_files());
    repo.fsck();

    let daemon = restart(dir.path()).await;
    let lead = connect(&daemon.socket, "lead").await;
    let a = task_in(&lead, first, TaskStatus::Completed).await;
    let b = task_in(&lead, second, TaskStatus::Completed).await;
    assert_eq!(repo.log("main"), ["docs", "config", "first"]);
    let (wa, wb) = (a.worktree.expect("wt"), b.worktree.expect("wt"));
    assert_eq!(wa.landed_on.as_deref(), Some(old.as_str()));
    assert_eq!(wa.merged.as_deref(), Some(moved.as_str()));
    assert_eq!(wb.landed_on.as_deref(), Some(moved.as_str()));
    assert_eq!(wb.merged, Some(repo.head("main")));
    assert_eq!(
        repo.show("main", "config.toml").as_deref(),
        Some("port = 1\n")
    );
    assert_eq!(repo.show("main", "docs.md").as_deref(), Some("# docs\n"));
    repo.fsck();
}

/// A hook that stops a rebase in a task's worktree after it has moved the
/// worktree's HEAD, with the rebase's state on disk and no lock held.
fn pause_rebase(pause: &Pause) -> String {
    format!(
        "[ \"$1\" = committed ] || exit 0\n\
         grep -q ' HEAD$' || exit 0\n\
         [ -d \"$(git rev-parse --git-path rebase-merge)\" ] || exit 0\n{}",
        pause.script()
    )
}

/// Whether a rebase is stopped in worktree `wt`.
fn rebasing(wt: &Path) -> bool {
    let dir = teamboard_testkit::git::git(wt, &["rev-parse", "--git-path", "rebase-merge"]);
    wt.join(dir).is_dir()
}

/// boardd killed while the queue rebased a task's branch onto a target that
/// moved after the task's checks: the restarted queue aborts the half-done
/// rebase and lands the task.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn boardd_killed_in_the_middle_of_a_queued_rebase_aborts_it_and_lands_after_the_restart() {
    let dir = short_tempdir();
    let repo = GitRepo::new(dir.path());
    let rebase = Pause::new(dir.path(), "rebase");
    repo.hook("reference-transaction", &pause_rebase(&rebase));
    let mut daemon = boardd(dir.path()).await;
    let lead = lead(&daemon.socket).await;
    lead.set_repo(repo.repo_args()).await.expect("set_repo");
    let (first, check_a) = add_held_task(&lead, dir.path(), "config").await;
    let (second, check_b) = add_held_task(&lead, dir.path(), "docs").await;
    let alice = Arc::new(unsandboxed_teammate(&daemon.socket, "alice", "coder").await);
    let bob = Arc::new(unsandboxed_teammate(&daemon.socket, "bob", "coder").await);
    let (ea, _) = claim_and_write(&alice, first, &[("config.toml", "port = 1\n")]).await;
    let (eb, wb) = claim_and_write(&bob, second, &[("docs.md", "# docs\n")]).await;

    // Both gates run on the target as it is now; then the first lands, so
    // the second, already checked, is rebased by the queue.
    let a = complete_in_background(&alice, first, ea);
    let b = complete_in_background(&bob, second, eb);
    check_a.reached().await;
    check_b.reached().await;
    let queued_head = teamboard_testkit::git::git(&wb, &["rev-parse", "HEAD"]);
    check_a.release();
    assert_eq!(
        a.await.expect("join").expect("first lands").status,
        TaskStatus::Completed
    );
    check_b.release();
    let landed_first = repo.head("main");
    let paused = rebase.reached().await;
    assert!(rebasing(&wb), "the queue is rebasing the second task");
    kill_boardd_and_its_git(&mut daemon, paused);
    assert!(b.await.expect("join").is_err());
    gone(paused.git).await;
    rebase.release();

    assert!(rebasing(&wb), "the rebase is left half done");
    assert_eq!(repo.head("main"), landed_first);
    assert_eq!(
        repo.head("teamboard/default/task-2"),
        queued_head,
        "the branch moves only when a rebase finishes"
    );
    assert!(repo.lock_files().is_empty(), "{:?}", repo.lock_files());
    repo.fsck();

    let daemon = restart(dir.path()).await;
    let lead = connect(&daemon.socket, "lead").await;
    let done = task_in(&lead, second, TaskStatus::Completed).await;
    assert_eq!(repo.log("main"), ["docs", "config", "first"]);
    let w = done.worktree.expect("wt");
    assert_eq!(w.landed_on.as_deref(), Some(landed_first.as_str()));
    assert_eq!(w.merged, Some(repo.head("main")));
    assert!(!rebasing(&wb));
    assert!(manifest(&wb).is_empty());
    assert_eq!(
        teamboard_testkit::git::git(&wb, &["symbolic-ref", "--short", "HEAD"]),
        "teamboard/default/task-2"
    );
    repo.fsck();
}

/// Kills boardd (and its git) while the gate of the second of two tasks
/// rebases its branch onto the first one's landed work, and restarts it.
/// Answers the restarted daemon, the second task's id and epoch, its
/// worktree, and where the first one landed.
async fn kill_in_a_gate_rebase(dir: &Path, repo: &GitRepo) -> (Daemon, u64, u64, PathBuf, String) {
    let rebase = Pause::new(dir, "rebase");
    repo.hook("reference-transaction", &pause_rebase(&rebase));
    let mut daemon = boardd(dir).await;
    let lead = lead(&daemon.socket).await;
    lead.set_repo(repo.repo_args()).await.expect("set_repo");
    let first = lead.add_task(task("config")).await.expect("add").id;
    let second = lead.add_task(task("docs")).await.expect("add").id;
    let alice = Arc::new(unsandboxed_teammate(&daemon.socket, "alice", "coder").await);
    let bob = Arc::new(unsandboxed_teammate(&daemon.socket, "bob", "coder").await);
    let (ea, _) = claim_and_write(&alice, first, &[("config.toml", "port = 1\n")]).await;
    let (eb, wb) = claim_and_write(&bob, second, &[("docs.md", "# docs\n")]).await;
    alice
        .complete_task(first, ea, "done")
        .await
        .expect("the first lands");
    let landed_first = repo.head("main");

    let b = complete_in_background(&bob, second, eb);
    let paused = rebase.reached().await;
    assert!(rebasing(&wb));
    kill_boardd_and_its_git(&mut daemon, paused);
    assert!(b.await.expect("join").is_err());
    gone(paused.git).await;
    rebase.release();
    assert!(rebasing(&wb), "the rebase is left half done");
    repo.fsck();
    (restart(dir).await, second, eb, wb, landed_first)
}

/// boardd killed while a completion's gate rebased the task's branch: the
/// landing was still `checking`, so after the restart its owner completes
/// again, and boardd's own half-done rebase must not stand in the way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn boardd_killed_in_the_middle_of_a_gate_rebase_lets_the_owner_complete_after_the_restart() {
    let dir = short_tempdir();
    let repo = GitRepo::new(dir.path());
    let (daemon, id, epoch, wt, landed_first) = kill_in_a_gate_rebase(dir.path(), &repo).await;

    // Bob comes back within the restart grace and keeps his claim; his first
    // completion ended with boardd, so he completes again.
    let bob = connect(&daemon.socket, "bob").await;
    register_unsandboxed(&bob, "coder").await.expect("register");
    let t = bob.get_task(id).await.expect("get");
    assert_eq!(t.task.status, TaskStatus::InProgress);
    assert!(
        t.task.landing.is_none(),
        "the checking landing ended with boardd"
    );
    let done = bob
        .complete_task(id, epoch, "done")
        .await
        .expect("lands after the restart");
    assert_eq!(done.status, TaskStatus::Completed);
    assert_eq!(repo.log("main"), ["docs", "config", "first"]);
    let w = done.worktree.expect("wt");
    assert_eq!(w.landed_on.as_deref(), Some(landed_first.as_str()));
    assert!(!rebasing(&wt));
    repo.fsck();
}

/// The same, but the owner gives the task up: the next owner finds the
/// work as its predecessor left it (committed by the gate), not boardd's
/// half-done rebase.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn boardd_killed_in_the_middle_of_a_gate_rebase_leaves_the_next_owner_a_clean_worktree() {
    let dir = short_tempdir();
    let repo = GitRepo::new(dir.path());
    let (daemon, id, epoch, wt, landed_first) = kill_in_a_gate_rebase(dir.path(), &repo).await;
    let bob = unsandboxed_teammate(&daemon.socket, "bob", "coder").await;
    bob.release_task(id, epoch, None).await.expect("release");
    let carol = unsandboxed_teammate(&daemon.socket, "carol", "coder").await;
    let claim = carol.claim_task(id).await.expect("claim");
    let opened = carol.open_worktree(id, claim.epoch).await.expect("open");
    assert_eq!(opened.found.in_progress, None, "{opened:?}");
    assert!(opened.found.changed.is_empty(), "{opened:?}");
    assert_eq!(opened.found.commits, 1, "bob's work, committed by the gate");
    assert!(!rebasing(&wt));
    assert_eq!(
        std::fs::read_to_string(wt.join("docs.md")).expect("bob's file"),
        "# docs\n"
    );
    let done = carol
        .complete_task(id, claim.epoch, "done")
        .await
        .expect("lands");
    assert_eq!(repo.log("main"), ["docs", "config", "first"]);
    let w = done.worktree.expect("wt");
    assert_eq!(w.landed_on.as_deref(), Some(landed_first.as_str()));
    repo.fsck();
}

/// boardd killed alone (`kill -9` of its pid, its git spared) while a gate
/// rebases: that git is not boardd's child to die with it, and runs on. The
/// restarted boardd must not work in the worktree until it is done: an abort
/// under a running rebase resets the files, the rebase then moves the branch
/// anyway, and the files left behind undo the target's changes, which the
/// next gate would commit. The soak (`cargo xtask soak-git`) found it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn boardd_killed_alone_in_a_gate_rebase_waits_for_its_git_after_the_restart() {
    let dir = short_tempdir();
    let repo = GitRepo::new(dir.path());
    let rebase = Pause::new(dir.path(), "rebase");
    // Only the gate's rebase stops, once: what the restarted boardd does
    // there (an abort moves HEAD too) must not wait on the hook.
    let once = dir.path().join("rebase.once");
    repo.hook(
        "reference-transaction",
        &format!(
            "[ \"$1\" = committed ] || exit 0\n\
             grep -q ' HEAD$' || exit 0\n\
             [ -d \"$(git rev-parse --git-path rebase-merge)\" ] || exit 0\n\
             [ -e '{once}' ] && exit 0\n\
             touch '{once}'\n{}",
            rebase.script(),
            once = once.display()
        ),
    );
    let mut daemon = boardd(dir.path()).await;
    let lead = lead(&daemon.socket).await;
    lead.set_repo(repo.repo_args()).await.expect("set_repo");
    let first = lead.add_task(task("config")).await.expect("add").id;
    let second = lead.add_task(task("docs")).await.expect("add").id;
    let alice = Arc::new(unsandboxed_teammate(&daemon.socket, "alice", "coder").await);
    let bob = Arc::new(unsandboxed_teammate(&daemon.socket, "bob", "coder").await);
    let (ea, _) = claim_and_write(&alice, first, &[("config.toml", "port = 1\n")]).await;
    let (eb, wb) = claim_and_write(&bob, second, &[("docs.md", "# docs\n")]).await;
    alice
        .complete_task(first, ea, "done")
        .await
        .expect("the first lands");
    let b = complete_in_background(&bob, second, eb);
    let paused = rebase.reached().await;
    daemon.kill9();
    assert!(b.await.expect("join").is_err());
    assert!(alive(paused.git), "boardd's git outlives it");

    let daemon = restart(dir.path()).await;
    let bob = connect(&daemon.socket, "bob").await;
    register_unsandboxed(&bob, "coder").await.expect("register");
    let mut open = Box::pin(bob.open_worktree(second, eb));
    let early = tokio::time::timeout(std::time::Duration::from_millis(500), &mut open).await;
    assert!(
        early.is_err(),
        "answered while the killed boardd's git still rebased there: {early:?}"
    );
    assert!(rebasing(&wb), "the rebase was touched while it ran");
    rebase.release();
    gone(paused.git).await;
    let opened = open.await.expect("open");
    assert_eq!(opened.found.in_progress, None, "{opened:?}");
    assert!(opened.found.changed.is_empty(), "{opened:?}");
    let done = bob.complete_task(second, eb, "done").await.expect("lands");
    assert_eq!(done.status, TaskStatus::Completed);
    assert_eq!(repo.log("main"), ["docs", "config", "first"]);
    assert_eq!(
        repo.show("main", "config.toml").as_deref(),
        Some("port = 1\n")
    );
    repo.fsck();
}
