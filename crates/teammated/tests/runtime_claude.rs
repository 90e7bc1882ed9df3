//! The `claude` runtime end to end: real `teammated` processes drive the real
//! Claude Code CLI (the pinned version, see `teamboard_testkit::agents`) against
//! the mock Messages API, through boardd, offline. Each test is skipped, saying
//! so, where the CLI is not installed.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "test code: a panic fails the test, and the harness captures what it prints"
)]

mod claude_e2e;

use claude_e2e::*;
use serde_json::json;
use std::time::{Duration, Instant};
use teamboard_protocol::{EventKind, MessageKind, TaskStatus};
use teamboard_testkit::mock_llm::{self, MockReply};
use teamboard_testkit::{PATIENCE, alive, wait_gone, with_marker};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claimed_task_runs_a_bash_tool_and_the_final_answer_completes_it() {
    let Some(mut t) = ClaudeBoard::start().await else {
        return;
    };
    t.mock.set_responder(|req| {
        let last = last_user(&req.body);
        let results = tool_results(last);
        Some(if let Some(out) = result_of(&results, "toolu_bash_1") {
            say(&format!("FINAL: wrote the file ({out})"))
        } else if text_of(last).contains("E2E-BASH") {
            bash(
                "toolu_bash_1",
                "printf hello > made-by-claude.txt && echo written",
            )
        } else {
            say("(mock) nothing scripted for this")
        })
    });
    let (alice, task) = t
        .start_on(
            "alice",
            "write the file",
            "E2E-BASH: write hello into made-by-claude.txt",
        )
        .await;
    let done = t.board.wait_completed(task.id, &alice).await;
    assert_eq!(
        done.result.as_deref(),
        Some("FINAL: wrote the file (written)")
    );
    let file = t.board.workdir("alice").join("made-by-claude.txt");
    assert_eq!(
        std::fs::read_to_string(&file).ok().as_deref(),
        Some("hello")
    );
    // One session, recorded, named in the transcript and in every request.
    let (session, starts, resumed) = t.recorded_session("alice", task.id).expect("a session");
    assert_eq!((starts, resumed), (1, 0));
    let transcript = t.board.transcript("alice");
    assert_eq!(
        transcript_sessions(&transcript),
        [(session.clone(), "started".to_string())],
        "{transcript}"
    );
    assert!(
        transcript.contains("printf hello"),
        "the tool call is in the transcript: {transcript}"
    );
    for r in t.check_requests() {
        assert_eq!(r.header("x-claude-code-session-id"), Some(session.as_str()));
    }
    // The agent's usage (each turn's `result.usage`: the two model calls
    // summed) was recorded with the task.
    let (text, tool) = (mock_llm::TEXT_USAGE, mock_llm::TOOL_USAGE);
    assert_eq!(
        (done.tokens.input, done.tokens.output),
        (text.0 + tool.0, text.1 + tool.1),
        "{done:#?}"
    );
    drop(alice);
    t.board.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_sent_while_a_tool_runs_reaches_the_session_and_is_acked_only_then() {
    let Some(mut t) = ClaudeBoard::start().await else {
        return;
    };
    let (slow, marker) = marked_sleep(3, 2);
    t.mock.set_responder(move |req| {
        let last = last_user(&req.body);
        let results = tool_results(last);
        Some(if result_of(&results, "toolu_slow_1").is_some() {
            let text = text_of(last);
            if text.contains("STEER-7731") {
                say("FINAL: the message came with the tool result")
            } else {
                say("FINAL: no message")
            }
        } else if text_of(last).contains("E2E-SLOW") {
            bash("toolu_slow_1", &slow)
        } else {
            say("(mock) nothing scripted for this")
        })
    });
    let (alice, task) = t
        .start_on("alice", "slow work", "E2E-SLOW: run the slow command")
        .await;
    alice.wait_for_process(&marker).await;
    let sent_at = Instant::now();
    let msg = t
        .board
        .lead
        .send(
            "alice",
            MessageKind::Message,
            "STEER-7731: also mention lemons",
            None,
        )
        .await
        .expect("send");
    assert!(
        !with_marker(&marker).is_empty(),
        "the tool ended before the message was sent; make it slower"
    );
    let acked = t.board.wait_acked(msg.id).await;
    // Acked only once the agent took it: after the tool it was waiting behind.
    assert!(
        with_marker(&marker).is_empty(),
        "acked while the tool still ran: {acked:?}"
    );
    let acked_after = sent_at.elapsed();
    let done = t.board.wait_completed(task.id, &alice).await;
    assert_eq!(
        done.result.as_deref(),
        Some("FINAL: the message came with the tool result")
    );
    // It was steered into the running turn: the request after the tool carried
    // the tool's result and the message together.
    let requests = t.check_requests();
    let steered = requests
        .iter()
        .find(|r| text_of(last_user(&r.body)).contains("STEER-7731"))
        .expect("a request with the message");
    assert!(result_of(&tool_results(last_user(&steered.body)), "toolu_slow_1").is_some());
    let arrived_after = steered.received_at.duration_since(sent_at);
    eprintln!(
        "message: in the session's request {arrived_after:?} after send, acked {acked_after:?} after send"
    );
    drop(alice);
    t.board.stop().await;
}

/// A message that comes while the model writes its final answer is answered in
/// a turn of its own, after the work's: the work's answer is the task's
/// result, not the reply to the message.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_answered_after_the_work_does_not_become_its_result() {
    let Some(mut t) = ClaudeBoard::start().await else {
        return;
    };
    t.mock.set_responder(|req| {
        let text = text_of(last_user(&req.body));
        Some(if text.contains("QUESTION-5521") {
            say("REPLY: yes, lemons")
        } else if text.contains("E2E-SLOW-ANSWER") {
            say("FINAL: the work is done").with_delay(Duration::from_secs(4))
        } else {
            say("(mock) nothing scripted for this")
        })
    });
    let (alice, task) = t
        .start_on("alice", "slow answer", "E2E-SLOW-ANSWER: answer slowly")
        .await;
    let mock = &t.mock;
    teamboard_testkit::eventually("the slow call", PATIENCE, || async {
        let asked = mock
            .requests()
            .iter()
            .any(|r| text_of(last_user(&r.body)).contains("E2E-SLOW-ANSWER"));
        asked.then_some(())
    })
    .await;
    let msg = t
        .board
        .lead
        .send(
            "alice",
            MessageKind::Message,
            "QUESTION-5521: lemons?",
            None,
        )
        .await
        .expect("send");
    let done = t.board.wait_completed(task.id, &alice).await;
    let transcript = t.board.transcript("alice");
    assert_eq!(
        done.result.as_deref(),
        Some("FINAL: the work is done"),
        "{transcript}"
    );
    // The message was answered, in a turn after the work's.
    t.board.wait_acked(msg.id).await;
    assert!(transcript.contains("REPLY: yes, lemons"), "{transcript}");
    drop(alice);
    t.board.stop().await;
}

/// Where plan mode tells the model to write its plan, from a request's text.
fn plan_file(body: &serde_json::Value) -> Option<String> {
    let text = body.to_string();
    let (_, rest) = text.split_once("create your plan at ")?;
    let end = rest.find([' ', '\\', '"'])?;
    Some(rest[..end].to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_plan_gate_holds_the_agent_until_the_lead_approves_and_a_rejection_goes_back() {
    let Some(mut t) = ClaudeBoard::start().await else {
        return;
    };
    let work = t.board.workdir("alice");
    let early = work.join("early.txt");
    let plan_at = std::sync::Arc::new(std::sync::Mutex::new(None::<String>));
    let seen_plan_at = plan_at.clone();
    t.mock.set_responder(move |req| {
        let last = last_user(&req.body);
        let results = tool_results(last);
        let mut path = seen_plan_at.lock().unwrap_or_else(|p| p.into_inner());
        if path.is_none() {
            *path = plan_file(&req.body);
        }
        let write_plan = |id: &str, version: &str| {
            call(
                id,
                "Write",
                json!({
                    "file_path": path.clone().unwrap_or_else(|| "/nonexistent/plan.md".into()),
                    "content": format!("PLAN-E2E {version}: touch planned.txt"),
                }),
            )
        };
        Some(if result_of(&results, "toolu_do_1").is_some() {
            say("FINAL: did what the plan said")
        } else if let Some(answer) = ["toolu_exit_1", "toolu_exit_2"]
            .iter()
            .find_map(|id| result_of(&results, id))
        {
            if answer.contains("REJECT-4242") {
                write_plan("toolu_planw_2", "v2")
            } else {
                bash("toolu_do_1", "touch planned.txt")
            }
        } else if result_of(&results, "toolu_planw_1").is_some() {
            call("toolu_exit_1", "ExitPlanMode", json!({}))
        } else if result_of(&results, "toolu_planw_2").is_some() {
            call("toolu_exit_2", "ExitPlanMode", json!({}))
        } else if result_of(&results, "toolu_early_1").is_some() {
            write_plan("toolu_planw_1", "v1")
        } else if text_of(last).contains("E2E-PLAN") {
            // Before any plan: a change that Claude Code asks teammated
            // about, and that the gate must refuse.
            call(
                "toolu_early_1",
                "Write",
                json!({"file_path": early.display().to_string(), "content": "too early"}),
            )
        } else {
            say("(mock) nothing scripted for this")
        })
    });
    let alice = t.join("alice").await;
    let task = t
        .board
        .add_needing_a_plan(
            "planned work",
            "E2E-PLAN: plan first, then touch planned.txt",
        )
        .await;
    let opened = |e: &teamboard_protocol::Event| {
        e.kind == EventKind::RequestOpened && e.task == Some(task.id)
    };
    let first = t.board.wait_for("the first plan request", opened).await;
    let first = first.request.expect("a request id");
    let request = t.board.lead.get_request(first).await.expect("get_request");
    assert!(
        request
            .plan
            .as_deref()
            .is_some_and(|p| p.contains("PLAN-E2E v1")),
        "{request:#?}\n{}",
        alice.log_text()
    );
    assert!(
        !work.join("early.txt").exists(),
        "a change ran before the plan"
    );
    t.board
        .lead
        .review_plan(first, false, Some("REJECT-4242: add a test"))
        .await
        .expect("reject");
    let second = t.board.wait_for("the second plan request", opened).await;
    let second = second.request.expect("a request id");
    let request = t.board.lead.get_request(second).await.expect("get_request");
    assert!(
        request
            .plan
            .as_deref()
            .is_some_and(|p| p.contains("PLAN-E2E v2")),
        "{request:#?}"
    );
    // The rejection reached the agent as the answer to its ExitPlanMode.
    let requests = t.mock.requests();
    let rejected = requests
        .iter()
        .find_map(|r| {
            result_of(&tool_results(last_user(&r.body)), "toolu_exit_1").map(str::to_string)
        })
        .expect("the answer to the first proposal");
    assert!(rejected.contains("REJECT-4242: add a test"), "{rejected}");
    assert!(
        !work.join("planned.txt").exists(),
        "the plan ran before it was approved"
    );
    t.board
        .lead
        .review_plan(second, true, None)
        .await
        .expect("approve");
    let done = t.board.wait_completed(task.id, &alice).await;
    assert_eq!(
        done.result.as_deref(),
        Some("FINAL: did what the plan said")
    );
    assert!(work.join("planned.txt").exists());
    assert!(
        !work.join("early.txt").exists(),
        "the change before the plan ran after all"
    );
    t.check_requests();
    drop(alice);
    t.board.stop().await;
}

/// How long the agent and its tools may take to go once their end is decided:
/// an interrupt, its `result`, the CLI's exit; the guard's kill is at once.
const GONE_WITHIN: Duration = Duration::from_secs(10);

/// A teammate whose agent is in a long `sleep` tool: the board, the teammate,
/// the task, the session, the guard's pid and the sleep's marker.
async fn busy_in_a_long_tool(
    t: &mut ClaudeBoard,
    tag: u32,
) -> (teamboard_testkit::Teammate, u64, String, u32, String) {
    let (long, marker) = marked_sleep(300, tag);
    t.mock.set_responder(move |req| {
        let last = last_user(&req.body);
        let text = text_of(last);
        Some(if text.contains("You are back on this task") {
            say("FINAL: picked up where I left off")
        } else if !tool_results(last).is_empty() {
            say("(mock) the tool ended")
        } else if text.contains("E2E-LONG") {
            bash("toolu_long_1", &long)
        } else {
            say("(mock) nothing scripted for this")
        })
    });
    let (alice, task) = t
        .start_on("alice", "long work", "E2E-LONG: run the long command")
        .await;
    alice.wait_for_process(&marker).await;
    let (session, _, _) = t.recorded_session("alice", task.id).expect("a session");
    let guard = agent_pid(&t.board.transcript("alice")).expect("the agent's pid");
    assert!(alive(guard));
    assert!(
        !with_marker(&session).is_empty(),
        "no process runs with session {session}"
    );
    (alice, task.id, session, guard, marker)
}

/// Waits until nothing of the agent is left: its guard, the CLI (named by its
/// session id on its command line) and the tool (by its marker).
async fn all_gone(session: &str, guard: u32, marker: &str) -> Duration {
    wait_gone(
        format!("the agent (guard {guard}, session {session}) and its tool ({marker})"),
        GONE_WITHIN,
        || {
            let mut left = with_marker(session);
            left.extend(with_marker(marker));
            left.extend(alive(guard).then(|| (guard, "the guard".to_string())));
            left
        },
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_interrupts_the_agent_and_ends_it_with_its_tool() {
    let Some(mut t) = ClaudeBoard::start().await else {
        return;
    };
    let (alice, task, session, guard, marker) = busy_in_a_long_tool(&mut t, 4).await;
    let cancelled = Instant::now();
    t.board.lead.cancel_task(task).await.expect("cancel");
    all_gone(&session, guard, &marker).await;
    eprintln!(
        "agent and tool gone {:?} after the cancel",
        cancelled.elapsed()
    );
    assert_eq!(t.board.task(task).await.status, TaskStatus::Cancelled);
    // Interrupted, not just killed: Claude Code recorded the interrupt in the
    // session.
    let log = t.session_log(&session);
    assert!(
        log.contains("Request interrupted by user"),
        "no interrupt in the session's record: ...{}",
        &log[log.len().saturating_sub(2000)..]
    );
    // The teammate stays, and says why the agent stopped.
    t.board.wait_idle("alice").await;
    let transcript = t.board.transcript("alice");
    assert!(
        transcript.contains("agent: stopped (the claim is gone)"),
        "{transcript}\n{}",
        alice.log_text()
    );
    drop(alice);
    t.board.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kill_9_of_the_teammate_leaves_no_agent_and_no_tool_behind() {
    let Some(mut t) = ClaudeBoard::start().await else {
        return;
    };
    let (alice, _task, session, guard, marker) = busy_in_a_long_tool(&mut t, 5).await;
    alice.kill9();
    let took = all_gone(&session, guard, &marker).await;
    eprintln!("agent and tool gone {took:?} after kill -9 of their teammate");
    drop(alice);
    t.board.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_teammate_resumes_the_tasks_session() {
    let Some(mut t) = ClaudeBoard::start().await else {
        return;
    };
    let (alice, task, session, guard, marker) = busy_in_a_long_tool(&mut t, 6).await;
    alice.kill9();
    all_gone(&session, guard, &marker).await;
    drop(alice);
    // The task went back to the board; the same teammate, started again with
    // the same agent home, claims it again and resumes its session.
    let alice = t.spawn("alice", "alice-again");
    let done = t.board.wait_completed(task, &alice).await;
    assert_eq!(done.owner.as_deref(), Some("alice"));
    assert_eq!(
        done.result.as_deref(),
        Some("FINAL: picked up where I left off")
    );
    assert_eq!(
        t.recorded_session("alice", task),
        Some((session.clone(), 2, 1)),
        "sessions.json"
    );
    let transcript = t.board.transcript("alice");
    assert_eq!(
        transcript_sessions(&transcript),
        [
            (session.clone(), "started".to_string()),
            (session.clone(), "resumed".to_string())
        ],
        "{transcript}"
    );
    // Every request of both processes came with the one session, and the
    // resumed one carried the conversation so far.
    let requests = t.check_requests();
    for r in &requests {
        assert_eq!(r.header("x-claude-code-session-id"), Some(session.as_str()));
    }
    // (Whether the tool call itself is in it depends on Claude Code having
    // written it to the session before the kill: it writes asynchronously.)
    let resumed = requests.last().expect("a request");
    let body = resumed.body.to_string();
    assert!(
        body.matches("E2E-LONG: run the long command").count() >= 2
            && body.contains("You are back on this task"),
        "{body}"
    );
    drop(alice);
    t.board.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_the_agent_lost_is_replaced_by_a_new_one_and_the_transcript_says_why() {
    let Some(mut t) = ClaudeBoard::start().await else {
        return;
    };
    t.mock.set_responder(|req| {
        let text = text_of(last_user(&req.body));
        Some(if text.contains("E2E-LOST") {
            say("FINAL: done in a new session")
        } else {
            say("(mock) nothing scripted for this")
        })
    });
    // alice worked on task 1 before, in a session Claude Code no longer has.
    let lost = "0badc0de-1111-4111-8111-111111111111";
    let agent_dir = teamboard_protocol::transcript::teammate_dir(
        t.board.state_dir(),
        teamboard_testkit::TEAM,
        "alice",
    )
    .join("agent");
    std::fs::create_dir_all(&agent_dir).expect("agent dir");
    std::fs::write(
        agent_dir.join("sessions.json"),
        json!({"tasks": {"1": {"runtime": "claude", "session": lost, "starts": 1, "resumed": 0}}})
            .to_string(),
    )
    .expect("sessions.json");
    let (alice, task) = t.start_on("alice", "lost session", "E2E-LOST: do it").await;
    assert_eq!(task.id, 1);
    let done = t.board.wait_completed(task.id, &alice).await;
    assert_eq!(done.result.as_deref(), Some("FINAL: done in a new session"));
    let (session, starts, resumed) = t.recorded_session("alice", task.id).expect("a session");
    assert_ne!(session, lost);
    assert_eq!((starts, resumed), (2, 0));
    let transcript = t.board.transcript("alice");
    assert!(
        transcript.contains(&format!("resuming session {lost}"))
            && transcript.contains(&format!("session {session} started, pid"))
            && transcript.contains("could not be resumed: ")
            && transcript.contains("No conversation found"),
        "{transcript}"
    );
    // The new session is not told it is back on the task.
    for r in t.check_requests() {
        assert_eq!(r.header("x-claude-code-session-id"), Some(session.as_str()));
        assert!(!r.body.to_string().contains("You are back on this task"));
    }
    drop(alice);
    t.board.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_of_the_agent_releases_the_task_and_the_next_attempt_resumes_the_session() {
    let Some(mut t) = ClaudeBoard::start().await else {
        return;
    };
    let (alice, task, session, guard, marker) = busy_in_a_long_tool(&mut t, 7).await;
    // The CLI itself dies (not its guard, not the sandbox's bubblewrap around
    // it, not the teammate).
    let cli: Vec<(u32, String)> = with_marker(&session)
        .into_iter()
        .filter(|(p, cmd)| *p != guard && !cmd.starts_with("bwrap "))
        .collect();
    assert_eq!(cli.len(), 1, "{cli:?}");
    teamboard_testkit::kill9(cli[0].0);
    let released = t.board.wait_released(task).await;
    // What it started went with it.
    wait_gone(format!("the tool ({marker})"), GONE_WITHIN, || {
        with_marker(&marker)
    })
    .await;
    // The teammate stays, takes the task again and resumes the session.
    let done = t.board.wait_completed(task, &alice).await;
    assert_eq!(done.attempts, 2);
    assert_eq!(
        done.result.as_deref(),
        Some("FINAL: picked up where I left off")
    );
    assert_eq!(
        t.recorded_session("alice", task),
        Some((session.clone(), 2, 1))
    );
    let transcript = t.board.transcript("alice");
    assert!(
        transcript.contains("the agent exited (killed by signal 9) before it finished"),
        "{released:?}\n{transcript}"
    );
    let errors: Vec<String> = t
        .board
        .lead
        .inbox()
        .await
        .expect("inbox")
        .into_iter()
        .filter(|m| m.kind == MessageKind::Error)
        .map(|m| m.content)
        .collect();
    assert!(
        errors
            .iter()
            .any(|e| e.contains("claude agent: the agent exited")),
        "{errors:?}"
    );
    drop(alice);
    t.board.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_api_error_releases_the_task_with_the_agents_error() {
    let Some(mut t) = ClaudeBoard::start().await else {
        return;
    };
    t.mock.set_responder(move |req| {
        let text = text_of(last_user(&req.body));
        Some(if !text.contains("E2E-APIERR") {
            say("(mock) nothing scripted for this")
        } else if !text.contains("You are back on this task") {
            // The first attempt fails.
            MockReply::json(
                400,
                json!({"type": "error", "error": {"type": "invalid_request_error", "message": "E2E-BAD-REQUEST"}}),
            )
        } else {
            say("FINAL: second attempt")
        })
    });
    let (alice, task) = t.start_on("alice", "flaky api", "E2E-APIERR: do it").await;
    let released = t.board.wait_released(task.id).await;
    let done = t.board.wait_completed(task.id, &alice).await;
    assert_eq!(done.attempts, 2);
    let transcript = t.board.transcript("alice");
    assert!(
        transcript.contains("claude ended the turn with an error (api_error)")
            && transcript.contains("E2E-BAD-REQUEST"),
        "{released:?}\n{transcript}"
    );
    drop(alice);
    t.board.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_uses_the_boards_mcp_tools_and_ends_its_task_with_them() {
    let Some(mut t) = ClaudeBoard::start().await else {
        return;
    };
    t.mock.set_responder(|req| {
        let last = last_user(&req.body);
        let results = tool_results(last);
        Some(if result_of(&results, "toolu_done").is_some() {
            say("(after the task ended)")
        } else if result_of(&results, "toolu_msg").is_some() {
            call(
                "toolu_done",
                "mcp__teamboard__complete_task",
                json!({"result": "DONE-VIA-MCP: told the lead"}),
            )
        } else if text_of(last).contains("E2E-MCP") {
            call(
                "toolu_msg",
                "mcp__teamboard__send_message",
                json!({"to": "lead", "text": "HELLO-FROM-CLAUDE"}),
            )
        } else {
            say("(mock) nothing scripted for this")
        })
    });
    let (alice, task) = t
        .start_on(
            "alice",
            "talk",
            "E2E-MCP: tell the lead hello, then end the task",
        )
        .await;
    let done = t.board.wait_completed(task.id, &alice).await;
    // The result is the one the agent gave complete_task, not a later answer.
    assert_eq!(done.result.as_deref(), Some("DONE-VIA-MCP: told the lead"));
    let inbox = t.board.lead.inbox().await.expect("inbox");
    assert!(
        inbox
            .iter()
            .any(|m| m.from == "alice" && m.content == "HELLO-FROM-CLAUDE"),
        "{inbox:#?}"
    );
    // The model saw the board's tools by name, loaded (tool search off).
    let tools = t.mock.requests()[0].body["tools"].to_string();
    assert!(tools.contains("mcp__teamboard__complete_task"), "{tools}");
    drop(alice);
    t.board.stop().await;
}

/// A message to an idle teammate opens a conversation with the agent, and is
/// acknowledged once Claude Code took it (the echo of the first line), once:
/// not before, and not handed over again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_to_an_idle_teammate_is_acknowledged_once_the_agent_took_it() {
    let Some(mut t) = ClaudeBoard::start().await else {
        return;
    };
    t.mock.set_responder(|_| Some(say("noted")));
    let alice = t.join("alice").await;
    t.board.message_idle("alice", "IDLE-NOTE for claude").await;
    let carried = t
        .check_requests()
        .iter()
        .filter(|r| text_of(last_user(&r.body)).contains("IDLE-NOTE"))
        .count();
    assert_eq!(carried, 1, "{}", alice.log_text());
    drop(alice);
    t.board.stop().await;
}

/// The agent runs its own default model, or the one `--agent-model` names;
/// the native loop's model (`TEAMMATE_MODEL`, as a person's shell may set it
/// for their native teammates) never reaches it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_runs_its_own_model_or_the_agent_model_never_the_native_loops() {
    let Some(mut t) = ClaudeBoard::start().await else {
        return;
    };
    t.mock.set_responder(|_| Some(say("FINAL: done")));
    let native = [("TEAMMATE_MODEL", "native-loop-model")];
    let mut models = Vec::new();
    for (name, extra) in [
        ("alice", &[][..]),
        ("bob", &["--agent-model", "agent-picked-model"][..]),
    ] {
        let mate = t.spawn_with_env(name, "dev", name, extra, &native);
        t.board.wait_idle(name).await;
        let task = t.board.add_claimed_by(name, "say done", "Say done.").await;
        t.board.wait_completed(task.id, &mate).await;
        let (session, _, _) = t.recorded_session(name, task.id).expect("a session");
        let seen: Vec<String> = t
            .check_requests()
            .iter()
            .filter(|r| r.header("x-claude-code-session-id") == Some(session.as_str()))
            .map(|r| r.body["model"].as_str().unwrap_or_default().to_string())
            .collect();
        assert!(!seen.is_empty(), "{name}'s agent called the mock");
        models.push(seen);
        // Gone before the next one starts, so that it takes the next task.
        drop(mate);
    }
    let own = &models[0];
    assert!(
        own.iter()
            .all(|m| !m.is_empty() && m != "native-loop-model"),
        "the agent's own default: {own:?}"
    );
    assert!(
        models[1].iter().all(|m| m == "agent-picked-model"),
        "{:?}",
        models[1]
    );
    t.board.stop().await;
}

/// `teamctl lead --teammate-runtime claude` spawns Claude Code teammates that
/// do the plan's work: the lead's provider, model and base URL are the native
/// loop's and stay out of the agent's `teamctl spawn`, which refuses them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lead_spawns_claude_teammates_that_complete_its_plan() {
    let Some(t) = ClaudeBoard::start().await else {
        return;
    };
    t.mock.set_responder(|_| Some(say("FINAL: done by claude")));
    let agent = t.agent();
    let teamctl = teamboard_testkit::workspace_bin("teamctl");
    let dir = t.claude.parent().expect("claude's directory");
    let path = std::env::join_paths(std::iter::once(dir.to_path_buf()).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .expect("a PATH");
    let work = t.board.workdir("lead");
    std::fs::create_dir_all(&work).expect("the lead's workdir");
    let goal =
        "Say it.\n\n````plan\nteammate ada role=dev\ntask t: Say done\n    Answer done.\n````";
    let mut lead = tokio::process::Command::new(&teamctl);
    lead.arg("--socket")
        .arg(&t.board.daemon.socket)
        .arg("--state-dir")
        .arg(t.board.state_dir())
        .args([
            "lead",
            "--goal",
            goal,
            "--yes",
            "--teammate-runtime",
            "claude",
        ])
        // A teammate left behind by a failure ends itself once idle.
        .args(["--teammate-idle-timeout", "5", "--workdir"])
        .arg(&work)
        .env("TEAMMATED_BIN", TEAMMATED)
        .env("TEAMBOARD_TEAMCTL", &teamctl)
        .env("PATH", path)
        .env_remove("TEAMBOARD_TEAM")
        .env_remove("TEAMMATE_PROVIDER")
        .envs(agent.env_strs())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    let lead = lead.spawn().expect("teamctl lead starts");
    // A lead whose teammates never start waits for them for ever: bounded here.
    let out = tokio::time::timeout(PATIENCE * 4, lead.wait_with_output())
        .await
        .expect("the lead to finish its goal")
        .expect("teamctl lead runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    for pid in stdout
        .lines()
        .filter(|l| l.contains("spawn_teammate"))
        .filter_map(|l| {
            l.split_once(", pid ")?
                .1
                .split(')')
                .next()?
                .parse::<i32>()
                .ok()
        })
    {
        // SAFETY: kill(2) on a teammate this test started; no memory involved.
        unsafe { libc::kill(pid, libc::SIGTERM) };
    }
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let team = t.board.lead.team().await.expect("the roster");
    let ada = team.iter().find(|m| m.name == "ada").expect("ada joined");
    assert_eq!(ada.runtime.as_deref(), Some("claude"), "{ada:#?}");
    let tasks = t.board.lead.list_tasks(None).await.expect("the tasks");
    assert_eq!(tasks.len(), 1, "{tasks:#?}");
    assert_eq!(tasks[0].status, TaskStatus::Completed, "{tasks:#?}");
    assert_eq!(tasks[0].result.as_deref(), Some("FINAL: done by claude"));
    t.board.stop().await;
}

/// A team token budget stops a turn that never ends: the mock answers every
/// call with a Bash call and reports 10,000 input and 500 output tokens. Each
/// call is settled as Claude Code streams its end; the third passes the cap of
/// 25,000, boardd says the budget is exhausted, and the turn stops there: the
/// task goes back (the attempt not counted), the ledger holds the three calls
/// to the token, and the mock sees no call after the one in flight.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_budget_that_runs_out_stops_the_turn_and_gives_the_task_back() {
    use std::sync::atomic::{AtomicU64, Ordering};
    use teamboard_protocol::request::SetBudgetArgs;
    use teamboard_protocol::spend::{BudgetScope, Limits};
    let Some(mut t) = ClaudeBoard::start().await else {
        return;
    };
    const CALL: (u64, u64) = (10_000, 500);
    let n = AtomicU64::new(0);
    t.mock.set_responder(move |_| {
        let i = n.fetch_add(1, Ordering::Relaxed);
        let content = json!([{"type": "tool_use", "id": format!("toolu_loop_{i}"), "name": "Bash",
            "input": {"command": format!("echo step {i}"), "description": "one more step"}}]);
        Some(MockReply::json(
            200,
            mock_llm::anthropic_message(content, "tool_use", CALL),
        ))
    });
    t.board
        .lead
        .set_budget(SetBudgetArgs {
            scope: BudgetScope::Team,
            per_ms: None,
            limits: Limits {
                tokens: Some(25_000),
                ..Limits::default()
            },
        })
        .await
        .expect("the budget");
    let (alice, task) = t
        .start_on("alice", "endless", "E2E-ENDLESS: keep going")
        .await;
    let released = t.board.wait_released(task.id).await;
    assert!(
        released
            .detail
            .contains("budget exhausted: team budget limit of"),
        "{}\n{}",
        released.detail,
        alice.log_text()
    );
    let calls = t.mock.calls();
    eprintln!("released after {calls} calls: {}", released.detail);
    // Back on the board, not counted as an attempt, with no error of its own.
    let back = t.board.task(task.id).await;
    assert_eq!(back.status, TaskStatus::Pending, "{back:#?}");
    assert_eq!((back.attempts, back.last_error.as_deref()), (0, None));
    // The ledger has the three calls the agent reported, to the token: the
    // first that passed the cap stopped the turn.
    let report = t.board.lead.budgets().await.expect("the budgets");
    assert_eq!(report.spent.tokens, 3 * (CALL.0 + CALL.1), "{report:#?}");
    assert_eq!(report.spent.input_tokens, 3 * CALL.0, "{report:#?}");
    assert_eq!(report.budgets[0].spent, report.spent);
    assert!(report.budgets[0].exhausted.is_some(), "{report:#?}");
    assert_eq!(back.tokens.total(), report.spent.tokens);
    // The mock saw those, and at most the one in flight when the turn stopped.
    assert!((3..=4).contains(&calls), "{calls} calls");
    // The teammate idles, handed nothing while the budget is out, and calls
    // the model no more.
    t.board.wait_idle("alice").await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(t.mock.calls(), calls, "{}", alice.log_text());
    assert_eq!(t.board.task(task.id).await.status, TaskStatus::Pending);
    let transcript = t.board.transcript("alice");
    assert!(
        transcript.contains("agent: stopped (a budget ran out)"),
        "{transcript}"
    );
    drop(alice);
    t.board.stop().await;
}

/// On an API key, a dollar limit goes to Claude Code as its own spend cap
/// (`--max-budget-usd`, what the limits leave), and the usage is priced as
/// `anthropic/` and the model the API answered with: once the limit is
/// reached the turn stops and the task goes back, the attempt not counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dollar_limit_is_the_agents_own_cap_and_stops_its_turn() {
    use teamboard_protocol::request::SetBudgetArgs;
    use teamboard_protocol::spend::{BudgetScope, Limits, MicroUsd};
    let Some(mut t) = ClaudeBoard::start().await else {
        return;
    };
    // Slow enough to find the CLI's command line while the call runs.
    t.mock.set_responder(|_| {
        Some(bash("toolu_cap_1", "echo capped").with_delay(Duration::from_secs(3)))
    });
    t.board
        .lead
        .set_budget(SetBudgetArgs {
            scope: BudgetScope::Member {
                name: "alice".into(),
            },
            per_ms: None,
            limits: Limits {
                usd: Some(MicroUsd(1_000)),
                ..Limits::default()
            },
        })
        .await
        .expect("the budget");
    let (alice, task) = t.start_on("alice", "capped", "E2E-CAP: go").await;
    tokio::time::timeout(PATIENCE, t.mock.wait_for_calls(1))
        .await
        .expect("a call");
    let config = t.home.join(".claude").display().to_string();
    let clis = teamboard_testkit::with_env("CLAUDE_CONFIG_DIR", &config);
    assert!(
        clis.iter()
            .any(|(_, cmd)| cmd.contains("--max-budget-usd 0.001000")),
        "{clis:#?}"
    );
    let released = t.board.wait_released(task.id).await;
    assert!(
        released.detail.contains("budget exhausted"),
        "{}\n{}",
        released.detail,
        alice.log_text()
    );
    let back = t.board.task(task.id).await;
    assert_eq!((back.status, back.attempts), (TaskStatus::Pending, 0));
    // Priced at the catalog's rates for the model the API answered with, a
    // whole number of calls, and past the cap by one call at most. Which of
    // the two caps stopped the turn depends on the CLI's own prices (it
    // prices the model it asked for, which may cost more).
    let report = t.board.lead.budgets().await.expect("the budgets");
    let tool = mock_llm::TOOL_USAGE;
    let per_call = tool.0 * 3 + tool.1 * 15;
    assert_eq!(report.unpriced_tokens, 0, "{report:#?}");
    let calls = report.spent.usd.0 / per_call;
    assert!(calls >= 1, "{report:#?}");
    assert_eq!(report.spent.usd, MicroUsd(calls * per_call), "{report:#?}");
    assert!(
        report.spent.usd <= MicroUsd(1_000 + per_call),
        "{report:#?}"
    );
    drop(alice);
    t.board.stop().await;
}

/// On a claude.ai login the CLI's usage counts in tokens, not dollars, and a
/// usage limit with a reset (a 429 with the subscription's
/// `anthropic-ratelimit-unified-*` headers, which the CLI reports as a
/// rejected `rate_limit_event`) blocks the login's account until the reset:
/// the task goes back (the attempt not counted), the teammate waits, the mock
/// sees no call before the reset, and after it the task is done.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscriptions_usage_limit_waits_for_its_reset_and_counts_tokens_only() {
    use std::sync::{Arc, Mutex};
    use std::time::{SystemTime, UNIX_EPOCH};
    let Some(mut t) = ClaudeBoard::start().await else {
        return;
    };
    let now_s = || {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0)
    };
    // The calls' times, and the reset: 3 s after the first call, however
    // long the CLI took to make it.
    let seen: Arc<Mutex<(Vec<u64>, u64)>> = Arc::default();
    let log = seen.clone();
    t.mock.set_responder(move |req| {
        let mut log = log.lock().unwrap();
        let now = now_s();
        if log.0.is_empty() {
            log.1 = now + 3;
        }
        log.0.push(now);
        let reset = log.1;
        if now < reset {
            let body = json!({"type": "error", "error": {"type": "rate_limit_error",
                "message": "usage limit reached"}});
            let reset = reset.to_string();
            return Some(
                MockReply::json(429, body)
                    .with_header("anthropic-ratelimit-unified-status", "rejected")
                    .with_header("anthropic-ratelimit-unified-reset", &reset)
                    .with_header(
                        "anthropic-ratelimit-unified-representative-claim",
                        "five_hour",
                    )
                    .with_header("anthropic-ratelimit-unified-5h-status", "rejected")
                    .with_header("anthropic-ratelimit-unified-5h-reset", &reset)
                    .with_header("anthropic-ratelimit-unified-5h-utilization", "1.0"),
            );
        }
        let bearer = req.header("authorization").unwrap_or_default().to_string();
        Some(say(&format!("FINAL: done after the reset ({bearer})")))
    });
    let alice = t.spawn_on_login("alice");
    t.board.wait_idle("alice").await;
    let task = t
        .board
        .add_claimed_by("alice", "limited", "E2E-LIMIT: go")
        .await;
    let released = t.board.wait_released(task.id).await;
    assert!(
        released
            .detail
            .contains("usage limit on claude-subscription (five_hour usage limit) until"),
        "{}\n{}",
        released.detail,
        alice.log_text()
    );
    let reset = seen.lock().unwrap().1;
    // boardd knows the block, until the reset the CLI reported.
    let report = t.board.lead.budgets().await.expect("the budgets");
    let account = report
        .accounts
        .iter()
        .find(|a| a.name == "claude-subscription")
        .unwrap_or_else(|| panic!("{report:#?}"));
    assert_eq!(account.blocked_until_ms, Some(reset as i64 * 1000));
    let done = t.board.wait_completed(task.id, &alice).await;
    assert_eq!(
        done.result.as_deref(),
        Some("FINAL: done after the reset (Bearer sk-ant-oat01-mock)")
    );
    // One refused call, then none before the reset.
    let seen = seen.lock().unwrap().0.clone();
    assert!(seen.len() >= 2, "{seen:?}");
    assert!(seen[0] < reset, "{seen:?}");
    assert!(
        seen[1..].iter().all(|&s| s >= reset),
        "{seen:?} reset {reset}"
    );
    assert_eq!(done.attempts, 1, "the release did not count");
    // Counted in tokens; a subscription's calls are neither priced nor unpriced.
    let report = t.board.lead.budgets().await.expect("the budgets");
    let text = mock_llm::TEXT_USAGE;
    assert_eq!(report.spent.tokens, text.0 + text.1, "{report:#?}");
    assert_eq!(report.unpriced_tokens, 0, "{report:#?}");
    let transcript = t.board.transcript("alice");
    assert!(
        transcript.contains("agent: waiting for claude-subscription to reset"),
        "{transcript}"
    );
    drop(alice);
    t.board.stop().await;
}
