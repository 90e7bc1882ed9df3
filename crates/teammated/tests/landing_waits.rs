//! Landings that wait without using an attempt, with a scripted teammate, real
//! git and a real `teammated` (`docs/design/worktrees.md`): on the person's own
//! checkout of the target (`landing: blocked`), and on a conflict with the
//! target (`landing: conflict`), which a person resolves by hand.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "test code: a panic fails the test, and the harness captures what it prints"
)]

use std::path::Path;
use teamboard_protocol::{EventKind, LandingStage, TaskStatus};
use teamboard_testkit::git::{git, git_command};
use teamboard_testkit::{Board, GitRepo};

const TEAMMATED: &str = env!("CARGO_BIN_EXE_teammated");

/// These tests share files with the commands outside the teammates' workdirs
/// (marks, pid files, the fake agent's home), which the sandbox hides; they run
/// unsandboxed, and `tests/sandbox.rs` tests the sandbox itself.
const UNSANDBOXED: [&str; 2] = ["--sandbox", "off"];

fn read(dir: &Path, file: &str) -> String {
    std::fs::read_to_string(dir.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"))
}

/// The story of a person who checks the target out after `repo set`: a task
/// lands into the clean checkout, and one that would touch a changed file waits
/// `blocked`, naming it, until the person undoes the change; no attempt is used.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_person_checks_main_out_and_tasks_land_into_it_or_wait_while_it_is_dirty() {
    let mut board = Board::start(TEAMMATED).await;
    let repo: GitRepo = board.attach_repo().await;
    git(&repo.path, &["switch", "-q", "main"]);
    let alice = board.spawn("alice", "dev", &[]);
    board.wait_idle("alice").await;

    let t1 = board
        .add("add a", "```sh\necho a > a.txt\n```\n", &[])
        .await;
    let done = board.wait_completed(t1.id, &alice).await;
    assert_eq!(done.attempts, 1);
    assert_eq!(
        read(&repo.path, "a.txt"),
        "a\n",
        "the checkout follows main"
    );
    assert_eq!(git(&repo.path, &["status", "--porcelain"]), "");

    // The person edits a file a task changes too.
    std::fs::write(repo.path.join("README.md"), "mine\n").expect("edit");
    let t2 = board
        .add("edit readme", "```sh\necho theirs > README.md\n```\n", &[])
        .await;
    let blocked = board
        .wait_for("the landing to wait", |e| {
            e.kind == EventKind::LandingBlocked && e.task == Some(t2.id)
        })
        .await;
    assert!(blocked.detail.contains("README.md"), "{blocked:#?}");
    let t = board.task(t2.id).await;
    let l = t.landing.clone().expect("landing");
    assert_eq!((t.status, t.attempts), (TaskStatus::InProgress, 1));
    assert_eq!(l.stage, LandingStage::Blocked);
    assert_eq!(l.paths, vec!["README.md".to_string()]);
    assert_eq!(
        read(&repo.path, "README.md"),
        "mine\n",
        "nothing of it lost"
    );

    // Undone, it lands on the next look, into the checkout.
    git(&repo.path, &["checkout", "README.md"]);
    let done = board.wait_completed(t2.id, &alice).await;
    assert_eq!(done.attempts, 1, "{done:#?}");
    assert_eq!(read(&repo.path, "README.md"), "theirs\n");
    assert_eq!(git(&repo.path, &["status", "--porcelain"]), "");
    board.stop().await;
}

/// Two tasks edit one line: the second meets a conflict at its gate. It waits
/// in `landing: conflict` naming the file, its attempt uncounted; the scripted
/// teammate says the refusal and gives the task back; a person resolves it in
/// the worktree and retries it; it lands.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conflict_waits_without_an_attempt_and_a_person_resolves_it_by_hand() {
    let mut board = Board::start(TEAMMATED).await;
    let repo: GitRepo = board.attach_repo().await;
    let alice = board.spawn("alice", "dev", &UNSANDBOXED);
    let _bob = board.spawn("bob", "dev", &UNSANDBOXED);
    board.wait_idle("alice").await;
    board.wait_idle("bob").await;
    let dir = board.dir().to_path_buf();
    // Each writes its line, says so, and goes on when the test lets it. The
    // second writes only if its line is not there yet: after a person's
    // resolution, the script run again leaves it as it is.
    let script = |line: &str, name: &str| {
        let (w, g) = (
            dir.join(format!("written-{name}")),
            dir.join(format!("go-{name}")),
        );
        let (w, g) = (w.display(), g.display());
        format!(
            "```sh\ngrep -qx {line} same.txt 2>/dev/null || printf '{line}\\n' > same.txt; \
             touch {w}; while [ ! -e {g} ]; do sleep 0.05; done\n```\n"
        )
    };
    let t1 = board.add("one", &script("one", "one"), &[]).await;
    let t2 = board.add("two", &script("two", "two"), &[]).await;
    for name in ["one", "two"] {
        alice
            .wait_for_file(&dir.join(format!("written-{name}")))
            .await;
    }
    std::fs::write(dir.join("go-one"), "").expect("go");
    board.wait_done(&[t1.id]).await;
    assert_eq!(repo.show("main", "same.txt").as_deref(), Some("one\n"));
    std::fs::write(dir.join("go-two"), "").expect("go");

    let conflict = board
        .wait_for("the conflict", |e| {
            e.kind == EventKind::MergeConflict && e.task == Some(t2.id)
        })
        .await;
    assert!(conflict.detail.contains("same.txt"), "{conflict:#?}");
    let owner = board.wait_released(t2.id).await.actor;
    let t = board.task(t2.id).await;
    let l = t.landing.clone().expect("the conflict waits");
    assert_eq!(l.stage, LandingStage::Conflict);
    assert_eq!(l.paths, vec!["same.txt".to_string()]);
    assert_eq!(l.onto, Some(repo.head("main")));
    assert_eq!(t.status, TaskStatus::Pending);
    assert_eq!(t.attempts, 0, "the conflict used no attempt: {t:#?}");
    assert!(!t.ready, "it waits for a person, not for the next claim");
    assert!(t.last_error.is_none(), "{t:#?}");
    let log = board.transcript(&owner);
    assert!(
        log.contains(&format!("Task #{} is not done: boardd refused", t2.id))
            && log.contains("conflicts with main in same.txt"),
        "{log}"
    );
    assert!(
        !log.contains(&format!("Task #{} is reported.", t2.id)),
        "{log}"
    );

    // The person resolves it in the worktree, as the guide says.
    let wt = std::path::PathBuf::from(&t.worktree.expect("worktree").path);
    let stopped = git_command(&wt)
        .args(["rebase", "main"])
        .output()
        .expect("rebase");
    assert!(
        !stopped.status.success(),
        "the rebase stops on the conflict"
    );
    std::fs::write(wt.join("same.txt"), "one\ntwo\n").expect("resolve");
    git(&wt, &["add", "same.txt"]);
    git_command(&wt)
        .args(["-c", "core.editor=true", "rebase", "--continue"])
        .output()
        .expect("continue");
    let retried = board.lead.retry_task(t2.id).await.expect("retry");
    assert!(retried.ready && retried.landing.is_none(), "{retried:#?}");
    board.wait_done(&[t2.id]).await;
    let done = board.task(t2.id).await;
    assert_eq!(done.status, TaskStatus::Completed, "{done:#?}");
    assert_eq!(repo.show("main", "same.txt").as_deref(), Some("one\ntwo\n"));
    board.stop().await;
}
