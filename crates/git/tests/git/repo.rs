use crate::support::{Fixture, git, write};
use teamboard_git::{GitError, Repo, dir_size};

fn not_a_repo(path: &std::path::Path) -> String {
    match Repo::open(path) {
        Err(err @ GitError::NotARepo { .. }) => err.to_string(),
        other => panic!("expected NotARepo for {}, got {other:?}", path.display()),
    }
}

#[test]
fn open_refuses_what_is_not_a_working_tree_and_says_which() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let plain = tmp.path().join("plain");
    std::fs::create_dir(&plain).expect("mkdir");
    assert!(not_a_repo(&plain).contains("not inside a git repository"));

    assert!(not_a_repo(&tmp.path().join("nowhere")).contains("does not exist"));

    let bare = tmp.path().join("bare.git");
    std::fs::create_dir(&bare).expect("mkdir");
    git(&bare, &["init", "-q", "--bare"]);
    assert!(not_a_repo(&bare).contains("bare repository"));

    let fx = Fixture::new();
    assert!(not_a_repo(&fx.root.join(".git")).contains(".git directory"));
}

#[test]
fn open_finds_the_top_of_the_working_tree() {
    let fx = Fixture::new();
    write(&fx.root, "src/deep/file", "x");
    let repo = Repo::open(&fx.root.join("src/deep")).expect("open from a subdirectory");
    assert_eq!(repo.root(), fx.root);
}

#[test]
fn current_branch_and_branch_heads() {
    let fx = Fixture::new();
    assert_eq!(
        fx.repo.current_branch().expect("branch").as_deref(),
        Some("main")
    );
    let main = fx.branch("main");
    assert_eq!(
        fx.repo.branch_head("main").expect("head"),
        Some(main.clone())
    );
    assert_eq!(fx.repo.branch_head("nope").expect("head"), None);

    git(&fx.root, &["checkout", "-q", "--detach"]);
    assert_eq!(fx.repo.current_branch().expect("branch"), None);

    let err = fx
        .repo
        .branch_head("--all")
        .expect_err("an option is not a branch");
    assert!(matches!(err, GitError::BadName { .. }), "{err:?}");
}

#[test]
fn ancestry_and_commit_counts() {
    let fx = Fixture::new();
    let first = fx.branch("main");
    git(&fx.root, &["branch", "side"]);
    let second = fx.commit_on_main("a", "1");
    let third = fx.commit_on_main("a", "2");

    assert!(fx.repo.is_ancestor(&first, &third).expect("ancestry"));
    assert!(
        fx.repo
            .is_ancestor(&third, &third)
            .expect("a commit is its own ancestor")
    );
    assert!(!fx.repo.is_ancestor(&third, &first).expect("ancestry"));
    assert!(
        fx.repo
            .is_ancestor("side", "main")
            .expect("branch names work too")
    );

    assert_eq!(fx.repo.count_commits(&first, &third).expect("count"), 2);
    assert_eq!(fx.repo.count_commits(&second, &third).expect("count"), 1);
    assert_eq!(fx.repo.count_commits(&third, &first).expect("count"), 0);

    let err = fx
        .repo
        .is_ancestor("no-such-rev", &first)
        .expect_err("unknown rev");
    assert!(matches!(err, GitError::Command { .. }), "{err:?}");
}

#[test]
fn branches_under_a_prefix_and_deleting_them() {
    let fx = Fixture::new();
    for b in [
        "teamboard/task-1",
        "teamboard/task-12",
        "teamboard/other",
        "feature",
    ] {
        git(&fx.root, &["branch", b]);
    }
    assert_eq!(
        fx.repo.branches_with_prefix("teamboard/").expect("list"),
        ["teamboard/other", "teamboard/task-1", "teamboard/task-12"]
    );
    assert_eq!(
        fx.repo
            .branches_with_prefix("teamboard/task-")
            .expect("list"),
        ["teamboard/task-1", "teamboard/task-12"]
    );

    fx.repo.delete_branch("teamboard/task-1").expect("delete");
    assert_eq!(fx.repo.branch_head("teamboard/task-1").expect("head"), None);
    fx.repo
        .delete_branch("teamboard/task-1")
        .expect("deleting a missing branch is fine");

    let err = fx
        .repo
        .delete_branch("main")
        .expect_err("main is checked out");
    assert!(err.to_string().contains("main"), "{err}");
    assert!(fx.repo.branch_head("main").expect("head").is_some());
}

#[test]
fn fsck_passes_a_sound_repository_and_reports_a_damaged_one() {
    let fx = Fixture::new();
    fx.repo.fsck().expect("a fresh repository is sound");

    let blob = git(&fx.root, &["rev-parse", "HEAD:README"]);
    let object = fx
        .root
        .join(".git/objects")
        .join(&blob[..2])
        .join(&blob[2..]);
    std::fs::remove_file(object).expect("remove a loose object");
    let err = fx.repo.fsck().expect_err("a missing blob is damage");
    assert!(err.to_string().contains(&blob), "{err}");
}

#[test]
fn dir_size_counts_files_and_does_not_follow_symlinks() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = tmp.path().join("d");
    write(&dir, "a", &"x".repeat(1000));
    write(&dir, "sub/deeper/b", &"y".repeat(2000));
    write(tmp.path(), "outside", &"z".repeat(50_000));
    std::os::unix::fs::symlink(tmp.path().join("outside"), dir.join("link")).expect("symlink");
    std::os::unix::fs::symlink(tmp.path(), dir.join("loop")).expect("symlink");
    assert_eq!(dir_size(&dir), 3000);
    assert_eq!(dir_size(&tmp.path().join("missing")), 0);
}
