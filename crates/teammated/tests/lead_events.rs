//! The lead's events without a polling tool: a plan a teammate submits reaches the
//! idle lead's context and starts a coordination turn, in which the scripted lead
//! approves it, or rejects it when it runs `rm -rf`. The messages are acknowledged
//! once in the context, and acknowledging sends the teammate nothing. The lead runs
//! in-process and is driven through its input as a person would type.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "test code: a panic fails the test, and the harness captures what it prints"
)]

use std::time::Duration;
use teamboard_protocol::{MessageKind, RequestState};
use teamboard_testkit::{InProc, PATIENCE, eventually, lead, teammate};
use teammated::backoff::RetryPolicy;
use teammated::config::{ProviderConfig, ProviderKind};
use teammated::lead::{LeadConfig, Outcome, SpawnConfig};
use tokio::io::AsyncWriteExt;
use tokio_util::sync::CancellationToken;

fn config(daemon: &InProc) -> LeadConfig {
    LeadConfig {
        team: teamboard_testkit::TEAM.to_string(),
        socket: daemon.socket.clone(),
        remote: None,
        state_dir: daemon.dir().join("state"),
        state_dir_given: true,
        provider: ProviderConfig {
            kind: ProviderKind::Scripted,
            model: None,
            base_url: None,
            api_key: None,
            max_tokens: 1024,
            max_tokens_field: None,
            request_timeout: Duration::from_secs(10),
            retry: RetryPolicy::default(),
            account: Default::default(),
        },
        spawn: SpawnConfig {
            // This test spawns no one.
            teamctl: "teamctl".into(),
            provider: None,
            model: None,
            base_url: None,
            workdir: daemon.dir().to_path_buf(),
            idle_timeout: None,
            runtime: None,
            sandbox: None,
            no_network: false,
        },
        goal: None,
        yes: false,
        give_up_after: None,
        max_rounds: 10,
        context_budget: 100_000,
        review_plans: Default::default(),
        new_team: false,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_submitted_plan_wakes_the_idle_lead_which_decides_it() {
    let daemon = InProc::start().await;
    let cfg = config(&daemon);
    let state = cfg.state_dir.clone();
    let (mut person, input) = tokio::io::duplex(64 * 1024);
    let session = tokio::spawn(teammated::lead::run(
        cfg,
        tokio::io::BufReader::new(input),
        false,
        CancellationToken::new(),
    ));
    // A plan with one task that needs a plan, and no teammates: the test is the
    // teammate.
    person
        .write_all(b"````plan\ntask check plan: Check it\n````\nstart\n")
        .await
        .unwrap();
    let boss = lead(&daemon.socket).await;
    let task = eventually("the lead to create the task", PATIENCE, || async {
        boss.list_tasks(None).await.ok()?.into_iter().next()
    })
    .await;
    assert!(task.require_plan, "{task:?}");
    let cy = teammate(&daemon.socket, "cy", "dev").await;
    let claim = cy.claim_task(task.id).await.unwrap();

    // The lead is idle: the plan alone starts its turn.
    let first = cy
        .submit_plan(task.id, claim.epoch, "1. echo checked > out.txt")
        .await
        .unwrap();
    let decided = eventually("the lead to approve the plan", PATIENCE, || async {
        let r = cy.get_request(first.id).await.ok()?;
        (!r.is_pending()).then_some(r)
    })
    .await;
    assert_eq!(decided.state, RequestState::Approved, "{decided:?}");
    assert_eq!(decided.answered_by.as_deref(), Some("lead"));

    let second = cy
        .submit_plan(task.id, claim.epoch, "1. rm -rf build\n2. echo again")
        .await
        .unwrap();
    let decided = eventually("the lead to reject the plan", PATIENCE, || async {
        let r = cy.get_request(second.id).await.ok()?;
        (!r.is_pending()).then_some(r)
    })
    .await;
    assert_eq!(decided.state, RequestState::Rejected, "{decided:?}");
    assert!(
        decided
            .feedback
            .as_deref()
            .unwrap_or_default()
            .contains("rm -rf"),
        "{decided:?}"
    );

    // Everything delivered was acknowledged; the teammate got the two decisions
    // and nothing else.
    eventually("the lead's inbox to be empty", PATIENCE, || async {
        boss.inbox().await.ok()?.is_empty().then_some(())
    })
    .await;
    let got: Vec<MessageKind> = cy.inbox().await.unwrap().iter().map(|m| m.kind).collect();
    assert_eq!(
        got,
        vec![
            MessageKind::PlanApprovalResponse,
            MessageKind::PlanApprovalResponse
        ]
    );

    // The second turn's words come after its decision: wait for them, or a
    // quit on a loaded machine can cut the turn short of its second call.
    let usage_file = state.join("teammates/default/lead/usage.json");
    eventually("the second coordination turn to end", PATIENCE, || async {
        let usage: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&usage_file).ok()?).ok()?;
        (usage["coordination"]["calls"] == 4).then_some(())
    })
    .await;
    person.write_all(b"/quit\n").await.unwrap();
    let outcome = tokio::time::timeout(PATIENCE, session)
        .await
        .expect("the lead leaves")
        .unwrap()
        .unwrap();
    assert_eq!(outcome, Outcome::Quit);
    let usage: serde_json::Value = serde_json::from_slice(
        &std::fs::read(state.join("teammates/default/lead/usage.json")).unwrap(),
    )
    .unwrap();
    // Two coordination turns of two calls each: the review, then its words.
    assert_eq!(usage["coordination"]["calls"], 4, "{usage}");
}
