//! `prune_worktrees` never removes unmerged work: a worktree and its branch go
//! only when the task's work is on the target and nothing is left in the
//! directory, or when the task was cancelled with `discard`
//! (`docs/design/worktrees.md`, issue 15). Real boardd, real git.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "test code: a panic fails the test, and the harness captures what it prints"
)]

use std::collections::BTreeMap;
use std::path::PathBuf;
use teamboard_protocol::{ErrorCode, EventKind, Pruned, TaskStatus, WorktreeState};
use teamboard_testkit::git::{git, manifest};
use teamboard_testkit::{
    GitRepo, InProc, claim_and_write, code_of, lead, short_tempdir, task, teammate,
};

/// The split a prune answered: task id → state, removed and kept.
fn split(p: &Pruned) -> (BTreeMap<u64, WorktreeState>, BTreeMap<u64, WorktreeState>) {
    let by_task = |entries: &[teamboard_protocol::WorktreeEntry]| {
        entries.iter().map(|e| (e.task, e.state)).collect()
    };
    (by_task(&p.removed), by_task(&p.kept))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prune_removes_only_merged_or_discarded_work_and_leaves_no_orphans() {
    let dir = short_tempdir();
    let repo = GitRepo::new(dir.path());
    let daemon = InProc::start().await;
    let lead = lead(&daemon.socket).await;
    lead.set_repo(repo.repo_args()).await.expect("set_repo");
    let add = |subject: &'static str| {
        let lead = &lead;
        async move { lead.add_task(task(subject)).await.expect("add").id }
    };
    let landed = add("landed").await;
    let dirtied = add("landed, then a file added").await;
    let committed = add("landed, then a commit added").await;
    let kept_cancel = add("cancelled, work kept").await;
    let discarded = add("cancelled with discard").await;
    let working = add("in progress").await;
    let reserved = add("claimed, never opened").await;

    // Landed, clean: prunable.
    let alice = teammate(&daemon.socket, "alice", "coder").await;
    let (e, wt_landed) = claim_and_write(&alice, landed, &[("a.txt", "a\n")]).await;
    alice.complete_task(landed, e, "a").await.expect("lands");
    // Landed, then someone left a file there: unmerged work.
    let (e, wt_dirtied) = claim_and_write(&alice, dirtied, &[("b.txt", "b\n")]).await;
    alice.complete_task(dirtied, e, "b").await.expect("lands");
    std::fs::write(wt_dirtied.join("after.txt"), "written after it landed\n").expect("write");
    // Landed, then a commit on the branch that the target lacks.
    let (e, wt_committed) = claim_and_write(&alice, committed, &[("c.txt", "c\n")]).await;
    alice.complete_task(committed, e, "c").await.expect("lands");
    std::fs::write(wt_committed.join("c.txt"), "c, amended\n").expect("write");
    git(&wt_committed, &["commit", "-q", "-am", "after landing"]);
    let committed_head = repo.head("teamboard/default/task-3");

    // Cancelled with uncommitted work, with and without discard.
    let (_, wt_kept) = claim_and_write(
        &alice,
        kept_cancel,
        &[("d.txt", "d\n"), ("deep/er/d.rs", "fn d() {}\n")],
    )
    .await;
    lead.cancel_task(kept_cancel).await.expect("cancel");
    let (_, wt_discarded) = claim_and_write(&alice, discarded, &[("e.txt", "e\n")]).await;
    lead.cancel_task_discarding(discarded)
        .await
        .expect("cancel, discarding");
    // In progress with uncommitted work, and claimed but never opened.
    let bob = teammate(&daemon.socket, "bob", "coder").await;
    let (_, wt_working) = claim_and_write(&bob, working, &[("README.md", "edited\n")]).await;
    let carol = teammate(&daemon.socket, "carol", "coder").await;
    let claim = carol.claim_task(reserved).await.expect("claim");
    let wt_reserved = PathBuf::from(&claim.task.worktree.expect("reserved").path);
    assert!(!wt_reserved.exists());

    let kept_dirs = [&wt_dirtied, &wt_committed, &wt_kept, &wt_working];
    let manifests: Vec<_> = kept_dirs.iter().map(|d| manifest(d)).collect();
    assert!(manifests[0].contains_key("after.txt"));
    assert!(manifests[1].is_empty(), "committed");
    assert_eq!(
        manifests[2].keys().collect::<Vec<_>>(),
        ["d.txt", "deep/er/d.rs"]
    );
    assert!(manifests[3].contains_key("README.md"));
    assert!(manifest(&wt_discarded).contains_key("e.txt"));

    let want_removed = BTreeMap::from([
        (landed, WorktreeState::Merged),
        (discarded, WorktreeState::Discarded),
    ]);
    let want_kept = BTreeMap::from([
        (dirtied, WorktreeState::Unmerged),
        (committed, WorktreeState::Unmerged),
        (kept_cancel, WorktreeState::Unmerged),
        (working, WorktreeState::Active),
        (reserved, WorktreeState::Reserved),
    ]);

    // A teammate may not prune, not even to look.
    assert_eq!(
        code_of(bob.prune_worktrees(false).await),
        ErrorCode::PermissionDenied
    );
    assert_eq!(
        code_of(bob.prune_worktrees(true).await),
        ErrorCode::PermissionDenied
    );

    // A dry run says what would go, and removes nothing.
    let branches_before = repo.task_branches();
    let worktrees_before = repo.linked_worktrees();
    let dry = lead.prune_worktrees(true).await.expect("dry run");
    assert_eq!(split(&dry), (want_removed.clone(), want_kept.clone()));
    assert_eq!(repo.task_branches(), branches_before);
    assert_eq!(repo.linked_worktrees(), worktrees_before);
    assert!(wt_landed.is_dir() && wt_discarded.is_dir());
    let pruned_events = |history: &[teamboard_protocol::Event]| {
        history
            .iter()
            .filter(|e| e.kind == EventKind::WorktreePruned)
            .count()
    };
    assert_eq!(
        pruned_events(&lead.get_task(landed).await.expect("get").history),
        0
    );
    let entry = dry
        .kept
        .iter()
        .find(|e| e.task == committed)
        .expect("listed");
    assert_eq!((entry.uncommitted, entry.unmerged_commits), (0, 1));
    let entry = dry.kept.iter().find(|e| e.task == dirtied).expect("listed");
    assert_eq!((entry.uncommitted, entry.unmerged_commits), (1, 0));

    // The real thing: the same split.
    let pruned = lead.prune_worktrees(false).await.expect("prune");
    assert_eq!(split(&pruned), (want_removed, want_kept));
    for gone in [&wt_landed, &wt_discarded] {
        assert!(!gone.exists(), "{} removed", gone.display());
    }
    // No orphans: git knows only the kept worktrees and their branches.
    let mut listed = repo.linked_worktrees();
    listed.sort();
    let mut want: Vec<PathBuf> = kept_dirs.iter().map(|d| d.to_path_buf()).collect();
    want.sort();
    assert_eq!(listed, want);
    assert_eq!(
        repo.task_branches(),
        [
            "teamboard/default/task-2",
            "teamboard/default/task-3",
            "teamboard/default/task-4",
            "teamboard/default/task-6",
        ]
    );
    assert!(
        git(&repo.path, &["worktree", "prune", "--dry-run", "-v"]).is_empty(),
        "nothing stale for git to prune"
    );
    // Every kept worktree has its files, byte for byte.
    for (dir, before) in kept_dirs.iter().zip(&manifests) {
        assert_eq!(&manifest(dir), before, "{}", dir.display());
    }
    assert_eq!(repo.head("teamboard/default/task-3"), committed_head);
    // The landed work is on the target, whatever became of its worktree.
    assert_eq!(repo.show("main", "a.txt").as_deref(), Some("a\n"));
    assert!(
        repo.show("main", "e.txt").is_none(),
        "discarded work never landed"
    );

    // The board remembers: pruned once, with an event, and not listed again.
    for id in [landed, discarded] {
        let detail = lead.get_task(id).await.expect("get");
        assert!(detail.task.worktree.as_ref().is_some_and(|w| w.pruned));
        assert_eq!(pruned_events(&detail.history), 1, "#{id}");
    }
    let listed: Vec<u64> = lead
        .list_worktrees()
        .await
        .expect("list")
        .iter()
        .map(|e| e.task)
        .collect();
    assert!(!listed.contains(&landed) && !listed.contains(&discarded));
    let again = lead.prune_worktrees(false).await.expect("prune again");
    assert!(again.removed.is_empty(), "{again:?}");
    assert_eq!(again.kept.len(), 5);
    repo.fsck();

    // The tasks themselves are as they were.
    let status = |id| {
        let lead = &lead;
        async move { lead.get_task(id).await.expect("get").task.status }
    };
    assert_eq!(status(landed).await, TaskStatus::Completed);
    assert_eq!(status(discarded).await, TaskStatus::Cancelled);
    assert_eq!(status(working).await, TaskStatus::InProgress);
    assert_eq!(status(reserved).await, TaskStatus::InProgress);
}

/// A landed task's worktree where someone then committed on a detached HEAD
/// (or on a branch of their own): those commits are on no task branch, so
/// the branch alone says "merged", but removing the worktree would leave
/// the detached ones reachable from nothing. Its HEAD counts as well.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prune_keeps_commits_made_on_a_detached_head_after_landing() {
    let dir = short_tempdir();
    let repo = GitRepo::new(dir.path());
    let daemon = InProc::start().await;
    let lead = lead(&daemon.socket).await;
    lead.set_repo(repo.repo_args()).await.expect("set_repo");
    let id = lead.add_task(task("landed")).await.expect("add").id;
    let alice = teammate(&daemon.socket, "alice", "coder").await;
    let (e, wt) = claim_and_write(&alice, id, &[("a.txt", "a\n")]).await;
    alice.complete_task(id, e, "a").await.expect("lands");
    git(&wt, &["switch", "-q", "--detach"]);
    std::fs::write(wt.join("a.txt"), "a, after landing\n").expect("write");
    git(&wt, &["commit", "-q", "-am", "after landing, detached"]);
    let detached = git(&wt, &["rev-parse", "HEAD"]);

    let listed = lead.list_worktrees().await.expect("list");
    let entry = listed.iter().find(|e| e.task == id).expect("listed");
    assert_eq!(entry.state, WorktreeState::Unmerged, "{entry:?}");
    assert_eq!(entry.unmerged_commits, 1);
    let pruned = lead.prune_worktrees(false).await.expect("prune");
    assert_eq!(
        split(&pruned),
        (
            BTreeMap::new(),
            BTreeMap::from([(id, WorktreeState::Unmerged)])
        )
    );
    assert!(wt.is_dir());
    assert_eq!(git(&wt, &["rev-parse", "HEAD"]), detached);
}

/// A landed task's worktree that was moved elsewhere, with a symbolic link
/// left at its path: prune never follows the link. git would delete what it
/// points to, outside boardd's state directory. It is kept, as `missing`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prune_never_follows_a_symlink_at_a_worktree_path() {
    let dir = short_tempdir();
    let repo = GitRepo::new(dir.path());
    let daemon = InProc::start().await;
    let lead = lead(&daemon.socket).await;
    lead.set_repo(repo.repo_args()).await.expect("set_repo");
    let id = lead.add_task(task("landed")).await.expect("add").id;
    let alice = teammate(&daemon.socket, "alice", "coder").await;
    let (e, wt) = claim_and_write(&alice, id, &[("a.txt", "a\n")]).await;
    alice.complete_task(id, e, "a").await.expect("lands");
    let outside = dir.path().join("outside");
    std::fs::rename(&wt, &outside).expect("move the worktree");
    std::os::unix::fs::symlink(&outside, &wt).expect("symlink");

    let pruned = lead.prune_worktrees(false).await.expect("prune");
    for file in ["a.txt", ".git"] {
        assert!(outside.join(file).exists(), "{file} was deleted");
    }
    assert_eq!(
        split(&pruned),
        (
            BTreeMap::new(),
            BTreeMap::from([(id, WorktreeState::Missing)])
        )
    );
    assert!(wt.symlink_metadata().expect("lstat").is_symlink());
}
