//! `teamctl review`, `teamctl merge` and `teamctl send-back`, with a real git
//! repository and a teammate played by a protocol client: what they print, what
//! they refuse, and a send-back to an owner that is gone.

use crate::{Cli, stderr, stdout};
use teamboard_protocol::{LandingStage, TaskStatus};
use teamboard_testkit::{GitRepo, short_tempdir};

#[test]
fn review_lists_merge_and_send_back_refuse_in_words_and_an_owner_gone_leaves_the_feedback() {
    let dir = short_tempdir();
    let repo = GitRepo::new(dir.path());
    let d = Cli::start();
    let none = d.ok(&["review"]);
    assert_eq!(none, "", "nothing waits: the note goes to stderr");
    d.ok(&[
        "repo",
        "set",
        &repo.path.display().to_string(),
        "--branch",
        "main",
    ]);
    d.ok(&["task", "add", "rename the flag", "--review"]);
    d.ok(&["task", "add", "not reviewed"]);
    let alice = d.teammate("alice", "coder");
    let done = d.block_on(async {
        let claim = alice.claim_task(1).await.expect("claim");
        let opened = alice.open_worktree(1, claim.epoch).await.expect("open");
        let wt = std::path::PathBuf::from(opened.worktree.path);
        std::fs::write(wt.join("flag.txt"), "--new\n--old\n--both\n").expect("write");
        alice
            .complete_task(1, claim.epoch, "renamed")
            .await
            .expect("answered once the checks pass")
    });
    assert_eq!(done.status, TaskStatus::InProgress);
    assert_eq!(
        done.landing.as_ref().map(|l| l.stage),
        Some(LandingStage::Review)
    );

    let json = d.json(&["review"]);
    assert_eq!(json.as_array().map(Vec::len), Some(1), "{json}");
    assert_eq!(json[0]["id"], 1);
    assert_eq!(json[0]["landing"]["stage"], "review");
    assert_eq!(
        json[0]["landing"]["diff"],
        serde_json::json!({"files": 1, "added": 3, "removed": 0})
    );
    let table = d.ok(&["review"]);
    assert!(table.starts_with("TASK  OWNER  SIZE"), "{table}");
    assert!(table.contains("#1    alice  1 file, +3 -0"), "{table}");

    for (args, words) in [
        (
            vec!["merge", "9"],
            "task #9 does not exist in team 'default'",
        ),
        (
            vec!["merge", "2"],
            "#2 is not waiting for review: it is pending",
        ),
        (
            vec!["send-back", "2", "--feedback", "x"],
            "#2 is not waiting for review: it is pending",
        ),
        (
            vec!["send-back", "1", "--feedback", "   "],
            "feedback is empty",
        ),
    ] {
        let out = d.run(&args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {out:?}");
        assert!(stderr(&out).contains(words), "{args:?}: {out:?}");
    }
    let out = d.run(&["send-back", "1"]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "--feedback is required: {out:?}"
    );

    // Its owner goes away: the review still waits; sent back, the task is
    // pending for the next owner, with the feedback.
    d.block_on(alice.close());
    drop(alice);
    let shown = d.ok(&["task", "show", "1"]);
    assert!(shown.contains("landing:    review: waiting for"), "{shown}");
    let sent = d.ok(&["send-back", "1", "--feedback", "keep --old working"]);
    assert_eq!(
        sent.trim(),
        "sent #1 back: its owner is gone, so it is pending again, with your feedback for its next owner"
    );
    let shown = d.ok(&["task", "show", "1"]);
    assert!(shown.contains("keep --old working"), "{shown}");
    assert!(!shown.contains("landing:"), "{shown}");
    let json = d.json(&["task", "show", "1"]);
    assert_eq!(json["status"], "pending");
    assert_eq!(json["attempts"], 0);
    assert_eq!(d.json(&["review"]), serde_json::json!([]));
}

/// Trap: the person's `merge` is the request waiting for the landing, not the
/// owner's; a refusal must not hand the claim back to an owner that went idle
/// and does not know it holds it (its lease would lapse as a counted attempt).
#[test]
fn a_merge_that_conflicts_tells_the_person_and_leaves_the_task_to_its_next_owner() {
    let dir = short_tempdir();
    let repo = GitRepo::new(dir.path());
    let d = Cli::start();
    d.ok(&[
        "repo",
        "set",
        &repo.path.display().to_string(),
        "--branch",
        "main",
        "--review",
    ]);
    d.ok(&["task", "add", "write the notes"]);
    let alice = d.teammate("alice", "coder");
    let epoch = d.block_on(async {
        let claim = alice.claim_task(1).await.expect("claim");
        let opened = alice.open_worktree(1, claim.epoch).await.expect("open");
        let wt = std::path::PathBuf::from(opened.worktree.path);
        std::fs::write(wt.join("notes.txt"), "alice's notes\n").expect("write");
        alice
            .complete_task(1, claim.epoch, "notes")
            .await
            .expect("waits for review");
        claim.epoch
    });
    // While it waits, someone else lands other notes on main.
    repo.commit_on("main", "notes.txt", "other notes\n");
    let out = d.run(&["merge", "1"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(stderr(&out).contains("notes.txt"), "{out:?}");
    let json = d.json(&["task", "show", "1"]);
    assert_eq!(json["status"], "pending", "{json}");
    assert_eq!(json["attempts"], 0, "{json}");
    assert!(
        json["handoff"].as_str().unwrap_or("").contains("notes.txt"),
        "{json}"
    );
    // The owner, still connected, holds nothing any more.
    let stale = d.block_on(alice.heartbeat(1, epoch));
    assert!(stale.is_err(), "{stale:?}");
}

/// The person's merge is answered as soon as the landing waits on the person's
/// own checkout, naming what is in the way, instead of hanging until it is clean.
#[test]
fn a_merge_that_waits_on_the_persons_checkout_says_so_and_lands_once_it_is_clean() {
    let dir = short_tempdir();
    let repo = GitRepo::new(dir.path());
    let d = Cli::start();
    d.ok(&[
        "repo",
        "set",
        &repo.path.display().to_string(),
        "--branch",
        "main",
        "--review",
    ]);
    d.ok(&["task", "add", "write the notes"]);
    let alice = d.teammate("alice", "coder");
    d.block_on(async {
        let claim = alice.claim_task(1).await.expect("claim");
        let opened = alice.open_worktree(1, claim.epoch).await.expect("open");
        let wt = std::path::PathBuf::from(opened.worktree.path);
        std::fs::write(wt.join("notes.txt"), "alice's notes\n").expect("write");
        alice
            .complete_task(1, claim.epoch, "notes")
            .await
            .expect("waits for review");
    });
    // The person works on main in the repository, with a file the landing writes.
    let git = |args: &[&str]| {
        let ok = std::process::Command::new("git")
            .arg("-C")
            .arg(&repo.path)
            .args(args)
            .status()
            .expect("git runs")
            .success();
        assert!(ok, "git {args:?}");
    };
    git(&["switch", "-q", "main"]);
    let mine = repo.path.join("notes.txt");
    std::fs::write(&mine, "my own notes\n").expect("write");
    let out = d.run(&["merge", "1"]);
    assert!(out.status.success(), "{out:?}");
    let said = stdout(&out);
    assert!(said.contains("waits to land"), "{said}");
    assert!(said.contains("notes.txt"), "{said}");
    assert_eq!(
        d.json(&["task", "show", "1"])["landing"]["stage"],
        "blocked"
    );
    // Cleaned up: boardd looks again on its own and lands it into the checkout.
    std::fs::remove_file(&mine).expect("remove");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while d.json(&["task", "show", "1"])["status"] != "completed" {
        assert!(std::time::Instant::now() < deadline, "never landed");
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    assert_eq!(
        std::fs::read_to_string(&mine).expect("landed into the checkout"),
        "alice's notes\n"
    );
}
