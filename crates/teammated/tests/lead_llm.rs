//! The lead against the mock LLM server, through the real anthropic and openai
//! providers: multi-turn tool use (create_task, spawn_teammate) in both API
//! formats, then the summary once the team has done the work. The lead runs
//! in-process on a real boardd; its teammate is a real (scripted) teammated that
//! `spawn_teammate` starts through the real teamctl.

use serde_json::{Value, json};
use std::time::Duration;
use teamboard_protocol::{MessageKind, TaskStatus};
use teamboard_testkit::mock_llm::{MockLlm, MockReply};
use teamboard_testkit::{InProc, PATIENCE, eventually, lead, teammate, workspace_bin};
use teammated::backoff::RetryPolicy;
use teammated::config::{ProviderConfig, ProviderKind};
use teammated::lead::{LeadConfig, Outcome, SpawnConfig};
use tokio::io::AsyncWriteExt;
use tokio_util::sync::CancellationToken;

const TASK: &str = "Say hi.\n```sh\necho hi\n```";

fn config(daemon: &InProc, kind: ProviderKind, url: String) -> LeadConfig {
    let work = daemon.dir().join("work");
    std::fs::create_dir_all(&work).unwrap();
    LeadConfig {
        team: teamboard_testkit::TEAM.to_string(),
        socket: daemon.socket.clone(),
        state_dir: daemon.dir().join("state"),
        state_dir_given: true,
        provider: ProviderConfig {
            kind,
            model: Some("mock-model".into()),
            base_url: Some(url),
            api_key: Some("sk-test".into()),
            max_tokens: 1024,
            max_tokens_field: None,
            request_timeout: Duration::from_secs(10),
            retry: RetryPolicy::default(),
        },
        spawn: SpawnConfig {
            // teamctl finds the teammated built next to it.
            teamctl: workspace_bin("teamctl"),
            provider: Some("scripted".into()),
            model: None,
            base_url: None,
            workdir: work,
            idle_timeout: Some(0),
            runtime: None,
        },
        goal: Some("Say hi, with one teammate.".into()),
        yes: true,
        give_up_after: None,
        max_rounds: 10,
        context_budget: 100_000,
    }
}

/// Runs the lead with a goal against `mock` and checks what the model was sent.
async fn lead_with_goal(kind: ProviderKind, mock: &MockLlm) {
    let daemon = InProc::start().await;
    let cfg = config(&daemon, kind, mock.url());
    let state = cfg.state_dir.clone();
    let ran = tokio::time::timeout(
        PATIENCE,
        teammated::lead::run(cfg, tokio::io::empty(), false, CancellationToken::new()),
    )
    .await
    .expect("the lead finishes in time");
    let outcome = ran.expect("the lead runs");
    let boss = lead(&daemon.socket).await;
    let team = boss.team().await.unwrap();
    for m in &team {
        if let Some(pid) = m.pid {
            // SAFETY: kill(2) on the teammate this test had spawned; no memory involved.
            unsafe { libc::kill(pid as i32, libc::SIGTERM) };
        }
    }
    assert_eq!(
        outcome,
        Outcome::Done {
            completed: 1,
            total: 1
        }
    );
    let tasks = boss.list_tasks(None).await.unwrap();
    assert_eq!(tasks[0].subject, "hi");
    assert_eq!(tasks[0].status, TaskStatus::Completed);
    assert_eq!(tasks[0].owner.as_deref(), Some("ada"));
    assert_eq!(team.len(), 1, "{team:?}");

    // goal; start: create_task, spawn_teammate, final words; summary.
    let requests = mock.requests();
    assert_eq!(
        requests.len(),
        5,
        "{:#?}",
        requests.iter().map(|r| &r.body).collect::<Vec<_>>()
    );
    let text = |i: usize| requests[i].body.to_string();
    let tools: Vec<String> = tool_names(&requests[0].body);
    for t in [
        "create_task",
        "spawn_teammate",
        "review_plan",
        "request_shutdown",
    ] {
        assert!(tools.iter().any(|n| n == t), "{t} missing from {tools:?}");
    }
    assert!(text(0).contains("Say hi, with one teammate.") && text(0).contains("lead of team"));
    assert!(text(1).contains("start"));
    assert!(text(2).contains("created task #1: hi"), "{}", text(2));
    assert!(text(3).contains("spawned ada (role dev"), "{}", text(3));
    assert!(
        text(4).contains("[Board done] 1 task(s): 1 completed")
            && text(4).contains("#1 hi: completed by ada"),
        "{}",
        text(4)
    );
    // The ledger charges the five calls by cause.
    let usage: Value = serde_json::from_slice(
        &std::fs::read(state.join("teammates/default/lead/usage.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(usage["planning"]["calls"], 4, "{usage}");
    assert_eq!(usage["summary"]["calls"], 1, "{usage}");
    assert!(usage["planning"]["tokens"]["input"].as_u64().unwrap() > 0);
}

fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| {
                    t["name"]
                        .as_str()
                        .or_else(|| t["function"]["name"].as_str())
                        .map(str::to_string)
                })
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lead_plans_starts_and_sums_up_through_the_anthropic_api() {
    let mock = MockLlm::start(vec![
        MockReply::anthropic_text("Plan: one task 'hi', one teammate ada. Say start."),
        MockReply::anthropic_tool_use(
            "toolu_1",
            "create_task",
            json!({"subject": "hi", "description": TASK}),
        ),
        MockReply::anthropic_tool_use(
            "toolu_2",
            "spawn_teammate",
            json!({"name": "ada", "role": "dev"}),
        ),
        MockReply::anthropic_text("Started."),
        MockReply::anthropic_text("Summary: ada said hi."),
    ]);
    lead_with_goal(ProviderKind::Anthropic, &mock).await;
    let r = &mock.requests()[2];
    assert_eq!(r.path, "/v1/messages");
    // The tool result answers the tool use, in Anthropic's shape.
    let last = &r.body["messages"].as_array().unwrap().last().unwrap()["content"][0];
    assert_eq!(last["type"], "tool_result");
    assert_eq!(last["tool_use_id"], "toolu_1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lead_plans_starts_and_sums_up_through_the_openai_api() {
    let args = json!({"subject": "hi", "description": TASK}).to_string();
    let mock = MockLlm::start(vec![
        MockReply::openai_text("Plan: one task 'hi', one teammate ada. Say start."),
        MockReply::openai_tool_call("call_1", "create_task", &args),
        MockReply::openai_tool_call("call_2", "spawn_teammate", r#"{"name":"ada","role":"dev"}"#),
        MockReply::openai_text("Started."),
        MockReply::openai_text("Summary: ada said hi."),
    ]);
    lead_with_goal(ProviderKind::Openai, &mock).await;
    let r = &mock.requests()[2];
    assert_eq!(r.path, "/chat/completions");
    let last = r.body["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["role"], "tool");
    assert_eq!(last["tool_call_id"], "call_1");
}

/// Events the lead hears after its turn can be older than the board it sums up:
/// a task it created and that ended during the turn is not news once that board
/// was summarised. The lead sums up each done board once, and again only when
/// the board changed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lead_sums_up_a_done_board_once_however_late_it_hears_of_it() {
    let daemon = InProc::start().await;
    // The test is the teammate: it ends each task while the lead's turn still
    // runs, during the late replies.
    let late = Duration::from_secs(1);
    let mock = MockLlm::start_with_fallback(
        vec![
            MockReply::anthropic_tool_use("toolu_1", "create_task", json!({"subject": "a"})),
            MockReply::anthropic_tool_use("toolu_2", "create_task", json!({"subject": "b"}))
                .with_delay(late),
            MockReply::anthropic_text("Created a and b.").with_delay(late),
        ],
        MockReply::anthropic_text("Summary."),
    );
    let cfg = LeadConfig {
        goal: None,
        yes: false,
        give_up_after: None,
        ..config(&daemon, ProviderKind::Anthropic, mock.url())
    };
    let (mut person, input) = tokio::io::duplex(64 * 1024);
    let session = tokio::spawn(teammated::lead::run(
        cfg,
        tokio::io::BufReader::new(input),
        false,
        CancellationToken::new(),
    ));
    person.write_all(b"Create a and b.\n").await.unwrap();
    let boss = lead(&daemon.socket).await;
    let ada = teammate(&daemon.socket, "ada", "dev").await;
    for subject in ["a", "b"] {
        let id = eventually(
            format!("the lead to create {subject}"),
            PATIENCE,
            || async {
                let tasks = boss.list_tasks(None).await.ok()?;
                tasks.iter().find(|t| t.subject == subject).map(|t| t.id)
            },
        )
        .await;
        let claim = ada.claim_task(id).await.unwrap();
        ada.complete_task(id, claim.epoch, "done").await.unwrap();
    }
    // The turn's events come in now: a created, a completed (the board, a and b,
    // is done: the summary), then b created and b completed, which are old news.
    let first = eventually("the summary", PATIENCE, || async {
        (mock.calls() == 4).then(|| mock.requests()[3].body.to_string())
    })
    .await;
    assert!(
        first.contains("[Board done] 2 task(s): 2 completed"),
        "{first}"
    );
    // Events reach the lead in order: once it has taken a later message into its
    // context (and acknowledged it), it has handled b's events.
    let heard = async |what: &str| {
        ada.send("lead", MessageKind::Message, what, None)
            .await
            .unwrap();
        eventually(format!("the lead to take {what:?}"), PATIENCE, || async {
            boss.inbox().await.ok()?.is_empty().then_some(())
        })
        .await;
    };
    heard("after b").await;
    assert_eq!(mock.calls(), 4, "{:#?}", mock.requests()[4].body);

    // A new task that ends makes a new board to sum up, once.
    let c = boss
        .add_task(teamboard_testkit::task("c"))
        .await
        .unwrap()
        .id;
    let claim = ada.claim_task(c).await.unwrap();
    ada.complete_task(c, claim.epoch, "done").await.unwrap();
    // The lead may take the message before its summary call reaches the
    // model (both come out of one wake-up), so the call is waited for; that it
    // is made once is what the next message shows.
    let next = eventually("the second summary", PATIENCE, || async {
        (mock.calls() >= 5).then(|| mock.requests()[4].body.to_string())
    })
    .await;
    assert!(
        next.contains("[Board done] 3 task(s): 3 completed"),
        "{next}"
    );
    heard("after c").await;
    heard("later still").await;
    assert_eq!(mock.calls(), 5, "{:#?}", mock.requests());

    person.write_all(b"/quit\n").await.unwrap();
    let outcome = tokio::time::timeout(PATIENCE, session)
        .await
        .expect("the lead leaves")
        .unwrap()
        .unwrap();
    assert_eq!(outcome, Outcome::Quit);
}

/// The lead checks the model API as a teammate does: a server that lists no
/// models (404 or 405 at `GET /models`) or keeps failing there (5xx, retried
/// first) serves it all the same; only a refused key stops it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lead_uses_a_server_without_a_model_list_but_not_a_refused_key() {
    let daemon = InProc::start().await;
    let mock = MockLlm::start(Vec::new());
    let lead_until_quit = |models: MockReply| {
        mock.set_models(models);
        let mut cfg = LeadConfig {
            goal: None,
            yes: false,
            ..config(&daemon, ProviderKind::Openai, mock.url())
        };
        cfg.provider.retry = RetryPolicy {
            max_attempts: 3,
            base: Duration::from_millis(1),
            cap: Duration::from_millis(10),
        };
        let input = tokio::io::BufReader::new(&b"/quit\n"[..]);
        tokio::time::timeout(
            PATIENCE,
            teammated::lead::run(cfg, input, false, CancellationToken::new()),
        )
    };
    for status in [404, 405] {
        let outcome = lead_until_quit(MockReply::raw(status, "no such endpoint")).await;
        assert_eq!(outcome.expect("in time").expect("runs"), Outcome::Quit);
    }
    assert_eq!(mock.model_list_requests().len(), 2);
    let outcome = lead_until_quit(MockReply::status(503)).await;
    assert_eq!(outcome.expect("in time").expect("runs"), Outcome::Quit);
    assert_eq!(mock.model_list_requests().len(), 5, "a 503 is retried");
    let refused = lead_until_quit(MockReply::status(401)).await;
    let err = refused
        .expect("in time")
        .expect_err("a refused key stops it");
    assert!(format!("{err:?}").contains("HTTP 401"), "{err:?}");
    assert_eq!(mock.model_list_requests().len(), 6);
    assert_eq!(mock.calls(), 0, "no model call: the person only quit");
}
