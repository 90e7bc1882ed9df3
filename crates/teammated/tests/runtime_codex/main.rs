//! The `codex` runtime end to end: the real Codex CLI (`codex app-server`,
//! pinned, see `teamboard_testkit::agents`) driven by real `teammated`
//! processes around an in-process boardd, offline against the mock's
//! Responses API. Each test skips, saying so, where the CLI is not installed.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "test code: a panic fails the test, and the harness captures what it prints"
)]

mod harness;

use harness::{CodexHome, exec, nonce, percentile};
use std::time::{Duration, Instant};
use teamboard_protocol::request::NewTask;
use teamboard_protocol::{EventKind, MessageKind, Task, TaskStatus};
use teamboard_testkit::mock_llm::MockReply;
use teamboard_testkit::mock_llm::responses::{function_call_output, user_texts};
use teamboard_testkit::{Board, PATIENCE, Teammate, eventually, wait_gone, with_marker};

/// How long a "busy" model call takes: far longer than any test.
const BUSY: Duration = Duration::from_secs(120);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_is_done_with_a_command_and_the_final_answer_is_its_result() {
    let Some((codex, mut board)) = CodexHome::start().await else {
        return;
    };
    codex.mock.set_responder(|req| {
        if let Some((_, output)) = function_call_output(&req.body) {
            let said = output.lines().last().unwrap_or_default().to_string();
            return Some(MockReply::responses_text(&format!(
                "Wrote proof.txt; it says: {said}"
            )));
        }
        Some(exec(
            "call_1",
            "echo codex-was-here > proof.txt && cat proof.txt",
        ))
    });
    let alice = codex.spawn(&board, "alice", &[]);
    let t = board.add("write the proof", "Write proof.txt.", &[]).await;
    let task = board.wait_completed(t.id, &alice).await;
    assert_eq!(
        task.result.as_deref(),
        Some("Wrote proof.txt; it says: codex-was-here")
    );
    let proof = std::fs::read_to_string(alice.workdir.join("proof.txt")).unwrap_or_default();
    assert_eq!(proof, "codex-was-here\n");
    // One thread, named in the mock's requests, the store and the transcript.
    let requests = codex.mock.requests();
    assert_eq!(requests.len(), 2, "a call, then the answer");
    let thread = requests[0]
        .header("session-id")
        .unwrap_or_default()
        .to_string();
    assert!(!thread.is_empty());
    assert!(requests.iter().all(|r| r.path == "/v1/responses"));
    assert!(
        requests
            .iter()
            .all(|r| r.header("thread-id") == Some(&thread))
    );
    let text = requests[0].body.to_string();
    assert!(
        text.contains("Write proof.txt."),
        "the task reaches the model"
    );
    assert!(text.contains("You are alice"), "and so does the identity");
    assert_eq!(
        board.agent_sessions("alice")["tasks"][t.id.to_string()]["session"],
        thread.as_str()
    );
    let transcript = board.transcript("alice");
    assert!(
        transcript.contains(&format!("agent: codex session {thread} started")),
        "{transcript}"
    );
    assert!(transcript.contains("echo codex-was-here"), "{transcript}");
    // Usage: what the mock reported for the two calls, as Codex passed it on.
    assert_eq!(task.tokens.output, 20 + 12, "{:?}", task.tokens);
    assert_eq!(task.tokens.all_input(), 40 + 25, "{:?}", task.tokens);
    drop(alice);
    board.stop().await;
}

/// Messages sent while the model is busy reach the running turn at once
/// (`turn/steer`: Codex drops the model call and makes it again with them),
/// each once, and are acknowledged. Prints the latency from the lead's send
/// to the mock's request that carries it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_to_a_busy_agent_are_steered_into_its_turn() {
    let Some((codex, mut board)) = CodexHome::start().await else {
        return;
    };
    const SENDS: usize = 20;
    codex.mock.set_responder(|req| {
        let said = user_texts(&req.body);
        if said.iter().any(|t| t.contains("FINISH")) {
            let pings = said.iter().filter(|t| t.contains("ping-")).count();
            return Some(MockReply::responses_text(&format!(
                "finished after {pings} pings"
            )));
        }
        Some(MockReply::responses_text("still working").with_delay(BUSY))
    });
    let alice = codex.spawn(&board, "alice", &[]);
    let t = board
        .add("keep busy", "Work until told to finish.", &[])
        .await;
    codex.wait_for_calls(1, "no model call", &alice).await;
    let mut latencies = Vec::new();
    for i in 0..=SENDS {
        let text = if i == SENDS {
            "FINISH now".to_string()
        } else {
            format!("ping-{i}")
        };
        let calls = codex.mock.calls();
        let sent = Instant::now();
        let message = board
            .lead
            .send("alice", MessageKind::Message, &text, None)
            .await
            .expect("send");
        // The next model call carries it: steered into the turn, not queued.
        let missing = format!("{text} reached no model call");
        codex.wait_for_calls(calls + 1, &missing, &alice).await;
        let request = codex.mock.request(calls).expect("the request");
        assert!(
            user_texts(&request.body).iter().any(|u| u.contains(&text)),
            "{text} not in the next call"
        );
        latencies.push(request.received_at.duration_since(sent));
        if i < SENDS {
            board.wait_acked(message.id).await;
        }
    }
    let task = board.wait_completed(t.id, &alice).await;
    // Each message reached the conversation once: none was sent twice.
    assert_eq!(
        task.result.as_deref(),
        Some(format!("finished after {SENDS} pings").as_str())
    );
    // All in the first turn's thread and turn.
    let requests = codex.mock.requests();
    let turn_of = |r: &teamboard_testkit::mock_llm::RecordedRequest| {
        let meta: serde_json::Value =
            serde_json::from_str(r.header("x-codex-turn-metadata").unwrap_or("{}"))
                .unwrap_or_default();
        meta["turn_id"].as_str().map(str::to_string)
    };
    let first_turn = turn_of(&requests[0]);
    assert!(first_turn.is_some());
    assert!(
        requests.iter().all(|r| turn_of(r) == first_turn),
        "a message started a turn of its own"
    );
    let (p50, p95) = (
        percentile(&mut latencies, 50),
        percentile(&mut latencies, 95),
    );
    eprintln!("send -> in the busy agent's model call, {SENDS}+1 sends: p50 {p50:?}, p95 {p95:?}");
    drop(alice);
    board.stop().await;
}

/// A task that needs a plan: the agent plans in a read-only sandbox (a write it
/// tries fails), its plan goes to the lead, nothing happens until the lead
/// approves, then it carries the plan out with write access.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_plan_gate_holds_until_the_lead_approves() {
    let Some((codex, mut board)) = CodexHome::start().await else {
        return;
    };
    codex.mock.set_responder(|req| {
        let approved = user_texts(&req.body)
            .iter()
            .any(|t| t.contains("approved your plan"));
        match function_call_output(&req.body) {
            Some((call, _)) if call == "sneak" => Some(MockReply::responses_text(
                "PLAN: 1. write done.txt 2. report",
            )),
            Some(_) => Some(MockReply::responses_text("Carried out the plan.")),
            None if approved => Some(exec("work", "echo done > done.txt")),
            None => Some(exec("sneak", "echo sneaky > sneaky.txt")),
        }
    });
    let alice = codex.spawn(&board, "alice", &[]);
    let t = board
        .add_needing_a_plan("careful change", "Write done.txt.")
        .await;
    let opened = board
        .wait_for("the plan request", |e| {
            e.kind == EventKind::RequestOpened && e.task == Some(t.id)
        })
        .await;
    let request = opened.request.expect("the request's id");
    let plan = eventually("the plan in the lead's inbox", PATIENCE, || async {
        let inbox = board.lead.inbox().await.ok()?;
        inbox
            .into_iter()
            .find(|m| m.kind == MessageKind::PlanApprovalRequest)
            .map(|m| m.content)
    })
    .await;
    assert!(plan.contains("PLAN: 1. write done.txt"), "{plan}");
    // Nothing moves while the lead thinks.
    let calls = codex.mock.calls();
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        codex.mock.calls(),
        calls,
        "the agent went on before approval"
    );
    assert_eq!(board.task(t.id).await.status, TaskStatus::InProgress);
    assert!(
        !alice.workdir.join("sneaky.txt").exists(),
        "a write got through the gate"
    );
    assert!(!alice.workdir.join("done.txt").exists());
    board
        .lead
        .review_plan(request, true, None)
        .await
        .expect("approve");
    let task = board.wait_completed(t.id, &alice).await;
    assert_eq!(task.result.as_deref(), Some("Carried out the plan."));
    assert!(alice.workdir.join("done.txt").exists());
    assert!(!alice.workdir.join("sneaky.txt").exists());
    // The write failed in the sandbox; the approved one ran.
    let outputs: Vec<(String, String)> = codex
        .mock
        .requests()
        .iter()
        .filter_map(|r| function_call_output(&r.body))
        .collect();
    let output = |call: &str| {
        outputs
            .iter()
            .find(|(c, _)| c == call)
            .map(|(_, o)| o.clone())
            .unwrap_or_default()
    };
    assert!(
        output("sneak").contains("exited with code 1"),
        "{outputs:?}"
    );
    assert!(output("work").contains("exited with code 0"), "{outputs:?}");
    drop(alice);
    board.stop().await;
}

/// The scenario of the cancel and kill tests: alice's model runs a command
/// that would last five minutes, and waits. Returns alice, her task and the
/// command's marker, once the command runs.
async fn busy_with_a_long_command(
    codex: &CodexHome,
    board: &mut Board,
) -> (Teammate, Task, String) {
    let marker = format!("300.{}", nonce());
    let cmd = format!("sleep {marker}");
    codex.mock.set_responder(move |req| {
        if function_call_output(&req.body).is_some() {
            return Some(MockReply::responses_text("still waiting").with_delay(BUSY));
        }
        Some(exec("long", &cmd))
    });
    let alice = codex.spawn(board, "alice", &[]);
    board.wait_idle("alice").await;
    let t = board
        .add_claimed_by("alice", "long job", "Wait a long time.")
        .await;
    alice.wait_for_process(&marker).await;
    let agent = codex.processes(&[alice.pid()]);
    assert!(
        !agent.is_empty(),
        "no agent process; log:\n{}",
        alice.log_text()
    );
    (alice, t, marker)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_interrupts_the_agent_and_ends_its_command() {
    let Some((codex, mut board)) = CodexHome::start().await else {
        return;
    };
    let (alice, t, marker) = busy_with_a_long_command(&codex, &mut board).await;
    board.lead.cancel_task(t.id).await.expect("cancel");
    board.wait_status("alice", "idle").await;
    wait_gone("the agent and its command", PATIENCE, || {
        [with_marker(&marker), codex.processes(&[alice.pid()])].concat()
    })
    .await;
    let transcript = board.transcript("alice");
    assert!(
        transcript.contains("agent: stopped (the claim is gone)"),
        "{transcript}"
    );
    drop(alice);
    board.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_teammate_leaves_no_agent_and_no_command_behind() {
    let Some((codex, mut board)) = CodexHome::start().await else {
        return;
    };
    let (alice, _, marker) = busy_with_a_long_command(&codex, &mut board).await;
    alice.kill9();
    wait_gone("the agent and its command", PATIENCE, || {
        [with_marker(&marker), codex.processes(&[])].concat()
    })
    .await;
    drop(alice);
    board.stop().await;
}

/// teammated dies in the middle of a task and comes back: the task's thread
/// is resumed, not replaced, and the model sees the whole conversation again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_teammate_resumes_the_tasks_thread() {
    let Some((codex, mut board)) = CodexHome::start().await else {
        return;
    };
    codex.mock.set_responder(|req| {
        let said = user_texts(&req.body);
        if said.iter().any(|t| t.contains("You are back on this task")) {
            let first = said.iter().any(|t| t.contains("Remember the word"));
            return Some(MockReply::responses_text(&format!(
                "resumed; I still see the task: {first}"
            )));
        }
        Some(MockReply::responses_text("working").with_delay(BUSY))
    });
    let alice = codex.spawn(&board, "alice", &[]);
    let t = board
        .add("remember", "Remember the word 'teal'.", &[])
        .await;
    codex.wait_for_calls(1, "no model call", &alice).await;
    let thread = codex.mock.requests()[0]
        .header("session-id")
        .unwrap_or_default()
        .to_string();
    alice.kill9();
    wait_gone("the first agent", PATIENCE, || codex.processes(&[])).await;
    drop(alice);
    let alice = codex.spawn(&board, "alice", &[]);
    let task = board.wait_completed(t.id, &alice).await;
    assert_eq!(
        task.result.as_deref(),
        Some("resumed; I still see the task: true")
    );
    let last = codex.mock.requests().pop().expect("requests");
    assert_eq!(last.header("session-id"), Some(thread.as_str()));
    let entry = &board.agent_sessions("alice")["tasks"][t.id.to_string()];
    assert_eq!(entry["session"], thread.as_str());
    assert_eq!(
        (entry["starts"].as_u64(), entry["resumed"].as_u64()),
        (Some(2), Some(1))
    );
    let transcript = board.transcript("alice");
    assert!(
        transcript.contains(&format!("agent: codex session {thread} resumed")),
        "{transcript}"
    );
    drop(alice);
    board.stop().await;
}

/// The agent's process dies in the middle of a task: the task is given back
/// with the error, and the teammate, still alive, takes it again and resumes
/// its thread.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashed_agent_gives_the_task_back_and_the_teammate_goes_on() {
    let Some((codex, mut board)) = CodexHome::start().await else {
        return;
    };
    codex.mock.set_responder(|req| {
        if user_texts(&req.body)
            .iter()
            .any(|t| t.contains("You are back on this task"))
        {
            return Some(MockReply::responses_text("recovered"));
        }
        Some(MockReply::responses_text("working").with_delay(BUSY))
    });
    let alice = codex.spawn(&board, "alice", &[]);
    let t = board.add("fragile", "Work on.", &[]).await;
    codex.wait_for_calls(1, "no model call", &alice).await;
    let agent = codex
        .processes(&[alice.pid()])
        .into_iter()
        .find(|(pid, _)| {
            std::fs::read_link(format!("/proc/{pid}/exe")).ok().as_ref() == Some(&codex.program)
        })
        .map(|(pid, _)| pid)
        .expect("the codex process");
    teamboard_testkit::kill9(agent);
    let released = board.wait_released(t.id).await;
    assert!(released.detail.contains("exited"), "{}", released.detail);
    let task = board.wait_completed(t.id, &alice).await;
    assert_eq!(task.result.as_deref(), Some("recovered"));
    assert_eq!(task.attempts, 2);
    let entry = &board.agent_sessions("alice")["tasks"][t.id.to_string()];
    assert_eq!(entry["resumed"].as_u64(), Some(1), "{entry}");
    drop(alice);
    board.stop().await;
}

/// The model API fails: the turn fails, and the task goes back with the error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_model_gives_the_task_back_with_the_error() {
    let Some((codex, mut board)) = CodexHome::start().await else {
        return;
    };
    codex.mock.set_responder(|_| {
        Some(MockReply::json(
            400,
            serde_json::json!({"error": {"type": "invalid_request_error",
                "message": "the mock refuses this request"}}),
        ))
    });
    let alice = codex.spawn(&board, "alice", &[]);
    let t = board.add("doomed", "Try.", &[]).await;
    let released = board.wait_released(t.id).await;
    assert!(
        released.detail.contains("the mock refuses this request"),
        "{}",
        released.detail
    );
    board.lead.cancel_task(t.id).await.expect("cancel");
    drop(alice);
    board.stop().await;
}

/// A message to an idle teammate opens a conversation with the agent, and is
/// acknowledged once the agent took it (its first turn's `userMessage`), once:
/// not before, and not handed over again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_to_an_idle_teammate_is_acknowledged_once_the_agent_took_it() {
    let Some((codex, mut board)) = CodexHome::start().await else {
        return;
    };
    codex
        .mock
        .set_responder(|_| Some(MockReply::responses_text("noted")));
    let alice = codex.spawn(&board, "alice", &[]);
    board.wait_idle("alice").await;
    board.message_idle("alice", "IDLE-NOTE for codex").await;
    let carried: usize = codex
        .mock
        .requests()
        .iter()
        .filter(|r| user_texts(&r.body).iter().any(|t| t.contains("IDLE-NOTE")))
        .count();
    assert_eq!(carried, 1, "{}", alice.log_text());
    drop(alice);
    board.stop().await;
}

/// Codex runs its own default model (`mock-model` in its configuration), or
/// the one `--agent-model` names; the native loop's model (`TEAMMATE_MODEL`,
/// as a person's shell may set it for their native teammates) never reaches it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_runs_its_own_model_or_the_agent_model_never_the_native_loops() {
    let Some((codex, mut board)) = CodexHome::start().await else {
        return;
    };
    codex
        .mock
        .set_responder(|_| Some(MockReply::responses_text("done")));
    let native = [("TEAMMATE_MODEL", "native-loop-model")];
    let mut models = Vec::new();
    for (name, extra) in [
        ("alice", &[][..]),
        ("bob", &["--agent-model", "agent-picked-model"][..]),
    ] {
        let mate = board.spawn_agent(name, &codex.agent(), extra, &native);
        board.wait_idle(name).await;
        let t = board.add_claimed_by(name, "say done", "Say done.").await;
        board.wait_completed(t.id, &mate).await;
        let thread = board.agent_sessions(name)["tasks"][t.id.to_string()]["session"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let seen: Vec<String> = codex
            .mock
            .requests()
            .iter()
            .filter(|r| r.header("thread-id") == Some(&thread))
            .map(|r| r.body["model"].as_str().unwrap_or_default().to_string())
            .collect();
        assert!(!seen.is_empty(), "{name}'s agent called the mock");
        models.push(seen);
        // Gone before the next one starts, so that it takes the next task.
        drop(mate);
    }
    assert!(models[0].iter().all(|m| m == "mock-model"), "{models:?}");
    assert!(
        models[1].iter().all(|m| m == "agent-picked-model"),
        "{models:?}"
    );
    board.stop().await;
}

/// The completion gate refuses the agent's final answer: its turn is over, so
/// the refusal starts the next turn, and tells the agent to end that one once
/// the problem is fixed, never to call a tool in the turn that ended. The
/// transcript shows it as the agent's input, not as the answer to a call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_result_starts_the_next_turn_which_says_to_end_it() {
    let Some((codex, mut board)) = CodexHome::start().await else {
        return;
    };
    let repo = board.attach_repo().await;
    codex.mock.set_responder(|req| {
        if function_call_output(&req.body).is_some() {
            return Some(MockReply::responses_text("FIXED: made the file"));
        }
        let said = user_texts(&req.body);
        if said.last().is_some_and(|t| t.contains("was refused")) {
            return Some(exec("call_fix", "touch fixed"));
        }
        Some(MockReply::responses_text("FIRST: done, I think"))
    });
    let alice = codex.spawn(&board, "alice", &[]);
    let t = board
        .lead
        .add_task(NewTask {
            subject: "checked".into(),
            description: "Make the check pass.".into(),
            checks: vec!["test -f fixed".into()],
            ..NewTask::default()
        })
        .await
        .expect("add");
    let task = board.wait_completed(t.id, &alice).await;
    assert_eq!(task.result.as_deref(), Some("FIXED: made the file"));
    assert_eq!(task.attempts, 1, "the refusal kept the claim: {task:#?}");
    assert_eq!(repo.show("main", "fixed").as_deref(), Some(""));
    // The refusal was the next turn's input, and says what that turn can do.
    let requests = codex.mock.requests();
    let refusal = requests
        .iter()
        .filter_map(|r| user_texts(&r.body).pop())
        .find(|t| t.contains("was refused"))
        .expect("the refusal reached the model");
    assert!(refusal.contains("test -f fixed"), "{refusal}");
    assert!(
        refusal.ends_with(
            "end your turn: alice completes the task again when it ends, with the result \
             you give complete_task or else your final answer."
        ),
        "{refusal}"
    );
    let transcript = board.transcript("alice");
    let entry = transcript
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|e| {
            e["text"]
                .as_str()
                .is_some_and(|t| t.contains("was refused"))
        })
        .unwrap_or_else(|| panic!("no refusal in the transcript:\n{transcript}"));
    assert_eq!(entry["kind"], "user", "{entry}");
    assert_eq!(entry["text"], refusal.as_str());
    drop(alice);
    board.stop().await;
}

/// A team token budget stops a turn that never ends: the mock answers every
/// call with a command and reports 10,000 input and 500 output tokens. Each
/// call is settled as Codex reports it (`thread/tokenUsage/updated`); the
/// third passes the cap of 25,000, boardd says the budget is exhausted, and
/// the turn is interrupted there: the task goes back (the attempt not
/// counted), the ledger holds the three calls to the token, and the mock sees
/// no call after the one in flight.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_budget_that_runs_out_interrupts_the_turn_and_gives_the_task_back() {
    use std::sync::atomic::{AtomicU64, Ordering};
    use teamboard_protocol::request::SetBudgetArgs;
    use teamboard_protocol::spend::{BudgetScope, Limits};
    let Some((codex, mut board)) = CodexHome::start().await else {
        return;
    };
    const CALL: (u64, u64) = (10_000, 500);
    let n = AtomicU64::new(0);
    codex.mock.set_responder(move |_| {
        let i = n.fetch_add(1, Ordering::Relaxed);
        let item = serde_json::json!({"type": "function_call", "id": format!("fc_loop_{i}"),
            "call_id": format!("call_loop_{i}"), "name": "exec_command",
            "arguments": serde_json::json!({"cmd": format!("echo step {i}")}).to_string(),
            "status": "completed"});
        Some(MockReply::responses_output(serde_json::json!([item]), CALL))
    });
    board
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
    let alice = codex.spawn(&board, "alice", &[]);
    let t = board.add("endless", "Keep going.", &[]).await;
    let released = board.wait_released(t.id).await;
    let calls = codex.mock.calls();
    eprintln!("released after {calls} calls: {}", released.detail);
    assert!(
        released
            .detail
            .contains("budget exhausted: team budget limit of"),
        "{}\n{}",
        released.detail,
        alice.log_text()
    );
    let back = board.task(t.id).await;
    assert_eq!(back.status, TaskStatus::Pending, "{back:#?}");
    assert_eq!((back.attempts, back.last_error.as_deref()), (0, None));
    let report = board.lead.budgets().await.expect("the budgets");
    assert_eq!(report.spent.tokens, 3 * (CALL.0 + CALL.1), "{report:#?}");
    assert_eq!(report.spent.input_tokens, 3 * CALL.0, "{report:#?}");
    assert_eq!(report.budgets[0].spent, report.spent);
    assert_eq!(back.tokens.total(), report.spent.tokens);
    assert!((3..=4).contains(&calls), "{calls} calls");
    board.wait_idle("alice").await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(codex.mock.calls(), calls, "{}", alice.log_text());
    assert!(
        codex.processes(&[alice.pid()]).is_empty(),
        "the agent is gone"
    );
    drop(alice);
    board.stop().await;
}

/// Codex's 429 `usage_limit_reached` (with the provider's `x-codex-primary-*`
/// headers, which Codex reports as `account/rateLimits/updated`) blocks the
/// account until the window resets: the task goes back (the attempt not
/// counted), the teammate waits, the mock sees no call before the reset, and
/// after it the task is done.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_usage_limit_waits_for_its_reset_and_the_task_is_done_after_it() {
    use std::sync::{Arc, Mutex};
    use std::time::{SystemTime, UNIX_EPOCH};
    let Some((codex, mut board)) = CodexHome::start().await else {
        return;
    };
    let now_s = || {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0)
    };
    // The calls' times, and the reset: 3 s after the first call.
    let seen: Arc<Mutex<(Vec<u64>, u64)>> = Arc::default();
    let log = seen.clone();
    codex.mock.set_responder(move |_| {
        let mut log = log.lock().unwrap();
        let now = now_s();
        if log.0.is_empty() {
            log.1 = now + 3;
        }
        log.0.push(now);
        let reset = log.1;
        if now < reset {
            let body = serde_json::json!({"error": {"type": "usage_limit_reached",
                "message": "The usage limit has been reached", "plan_type": "plus",
                "resets_at": reset, "resets_in_seconds": reset - now}});
            return Some(
                MockReply::json(429, body)
                    .with_header("x-codex-primary-used-percent", "100")
                    .with_header("x-codex-primary-window-minutes", "300")
                    .with_header("x-codex-primary-reset-at", reset.to_string()),
            );
        }
        Some(MockReply::responses_text("done after the reset"))
    });
    let alice = codex.spawn(&board, "alice", &[]);
    let t = board.add("limited", "Go.", &[]).await;
    let released = board.wait_released(t.id).await;
    assert!(
        released
            .detail
            .contains("usage limit on codex-mock (usage_limit_reached) until"),
        "{}\n{}",
        released.detail,
        alice.log_text()
    );
    let reset = seen.lock().unwrap().1;
    let report = board.lead.budgets().await.expect("the budgets");
    let account = report
        .accounts
        .iter()
        .find(|a| a.name == "codex-mock")
        .unwrap_or_else(|| panic!("{report:#?}"));
    assert_eq!(account.blocked_until_ms, Some(reset as i64 * 1000));
    let done = board.wait_completed(t.id, &alice).await;
    assert_eq!(done.result.as_deref(), Some("done after the reset"));
    assert_eq!(done.attempts, 1, "the release did not count");
    let seen = seen.lock().unwrap().0.clone();
    assert!(seen[0] < reset, "{seen:?}");
    assert!(
        seen[1..].iter().all(|&s| s >= reset),
        "{seen:?} reset {reset}"
    );
    drop(alice);
    board.stop().await;
}

/// While a teammate waits out a usage limit's reset it holds no task, the
/// roster says it waits for the account rather than works, and a shutdown
/// request from the lead ends the wait: the teammate leaves at once, with no
/// call to the capped account.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shutdown_request_ends_the_wait_for_a_reset() {
    use teamboard_protocol::MemberStatus;
    use teamboard_protocol::request::ShutdownArgs;
    let Some((codex, mut board)) = CodexHome::start().await else {
        return;
    };
    let reset = (std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
        + 3600)
        .to_string();
    codex.mock.set_responder(move |_| {
        let body = serde_json::json!({"error": {"type": "usage_limit_reached",
            "message": "The usage limit has been reached"}});
        Some(
            MockReply::json(429, body)
                .with_header("x-codex-primary-used-percent", "100")
                .with_header("x-codex-primary-window-minutes", "300")
                .with_header("x-codex-primary-reset-at", &reset),
        )
    });
    let mut alice = codex.spawn(&board, "alice", &[]);
    let t = board.add("limited", "Go.", &[]).await;
    board.wait_released(t.id).await;
    let waiting = eventually("alice to wait for codex-mock", PATIENCE, || async {
        let team = board.lead.team().await.ok()?;
        let a = team.into_iter().find(|m| m.name == "alice")?;
        let wait = a.waiting.clone()?;
        (a.status == MemberStatus::Idle).then_some(wait)
    })
    .await;
    assert!(
        waiting.reason.contains("rate limit on codex-mock"),
        "{waiting:?}"
    );
    assert_eq!(board.task(t.id).await.status, TaskStatus::Pending);
    board
        .lead
        .request_shutdown(ShutdownArgs {
            to: "alice".into(),
            reason: Some("done for today".into()),
            ..Default::default()
        })
        .await
        .expect("request_shutdown");
    assert_eq!(alice.exit_code().await, Some(0), "{}", alice.log_text());
    assert_eq!(codex.mock.calls(), 1, "no call to the capped account");
    let transcript = board.transcript("alice");
    assert!(
        transcript.contains("a shutdown request ended the wait for the reset"),
        "{transcript}"
    );
    board.stop().await;
}

/// A usage limit whose reset the provider does not say (no `x-codex-*`
/// headers) blocks nothing, but the teammate rests before it starts the
/// agent again, rather than call the capped account again at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_usage_limit_with_no_known_reset_rests_before_the_next_try() {
    let Some((codex, mut board)) = CodexHome::start().await else {
        return;
    };
    codex.mock.set_responder(|_| {
        let body = serde_json::json!({"error": {"type": "usage_limit_reached",
            "message": "The usage limit has been reached"}});
        Some(MockReply::json(429, body))
    });
    let alice = codex.spawn(&board, "alice", &[]);
    let t = board.add("limited", "Go.", &[]).await;
    let released = board.wait_released(t.id).await;
    assert!(
        released
            .detail
            .contains("usage limit on codex-mock (usage_limit_reached) (its reset time unknown)"),
        "{}",
        released.detail
    );
    eventually("alice to rest", PATIENCE, || async {
        alice
            .log_text()
            .contains("waiting 1s before taking more work")
            .then_some(())
    })
    .await;
    board.lead.cancel_task(t.id).await.expect("cancel");
    drop(alice);
    board.stop().await;
}
