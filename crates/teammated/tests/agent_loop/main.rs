//! WORK with an agent runtime, end to end through real boardd and real teammated
//! processes, with the kit's `fake-acp-agent` as the agent: a scripted ACP agent
//! that needs no npm and no model, so these run everywhere, fast, the same every
//! time. They test the board side of every runtime (`work::agent`): results,
//! crashes, messages acknowledged on delivery, the plan gate, sessions resumed,
//! cancel, shutdown, and that nothing the agent started outlives the teammate.
//! The real CLIs are tested in `runtime_claude.rs`, `runtime_codex.rs` and
//! `runtime_acp.rs`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "test code: a panic fails the test, and the harness captures what it prints"
)]

use serde_json::Value;
use std::path::{Path, PathBuf};
use teamboard_protocol::request::{ListRequestsArgs, NewTask, ShutdownArgs};
use teamboard_protocol::{EventKind, MessageKind, RequestState, TaskStatus};
use teamboard_testkit::{Board, PATIENCE, Teammate, alive, eventually, workspace_bin};

mod busy;
mod messages_phase;
mod own_end;
mod plan_wait;
mod rest;
mod stale;
mod start;
mod stop_first;
mod undelivered;

const TEAMMATED: &str = env!("CARGO_BIN_EXE_teammated");

/// These tests share files with the commands outside the teammates' workdirs
/// (marks, pid files, the fake agent's home), which the sandbox hides; they run
/// unsandboxed, and `tests/sandbox.rs` tests the sandbox itself.
const UNSANDBOXED: [&str; 2] = ["--sandbox", "off"];

/// Waits until `check` holds, for at most [`PATIENCE`].
async fn until<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    eventually(what, PATIENCE, || {
        let holds = check();
        async move { holds.await.then_some(()) }
    })
    .await
}

/// The fake agent's home: its sessions and the prompts it took.
fn fake_home(board: &Board) -> PathBuf {
    let home = board.dir().join("fake-acp");
    std::fs::create_dir_all(&home).expect("fake home");
    home
}

/// `teammated --runtime acp --agent-cmd fake-acp-agent` as `name`.
fn spawn(board: &Board, name: &str, extra: &[&str]) -> Teammate {
    let agent = workspace_bin("fake-acp-agent").display().to_string();
    let home = fake_home(board).display().to_string();
    let mut args = vec!["--runtime", "acp", "--agent-cmd", agent.as_str()];
    args.extend_from_slice(&UNSANDBOXED);
    args.extend_from_slice(extra);
    board.spawn_with_env(name, "dev", &args, &[("FAKE_ACP_HOME", home.as_str())])
}

/// The prompts the fake agent took, in order.
fn prompts(board: &Board) -> Vec<String> {
    std::fs::read_to_string(fake_home(board).join("prompts.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| v["text"].as_str().map(str::to_string))
        .collect()
}

/// Processes whose command line holds `marker`.
fn marked(marker: &str) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| alive(pid))
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .map(|b| String::from_utf8_lossy(&b).contains(marker))
                .unwrap_or(false)
        })
        .collect()
}

/// A `sleep 300` whose process carries `marker` in its name.
fn marked_sleep(dir: &Path, marker: &str) -> String {
    let bin = dir.join(marker);
    std::fs::copy("/bin/sleep", &bin).expect("copy sleep");
    format!("{} 300", bin.display())
}

/// The session ids the transcript reports `started` or `resumed`.
fn sessions_in(transcript: &str, what: &str) -> Vec<String> {
    transcript
        .lines()
        .filter_map(|l| {
            let v: Value = serde_json::from_str(l).ok()?;
            let rest = v["text"].as_str()?.strip_prefix("agent: acp session ")?;
            let (id, tail) = rest.split_once(' ')?;
            tail.starts_with(what).then(|| id.to_string())
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agents_answer_completes_the_task_after_its_command_ran_in_the_workdir() {
    let mut board = Board::start(TEAMMATED).await;
    let _alice = spawn(&board, "alice", &[]);
    let t = board
        .add(
            "write a file",
            "RUN: echo from-the-agent > out.txt\nANSWER: out.txt is written",
            &[],
        )
        .await;
    board.wait_done(&[t.id]).await;
    let done = board.task(t.id).await;
    assert_eq!(done.status, TaskStatus::Completed, "{done:#?}");
    assert_eq!(done.result.as_deref(), Some("out.txt is written"));
    let file = board.workdir("alice").join("out.txt");
    assert_eq!(
        std::fs::read_to_string(file).unwrap().trim(),
        "from-the-agent"
    );
    // The usage the agent reported is the task's.
    assert!(done.tokens.total() > 0, "{:?}", done.tokens);
    let transcript = board.transcript("alice");
    assert_eq!(sessions_in(&transcript, "started").len(), 1, "{transcript}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_gives_the_task_back_with_its_stderr_and_the_teammate_takes_the_next() {
    let mut board = Board::start(TEAMMATED).await;
    let _alice = spawn(&board, "alice", &[]);
    let crash = board.add("crash", "CRASH", &[]).await;
    board.wait_done(&[crash.id]).await;
    let failed = board.task(crash.id).await;
    assert_eq!(failed.status, TaskStatus::Failed, "{failed:#?}");
    let error = failed.last_error.unwrap_or_default();
    assert!(
        error.contains("crashing as asked") && error.contains("exit code 3"),
        "{error}"
    );
    // The teammate survived it.
    let next = board.add("next", "ANSWER: fine", &[]).await;
    board.wait_done(&[next.id]).await;
    assert_eq!(board.task(next.id).await.status, TaskStatus::Completed);
    let inbox = board.lead.inbox().await.expect("inbox");
    assert!(
        inbox
            .iter()
            .any(|m| m.kind == MessageKind::Error && m.content.contains("crashing as asked")),
        "{inbox:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_to_a_busy_agent_is_delivered_at_the_turn_boundary_and_acked_only_then() {
    let mut board = Board::start(TEAMMATED).await;
    let _alice = spawn(&board, "alice", &[]);
    let t = board.add("slow", "SLEEP: 3\nANSWER: slept", &[]).await;
    board.wait_claimed(t.id).await;
    until("the agent took the task", || async {
        prompts(&board).iter().any(|p| p.contains("SLEEP: 3"))
    })
    .await;
    let sent_at = std::time::Instant::now();
    let sent = board
        .lead
        .send("alice", MessageKind::Message, "MID-TASK NOTE", None)
        .await
        .expect("send");
    board
        .wait_for("the message acknowledged", |e| {
            e.kind == EventKind::MessageAcked && e.message == Some(sent.id)
        })
        .await;
    // An ACP agent takes input only between turns: the message waited for the
    // running one (a 3 s sleep) to end, unacknowledged all that time.
    assert!(
        sent_at.elapsed() >= std::time::Duration::from_secs(2),
        "acknowledged after {:?}, before the turn ended",
        sent_at.elapsed()
    );
    until("the message reached the agent", || async {
        prompts(&board).iter().any(|p| p.contains("MID-TASK NOTE"))
    })
    .await;
    board.wait_done(&[t.id]).await;
    // The work's answer is the result, not the answer to the message, which
    // came in a turn of its own after it.
    let done = board.task(t.id).await;
    let transcript = board.transcript("alice");
    assert_eq!(done.status, TaskStatus::Completed, "{done:#?}");
    assert_eq!(done.result.as_deref(), Some("slept"), "{transcript}");
    assert!(
        transcript.contains("got: "),
        "no answer to the message: {transcript}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_plan_gate_holds_the_agent_until_the_lead_approves() {
    let mut board = Board::start(TEAMMATED).await;
    let _alice = spawn(&board, "alice", &[]);
    let t = board
        .lead
        .add_task(NewTask {
            subject: "planned".into(),
            description:
                "PLAN: write planned.txt\nRUN: echo done > planned.txt\nANSWER: carried out".into(),
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
    assert!(
        plan.plan
            .as_deref()
            .unwrap_or_default()
            .contains("write planned.txt"),
        "{plan:#?}"
    );
    let file = board.workdir("alice").join("planned.txt");
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert!(!file.exists(), "the agent ran before the plan was approved");
    board
        .lead
        .review_plan(plan.id, true, None)
        .await
        .expect("approve");
    board.wait_done(&[t.id]).await;
    let done = board.task(t.id).await;
    assert_eq!(done.status, TaskStatus::Completed, "{done:#?}");
    assert!(file.exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_resumes_the_tasks_session() {
    let mut board = Board::start(TEAMMATED).await;
    let alice = spawn(&board, "alice", &[]);
    let t = board.add("long", "SLEEP: 30\nANSWER: finally", &[]).await;
    board.wait_claimed(t.id).await;
    let first = eventually("the session started", PATIENCE, || async {
        sessions_in(&board.transcript("alice"), "started").pop()
    })
    .await;
    alice.kill9();
    drop(alice);
    // Back under the same name within boardd's restart grace: the claim, and the
    // agent's session, are the same.
    let _alice = spawn(&board, "alice", &[]);
    let resumed = eventually("the session resumed", PATIENCE, || async {
        sessions_in(&board.transcript("alice"), "resumed").pop()
    })
    .await;
    assert_eq!(resumed, first);
    let store: Value = serde_json::from_str(
        &std::fs::read_to_string(
            board
                .state_dir()
                .join("teammates/default/alice/agent/sessions.json"),
        )
        .expect("sessions.json"),
    )
    .expect("json");
    let entry = &store["tasks"][t.id.to_string()];
    assert_eq!(entry["session"], first.as_str(), "{store}");
    assert_eq!(
        (entry["starts"].as_u64(), entry["resumed"].as_u64()),
        (Some(2), Some(1))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_of_the_teammate_leaves_no_agent_and_no_command_behind() {
    let mut board = Board::start(TEAMMATED).await;
    let alice = spawn(&board, "alice", &[]);
    let marker = format!("tb-kill9-{}", std::process::id());
    let sleep = marked_sleep(board.dir(), &marker);
    let t = board.add("hang", &format!("RUN: {sleep}"), &[]).await;
    board.wait_claimed(t.id).await;
    until("the command runs", || async { !marked(&marker).is_empty() }).await;
    alice.kill9();
    until("the command is gone", || async {
        marked(&marker).is_empty()
    })
    .await;
    let home = fake_home(&board).display().to_string();
    until("the agent is gone", || async {
        !procs_with_env(&format!("FAKE_ACP_HOME={home}"))
    })
    .await;
}

/// Whether a live process has `needle` in its environment.
fn procs_with_env(needle: &str) -> bool {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return false;
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| alive(pid))
        .any(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .map(|b| String::from_utf8_lossy(&b).contains(needle))
                .unwrap_or(false)
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_stops_the_agent_and_its_command_and_the_teammate_goes_on() {
    let mut board = Board::start(TEAMMATED).await;
    let _alice = spawn(&board, "alice", &[]);
    let marker = format!("tb-cancel-{}", std::process::id());
    let sleep = marked_sleep(board.dir(), &marker);
    let t = board.add("hang", &format!("RUN: {sleep}"), &[]).await;
    board.wait_claimed(t.id).await;
    until("the command runs", || async { !marked(&marker).is_empty() }).await;
    board.lead.cancel_task(t.id).await.expect("cancel");
    until("the command is gone", || async {
        marked(&marker).is_empty()
    })
    .await;
    let next = board.add("next", "ANSWER: still here", &[]).await;
    board.wait_done(&[next.id]).await;
    assert_eq!(board.task(next.id).await.status, TaskStatus::Completed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shutdown_request_while_working_gives_the_task_back_and_the_teammate_leaves() {
    let mut board = Board::start(TEAMMATED).await;
    let mut alice = spawn(&board, "alice", &[]);
    let t = board.add("long", "SLEEP: 60\nANSWER: no", &[]).await;
    board.wait_claimed(t.id).await;
    until("the agent took the task", || async {
        prompts(&board).iter().any(|p| p.contains("SLEEP: 60"))
    })
    .await;
    let req = board
        .lead
        .request_shutdown(ShutdownArgs {
            to: "alice".into(),
            reason: Some("done for today".into()),
            ..ShutdownArgs::default()
        })
        .await
        .expect("request");
    let code = tokio::time::timeout(PATIENCE, alice.exit_code())
        .await
        .expect("alice leaves");
    assert_eq!(code, Some(0), "{}", alice.log_text());
    let task = board.task(t.id).await;
    assert_eq!(task.status, TaskStatus::Pending, "{task:#?}");
    // Given back without using up an attempt: leaving is not the task's fault.
    assert_eq!(task.attempts, 0, "{task:#?}");
    let req = board.lead.get_request(req.id).await.expect("request");
    assert_eq!(req.state, RequestState::Approved, "{req:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_to_an_idle_teammate_go_to_its_agent_which_may_answer() {
    let mut board = Board::start(TEAMMATED).await;
    let _alice = spawn(&board, "alice", &[]);
    board.wait_idle("alice").await;
    board
        .lead
        .send("alice", MessageKind::Message, "are you there?", None)
        .await
        .expect("send");
    until("the agent read the message", || async {
        prompts(&board).iter().any(|p| p.contains("are you there?"))
    })
    .await;
    let transcript = board.transcript("alice");
    assert_eq!(sessions_in(&transcript, "started").len(), 1, "{transcript}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_agent_program_stops_the_teammate_at_start_with_the_reason() {
    let board = Board::start(TEAMMATED).await;
    let mut alice = board.spawn(
        "alice",
        "dev",
        &["--runtime", "acp", "--agent-cmd", "/nonexistent/agent-cli"],
    );
    let code = tokio::time::timeout(PATIENCE, alice.exit_code())
        .await
        .expect("alice exits");
    assert_ne!(code, Some(0));
    let log = alice.log_text();
    assert!(
        log.contains("/nonexistent/agent-cli") && log.contains("--agent-cmd"),
        "{log}"
    );
}
