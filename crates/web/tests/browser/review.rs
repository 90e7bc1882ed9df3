//! Work on its way to the target that waits on the person: a review merged or
//! sent back from the page, a landing blocked by the person's own checkout,
//! and one in conflict with the target.

use crate::Scenario;
use teamboard_testkit::git::git;
use teamboard_testkit::{GitRepo, Teammate};

/// A board whose repository asks for a review of every task, with alice
/// working on it (until her handle is dropped).
async fn reviewed(name: &'static str) -> Option<(Scenario, GitRepo, Teammate)> {
    let mut s = Scenario::start(name).await?;
    let repo = GitRepo::new(s.board.dir());
    let mut args = repo.repo_args();
    args.review = true;
    s.board.lead.set_repo(args).await.expect("set_repo");
    let alice = s.board.spawn("alice", "dev", &[]);
    s.board.wait_idle("alice").await;
    Some((s, repo, alice))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_merge_from_the_page_lands_the_reviewed_work() {
    let Some((s, repo, _alice)) = reviewed("review_merge").await else {
        return;
    };
    let t = s
        .board
        .add(
            "Write hello",
            "```sh\nprintf 'hello\\nworld\\n' > hello.txt\n```\n",
            &[],
        )
        .await;
    let card = format!("#task-{}", t.id);
    s.wait_for(&card, "waits for review · 1 file, +2 -0").await;
    s.wait_for(
        "#requests",
        &format!("Review #{} Write hello from alice", t.id),
    )
    .await;
    s.wait_for("#member-alice", "awaiting approval").await;
    s.click(&format!("#review-{}", t.id)).await;
    s.wait_for(
        "#detail .landing-wait",
        "Waits for your review: 1 file, +2 -0",
    )
    .await;
    s.wait_for("#detail .diff", "+world").await;
    s.screenshot_as("review_merge_waiting").await;
    assert_eq!(repo.show("main", "hello.txt"), None, "nothing landed yet");
    s.click("#detail form.action-merge button").await;
    s.wait_for(
        &format!(r#".column[data-status="completed"] {card}"#),
        "Write hello",
    )
    .await;
    assert_eq!(
        repo.show("main", "hello.txt").as_deref(),
        Some("hello\nworld\n")
    );
    s.wait_for("#requests", "Nothing waits for you").await;
    s.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_send_back_from_the_page_needs_feedback_and_the_teammate_completes_again() {
    let Some((s, repo, _alice)) = reviewed("review_send_back").await else {
        return;
    };
    let t = s
        .board
        .add(
            "Count runs",
            "```sh\necho run >> runs.txt && wc -l < runs.txt\n```\n",
            &[],
        )
        .await;
    let card = format!("#task-{}", t.id);
    s.wait_for(&card, "waits for review · 1 file, +1 -0").await;
    s.click(&card).await;
    // Without feedback, boardd refuses, and the page says so in its words.
    s.click("#detail form.action-send-back button").await;
    s.wait_for(
        "#detail form.action-send-back .refusal",
        "feedback is empty",
    )
    .await;
    s.fill("#detail [name=send-back-feedback]", "count once more")
        .await;
    s.click("#detail form.action-send-back button").await;
    // alice runs the script again in the same worktree: two lines now, and
    // the completion waits for review again.
    s.wait_for(&card, "waits for review · 1 file, +2 -0").await;
    s.wait_for("#detail .history", "count once more").await;
    assert!(
        s.board.transcript("alice").contains("count once more"),
        "the feedback reached alice"
    );
    assert_eq!(repo.show("main", "runs.txt"), None, "nothing landed");
    s.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_landing_blocked_by_the_persons_checkout_names_the_files_and_the_way_out() {
    let Some(mut s) = Scenario::start("landing_blocked").await else {
        return;
    };
    let repo = s.board.attach_repo().await;
    git(&repo.path, &["switch", "-q", "main"]);
    std::fs::write(repo.path.join("README.md"), "mine\n").expect("edit");
    let _alice = s.board.spawn("alice", "dev", &[]);
    s.board.wait_idle("alice").await;
    let t = s
        .board
        .add(
            "Edit the readme",
            "```sh\necho theirs > README.md\n```\n",
            &[],
        )
        .await;
    let card = format!("#task-{}", t.id);
    s.wait_for(&card, "landing: blocked").await;
    s.click(&card).await;
    s.wait_for("#detail .landing-wait.blocked", "README.md")
        .await;
    s.wait_for(
        "#detail .landing-wait.blocked",
        &repo.path.display().to_string(),
    )
    .await;
    s.wait_for(
        "#detail .landing-wait.blocked",
        &format!("teamctl task retry {}", t.id),
    )
    .await;
    // A retry while the file is still in the way answers the task as it is.
    s.click("#detail form.action-retry button").await;
    s.wait_for("#notice", "Retry: done").await;
    s.wait_for("#detail .landing-wait.blocked", "README.md")
        .await;
    s.screenshot_as("landing_blocked_waiting").await;
    git(&repo.path, &["checkout", "README.md"]);
    s.wait_for(
        &format!(r#".column[data-status="completed"] {card}"#),
        "Edit the readme",
    )
    .await;
    assert_eq!(
        std::fs::read_to_string(repo.path.join("README.md")).expect("read"),
        "theirs\n"
    );
    s.name = "landing_blocked_landed";
    s.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_landing_in_conflict_names_the_paths_the_target_commit_and_how_to_resolve_it() {
    let Some(mut s) = Scenario::start("landing_conflict").await else {
        return;
    };
    let repo = s.board.attach_repo().await;
    let alice = s.board.spawn("alice", "dev", &["--sandbox", "off"]); // marks outside, and a rebase
    s.board.wait_idle("alice").await;
    // alice writes the file, then waits while someone else changes it on main.
    let (written, go) = (s.board.dir().join("written"), s.board.dir().join("go"));
    let t = s
        .board
        .add(
            "Write same",
            &format!(
                "```sh\nprintf 'mine\\n' > same.txt; touch {}; while [ ! -e {} ]; do sleep 0.05; done\n```\n",
                written.display(),
                go.display()
            ),
            &[],
        )
        .await;
    alice.wait_for_file(&written).await;
    let onto = repo.commit_on("main", "same.txt", "theirs\n");
    std::fs::write(&go, "").expect("go");
    let card = format!("#task-{}", t.id);
    s.wait_for(&card, "landing: conflict").await;
    s.click(&card).await;
    let box_ = "#detail .landing-wait.conflict";
    s.wait_for(box_, "same.txt").await;
    s.wait_for(box_, &onto[..12]).await;
    s.wait_for(box_, "it waits for you").await;
    s.wait_for(box_, "git rebase").await;
    s.wait_for(box_, &format!("teamctl task retry {}", t.id))
        .await;
    s.wait_for("#detail form.action-retry button", "Retry")
        .await;
    assert_eq!(repo.show("main", "same.txt").as_deref(), Some("theirs\n"));
    s.finish().await;
}
