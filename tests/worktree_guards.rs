//! What the completion gate and the merge queue refuse to do, whatever the
//! owner did in its worktree meanwhile: commit on another branch than the
//! task's, land a commit that no check saw, throw away a rebase the owner
//! started, or land a task whose claim the lead ended
//! (`docs/design/worktrees.md`). Real boardd, real git.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "test code: a panic fails the test, and the harness captures what it prints"
)]

use std::path::Path;
use std::sync::Arc;
use teamboard_protocol::request::NewTask;
use teamboard_protocol::{ErrorCode, LandingStage, TaskStatus};
use teamboard_testkit::git::{git, git_command};
// Owners register with their sandbox off (`unsandboxed_teammate`): the
// checks here share pids and files with the test outside the worktree.
use teamboard_testkit::{
    GitRepo, InProc, Pause, add_held_task, claim_and_write, complete_in_background, lead,
    pause_main_update, short_tempdir, stage_is, task, unsandboxed_teammate,
};

fn read(wt: &Path, file: &str) -> String {
    std::fs::read_to_string(wt.join(file)).expect("read")
}

/// The target is checked out nowhere, so nothing stops an owner from
/// switching its worktree to it, or to a detached HEAD. A gate that committed
/// there would move the target with nothing checked, or leave the work on no
/// branch while an empty task branch "landed". It refuses instead, before it
/// commits anything.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worktree_off_its_task_branch_is_refused_and_nothing_moves() {
    let dir = short_tempdir();
    let repo = GitRepo::new(dir.path());
    let daemon = InProc::start().await;
    let lead = lead(&daemon.socket).await;
    lead.set_repo(repo.repo_args()).await.expect("set_repo");
    let id = lead.add_task(task("config")).await.expect("add").id;
    let alice = unsandboxed_teammate(&daemon.socket, "alice", "coder").await;
    let (epoch, wt) = claim_and_write(&alice, id, &[("config.toml", "port = 1\n")]).await;
    let branch = "teamboard/default/task-1";
    let old = repo.head("main");

    for switch in [&["switch", "-q", "main"][..], &["switch", "-q", "--detach"]] {
        git(&wt, switch);
        let e = alice
            .complete_task(id, epoch, "configured")
            .await
            .expect_err("not on the task's branch");
        assert_eq!(e.code(), Some(ErrorCode::Git), "{e}");
        assert!(e.to_string().contains(branch), "{e}");
        assert_eq!(repo.head("main"), old, "the target did not move");
        let t = alice.get_task(id).await.expect("get").task;
        assert_eq!(t.status, TaskStatus::InProgress);
        assert!(t.landing.is_none());
        assert_eq!(read(&wt, "config.toml"), "port = 1\n", "still uncommitted");
        git(&wt, &["switch", "-q", branch]);
    }

    // Back on its branch (the uncommitted file comes along), it lands.
    let done = alice
        .complete_task(id, epoch, "configured")
        .await
        .expect("lands");
    assert_eq!(done.status, TaskStatus::Completed);
    assert_eq!(
        repo.show("main", "config.toml").as_deref(),
        Some("port = 1\n")
    );
    assert_eq!(repo.log("main"), ["config", "first"]);
}

/// The queue lands the head that passed the checks, not whatever the branch
/// holds by then: a commit made in the worktree after the gate committed
/// (here by the check itself, as an owner still working there could) was
/// checked by nobody.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_made_after_the_gate_does_not_land_unchecked() {
    let dir = short_tempdir();
    let repo = GitRepo::new(dir.path());
    let daemon = InProc::start().await;
    let lead = lead(&daemon.socket).await;
    lead.set_repo(repo.repo_args()).await.expect("set_repo");
    let once = dir.path().join("committed-once");
    let check = format!(
        "[ -e '{0}' ] || {{ touch '{0}' && echo late > late.txt && git add late.txt && git commit -q -m 'not checked'; }}",
        once.display()
    );
    let id = lead
        .add_task(NewTask {
            checks: vec![check],
            ..task("config")
        })
        .await
        .expect("add")
        .id;
    let alice = unsandboxed_teammate(&daemon.socket, "alice", "coder").await;
    let (epoch, _) = claim_and_write(&alice, id, &[("config.toml", "port = 1\n")]).await;
    let old = repo.head("main");

    let e = alice
        .complete_task(id, epoch, "configured")
        .await
        .expect_err("the branch moved after its checks");
    assert_eq!(e.code(), Some(ErrorCode::Git), "{e}");
    assert!(e.to_string().contains("complete again"), "{e}");
    assert_eq!(repo.head("main"), old, "nothing unchecked landed");
    let t = alice.get_task(id).await.expect("get").task;
    assert_eq!(t.status, TaskStatus::InProgress, "the owner keeps it");

    // Completed again, the new commit is checked, and lands.
    let done = alice
        .complete_task(id, epoch, "configured")
        .await
        .expect("lands");
    assert_eq!(done.status, TaskStatus::Completed);
    assert_eq!(repo.log("main"), ["not checked", "config", "first"]);
    assert_eq!(
        done.check_runs[0].commit,
        repo.head("main"),
        "the checks ran on what landed"
    );
}

/// While its task waits for its checks or in the queue, the owner starts a
/// rebase of its own and resolves part of a conflict. The queue must not
/// `rebase --abort` that (only an update boardd itself marked is its to
/// abort): it refuses the landing, and the owner's resolution stays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_queue_never_aborts_a_rebase_the_owner_started() {
    let dir = short_tempdir();
    let repo = GitRepo::new(dir.path());
    let daemon = InProc::start().await;
    let lead = lead(&daemon.socket).await;
    lead.set_repo(repo.repo_args()).await.expect("set_repo");
    let (id, check) = add_held_task(&lead, dir.path(), "readme").await;
    let alice = Arc::new(unsandboxed_teammate(&daemon.socket, "alice", "coder").await);
    let (epoch, wt) = claim_and_write(&alice, id, &[("README.md", "task side\n")]).await;
    let completing = complete_in_background(&alice, id, epoch);
    check.reached().await;

    // The target moves; the owner rebases onto it and resolves the conflict,
    // but has not continued the rebase yet.
    repo.commit_on("main", "README.md", "main side\n");
    let stopped = git_command(&wt)
        .args(["rebase", "main"])
        .output()
        .expect("rebase");
    assert!(
        !stopped.status.success(),
        "the rebase stops on the conflict"
    );
    std::fs::write(wt.join("README.md"), "both sides\n").expect("resolve");
    git(&wt, &["add", "README.md"]);
    let target = repo.head("main");

    check.release();
    let e = completing
        .await
        .expect("join")
        .expect_err("the worktree is in the middle of a rebase");
    assert!(e.to_string().contains("rebase"), "{e}");
    assert_eq!(
        read(&wt, "README.md"),
        "both sides\n",
        "the resolution stays"
    );
    let rebasing = git(&wt, &["rev-parse", "--git-path", "rebase-merge"]);
    assert!(
        wt.join(rebasing).is_dir(),
        "the owner's rebase is still there"
    );
    assert_eq!(repo.head("main"), target);
    let t = alice.get_task(id).await.expect("get").task;
    assert_eq!(t.status, TaskStatus::InProgress, "the owner keeps it");
}

/// A cancel while the task waits in the merge queue ends its landing, as it
/// does while the checks run: the owner hears `stale_epoch`, and the queue
/// must not land the work anyway once it gets to it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_cancelled_while_queued_does_not_land() {
    let dir = short_tempdir();
    let repo = GitRepo::new(dir.path());
    let land = Pause::new(dir.path(), "land");
    // The first landing stops once the target has moved, so that the
    // repository's worker is busy while the second task waits behind it.
    pause_main_update(&repo, &land, "committed");
    let daemon = InProc::start().await;
    let lead = lead(&daemon.socket).await;
    lead.set_repo(repo.repo_args()).await.expect("set_repo");
    let (first, check_a) = add_held_task(&lead, dir.path(), "config").await;
    let (second, check_b) = add_held_task(&lead, dir.path(), "docs").await;
    let alice = Arc::new(unsandboxed_teammate(&daemon.socket, "alice", "coder").await);
    let bob = Arc::new(unsandboxed_teammate(&daemon.socket, "bob", "coder").await);
    let (ea, _) = claim_and_write(&alice, first, &[("config.toml", "port = 1\n")]).await;
    let (eb, wb) = claim_and_write(&bob, second, &[("docs.md", "# docs\n")]).await;

    let a = complete_in_background(&alice, first, ea);
    let b = complete_in_background(&bob, second, eb);
    check_a.reached().await;
    check_b.reached().await;
    check_a.release();
    land.reached().await;
    check_b.release();
    stage_is(&lead, second, LandingStage::Queued).await;

    let cancelled = lead.cancel_task(second).await.expect("cancel");
    assert_eq!(cancelled.status, TaskStatus::Cancelled);
    let e = b.await.expect("join").expect_err("the claim ended");
    assert_eq!(e.code(), Some(ErrorCode::StaleEpoch), "{e}");
    land.release();
    assert_eq!(
        a.await.expect("join").expect("first lands").status,
        TaskStatus::Completed
    );

    // The first landing is the last: the worker has finished with the second
    // once a job queued behind it is answered.
    lead.list_worktrees().await.expect("list");
    assert_eq!(repo.log("main"), ["config", "first"]);
    assert!(repo.show("main", "docs.md").is_none());
    let t = lead.get_task(second).await.expect("get").task;
    assert_eq!(t.status, TaskStatus::Cancelled);
    assert!(t.worktree.as_ref().is_some_and(|w| w.merged.is_none()));
    // The work stays on its branch, for a retry.
    assert_eq!(
        repo.show("teamboard/default/task-2", "docs.md").as_deref(),
        Some("# docs\n")
    );
    assert!(wb.is_dir());
}

/// A git step that fails on the disk (here: the worktrees directory is a
/// file, so no worktree can be made in it) is a `git` error. `storage` would
/// tell the client that boardd could not persist a change and is stopping
/// (docs/protocol.md §5), which is not so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worktree_that_cannot_be_made_on_disk_is_a_git_error_not_storage() {
    let dir = short_tempdir();
    let repo = GitRepo::new(dir.path());
    let daemon = InProc::start().await;
    let lead = lead(&daemon.socket).await;
    let worktrees = daemon.state_dir.join("worktrees");
    std::fs::write(&worktrees, "not a directory").expect("write");
    let e = lead
        .set_repo(repo.repo_args())
        .await
        .expect_err("no worktrees dir");
    assert_eq!(e.code(), Some(ErrorCode::Git), "{e}");

    std::fs::remove_file(&worktrees).expect("rm");
    let set = lead.set_repo(repo.repo_args()).await.expect("set_repo");
    std::fs::remove_dir(&set.worktrees).expect("rmdir");
    std::fs::write(&set.worktrees, "not a directory").expect("write");
    let id = lead.add_task(task("config")).await.expect("add").id;
    let alice = unsandboxed_teammate(&daemon.socket, "alice", "coder").await;
    let claim = alice.claim_task(id).await.expect("claim");
    let e = alice
        .open_worktree(id, claim.epoch)
        .await
        .expect_err("no worktree can be made");
    assert_eq!(e.code(), Some(ErrorCode::Git), "{e}");
    // boardd goes on.
    assert_eq!(lead.get_repo().await.expect("get"), Some(set));
}

/// A symbolic link at a task's worktree path is never followed: git would
/// build the worktree where it points, outside boardd's state directory, and
/// a later prune would delete that directory. `open_worktree` refuses it and
/// makes nothing; once the link is gone, the worktree opens where it belongs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_symlink_at_the_worktree_path_is_refused_and_never_followed() {
    let dir = short_tempdir();
    let repo = GitRepo::new(dir.path());
    let daemon = InProc::start().await;
    let lead = lead(&daemon.socket).await;
    lead.set_repo(repo.repo_args()).await.expect("set_repo");
    let id = lead.add_task(task("elsewhere")).await.expect("add").id;
    let alice = unsandboxed_teammate(&daemon.socket, "alice", "coder").await;
    let claim = alice.claim_task(id).await.expect("claim");
    let wt = std::path::PathBuf::from(claim.task.worktree.expect("reserved").path);
    let outside = dir.path().join("outside");
    std::fs::create_dir_all(&outside).expect("mkdir");
    std::os::unix::fs::symlink(&outside, &wt).expect("symlink");

    let e = alice
        .open_worktree(id, claim.epoch)
        .await
        .expect_err("a symlink at the path");
    assert_eq!(e.code(), Some(ErrorCode::Git), "{e}");
    assert!(e.to_string().contains("symbolic link"), "{e}");
    let made: Vec<_> = std::fs::read_dir(&outside).expect("ls").collect();
    assert!(made.is_empty(), "git wrote where the link points: {made:?}");
    assert!(wt.symlink_metadata().expect("lstat").is_symlink());
    assert!(
        repo.task_branches().is_empty(),
        "{:?}",
        repo.task_branches()
    );

    std::fs::remove_file(&wt).expect("remove the link");
    let opened = alice.open_worktree(id, claim.epoch).await.expect("open");
    assert!(opened.fresh);
    assert!(wt.symlink_metadata().expect("lstat").is_dir());
}
