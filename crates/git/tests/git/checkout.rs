//! Landing on a branch that the repository's own worktree has checked out.

use crate::support::{Fixture, git, read, write};
use teamboard_git::{Land, Style, Update};

/// A task with one commit (a.txt), brought up to date with main, which the
/// root worktree keeps checked out.
fn ready(fx: &Fixture) -> String {
    let (path, branch) = fx.task("task-1");
    fx.commit(&path, "a.txt", "task\n");
    fx.commit_on_main("b.txt", "main\n");
    let update = fx
        .repo
        .update(&path, "main", Style::Rebase)
        .expect("update");
    assert!(matches!(update, Update::Updated(_)), "{update:?}");
    branch
}

#[test]
fn a_clean_checkout_follows_its_branch() {
    let fx = Fixture::new();
    let branch = ready(&fx);
    let (old, task) = (fx.branch("main"), fx.branch(&branch));
    let blockers = fx
        .repo
        .checkout_blockers(&fx.root, &old, &task)
        .expect("look");
    assert!(blockers.is_empty(), "{blockers:?}");
    let landed = fx
        .repo
        .land("main", &old, &branch, Style::Rebase, "m", Some(&fx.root))
        .expect("land");
    assert_eq!(landed, Land::Landed(task));
    assert_eq!(read(&fx.root, "a.txt"), "task\n");
    assert_eq!(git(&fx.root, &["status", "--porcelain"]), "");
}

#[test]
fn changed_tracked_files_and_untracked_ones_in_the_way_block_it() {
    let fx = Fixture::new();
    let branch = ready(&fx);
    let (old, task) = (fx.branch("main"), fx.branch(&branch));
    // An untracked file elsewhere is no obstacle.
    write(&fx.root, "notes.txt", "mine\n");
    let none = fx
        .repo
        .checkout_blockers(&fx.root, &old, &task)
        .expect("look");
    assert!(none.is_empty(), "{none:?}");
    // One where the landing writes is.
    write(&fx.root, "a.txt", "mine too\n");
    let got = fx
        .repo
        .checkout_blockers(&fx.root, &old, &task)
        .expect("look");
    assert_eq!(got, vec!["a.txt".to_string()]);
    std::fs::remove_file(fx.root.join("a.txt")).expect("rm");
    // A tracked change anywhere is.
    write(&fx.root, "README", "edited\n");
    let got = fx
        .repo
        .checkout_blockers(&fx.root, &old, &task)
        .expect("look");
    assert_eq!(got, vec!["README".to_string()]);
    // And read-tree itself refuses to touch a file that changed, so a change
    // made after the look loses nothing.
    write(&fx.root, "README", "hello\n");
    write(&fx.root, "b.txt", "edited after the look\n");
    let moved = fx
        .repo
        .land("main", &old, &branch, Style::Merge, "m", Some(&fx.root));
    // b.txt is not touched by the landing: the move goes through and keeps it.
    assert!(moved.is_ok(), "{moved:?}");
    assert_eq!(read(&fx.root, "b.txt"), "edited after the look\n");
    assert_eq!(read(&fx.root, "a.txt"), "task\n");
}

#[test]
fn a_checkout_a_killed_landing_already_moved_is_not_blocked() {
    let fx = Fixture::new();
    let branch = ready(&fx);
    let (old, task) = (fx.branch("main"), fx.branch(&branch));
    // The files moved, the ref did not: what a kill between the two leaves.
    git(&fx.root, &["read-tree", "-u", "-m", &old, &task]);
    let got = fx
        .repo
        .checkout_blockers(&fx.root, &old, &task)
        .expect("look");
    assert!(got.is_empty(), "{got:?}");
    let landed = fx
        .repo
        .land("main", &old, &branch, Style::Rebase, "m", Some(&fx.root))
        .expect("land");
    assert_eq!(landed, Land::Landed(task));
    assert_eq!(git(&fx.root, &["status", "--porcelain"]), "");
}
