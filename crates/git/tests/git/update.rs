use crate::support::{Fixture, git, head, hook, parents, read, write};
use std::path::Path;
use teamboard_git::{GitError, Style, Update};

/// After an update that did not happen, the worktree is exactly as before.
fn untouched(fx: &Fixture, path: &Path, branch: &str, before: &str) {
    let state = fx.repo.worktree_state(path).expect("state");
    assert!(state.changed.is_empty(), "left changes behind: {state:?}");
    assert!(
        !state.merging && !state.rebasing,
        "left an operation: {state:?}"
    );
    assert_eq!(state.branch.as_deref(), Some(branch));
    assert_eq!(state.head, before);
    assert_eq!(fx.branch(branch), before);
}

#[test]
fn a_branch_that_contains_the_target_is_up_to_date() {
    let fx = Fixture::new();
    let (path, branch) = fx.task("task-1");
    for style in [Style::Rebase, Style::Merge] {
        assert_eq!(
            fx.repo.update(&path, "main", style).expect("update"),
            Update::UpToDate
        );
    }
    let work = fx.commit(&path, "a.txt", "task\n");
    assert_eq!(
        fx.repo.update(&path, "main", Style::Merge).expect("update"),
        Update::UpToDate
    );
    assert_eq!(fx.branch(&branch), work);
}

#[test]
fn rebase_replays_the_task_on_the_target() {
    let fx = Fixture::new();
    let (path, branch) = fx.task("task-1");
    fx.commit(&path, "a.txt", "task\n");
    let main = fx.commit_on_main("b.txt", "main\n");

    let Update::Updated(new) = fx
        .repo
        .update(&path, "main", Style::Rebase)
        .expect("update")
    else {
        panic!("expected an update");
    };
    assert_eq!(new, fx.branch(&branch));
    assert_eq!(
        parents(&path, &new),
        vec![main.clone()],
        "linear on top of main"
    );
    assert_eq!(read(&path, "b.txt"), "main\n");
    assert_eq!(read(&path, "a.txt"), "task\n");
    assert_eq!(fx.repo.count_commits(&main, &new).expect("count"), 1);
}

#[test]
fn merge_brings_the_target_in_with_a_merge_commit() {
    let fx = Fixture::new();
    let (path, branch) = fx.task("task-1");
    let work = fx.commit(&path, "a.txt", "task\n");
    let main = fx.commit_on_main("b.txt", "main\n");

    let Update::Updated(new) = fx.repo.update(&path, "main", Style::Merge).expect("update") else {
        panic!("expected an update");
    };
    assert_eq!(new, fx.branch(&branch));
    assert_eq!(parents(&path, &new), [work, main]);
    assert_eq!(
        git(&path, &["show", "-s", "--format=%s", &new]),
        "Merge branch 'main' into teamboard/task-1"
    );
    assert_eq!(read(&path, "b.txt"), "main\n");
}

#[test]
fn a_task_without_commits_of_its_own_just_moves_to_the_target() {
    let fx = Fixture::new();
    let (rebased, _) = fx.task("task-1");
    let (merged, _) = fx.task("task-2");
    let main = fx.commit_on_main("b.txt", "main\n");
    for (path, style) in [(rebased, Style::Rebase), (merged, Style::Merge)] {
        assert_eq!(
            fx.repo.update(&path, "main", style).expect("update"),
            Update::Updated(main.clone()),
            "{style:?}"
        );
    }
}

fn conflict(style: Style) {
    let fx = Fixture::new();
    let (path, branch) = fx.task("task-1");
    fx.commit(&path, "same.txt", "task side\n");
    fx.commit(&path, "ours-only.txt", "fine\n");
    let before = fx.commit(&path, "deleted-on-main.txt", "task edit\n");
    fx.commit_on_main("deleted-on-main.txt", "base\n");
    // main: same.txt differs, deleted-on-main.txt is removed after a change.
    fx.commit_on_main("same.txt", "main side\n");
    git(&fx.root, &["rm", "-q", "deleted-on-main.txt"]);
    git(&fx.root, &["commit", "-q", "-m", "remove"]);

    let got = fx.repo.update(&path, "main", style).expect("update");
    let Update::Conflict { paths, .. } = got else {
        panic!("expected a conflict, got {got:?}");
    };
    assert!(paths.contains(&"same.txt".to_string()), "{paths:?}");
    assert!(!paths.contains(&"ours-only.txt".to_string()), "{paths:?}");
    untouched(&fx, &path, &branch, &before);
    assert_eq!(read(&path, "same.txt"), "task side\n");
}

#[test]
fn a_rebase_conflict_names_the_paths_and_changes_nothing() {
    conflict(Style::Rebase);
}

#[test]
fn a_merge_conflict_names_the_paths_and_changes_nothing() {
    conflict(Style::Merge);
}

#[test]
fn a_dirty_worktree_is_refused_with_its_paths() {
    let fx = Fixture::new();
    let (path, _) = fx.task("task-1");
    fx.commit_on_main("b.txt", "main\n");
    write(&path, "README", "uncommitted\n");
    let err = fx
        .repo
        .update(&path, "main", Style::Rebase)
        .expect_err("dirty");
    assert!(
        matches!(&err, GitError::Dirty { paths } if paths == &["README"]),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "the worktree has uncommitted changes: README"
    );
}

/// Untracked files do not stop an update (checks leave caches and reports
/// behind), and survive it.
#[test]
fn untracked_files_do_not_stop_an_update_and_stay() {
    let fx = Fixture::new();
    let (path, _) = fx.task("task-1");
    fx.commit_on_main("b.txt", "main\n");
    write(&path, "wip.txt", "untracked\n");
    let done = fx
        .repo
        .update(&path, "main", Style::Rebase)
        .expect("update");
    assert!(matches!(done, Update::Updated(_)), "{done:?}");
    assert_eq!(
        std::fs::read_to_string(path.join("wip.txt")).expect("kept"),
        "untracked\n"
    );
    let state = fx.repo.worktree_state(&path).expect("state");
    assert_eq!((state.changed.len(), state.untracked), (1, 1));
}

#[test]
fn an_unknown_target_is_named() {
    let fx = Fixture::new();
    let (path, _) = fx.task("task-1");
    let err = fx
        .repo
        .update(&path, "mian", Style::Rebase)
        .expect_err("typo");
    assert_eq!(
        err.to_string(),
        "there is no branch named 'mian' in this repository"
    );
}

#[test]
fn a_refusing_hook_is_an_error_not_a_conflict_and_changes_nothing() {
    let fx = Fixture::new();
    let (path, branch) = fx.task("task-1");
    let before = fx.commit(&path, "a.txt", "task\n");
    fx.commit_on_main("b.txt", "main\n");
    hook(
        &fx.root,
        "pre-merge-commit",
        "#!/bin/sh\necho 'no merges today' >&2\nexit 1\n",
    );

    let err = fx
        .repo
        .update(&path, "main", Style::Merge)
        .expect_err("the hook refuses");
    assert!(err.to_string().contains("no merges today"), "{err}");
    untouched(&fx, &path, &branch, &before);
    assert_eq!(head(&path), before);
}
