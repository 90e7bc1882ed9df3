//! A task's work: plans decided on the page, history, checks, diff.

use crate::Scenario;
use teamboard_protocol::request::ListRequestsArgs;
use teamboard_protocol::{RequestKind, RequestState, TaskStatus};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plan_approved_on_the_page_unblocks_the_teammate() {
    let Some(mut s) = Scenario::start("approve_plan").await else {
        return;
    };
    let _alice = s.board.spawn("alice", "dev", &[]);
    s.board.wait_idle("alice").await;
    // In alice's workdir: the only place her sandbox lets her write.
    let mark = s.board.workdir("alice").join("ran");
    let script = format!("Touch it.\n```sh\ntouch {}\n```\n", mark.display());
    let t = s.board.add_needing_a_plan("Guarded", &script).await;
    s.wait_for("#requests .plan", "from alice").await;
    s.wait_for("#requests .plan pre", "touch").await;
    assert!(!mark.exists(), "ran before the approval");
    s.screenshot_as("approve_plan_waiting").await;
    s.click("#requests .plan form.action-approve button").await;
    s.wait_for(
        &format!(r#".column[data-status="completed"] #task-{}"#, t.id),
        "Guarded",
    )
    .await;
    assert!(mark.exists());
    s.wait_for("#requests", "Nothing waits for you").await;
    s.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plan_rejected_on_the_page_comes_back_with_the_feedback() {
    let Some(mut s) = Scenario::start("reject_plan").await else {
        return;
    };
    let _alice = s.board.spawn("alice", "dev", &[]);
    s.board.wait_idle("alice").await;
    let t = s
        .board
        .add_needing_a_plan("Guarded", "Do it.\n```sh\necho hi\n```\n")
        .await;
    s.wait_for("#requests .plan", "Plan r1").await;
    s.fill("#requests .plan [name=reject-feedback]", "say why first")
        .await;
    s.click("#requests .plan form.action-reject button").await;
    // The next plan answers the feedback, and it is the one on the page.
    s.wait_for("#requests .plan", "Plan r2").await;
    s.wait_for("#requests .plan pre", "say why first").await;
    let plans = s
        .board
        .lead
        .list_requests(ListRequestsArgs {
            kind: Some(RequestKind::Plan),
            task: Some(t.id),
            ..ListRequestsArgs::default()
        })
        .await
        .expect("plans");
    assert_eq!(plans[0].state, RequestState::Rejected, "{plans:#?}");
    s.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_shows_its_history_checks_and_diff() {
    let Some(mut s) = Scenario::start("task_detail_checks_diff").await else {
        return;
    };
    let repo = teamboard_testkit::GitRepo::new(s.board.dir());
    let mut args = repo.repo_args();
    args.checks = vec!["echo check-says-ok".into()];
    s.board.lead.set_repo(args).await.expect("set_repo");
    let _alice = s.board.spawn("alice", "dev", &[]);
    s.board.wait_idle("alice").await;
    let t = s
        .board
        .add(
            "Write a file",
            "Write it.\n```sh\necho written-by-alice > notes.txt\n```\n",
            &[],
        )
        .await;
    let done = s.board.wait_done(&[t.id]).await;
    assert_eq!(done[0].status, TaskStatus::Completed, "{done:#?}");
    s.click(&format!("#task-{}", t.id)).await;
    s.wait_for("#detail .history", "created").await;
    s.wait_for("#detail .history", "alice").await;
    s.wait_for("#detail .checks", "check-says-ok").await;
    s.wait_for("#detail .diff", "+written-by-alice").await;
    s.wait_for("#detail .diff", "notes.txt").await;
    s.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_without_a_worktree_says_why_there_is_no_diff() {
    let Some(s) = Scenario::start("diff_none_in_words").await else {
        return;
    };
    let t = s.board.add("No repository here", "", &[]).await;
    s.click(&format!("#task-{}", t.id)).await;
    s.wait_for("#detail .diff-none", "has no worktree").await;
    s.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_on_its_way_to_the_target_shows_its_landing_stage() {
    let Some(mut s) = Scenario::start("landing_stage").await else {
        return;
    };
    let repo = teamboard_testkit::GitRepo::new(s.board.dir());
    let mut args = repo.repo_args();
    // A check that takes a while: the card sits in `checking` meanwhile.
    let gate = s.board.dir().join("gate");
    args.checks = vec![format!(
        "while [ ! -e '{}' ]; do sleep 0.05; done",
        gate.display()
    )];
    s.board.lead.set_repo(args).await.expect("set_repo");
    let _alice = s.board.spawn("alice", "dev", &["--sandbox", "off"]); // the gate file is outside the worktree
    s.board.wait_idle("alice").await;
    let t = s
        .board
        .add("Land it", "Write.\n```sh\necho x > x.txt\n```\n", &[])
        .await;
    let card = format!(r#".column[data-status="in_progress"] #task-{}"#, t.id);
    s.wait_for(&card, "landing: checking").await;
    s.screenshot_as("landing_stage").await;
    std::fs::write(&gate, "").expect("open the gate");
    s.wait_for(
        &format!(r#".column[data-status="completed"] #task-{}"#, t.id),
        "Land it",
    )
    .await;
    s.name = "landing_stage_landed";
    s.finish().await;
}
