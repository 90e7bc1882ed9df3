use crate::support::{Fixture, git, head, try_git, write};

#[test]
fn state_lists_modified_untracked_and_renamed_paths() {
    let fx = Fixture::new();
    // A user's setting that hides untracked files must not hide new work.
    git(&fx.root, &["config", "status.showUntrackedFiles", "no"]);
    let (path, branch) = fx.task("task-1");
    fx.commit(&path, "old name.txt", "content\n");
    write(&path, "README", "changed\n");
    write(&path, "new/file.txt", "untracked\n");
    git(&path, &["mv", "old name.txt", "renamed.txt"]);

    let state = fx.repo.worktree_state(&path).expect("state");
    assert_eq!(state.head, head(&path));
    assert_eq!(state.branch.as_deref(), Some(branch.as_str()));
    let mut changed = state.changed.clone();
    changed.sort();
    assert_eq!(changed, ["README", "new/", "renamed.txt"]);
    assert!(!state.merging && !state.rebasing);
}

#[test]
fn a_clean_worktree_has_nothing_changed() {
    let fx = Fixture::new();
    let (path, _) = fx.task("task-1");
    let state = fx.repo.worktree_state(&path).expect("state");
    assert!(state.changed.is_empty(), "{state:?}");
    let state = fx
        .repo
        .worktree_state(&fx.root)
        .expect("the main worktree too");
    assert_eq!(state.branch.as_deref(), Some("main"));
}

#[test]
fn a_stopped_merge_is_seen_and_aborted() {
    let fx = Fixture::new();
    let (path, _) = fx.task("task-1");
    let before = fx.commit(&path, "same.txt", "task side\n");
    fx.commit_on_main("same.txt", "main side\n");
    let (ok, _) = try_git(&path, &["merge", "main"]);
    assert!(!ok, "the merge stops on the conflict");

    let state = fx.repo.worktree_state(&path).expect("state");
    assert!(state.merging && !state.rebasing, "{state:?}");
    assert_eq!(state.changed, ["same.txt"]);

    assert!(fx.repo.abort_in_progress(&path).expect("abort"));
    let state = fx.repo.worktree_state(&path).expect("state");
    assert!(!state.merging && state.changed.is_empty(), "{state:?}");
    assert_eq!(state.head, before);
    assert!(
        !fx.repo
            .abort_in_progress(&path)
            .expect("nothing left to abort")
    );
}

#[test]
fn a_stopped_rebase_is_seen_with_its_branch_and_aborted() {
    let fx = Fixture::new();
    let (path, branch) = fx.task("task-1");
    let before = fx.stopped_rebase(&path);

    let state = fx.repo.worktree_state(&path).expect("state");
    assert!(state.rebasing && !state.merging, "{state:?}");
    assert_eq!(
        state.branch.as_deref(),
        Some(branch.as_str()),
        "the branch being rebased"
    );

    assert!(fx.repo.abort_in_progress(&path).expect("abort"));
    let state = fx.repo.worktree_state(&path).expect("state");
    assert!(!state.rebasing && state.changed.is_empty(), "{state:?}");
    assert_eq!(state.branch.as_deref(), Some(branch.as_str()));
    assert_eq!(fx.branch(&branch), before);
}

#[test]
fn only_a_rebase_of_boardds_own_update_is_aborted_for_it() {
    let fx = Fixture::new();
    let (path, branch) = fx.task("task-1");
    let before = fx.stopped_rebase(&path);

    // The owner's own rebase is theirs to finish.
    assert!(!fx.repo.abort_own_update(&path).expect("abort own"));
    assert!(fx.repo.worktree_state(&path).expect("state").rebasing);

    // One that `update` started and a killed boardd left behind carries its
    // mark (the file `update` writes in the worktree's git directory).
    let mark = git(&path, &["rev-parse", "--git-path", "teamboard-update"]);
    let mark = path.join(mark);
    std::fs::write(&mark, "rebase\n").expect("mark");
    assert!(fx.repo.abort_own_update(&path).expect("abort own"));
    let state = fx.repo.worktree_state(&path).expect("state");
    assert!(!state.rebasing && state.changed.is_empty(), "{state:?}");
    assert_eq!(state.branch.as_deref(), Some(branch.as_str()));
    assert_eq!(fx.branch(&branch), before);
    assert!(!mark.exists(), "the mark goes with the update");
    assert!(!fx.repo.abort_own_update(&path).expect("nothing left"));
}

#[test]
fn an_update_leaves_no_mark_behind() {
    let fx = Fixture::new();
    let (path, _) = fx.task("task-1");
    fx.commit(&path, "a.txt", "task\n");
    fx.commit_on_main("b.txt", "main\n");
    let mark = path.join(git(&path, &["rev-parse", "--git-path", "teamboard-update"]));
    fx.repo
        .update(&path, "main", teamboard_git::Style::Rebase)
        .expect("update");
    assert!(!mark.exists());
    fx.commit(&path, "same.txt", "task side\n");
    fx.commit_on_main("same.txt", "main side\n");
    let conflict = fx
        .repo
        .update(&path, "main", teamboard_git::Style::Merge)
        .expect("update");
    assert!(
        matches!(conflict, teamboard_git::Update::Conflict { .. }),
        "{conflict:?}"
    );
    assert!(!mark.exists());
}
