//! What the completion gate and the merge queue refuse to do, whatever the
//! owner did in its worktree meanwhile: commit on another branch than the
//! task's, land a commit that no check saw, throw away a rebase the owner
//! started, or land a task whose claim the lead ended
//! (`docs/design/worktrees.md`). Real boardd, real git.

use std::path::{Path, PathBuf};
use teamboard_protocol::{Client, ErrorCode, TaskStatus};
use teamboard_testkit::git::git;
use teamboard_testkit::{GitRepo, InProc, lead, short_tempdir, task, teammate};

/// Claims `id` as `who`, opens its worktree and writes `files` there;
/// answers the epoch and the worktree.
async fn claim_and_write(who: &Client, id: u64, files: &[(&str, &str)]) -> (u64, PathBuf) {
    let claim = who.claim_task(id).await.expect("claim");
    let opened = who.open_worktree(id, claim.epoch).await.expect("open");
    let wt = PathBuf::from(&opened.worktree.path);
    for (path, content) in files {
        std::fs::write(wt.join(path), content).expect("write");
    }
    (claim.epoch, wt)
}

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
    let alice = teammate(&daemon.socket, "alice", "coder").await;
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
