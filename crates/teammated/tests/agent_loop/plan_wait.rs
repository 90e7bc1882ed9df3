//! An agent without a plan mode submits its plan with the board's
//! `submit_plan` and ends its turn to wait: the task stays its own until the
//! lead decides.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_waiting_for_its_plans_decision_keeps_its_task() {
    let mut board = Board::start(TEAMMATED).await;
    let agent = workspace_bin("fake-acp-agent").display().to_string();
    let home = fake_home(&board).display().to_string();
    let _alice = board.spawn_with_env(
        "alice",
        "dev",
        &[
            UNSANDBOXED[0],
            UNSANDBOXED[1],
            "--runtime",
            "acp",
            "--agent-cmd",
            agent.as_str(),
        ],
        &[
            ("FAKE_ACP_HOME", home.as_str()),
            ("FAKE_ACP_NO_PLAN_MODE", "1"),
        ],
    );
    let t = board
        .lead
        .add_task(NewTask {
            subject: "planned".into(),
            description: "SUBMIT_PLAN: write planned.txt\nANSWER: my plan waits for the lead"
                .into(),
            require_plan: true,
            ..NewTask::default()
        })
        .await
        .expect("add");
    let plan = eventually("a plan request", PATIENCE, || async {
        board
            .lead
            .list_requests(ListRequestsArgs::default())
            .await
            .ok()?
            .into_iter()
            .find(|r| r.task == Some(t.id) && r.state == RequestState::Pending)
    })
    .await;
    assert_eq!(plan.plan.as_deref(), Some("write planned.txt"), "{plan:#?}");
    until("the agent ended its turn", || async {
        board
            .transcript("alice")
            .contains("my plan waits for the lead")
    })
    .await;
    // Time for a teammate that took the answer as a result to have given up.
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    let task = board.task(t.id).await;
    let history = format!("{task:#?}");
    assert_eq!(task.status, TaskStatus::InProgress, "{history}");
    // Still its first claim, never given back.
    assert_eq!((task.attempts, task.last_error), (1, None), "{history}");
    board
        .lead
        .review_plan(plan.id, true, None)
        .await
        .expect("approve");
    board.wait_done(&[t.id]).await;
    let done = board.task(t.id).await;
    assert_eq!(done.status, TaskStatus::Completed, "{done:#?}");
    // The decision reached the agent as its next prompt.
    assert!(
        prompts(&board)
            .iter()
            .any(|p| p.contains("The lead approved your plan")),
        "{:#?}",
        prompts(&board)
    );
}
