use crate::support::{Fixture, git, head, hook, parents, run_in_child, try_git, write};
use teamboard_git::{GitError, Style};

#[test]
fn nothing_to_commit_is_none() {
    let fx = Fixture::new();
    let (path, branch) = fx.task("task-1");
    let before = fx.branch(&branch);
    assert_eq!(
        fx.repo.commit_all(&path, "empty", None).expect("commit"),
        None
    );
    assert_eq!(fx.branch(&branch), before);
}

#[test]
fn everything_is_committed_with_the_message_and_author() {
    let fx = Fixture::new();
    let (path, branch) = fx.task("task-1");
    fx.commit(&path, "gone.txt", "to be deleted\n");
    write(&path, "README", "changed\n");
    write(&path, "new/untracked.txt", "new\n");
    std::fs::remove_file(path.join("gone.txt")).expect("delete");

    let oid = fx
        .repo
        .commit_all(
            &path,
            "Task 1: the subject\n\nThe result.",
            Some("alice <alice@teamboard.invalid>"),
        )
        .expect("commit")
        .expect("there was something to commit");
    assert_eq!(oid, fx.branch(&branch));
    assert_eq!(oid, head(&path));
    assert!(
        fx.repo
            .worktree_state(&path)
            .expect("state")
            .changed
            .is_empty()
    );
    assert_eq!(
        git(&path, &["show", "-s", "--format=%an <%ae>|%cn|%s", &oid]),
        "alice <alice@teamboard.invalid>|Lead|Task 1: the subject"
    );
    assert_eq!(
        git(&path, &["show", "--name-status", "--format=", &oid]),
        "M\tREADME\nD\tgone.txt\nA\tnew/untracked.txt"
    );
}

#[test]
fn a_merge_in_progress_is_concluded() {
    let fx = Fixture::new();
    let (path, _) = fx.task("task-1");
    let ours = fx.commit(&path, "same.txt", "task side\n");
    let theirs = fx.commit_on_main("same.txt", "main side\n");
    let (ok, _) = try_git(&path, &["merge", "main"]);
    assert!(!ok, "the merge stops on the conflict");
    write(&path, "same.txt", "both sides\n");

    let oid = fx
        .repo
        .commit_all(&path, "merge main", None)
        .expect("commit")
        .expect("the merge is concluded");
    assert_eq!(parents(&path, &oid), [ours, theirs]);
    let state = fx.repo.worktree_state(&path).expect("state");
    assert!(!state.merging && state.changed.is_empty(), "{state:?}");
}

/// `git add -A` marks every conflict resolved, so committing a stopped merge
/// as it is would put the conflict markers on the branch, past the refusal
/// git's own `commit` gives. Files still holding markers are refused.
#[test]
fn a_merge_with_conflict_markers_left_is_refused() {
    let fx = Fixture::new();
    let (path, branch) = fx.task("task-1");
    let ours = fx.commit(&path, "same.txt", "task side\n");
    fx.commit_on_main("same.txt", "main side\n");
    let (ok, _) = try_git(&path, &["merge", "main"]);
    assert!(!ok, "the merge stops on the conflict");

    let err = fx
        .repo
        .commit_all(&path, "merge main", None)
        .expect_err("markers left");
    assert!(
        matches!(&err, GitError::Unresolved { paths } if paths == &["same.txt"]),
        "{err:?}"
    );
    assert!(err.to_string().contains("same.txt"), "{err}");
    assert_eq!(fx.branch(&branch), ours, "nothing committed");
    let state = fx.repo.worktree_state(&path).expect("state");
    assert!(state.merging, "the merge is still there to resolve");
    assert!(
        git(&path, &["diff", "--name-only", "--diff-filter=U"]).contains("same.txt"),
        "still unmerged"
    );
}

#[test]
fn a_clean_merge_in_progress_is_concluded_though_nothing_new_is_staged() {
    let fx = Fixture::new();
    let (path, _) = fx.task("task-1");
    let ours = fx.commit(&path, "a.txt", "task side\n");
    let theirs = fx.commit_on_main("b.txt", "main side\n");
    git(&path, &["merge", "--no-commit", "--no-ff", "main"]);
    let oid = fx
        .repo
        .commit_all(&path, "merge main", None)
        .expect("commit")
        .expect("the merge is concluded");
    assert_eq!(parents(&path, &oid), [ours, theirs]);
}

#[test]
fn committing_is_refused_in_the_middle_of_a_rebase() {
    let fx = Fixture::new();
    let (path, branch) = fx.task("task-1");
    let before = fx.stopped_rebase(&path);
    write(&path, "same.txt", "resolved\n");

    let err = fx.repo.commit_all(&path, "no", None).expect_err("rebasing");
    assert!(
        matches!(err, GitError::InProgress { what: "rebase" }),
        "{err:?}"
    );
    assert_eq!(fx.branch(&branch), before);
}

#[test]
fn a_failing_pre_commit_hook_refuses_with_its_output() {
    let fx = Fixture::new();
    let (path, branch) = fx.task("task-1");
    let before = fx.branch(&branch);
    hook(
        &fx.root,
        "pre-commit",
        "#!/bin/sh\necho 'lint: 3 problems in src/x.rs' >&2\nexit 1\n",
    );
    write(&path, "x.txt", "work\n");

    let err = fx
        .repo
        .commit_all(&path, "try", None)
        .expect_err("the hook refuses");
    match &err {
        GitError::Command { stderr, .. } => {
            assert!(stderr.contains("lint: 3 problems in src/x.rs"), "{err}")
        }
        other => panic!("expected the hook's failure, got {other:?}"),
    }
    assert_eq!(fx.branch(&branch), before);
    assert_eq!(
        read_state(&fx, &path),
        ["x.txt"],
        "the work is still there, staged"
    );
}

fn read_state(fx: &Fixture, path: &std::path::Path) -> Vec<String> {
    fx.repo.worktree_state(path).expect("state").changed
}

#[test]
fn commits_never_fail_for_a_missing_identity() {
    let home = tempfile::tempdir().expect("temp dir");
    let empty = home.path().join("empty-gitconfig");
    std::fs::write(&empty, "").expect("write");
    run_in_child(
        "commit::child_without_identity",
        &[
            ("HOME", home.path()),
            ("XDG_CONFIG_HOME", home.path()),
            ("GIT_CONFIG_GLOBAL", &empty),
            ("GIT_CONFIG_NOSYSTEM", std::path::Path::new("1")),
        ],
        &[
            "GIT_AUTHOR_NAME",
            "GIT_AUTHOR_EMAIL",
            "GIT_COMMITTER_NAME",
            "GIT_COMMITTER_EMAIL",
            "EMAIL",
        ],
    );
}

#[test]
#[ignore = "run by commits_never_fail_for_a_missing_identity, with no git identity configured anywhere"]
fn child_without_identity() {
    let fx = Fixture::without_identity();
    let (path, branch) = fx.task("task-1");
    write(&path, "x.txt", "work\n");
    let oid = fx
        .repo
        .commit_all(&path, "work", Some("alice <alice@teamboard.invalid>"))
        .expect("commit")
        .expect("committed");
    assert_eq!(
        git(&path, &["show", "-s", "--format=%an <%ae>|%cn <%ce>", &oid]),
        "alice <alice@teamboard.invalid>|teamboard <teamboard@localhost>"
    );

    // Landing as a merge writes a commit too.
    git(&fx.root, &["checkout", "-q", "--detach"]);
    let old = fx.branch("main");
    match fx
        .repo
        .land("main", &old, &branch, Style::Merge, "Land task 1", None)
        .expect("land")
    {
        teamboard_git::Land::Landed(merge) => assert_eq!(
            git(&fx.root, &["show", "-s", "--format=%an <%ae>", &merge]),
            "teamboard <teamboard@localhost>"
        ),
        other => panic!("expected a landing, got {other:?}"),
    }
}

/// A task's result may be up to 256 KiB, and it is the commit message. Linux
/// refuses a single command-line argument over 128 KiB, so the message goes
/// to git on its standard input.
#[test]
fn a_message_longer_than_an_argument_may_be_is_committed_whole() {
    let fx = Fixture::new();
    let (path, branch) = fx.task("task-1");
    write(&path, "a.txt", "a\n");
    let message = format!("Task 1\n\n{}", "the result goes on. ".repeat(10_000));
    assert!(message.len() > 128 * 1024);
    let oid = fx
        .repo
        .commit_all(&path, &message, None)
        .expect("commit")
        .expect("something to commit");
    assert_eq!(oid, fx.branch(&branch));
    let body = git(&path, &["show", "-s", "--format=%B", &oid]);
    assert_eq!(body.trim_end(), message.trim_end());
}
