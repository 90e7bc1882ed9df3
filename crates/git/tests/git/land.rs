use crate::support::{Fixture, git, head, parents};
use std::path::Path;
use teamboard_git::{Land, Style, Update};

/// A task with one commit, updated to main by `style`, and main checked out
/// nowhere (the root worktree detached at main's head).
fn ready(style: Style) -> (Fixture, std::path::PathBuf, String) {
    let fx = Fixture::new();
    let (path, branch) = fx.task("task-1");
    fx.commit(&path, "a.txt", "task\n");
    fx.commit_on_main("b.txt", "main\n");
    let update = fx.repo.update(&path, "main", style).expect("update");
    assert!(matches!(update, Update::Updated(_)), "{update:?}");
    git(&fx.root, &["checkout", "-q", "--detach"]);
    (fx, path, branch)
}

fn reflog_top(root: &Path) -> String {
    git(root, &["reflog", "-1", "--format=%gs", "refs/heads/main"])
}

#[test]
fn rebase_style_lands_as_a_fast_forward() {
    let (fx, _, branch) = ready(Style::Rebase);
    let old = fx.branch("main");
    let task = fx.branch(&branch);
    let landed = fx
        .repo
        .land("main", &old, &branch, Style::Rebase, "unused", None)
        .expect("land");
    assert_eq!(landed, Land::Landed(task.clone()));
    assert_eq!(fx.branch("main"), task);
    assert_eq!(
        reflog_top(&fx.root),
        "teamboard: land teamboard/task-1 (fast-forward)"
    );
    fx.repo.fsck().expect("sound");
}

#[test]
fn merge_style_lands_a_merge_commit_without_touching_any_checkout() {
    let (fx, path, branch) = ready(Style::Merge);
    let old = fx.branch("main");
    let task = fx.branch(&branch);
    let root_state = fx.repo.worktree_state(&fx.root).expect("state");

    let landed = fx
        .repo
        .land(
            "main",
            &old,
            &branch,
            Style::Merge,
            "Land task 1: add a",
            None,
        )
        .expect("land");
    let Land::Landed(merge) = landed else {
        panic!("expected a landing, got {landed:?}");
    };
    assert_eq!(fx.branch("main"), merge);
    assert_eq!(parents(&fx.root, &merge), [old.clone(), task.clone()]);
    assert_eq!(
        git(&fx.root, &["rev-parse", &format!("{merge}^{{tree}}")]),
        git(&fx.root, &["rev-parse", &format!("{task}^{{tree}}")])
    );
    assert_eq!(
        git(&fx.root, &["show", "-s", "--format=%s", &merge]),
        "Land task 1: add a"
    );
    assert_eq!(
        reflog_top(&fx.root),
        "teamboard: land teamboard/task-1 (merge)"
    );
    // No checkout moved: the root is still detached at the old head, clean,
    // and the task's worktree is where it was.
    assert_eq!(fx.repo.worktree_state(&fx.root).expect("state"), root_state);
    assert_eq!(head(&fx.root), old);
    assert_eq!(head(&path), task);
    fx.repo.fsck().expect("sound");
}

#[test]
fn a_target_that_moved_is_reported_and_nothing_changes() {
    let (fx, _, branch) = ready(Style::Rebase);
    let old = fx.branch("main");
    let task = fx.branch(&branch);
    git(&fx.root, &["checkout", "-q", "main"]);
    let now = fx.commit_on_main("c.txt", "someone else\n");
    git(&fx.root, &["checkout", "-q", "--detach"]);

    for style in [Style::Rebase, Style::Merge] {
        let landed = fx
            .repo
            .land("main", &old, &branch, style, "m", None)
            .expect("land");
        assert_eq!(landed, Land::Moved { now: now.clone() });
    }
    assert_eq!(fx.branch("main"), now);
    assert_eq!(fx.branch(&branch), task);
}

#[test]
fn a_task_that_does_not_contain_the_target_is_behind() {
    let fx = Fixture::new();
    let (path, branch) = fx.task("task-1");
    let task = fx.commit(&path, "a.txt", "task\n");
    let main = fx.commit_on_main("b.txt", "main\n");
    git(&fx.root, &["checkout", "-q", "--detach"]);
    for style in [Style::Rebase, Style::Merge] {
        assert_eq!(
            fx.repo
                .land("main", &main, &branch, style, "m", None)
                .expect("land"),
            Land::Behind
        );
    }
    assert_eq!(fx.branch("main"), main);
    assert_eq!(fx.branch(&branch), task);
}

#[test]
fn a_task_that_adds_nothing_lands_without_moving_the_target() {
    let fx = Fixture::new();
    let (_, branch) = fx.task("task-1");
    git(&fx.root, &["checkout", "-q", "--detach"]);
    let old = fx.branch("main");
    let reflog = reflog_top(&fx.root);
    for style in [Style::Rebase, Style::Merge] {
        assert_eq!(
            fx.repo
                .land("main", &old, &branch, style, "m", None)
                .expect("land"),
            Land::Landed(old.clone())
        );
    }
    assert_eq!(fx.branch("main"), old);
    assert_eq!(reflog_top(&fx.root), reflog, "the ref was not rewritten");
}

#[test]
fn a_refused_ref_update_is_an_error_and_leaves_the_target() {
    let git_version = teamboard_git::version().expect("git");
    if (git_version.major, git_version.minor) < (2, 28) {
        eprintln!("skipped: the reference-transaction hook needs git 2.28");
        return;
    }
    let (fx, _, branch) = ready(Style::Rebase);
    let old = fx.branch("main");
    crate::support::hook(
        &fx.root,
        "reference-transaction",
        "#!/bin/sh\n[ \"$1\" = prepared ] && { echo 'frozen' >&2; exit 1; }\nexit 0\n",
    );
    let err = fx
        .repo
        .land("main", &old, &branch, Style::Rebase, "m", None)
        .expect_err("the hook refuses the transaction");
    assert!(err.to_string().contains("update-ref"), "{err}");
    assert_eq!(fx.branch("main"), old);
}

#[test]
fn an_earlier_landing_of_the_task_is_found_in_the_targets_reflog() {
    let fx = Fixture::new();
    let base = fx.branch("main");
    let (path, branch) = fx.task("task-1");
    fx.commit(&path, "a.txt", "task\n");
    fx.commit_on_main("b.txt", "main\n");
    fx.repo
        .update(&path, "main", Style::Rebase)
        .expect("update");
    git(&fx.root, &["checkout", "-q", "--detach"]);
    assert_eq!(
        fx.repo
            .earlier_landing("main", &branch, &base)
            .expect("look"),
        None,
        "not landed yet"
    );
    let old = fx.branch("main");
    let task = fx.branch(&branch);
    fx.repo
        .land("main", &old, &branch, Style::Rebase, "unused", None)
        .expect("land");
    fx.commit_on_main("c.txt", "later\n");

    // Found, even after the target moved on.
    assert_eq!(
        fx.repo
            .earlier_landing("main", &branch, &base)
            .expect("look"),
        Some((old.clone(), task.clone()))
    );
    // Not for another branch, nor for a task whose base is newer than the
    // landing (a branch name an earlier board used for another task).
    assert_eq!(
        fx.repo
            .earlier_landing("main", "teamboard/task-2", &base)
            .expect("look"),
        None
    );
    let newer = fx.branch("main");
    assert_eq!(
        fx.repo
            .earlier_landing("main", &branch, &newer)
            .expect("look"),
        None
    );
}

/// The merge commit's message is the task's subject and result, which may be
/// longer than one command-line argument may be.
#[test]
fn a_merge_commit_takes_a_message_longer_than_an_argument_may_be() {
    let (fx, _, branch) = ready(Style::Merge);
    let old = fx.branch("main");
    let message = format!("Task 1\n\n{}", "the result goes on. ".repeat(10_000));
    let landed = fx
        .repo
        .land("main", &old, &branch, Style::Merge, &message, None)
        .expect("land");
    let Land::Landed(merge) = landed else {
        panic!("expected a landing, got {landed:?}");
    };
    let body = git(&fx.root, &["show", "-s", "--format=%B", &merge]);
    assert_eq!(body.trim_end(), message.trim_end());
}
