//! The `acp` runtime end to end: real boardd, real teammated, the real
//! `gemini --acp` (Gemini CLI 0.61.0) against the Gemini API mock, offline.
//!
//! Each test skips (saying so) where Gemini CLI is not installed; see
//! `teamboard_testkit::agents`. Gemini takes about 3 s to start, so the tests
//! run one at a time ([`one_at_a_time`]) and script the model by what it is
//! asked ([`MockLlm::set_responder`]), never by the order of its calls.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "test code: a panic fails the test, and the harness captures what it prints"
)]

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use teamboard_protocol::request::ListRequestsArgs;
use teamboard_protocol::{EventKind, MessageKind, RequestState, Task, TaskId, TaskStatus};
use teamboard_testkit::agents::{Cli, OfflineAgent, agent_cli};
use teamboard_testkit::mock_llm::gemini::{self, function_responses, last_user_text};
use teamboard_testkit::mock_llm::{MockLlm, MockReply, RecordedRequest};
use teamboard_testkit::{
    Board, PATIENCE, Teammate, alive, eventually, wait_gone, with_env, with_marker, workspace_bin,
};

const TEAMMATED: &str = env!("CARGO_BIN_EXE_teammated");

/// Gemini is a Node program that takes seconds of both cores to start: the
/// tests of this file run one at a time.
async fn one_at_a_time() -> tokio::sync::MutexGuard<'static, ()> {
    static LOCK: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    LOCK.lock().await
}

/// The mock, Gemini's home (its settings and sessions) and the program.
struct Gemini {
    mock: MockLlm,
    home: PathBuf,
    program: PathBuf,
}

impl Gemini {
    /// Gemini CLI as installed, this file's turn to run it, a board, and
    /// Gemini set up against the mock; `None`, after saying why the test is
    /// skipped, where Gemini CLI is not installed.
    async fn start() -> Option<(tokio::sync::MutexGuard<'static, ()>, Board, Gemini)> {
        let program = agent_cli(Cli::Gemini)?;
        let one = one_at_a_time().await;
        let board = Board::start(TEAMMATED).await;
        let g = Gemini::new(program, board.dir());
        Some((one, board, g))
    }

    /// Gemini CLI set up offline in `dir` (`teamboard_testkit::agents::offline`):
    /// API key auth against the mock, no telemetry, no update checks, the
    /// workspace trusted, no relaunch.
    fn new(program: PathBuf, dir: &Path) -> Gemini {
        Gemini {
            mock: MockLlm::start(vec![]),
            home: dir.join("gemini-home"),
            program,
        }
    }

    /// Scripts the model's streamed calls with `respond`; side calls (a
    /// session's title) get a short text.
    fn respond(&self, respond: impl Fn(&RecordedRequest) -> MockReply + Send + Sync + 'static) {
        self.mock.set_responder(move |req| {
            Some(if gemini::is_stream(&req.path) {
                respond(req)
            } else {
                MockReply::gemini_text("A task for the board")
            })
        });
    }

    /// `teammated --runtime acp --agent-cmd gemini --agent-arg=--acp` as `name`.
    fn spawn(&self, board: &Board, name: &str, extra: &[&str]) -> Teammate {
        board.spawn_agent(name, &self.agent(), extra, &[])
    }

    /// Like [`Gemini::spawn`], with the board's MCP server a real `teamctl`
    /// (built for the test) that the agent can call.
    fn spawn_with_board_tools(&self, board: &Board, name: &str, extra: &[&str]) -> Teammate {
        let teamctl = workspace_bin("teamctl").display().to_string();
        let env = [("TEAMBOARD_TEAMCTL", teamctl.as_str())];
        board.spawn_agent(name, &self.agent(), extra, &env)
    }

    /// teammated's flags and environment for this Gemini.
    fn agent(&self) -> OfflineAgent {
        Cli::Gemini
            .offline(&self.program, &self.home, &self.mock.url())
            .expect("gemini home")
    }

    /// The model calls so far that carried `needle` anywhere in their contents.
    fn calls_with(&self, needle: &str) -> Vec<RecordedRequest> {
        self.mock
            .requests()
            .into_iter()
            .filter(|r| {
                gemini::is_stream(&r.path) && r.body["contents"].to_string().contains(needle)
            })
            .collect()
    }

    /// Processes (other than `except`) started for this test's agent: their
    /// environment names this test's Gemini home.
    fn processes(&self, except: Option<u32>) -> Vec<(u32, String)> {
        with_env("GEMINI_CLI_HOME", &self.home.display().to_string())
            .into_iter()
            .filter(|(pid, _)| Some(*pid) != except)
            .collect()
    }
}

/// A model answer calling Gemini's shell tool.
fn shell(command: &str) -> MockReply {
    MockReply::gemini_function_call(
        "run_shell_command",
        json!({"command": command, "description": "as the task says"}),
    )
}

/// The session id the transcript reports as `started` or `resumed`.
fn sessions_in(transcript: &str, what: &str) -> Vec<String> {
    transcript
        .lines()
        .filter_map(|l| {
            let v: Value = serde_json::from_str(l).ok()?;
            let text = v["text"].as_str()?;
            let rest = text.strip_prefix("agent: acp session ")?;
            let (id, tail) = rest.split_once(' ')?;
            tail.starts_with(what).then(|| id.to_string())
        })
        .collect()
}

/// A sleeping command whose process carries `marker` in its command line: a
/// copy of `sleep` named after it.
fn marked_sleep(dir: &Path, marker: &str) -> String {
    let bin = dir.join(marker);
    std::fs::copy("/bin/sleep", &bin).expect("copy sleep");
    format!("{} 300", bin.display())
}

/// Checks that the task's result says `needle`.
fn assert_result_says(task: &Task, needle: &str) {
    assert!(
        task.result.as_deref().unwrap_or_default().contains(needle),
        "{task:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_runs_a_tool_and_its_final_answer_completes_it() {
    let Some((_one, mut board, g)) = Gemini::start().await else {
        return;
    };
    // In alice's workdir: the only place her sandbox lets her agent write.
    let out = board.workdir("alice").join("from-the-tool.txt");
    let command = format!("echo written-by-gemini > {}", out.display());
    g.respond(move |req| {
        if let Some((name, answer)) = function_responses(&req.body).first() {
            return MockReply::gemini_text(&format!(
                "The file is written ({name} said {}). RESULT-OK",
                answer.to_string().len()
            ));
        }
        if last_user_text(&req.body).contains("TOOL-TASK") {
            return shell(&command);
        }
        MockReply::gemini_text("nothing to do")
    });
    let started = Instant::now();
    let alice = g.spawn(&board, "alice", &[]);
    let t = board
        .add_claimed_by("alice", "write a file", "TOOL-TASK: write the file")
        .await;
    let done = board.wait_completed(t.id, &alice).await;
    eprintln!(
        "acp: one task with one tool call took {:?}",
        started.elapsed()
    );
    assert_result_says(&done, "RESULT-OK");
    assert_eq!(
        std::fs::read_to_string(&out).unwrap_or_default().trim(),
        "written-by-gemini"
    );
    let transcript = board.transcript("alice");
    let started = sessions_in(&transcript, "started");
    assert_eq!(started.len(), 1, "{transcript}");
    assert!(
        transcript.contains(r#""tool":"run_shell_command""#),
        "the tool call is in the transcript:\n{transcript}"
    );
    // The identity heads the first prompt (ACP has no system prompt).
    let first = &g.calls_with("TOOL-TASK")[0];
    assert!(last_user_text(&first.body).contains("You are alice"));
    // The prompt's usage was recorded for the task.
    let usage = board
        .wait_for("the usage", |e| e.kind == EventKind::UsageRecorded)
        .await;
    assert!(usage.detail.contains("alice"), "{usage:?}");
    board.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_to_a_busy_agent_waits_for_the_turn_boundary_and_is_acked_once_sent() {
    let Some((_one, mut board, g)) = Gemini::start().await else {
        return;
    };
    const SLOW: Duration = Duration::from_secs(4);
    g.respond(|req| {
        let said = last_user_text(&req.body);
        if said.contains("PING-MSG") {
            MockReply::gemini_text("Got the message. REPLY-TO-MESSAGE")
        } else if said.contains("BUSY-TASK") {
            MockReply::gemini_text("first turn done").with_delay(SLOW)
        } else {
            MockReply::gemini_text("nothing to do")
        }
    });
    let alice = g.spawn(&board, "alice", &[]);
    let t = board
        .add_claimed_by("alice", "be busy", "BUSY-TASK: think slowly")
        .await;
    // The agent is in its slow model call.
    let lead = &board.lead;
    eventually("the slow call", PATIENCE, || async {
        (!g.calls_with("BUSY-TASK").is_empty()).then_some(())
    })
    .await;
    let busy_since = g.calls_with("BUSY-TASK")[0].received_at;
    let sent_at = Instant::now();
    let msg = lead
        .send(
            "alice",
            MessageKind::Message,
            "PING-MSG: also check the docs",
            None,
        )
        .await
        .expect("send");
    board.wait_acked(msg.id).await;
    let acked_at = Instant::now();
    // Acked only once the first turn had ended and the message went out as
    // the next prompt, never while the agent was busy.
    assert!(
        acked_at >= busy_since + SLOW,
        "acked {:?} after the slow call began (it takes {SLOW:?}); log:\n{}",
        acked_at - busy_since,
        alice.log_text()
    );
    // The work's answer is the result; the message was answered in a turn of
    // its own, after it.
    let done = board.wait_completed(t.id, &alice).await;
    assert_eq!(done.result.as_deref(), Some("first turn done"), "{done:#?}");
    let transcript = board.transcript("alice");
    assert!(transcript.contains("REPLY-TO-MESSAGE"), "{transcript}");
    let arrived = g.calls_with("PING-MSG");
    assert!(!arrived.is_empty(), "the message never reached the model");
    let arrival = arrived[0].received_at;
    let turn_end = busy_since + SLOW;
    eprintln!(
        "acp: message sent -> in the busy agent's model call {:?} (the running turn ended {:?} after the send; {:?} from the turn's end)",
        arrival - sent_at,
        turn_end.saturating_duration_since(sent_at),
        arrival.saturating_duration_since(turn_end)
    );
    board.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_plan_gate_holds_the_agent_until_the_lead_approves() {
    let Some((_one, mut board, g)) = Gemini::start().await else {
        return;
    };
    let work = board.workdir("alice").join("the-work.txt");
    let touch = format!("echo done > {}", work.display());
    g.respond(move |req| {
        let offered = req.body["tools"].to_string();
        match function_responses(&req.body).first().map(|(n, _)| n.as_str()) {
            Some("write_file") => MockReply::gemini_function_call(
                "exit_plan_mode",
                json!({"plan_filename": "plan.md"}),
            ),
            Some("exit_plan_mode") => shell(&touch),
            Some("run_shell_command") => MockReply::gemini_text("Carried out the plan. RESULT-PLANNED"),
            _ if offered.contains("exit_plan_mode")
                && last_user_text(&req.body).contains("PLAN-TASK") =>
            {
                MockReply::gemini_function_call(
                    "write_file",
                    json!({"file_path": "plan.md", "content": "1. PLAN-STEP-ONE: write the work file\n"}),
                )
            }
            _ => MockReply::gemini_text("nothing to do"),
        }
    });
    let alice = g.spawn(&board, "alice", &[]);
    let t = board
        .add_needing_a_plan("planned work", "PLAN-TASK: write the work file")
        .await;
    assert_eq!(board.wait_claimed(t.id).await, "alice");
    let opened = board
        .wait_for("the plan request", |e| e.kind == EventKind::RequestOpened)
        .await;
    let requests = board
        .lead
        .list_requests(ListRequestsArgs::default())
        .await
        .expect("requests");
    let plan = requests
        .iter()
        .find(|r| r.state == RequestState::Pending)
        .unwrap_or_else(|| panic!("no pending plan request: {requests:#?} ({opened:?})"));
    assert!(
        plan.plan
            .as_deref()
            .unwrap_or_default()
            .contains("PLAN-STEP-ONE"),
        "the plan file's text is the plan: {plan:#?}"
    );
    // Held: nothing changes while the lead has not decided.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(
        !work.exists(),
        "the agent worked before the plan was approved"
    );
    assert!(g.calls_with("RESULT-PLANNED").is_empty());
    assert_eq!(board.task(t.id).await.status, TaskStatus::InProgress);
    board
        .lead
        .review_plan(plan.id, true, None)
        .await
        .expect("approve");
    let done = board.wait_completed(t.id, &alice).await;
    assert_result_says(&done, "RESULT-PLANNED");
    assert!(work.exists(), "the approved plan was not carried out");
    board.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_agent_uses_the_boards_own_tools() {
    let Some((_one, mut board, g)) = Gemini::start().await else {
        return;
    };
    // Gemini asks before every MCP call, with kind `other`: read-only refuses
    // that kind, but not the board's own tools.
    g.respond(|req| match function_responses(&req.body).first() {
        Some((name, _)) if name == "mcp_teamboard_send_message" => MockReply::gemini_function_call(
            "mcp_teamboard_complete_task",
            json!({"result": "RESULT-BY-THE-BOARD-TOOL"}),
        ),
        Some((name, answer)) => MockReply::gemini_text(&format!("{name} answered {answer}")),
        None if last_user_text(&req.body).contains("BOARD-TOOL-TASK") => {
            MockReply::gemini_function_call(
                "mcp_teamboard_send_message",
                json!({"to": "lead", "text": "BOARD-MSG-FROM-GEMINI"}),
            )
        }
        None => MockReply::gemini_text("nothing to do"),
    });
    let alice = g.spawn_with_board_tools(&board, "alice", &["--agent-policy", "read-only"]);
    let t = board
        .add_claimed_by(
            "alice",
            "report",
            "BOARD-TOOL-TASK: tell the lead, then complete the task",
        )
        .await;
    let done = board.wait_completed(t.id, &alice).await;
    // Completed by the agent's complete_task, not by a final answer.
    assert_eq!(
        done.result.as_deref(),
        Some("RESULT-BY-THE-BOARD-TOOL"),
        "{done:#?}\n{}",
        board.transcript("alice")
    );
    let inbox = board.lead.inbox().await.expect("inbox");
    assert!(
        inbox
            .iter()
            .any(|m| m.from == "alice" && m.content.contains("BOARD-MSG-FROM-GEMINI")),
        "the agent's message never reached the lead: {inbox:#?}"
    );
    board.stop().await;
}

/// Starts a task whose agent runs a marked `sleep 300`, and waits for it.
async fn busy_with_a_marked_command(
    board: &mut Board,
    g: &Gemini,
    marker: &str,
) -> (Teammate, TaskId) {
    let command = marked_sleep(&board.workdir("alice"), marker);
    g.respond(move |req| {
        if last_user_text(&req.body).contains("SLEEP-TASK")
            && function_responses(&req.body).is_empty()
        {
            shell(&command)
        } else {
            MockReply::gemini_text("slept")
        }
    });
    let alice = g.spawn(board, "alice", &[]);
    let t = board
        .add_claimed_by("alice", "sleep", "SLEEP-TASK: sleep a long time")
        .await;
    alice.wait_for_process(marker).await;
    (alice, t.id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_interrupts_the_agent_and_ends_its_command() {
    let Some((_one, mut board, g)) = Gemini::start().await else {
        return;
    };
    let marker = "acp-cancel-sleep-7f3a";
    let (alice, id) = busy_with_a_marked_command(&mut board, &g, marker).await;
    let teammated = alice.pid();
    assert!(!g.processes(Some(teammated)).is_empty());
    let cancelled = Instant::now();
    board.lead.cancel_task(id).await.expect("cancel");
    board.wait_status("alice", "idle").await;
    wait_gone("the agent and its command", PATIENCE, || {
        [with_marker(marker), g.processes(Some(teammated))].concat()
    })
    .await;
    eprintln!(
        "acp: cancel -> agent and command gone {:?}",
        cancelled.elapsed()
    );
    assert!(alive(teammated), "the teammate survives");
    assert_eq!(board.task(id).await.status, TaskStatus::Cancelled);
    let transcript = board.transcript("alice");
    assert!(
        transcript.contains("agent: stopped (the claim is gone)"),
        "{transcript}"
    );
    board.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_of_the_teammate_leaves_no_agent_process_behind() {
    let Some((_one, mut board, g)) = Gemini::start().await else {
        return;
    };
    let marker = "acp-kill9-sleep-91c2";
    let (alice, _) = busy_with_a_marked_command(&mut board, &g, marker).await;
    let before = g.processes(Some(alice.pid()));
    assert!(
        before
            .iter()
            .any(|(_, cmd)| cmd.contains("node") || cmd.contains("gemini")),
        "no gemini process found: {before:?}"
    );
    alice.kill9();
    wait_gone("every agent process", PATIENCE, || {
        [g.processes(None), with_marker(marker)].concat()
    })
    .await;
    board.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_teammate_resumes_the_tasks_session() {
    let Some((_one, mut board, g)) = Gemini::start().await else {
        return;
    };
    let note = board.workdir("alice").join("first-turn.txt");
    let command = format!("echo first > {}", note.display());
    let hang = Arc::new(Mutex::new(true));
    let hanging = hang.clone();
    g.respond(move |req| {
        let said = last_user_text(&req.body);
        if said.contains("You are back on this task") {
            return MockReply::gemini_text("Resumed and finished. RESULT-RESUMED");
        }
        if !said.contains("RESUME-TASK") {
            return MockReply::gemini_text("nothing to do");
        }
        if function_responses(&req.body).is_empty() {
            return shell(&command);
        }
        // After its first tool call the agent hangs in a model call until the
        // teammate is killed.
        let slow = *hanging.lock().unwrap_or_else(|e| e.into_inner());
        let reply = MockReply::gemini_text("still working");
        if slow {
            reply.with_delay(Duration::from_secs(300))
        } else {
            reply
        }
    });
    let alice = g.spawn(&board, "alice", &[]);
    let t = board
        .add_claimed_by("alice", "resume me", "RESUME-TASK: work in two goes")
        .await;
    alice.wait_for_file(&note).await;
    eventually("the hanging model call", PATIENCE, || async {
        g.mock
            .requests()
            .iter()
            .any(|r| !function_responses(&r.body).is_empty())
            .then_some(())
    })
    .await;
    let first = sessions_in(&board.transcript("alice"), "started");
    assert_eq!(first.len(), 1, "{}", board.transcript("alice"));
    alice.kill9();
    *hang.lock().unwrap_or_else(|e| e.into_inner()) = false;
    board.wait_released(t.id).await;
    let restarted = Instant::now();
    let again = g.spawn(&board, "alice", &[]);
    // The restart comes within the minute the session was created in, so the
    // load waits for the next minute (up to 60 s) before Gemini's start.
    let reopened = Duration::from_secs(60) + PATIENCE;
    eventually("the session to be reopened", reopened, || async {
        let transcript = board.transcript("alice");
        (sessions_in(&transcript, "started").len() + sessions_in(&transcript, "resumed").len() > 1)
            .then_some(())
    })
    .await;
    eprintln!("acp: restart -> session reopened {:?}", restarted.elapsed());
    let done = board.wait_completed(t.id, &again).await;
    assert_result_says(&done, "RESULT-RESUMED");
    let transcript = board.transcript("alice");
    let resumed = sessions_in(&transcript, "resumed");
    let recorded = board.agent_sessions("alice");
    let entry = &recorded["tasks"][t.id.to_string()];
    assert_eq!(entry["starts"].as_u64(), Some(2), "{recorded}");
    // The second start loaded the task's session: the same id in the
    // transcript and in sessions.json. (Gemini CLI loses a session loaded in
    // the minute it was created in; the runtime waits for the next minute.)
    assert!(
        transcript.contains(&format!("resuming session {}", first[0])),
        "{transcript}"
    );
    assert_eq!(resumed, first, "the same session is resumed:\n{transcript}");
    assert_eq!(
        sessions_in(&transcript, "started").len(),
        1,
        "no new session:\n{transcript}"
    );
    assert_eq!(entry["session"], first[0].as_str(), "{recorded}");
    assert_eq!(entry["resumed"].as_u64(), Some(1), "{recorded}");
    // The resumed model call carried the first go's history: the task and
    // the tool's result.
    let back = g.calls_with("You are back on this task");
    let history = back[0].body["contents"].to_string();
    assert!(
        history.contains("RESUME-TASK") && history.contains("functionResponse"),
        "the history was not resumed: {history}"
    );
    board.stop().await;
}
