use crate::support::{Fixture, git, head, read, write};
use teamboard_git::{Created, GitError};

#[test]
fn a_fresh_worktree_starts_at_the_start_commit_on_its_own_branch() {
    let fx = Fixture::new();
    let main = fx.branch("main");
    let path = fx.wt_path("nested/deeper/task-1");
    let created = fx
        .repo
        .add_worktree(&path, "teamboard/task-1", "main")
        .expect("add");
    assert_eq!(created, Created::Fresh);
    assert_eq!(head(&path), main);
    assert_eq!(read(&path, "README"), "hello\n");
    assert_eq!(fx.branch("teamboard/task-1"), main);
    assert_eq!(
        fx.repo.checked_out_in("teamboard/task-1").expect("lookup"),
        Some(path.clone())
    );
    assert_eq!(
        fx.repo.checked_out_in("teamboard/none").expect("lookup"),
        None
    );
    assert_eq!(fx.repo.worktrees().expect("list"), [fx.root.clone(), path]);
}

#[test]
fn adding_again_reuses_the_worktree_and_keeps_its_work() {
    let fx = Fixture::new();
    let (path, branch) = fx.task("task-1");
    write(&path, "wip.txt", "not committed yet");
    let again = fx.repo.add_worktree(&path, &branch, "main").expect("retry");
    assert_eq!(again, Created::Reused);
    assert_eq!(read(&path, "wip.txt"), "not committed yet");
}

#[test]
fn a_deleted_worktree_dir_is_recreated_on_its_branch_without_a_reset() {
    let fx = Fixture::new();
    let (path, branch) = fx.task("task-1");
    let work = fx.commit(&path, "work.txt", "done");
    fx.commit_on_main("main.txt", "main moved on");
    std::fs::remove_dir_all(&path).expect("delete the worktree dir");

    let again = fx
        .repo
        .add_worktree(&path, &branch, "main")
        .expect("re-add");
    assert_eq!(again, Created::Reused);
    assert_eq!(fx.branch(&branch), work, "the branch was not reset to main");
    assert_eq!(read(&path, "work.txt"), "done");
}

#[test]
fn an_existing_branch_without_a_worktree_is_attached_not_reset() {
    let fx = Fixture::new();
    // As if boardd died between creating the branch and the worktree.
    git(&fx.root, &["branch", "teamboard/task-2"]);
    git(&fx.root, &["checkout", "-q", "teamboard/task-2"]);
    let work = fx.commit(&fx.root, "work.txt", "done");
    git(&fx.root, &["checkout", "-q", "main"]);
    fx.commit_on_main("main.txt", "main moved on");

    let path = fx.wt_path("task-2");
    let created = fx
        .repo
        .add_worktree(&path, "teamboard/task-2", "main")
        .expect("add");
    assert_eq!(created, Created::Reused);
    assert_eq!(head(&path), work);
}

#[test]
fn a_path_or_branch_already_in_use_elsewhere_is_refused() {
    let fx = Fixture::new();
    let (path, branch) = fx.task("task-1");

    let err = fx
        .repo
        .add_worktree(&path, "teamboard/task-9", "main")
        .expect_err("the path holds another branch");
    assert!(matches!(err, GitError::Worktree { .. }), "{err:?}");
    assert!(err.to_string().contains("teamboard/task-1"), "{err}");

    let err = fx
        .repo
        .add_worktree(&fx.wt_path("elsewhere"), &branch, "main")
        .expect_err("the branch is checked out already");
    assert!(err.to_string().contains("already checked out"), "{err}");

    let err = fx
        .repo
        .add_worktree(&fx.wt_path("x"), "teamboard/x", "no-such-start")
        .expect_err("unknown start");
    assert!(matches!(err, GitError::UnknownRev { .. }), "{err:?}");
    assert_eq!(fx.repo.branch_head("teamboard/x").expect("head"), None);
}

#[test]
fn a_worktree_stopped_in_a_rebase_is_still_reused() {
    let fx = Fixture::new();
    let (path, branch) = fx.task("task-1");
    fx.stopped_rebase(&path);

    assert_eq!(
        fx.repo.checked_out_in(&branch).expect("lookup"),
        Some(path.clone())
    );
    let again = fx.repo.add_worktree(&path, &branch, "main").expect("retry");
    assert_eq!(again, Created::Reused);
}

#[test]
fn removing_a_worktree_keeps_its_branch_and_respects_changes() {
    let fx = Fixture::new();
    let (path, branch) = fx.task("task-1");
    let work = fx.commit(&path, "work.txt", "done");
    write(&path, "wip.txt", "uncommitted");

    let err = fx.repo.remove_worktree(&path, false).expect_err("dirty");
    assert!(matches!(err, GitError::Command { .. }), "{err:?}");
    assert_eq!(read(&path, "wip.txt"), "uncommitted");

    fx.repo
        .remove_worktree(&path, true)
        .expect("forced removal");
    assert!(!path.exists());
    assert_eq!(fx.repo.worktrees().expect("list"), vec![fx.root.clone()]);
    assert_eq!(fx.branch(&branch), work, "the branch outlives its worktree");
}

#[test]
fn removing_a_worktree_whose_dir_is_gone_just_prunes_it() {
    let fx = Fixture::new();
    let (path, _) = fx.task("task-1");
    std::fs::remove_dir_all(&path).expect("delete dir");
    fx.repo.remove_worktree(&path, false).expect("remove");
    assert_eq!(fx.repo.worktrees().expect("list"), vec![fx.root.clone()]);
}

#[test]
fn removing_what_is_not_a_linked_worktree_is_refused() {
    let fx = Fixture::new();
    let plain = fx.scratch("plain");
    std::fs::create_dir(&plain).expect("mkdir");
    let err = fx
        .repo
        .remove_worktree(&plain, true)
        .expect_err("not a worktree");
    assert!(err.to_string().contains("not a worktree of"), "{err}");
    assert!(plain.exists());

    let err = fx
        .repo
        .remove_worktree(&fx.root, true)
        .expect_err("main worktree");
    assert!(err.to_string().contains("main working tree"), "{err}");
    assert!(fx.root.join("README").exists());
}

#[test]
fn worktree_paths_that_are_not_ours_are_refused_before_any_git_runs_there() {
    let fx = Fixture::new();
    // A directory inside the main checkout: `git -C` there would act on the
    // main checkout.
    let inside = fx.root.join("sub");
    std::fs::create_dir(&inside).expect("mkdir");
    write(&fx.root, "stray.txt", "must not be committed by boardd");
    let err = fx
        .repo
        .commit_all(&inside, "oops", None)
        .expect_err("not a worktree");
    assert!(err.to_string().contains("inside the working tree"), "{err}");
    assert_eq!(git(&fx.root, &["rev-list", "--count", "HEAD"]), "1");

    let other = Fixture::new();
    let err = fx
        .repo
        .worktree_state(&other.root)
        .expect_err("another repository");
    assert!(err.to_string().contains("another repository"), "{err}");

    let err = fx
        .repo
        .worktree_state(&fx.wt_path("missing"))
        .expect_err("missing");
    assert!(err.to_string().contains("does not exist"), "{err}");
}

#[test]
fn a_symlink_at_a_worktree_path_is_never_followed() {
    let fx = Fixture::new();
    let outside = fx.scratch("outside");
    std::fs::create_dir(&outside).expect("mkdir");
    let path = fx.wt_path("task-1");
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::os::unix::fs::symlink(&outside, &path).expect("symlink");
    let err = fx
        .repo
        .add_worktree(&path, "teamboard/task-1", "main")
        .expect_err("a symlink at the path");
    assert!(err.to_string().contains("symbolic link"), "{err}");
    assert_eq!(std::fs::read_dir(&outside).expect("ls").count(), 0);
    assert_eq!(fx.repo.worktrees().expect("list"), vec![fx.root.clone()]);

    // A worktree moved away, with a link left at its path: removing it would
    // delete what the link points to.
    std::fs::remove_file(&path).expect("unlink");
    let (path, _) = fx.task("task-2");
    let moved = fx.scratch("moved");
    std::fs::rename(&path, &moved).expect("move");
    std::os::unix::fs::symlink(&moved, &path).expect("symlink");
    let err = fx
        .repo
        .remove_worktree(&path, true)
        .expect_err("a symlink at the path");
    assert!(err.to_string().contains("symbolic link"), "{err}");
    assert_eq!(read(&moved, "README"), "hello\n");

    // A file is no worktree either.
    let file = fx.wt_path("task-3");
    std::fs::write(&file, "not a directory").expect("write");
    let err = fx
        .repo
        .add_worktree(&file, "teamboard/task-3", "main")
        .expect_err("a file at the path");
    assert!(err.to_string().contains("not a directory"), "{err}");
    assert_eq!(
        std::fs::read_to_string(&file).expect("read"),
        "not a directory"
    );
}
