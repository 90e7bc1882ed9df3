//! The lead against the mock LLM server, through the real anthropic and openai
//! providers: multi-turn tool use (create_task, spawn_teammate) in both API
//! formats, then the summary once the team has done the work. The lead runs
//! in-process on a real boardd; its teammate is a real (scripted) teammated that
//! `spawn_teammate` starts through the real teamctl. That the lead changes nothing
//! before the person says "start" is checked through the real `teamctl lead`
//! binary, with a goal and in a conversation on its stdin.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "test code: a panic fails the test, and the harness captures what it prints"
)]

use serde_json::{Value, json};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use teamboard_protocol::{MessageKind, TaskStatus};
use teamboard_testkit::mock_llm::{MockLlm, MockReply, TOOL_USAGE, anthropic_message};
use teamboard_testkit::{InProc, PATIENCE, Teamctl, eventually, lead, teammate, workspace_bin};
use teammated::backoff::RetryPolicy;
use teammated::config::{ProviderConfig, ProviderKind};
use teammated::lead::{LeadConfig, Outcome, SpawnConfig};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

const TASK: &str = "Say hi.\n```sh\necho hi\n```";

fn config(daemon: &InProc, kind: ProviderKind, url: String) -> LeadConfig {
    let work = daemon.dir().join("work");
    std::fs::create_dir_all(&work).unwrap();
    LeadConfig {
        team: teamboard_testkit::TEAM.to_string(),
        socket: daemon.socket.clone(),
        remote: None,
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
            account: Default::default(),
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
            sandbox: None,
            no_network: false,
        },
        goal: Some("Say hi, with one teammate.".into()),
        yes: true,
        give_up_after: None,
        max_rounds: 10,
        context_budget: 100_000,
        review_plans: Default::default(),
        new_team: false,
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
    // The lead changes the board only after the person's start.
    person.write_all(b"start\n").await.unwrap();
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

/// `teamctl lead ARGS` on `daemon`'s board: the real binaries, the lead's model
/// the mock at `url` (anthropic), its teammates scripted, stdin and stdout piped.
fn teamctl_lead(daemon: &InProc, url: &str, args: &[&str]) -> tokio::process::Child {
    let work = daemon.dir().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let mut cmd = Teamctl::new(workspace_bin("teamctl"), &daemon.socket)
        .with_state_dir(&daemon.state_dir)
        .command();
    cmd.args(["lead", "--provider", "anthropic", "--model", "mock-model"])
        .args(["--base-url", url, "--teammate-provider", "scripted"])
        .args(["--teammate-idle-timeout", "0", "--workdir"])
        .arg(&work)
        .args(args)
        .env("TEAMMATED_BIN", workspace_bin("teammated"))
        .env("ANTHROPIC_API_KEY", "sk-test")
        .env_remove("ANTHROPIC_BASE_URL")
        .env_remove("TEAMMATE_PROVIDER")
        .env_remove("TEAMMATE_MODEL")
        .env_remove("TEAMMATE_BASE_URL")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    let mut cmd = tokio::process::Command::from(cmd);
    cmd.kill_on_drop(true);
    cmd.spawn().expect("teamctl lead starts")
}

/// What the lead printed so far, read as it comes. Dropped, it stops the
/// teammates the lead said it spawned (they run with no idle timeout), however
/// the test ends.
#[derive(Default)]
struct Printed(Arc<Mutex<String>>);

impl Printed {
    fn collect(child: &mut tokio::process::Child) -> Printed {
        let printed = Printed::default();
        let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
        let text = printed.0.clone();
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                let mut t = text.lock().unwrap();
                t.push_str(&line);
                t.push('\n');
            }
        });
        printed
    }

    fn text(&self) -> String {
        self.0.lock().unwrap().clone()
    }

    async fn wait_for(&self, what: &str) {
        eventually(
            format!("the lead to print {what:?}; it printed:\n{}", self.text()),
            PATIENCE,
            || async { self.text().contains(what).then_some(()) },
        )
        .await;
    }
}

impl Drop for Printed {
    fn drop(&mut self) {
        for line in self.text().lines().filter(|l| l.contains("spawned ")) {
            let pid = line
                .split_once(", pid ")
                .and_then(|(_, r)| r.split(')').next())
                .and_then(|p| p.parse::<i32>().ok());
            if let Some(pid) = pid {
                // SAFETY: kill(2) on a teammate this test's lead started; no memory involved.
                unsafe { libc::kill(pid, libc::SIGTERM) };
            }
        }
    }
}

/// The tool results of the last message of a model call, by tool use id:
/// (content, is_error).
fn tool_results(body: &Value) -> Vec<(String, String, bool)> {
    let last = body["messages"].as_array().unwrap().last().unwrap();
    last["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["type"] == "tool_result")
        .map(|b| {
            (
                b["tool_use_id"].as_str().unwrap().to_string(),
                b["content"].as_str().unwrap_or_default().to_string(),
                b["is_error"].as_bool().unwrap_or(false),
            )
        })
        .collect()
}

/// The refusal a tool that changes the board or the team gets before "start".
const NOT_YET: &str = "not yet: the person has not said \"start\"";

/// `--goal ... --yes`: the goal's turn plans, and the tools the model calls in
/// it to create a task and spawn a teammate are refused with a reason; the
/// start then carries the plan out. Only the start's calls reach the board.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_goal_and_yes_the_lead_changes_nothing_before_start() {
    let daemon = InProc::start().await;
    let mock = MockLlm::start(vec![
        // The goal's turn: it acts at once, against its prompt.
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
        MockReply::anthropic_text("Plan: one task 'hi', one teammate ada. Say start."),
        // The start's turn.
        MockReply::anthropic_tool_use(
            "toolu_3",
            "create_task",
            json!({"subject": "hi", "description": TASK}),
        ),
        MockReply::anthropic_tool_use(
            "toolu_4",
            "spawn_teammate",
            json!({"name": "ada", "role": "dev"}),
        ),
        MockReply::anthropic_text("Started."),
        MockReply::anthropic_text("Summary: ada said hi."),
    ]);
    let goal = ["--goal", "Say hi, with one teammate.", "--yes"];
    let mut child = teamctl_lead(&daemon, &mock.url(), &goal);
    let printed = Printed::collect(&mut child);
    let status = tokio::time::timeout(PATIENCE, child.wait())
        .await
        .expect("the lead finishes in time")
        .unwrap();
    let requests = mock.requests();
    let results: Vec<_> = requests.iter().map(|r| tool_results(&r.body)).collect();
    let bodies = || format!("{}\n{results:#?}", printed.text());
    assert!(status.success(), "{status:?}\n{}", bodies());
    // The model heard why, as the result of each call.
    for (i, id) in [(1, "toolu_1"), (2, "toolu_2")] {
        assert_eq!(results[i].len(), 1, "{}", bodies());
        let (use_id, content, is_error) = &results[i][0];
        assert!(
            use_id == id && *is_error && content.contains(NOT_YET),
            "{}",
            bodies()
        );
    }
    assert_eq!(results[4][0].1, "created task #1: hi", "{}", bodies());
    assert!(results[5][0].1.starts_with("spawned ada"), "{}", bodies());
    // One task, the start's, done by the one teammate.
    let boss = lead(&daemon.socket).await;
    let tasks = boss.list_tasks(None).await.unwrap();
    assert_eq!(tasks.len(), 1, "{tasks:?}");
    assert_eq!(tasks[0].status, TaskStatus::Completed);
    assert_eq!(tasks[0].owner.as_deref(), Some("ada"));
    let team = boss.team().await.unwrap();
    assert_eq!(team.len(), 1, "{team:?}");
    assert_eq!(requests.len(), 7, "{}", bodies());
}

/// In a conversation on stdin, the same: until the person says "start", a
/// round that creates a task and spawns a teammate has both refused, while the
/// tools that only read answer; the board and the team stay empty. After
/// "start", create_task puts the task on the board.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_a_conversation_the_lead_changes_nothing_before_start() {
    let daemon = InProc::start().await;
    let call = |id: &str, name: &str, input: Value| json!({"type": "tool_use", "id": id, "name": name, "input": input});
    let mock = MockLlm::start(vec![
        MockReply::json(
            200,
            anthropic_message(
                json!([
                    {"type": "text", "text": "Acting at once."},
                    call("toolu_1", "create_task", json!({"subject": "hi"})),
                    call("toolu_2", "spawn_teammate", json!({"name": "ada", "role": "dev"})),
                    call("toolu_3", "list_tasks", json!({})),
                    call("toolu_4", "list_team", json!({})),
                ]),
                "tool_use",
                TOOL_USAGE,
            ),
        ),
        MockReply::anthropic_text("Plan: one task 'hi'. Say start."),
        MockReply::anthropic_tool_use("toolu_5", "create_task", json!({"subject": "hi"})),
        MockReply::anthropic_text("Created."),
    ]);
    let mut child = teamctl_lead(&daemon, &mock.url(), &[]);
    let printed = Printed::collect(&mut child);
    let mut person = child.stdin.take().unwrap();
    person
        .write_all(b"Say hi, with one teammate.\n")
        .await
        .unwrap();
    printed.wait_for("Say start.").await;
    let boss = lead(&daemon.socket).await;
    assert!(boss.list_tasks(None).await.unwrap().is_empty());
    assert!(boss.team().await.unwrap().is_empty());
    let results = tool_results(&mock.requests()[1].body);
    let shown = format!("{results:#?}");
    assert_eq!(results.len(), 4, "{shown}");
    for (_, content, is_error) in &results[..2] {
        assert!(*is_error && content.contains(NOT_YET), "{shown}");
    }
    assert_eq!(results[2].1, "no tasks", "{shown}");
    assert_eq!(results[3].1, "no teammates yet", "{shown}");
    assert!(!results[2].2 && !results[3].2, "{shown}");

    person.write_all(b"start\n").await.unwrap();
    printed.wait_for("Created.").await;
    let results = tool_results(&mock.requests()[3].body);
    assert_eq!(results[0].1, "created task #1: hi", "{results:#?}");
    assert_eq!(boss.list_tasks(None).await.unwrap().len(), 1);
    person.write_all(b"/quit\n").await.unwrap();
    let status = tokio::time::timeout(PATIENCE, child.wait())
        .await
        .expect("the lead leaves")
        .unwrap();
    assert!(status.success(), "{status:?}");
    assert_eq!(mock.calls(), 4);
}
