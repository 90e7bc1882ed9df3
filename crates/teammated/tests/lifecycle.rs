//! The WORK/IDLE lifecycle of real `teammated` processes with the scripted model:
//! sharing tasks, respecting dependencies, losing a teammate to `kill -9`, the idle
//! timeout and the shutdown handshake.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "test code: a panic fails the test, and the harness captures what it prints"
)]

use teamboard_protocol::request::ShutdownArgs;
use teamboard_protocol::{EventKind, MessageKind, RequestState, TaskStatus, TeamRequest};
use teamboard_testkit::Board;

/// The lead asks `name` to shut down.
async fn ask_shutdown(board: &Board, name: &str, reason: &str) -> TeamRequest {
    board
        .lead
        .request_shutdown(ShutdownArgs {
            to: name.into(),
            reason: Some(reason.into()),
            ..Default::default()
        })
        .await
        .expect("request_shutdown")
}

/// The binary under test, built by cargo for this package's tests.
const TEAMMATED: &str = env!("CARGO_BIN_EXE_teammated");

/// Some tests share files with the commands outside the teammates' workdirs
/// (marks), which the sandbox hides; they run unsandboxed, and
/// `tests/sandbox.rs` tests the sandbox itself.
const UNSANDBOXED: [&str; 2] = ["--sandbox", "off"];

fn script(lines: &str) -> String {
    format!("Run this.\n```sh\n{lines}\n```\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_teammates_share_three_tasks_and_finish_them_all() {
    let mut board = Board::start(TEAMMATED).await;
    let alice = board.spawn("alice", "dev", &[]);
    let bob = board.spawn("bob", "dev", &[]);
    board.wait_idle("alice").await;
    board.wait_idle("bob").await;
    let mut ids = Vec::new();
    for n in 1..=3 {
        // Long enough that the first claimant is still busy when the next task
        // appears, so the other one must take it.
        let t = board
            .add(
                &format!("part {n}"),
                &script(&format!("sleep 0.4; echo part-{n}")),
                &[],
            )
            .await;
        ids.push(t.id);
    }
    let tasks = board.wait_done(&ids).await;
    let mut owners = Vec::new();
    for t in tasks.iter().filter(|t| ids.contains(&t.id)) {
        assert_eq!(
            t.status,
            TaskStatus::Completed,
            "{t:#?}\n{}",
            alice.log_text()
        );
        assert_eq!(
            t.result.as_deref(),
            Some(format!("part-{}", t.id).as_str()),
            "{t:#?}"
        );
        assert_eq!(t.attempts, 1, "claimed exactly once: {t:#?}");
        owners.push(t.owner.clone().expect("owner"));
    }
    assert!(owners.contains(&"alice".to_string()), "{owners:?}");
    assert!(owners.contains(&"bob".to_string()), "{owners:?}");
    let claims = board
        .lead
        .events(Default::default())
        .await
        .expect("events")
        .into_iter()
        .filter(|e| e.kind == EventKind::TaskClaimed)
        .count();
    assert_eq!(claims, 3, "one claim per task");
    // Each task sends its result to the lead (after completing it, so wait for the
    // messages rather than assume they are there).
    for _ in 0..3 {
        board
            .wait_for("a result message", |e| {
                e.kind == EventKind::MessageSent && e.detail.contains("→ lead: result")
            })
            .await;
    }
    drop((alice, bob));
    board.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocked_task_is_never_claimed_before_its_blockers_complete() {
    let mut board = Board::start(TEAMMATED).await;
    let _alice = board.spawn("alice", "dev", &[]);
    let _bob = board.spawn("bob", "dev", &[]);
    board.wait_idle("alice").await;
    board.wait_idle("bob").await;
    let a = board
        .add("config", &script("sleep 0.5; echo config"), &[])
        .await;
    let b = board
        .add("auth", &script("sleep 0.8; echo auth"), &[])
        .await;
    let c = board
        .add("tests", &script("echo tests"), &[a.id, b.id])
        .await;
    board.wait_done(&[a.id, b.id, c.id]).await;
    let events = board.lead.events(Default::default()).await.expect("events");
    let seq = |kind: EventKind, id| {
        events
            .iter()
            .find(|e| e.kind == kind && e.task == Some(id))
            .map(|e| e.seq)
            .unwrap_or_else(|| panic!("no {kind:?} for #{id}: {events:#?}"))
    };
    let claimed_c = seq(EventKind::TaskClaimed, c.id);
    assert!(
        claimed_c > seq(EventKind::TaskCompleted, a.id),
        "{events:#?}"
    );
    assert!(
        claimed_c > seq(EventKind::TaskCompleted, b.id),
        "{events:#?}"
    );
    assert_eq!(board.task(c.id).await.status, TaskStatus::Completed);
    board.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_teammates_task_goes_back_and_the_other_one_finishes_it() {
    let mut board = Board::start(TEAMMATED).await;
    let alice = board.spawn("alice", "dev", &UNSANDBOXED);
    board.wait_idle("alice").await;
    // The first attempt marks that it started and then hangs until the test lets
    // it go (so that no orphan outlives the test); any later attempt sees the mark
    // and finishes at once. The marks live outside both workdirs.
    let mark = board.dir().join("started");
    let release = board.dir().join("release");
    let body = format!(
        "if [ -e {m} ]; then echo finished-by-second; else touch {m}; \
         while [ ! -e {r} ]; do sleep 0.05; done; fi",
        m = mark.display(),
        r = release.display()
    );
    let t = board.add("long job", &script(&body), &[]).await;
    assert_eq!(board.wait_claimed(t.id).await, "alice");
    alice.wait_for_file(&mark).await;
    let _bob = board.spawn("bob", "dev", &UNSANDBOXED);
    board.wait_idle("bob").await;
    alice.kill9();
    let released = board
        .wait_for("#1 to be released", |e| {
            e.kind == EventKind::TaskReleased && e.task == Some(t.id)
        })
        .await;
    assert_eq!(released.actor, "boardd", "{released:?}");
    assert_eq!(board.wait_claimed(t.id).await, "bob");
    board.wait_done(&[t.id]).await;
    let done = board.task(t.id).await;
    assert_eq!(done.status, TaskStatus::Completed, "{done:#?}");
    assert_eq!(done.owner.as_deref(), Some("bob"));
    assert_eq!(done.result.as_deref(), Some("finished-by-second"));
    assert_eq!(done.attempts, 2);
    std::fs::write(&release, "").expect("let the orphan go");
    board.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_idle_timeout_shuts_a_teammate_down_cleanly() {
    let mut board = Board::start(TEAMMATED).await;
    let mut alice = board.spawn("alice", "dev", &["--idle-timeout", "1"]);
    let idle = board.wait_idle("alice").await;
    let shutdown = board.wait_status("alice", "shutdown").await;
    assert_eq!(alice.exit_code().await, Some(0), "{}", alice.log_text());
    // boardd's own timestamps: the teammate went idle, then left a second later.
    let waited = shutdown.at - idle.at;
    assert!(
        (1000..5000).contains(&waited),
        "left {waited} ms after going idle"
    );
    let team = board.lead.team().await.expect("team");
    let member = team
        .iter()
        .find(|m| m.name == "alice")
        .expect("alice on the roster");
    assert!(!member.connected);
    board.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_teammate_answers_a_shutdown_request_and_exits() {
    let mut board = Board::start(TEAMMATED).await;
    let mut alice = board.spawn("alice", "dev", &[]);
    board.wait_idle("alice").await;
    let req = ask_shutdown(&board, "alice", "please stop").await;
    assert_eq!(alice.exit_code().await, Some(0), "{}", alice.log_text());
    let inbox = board.lead.inbox().await.expect("inbox");
    let answer = inbox
        .iter()
        .find(|m| m.kind == MessageKind::ShutdownResponse)
        .unwrap_or_else(|| panic!("no shutdown_response: {inbox:#?}"));
    assert_eq!(answer.from, "alice");
    assert_eq!(answer.request_id, Some(req.id.to_string()));
    let settled = board.lead.get_request(req.id).await.expect("request");
    assert_eq!(settled.state, RequestState::Approved);
    assert_eq!(settled.answered_by.as_deref(), Some("alice"));
    assert!(!settled.forced);
    let team = board.lead.team().await.expect("team");
    let member = team.iter().find(|m| m.name == "alice").expect("alice");
    assert_eq!(member.status.to_string(), "shutdown");
    board.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_working_teammate_finishes_its_round_then_shuts_down_and_gives_the_task_back() {
    let mut board = Board::start(TEAMMATED).await;
    let mut alice = board.spawn("alice", "dev", &UNSANDBOXED);
    board.wait_idle("alice").await;
    let mark = board.dir().join("round-started");
    let body = format!("touch {}; sleep 1; echo round-one-done", mark.display());
    let t = board
        .add(
            "two rounds",
            &format!("{}```sh\necho never-run\n```\n", script(&body)),
            &[],
        )
        .await;
    board.wait_claimed(t.id).await;
    alice.wait_for_file(&mark).await;
    let req = ask_shutdown(&board, "alice", "stop now").await;
    assert_eq!(alice.exit_code().await, Some(0), "{}", alice.log_text());
    let task = board.task(t.id).await;
    assert_eq!(task.status, TaskStatus::Pending, "given back: {task:#?}");
    assert!(task.owner.is_none());
    assert_eq!(
        task.attempts, 0,
        "leaving is not the task's fault: {task:#?}"
    );
    // Given back with a note of how far it got, for the next owner.
    let note = task.handoff.clone().unwrap_or_default();
    assert!(note.contains("ran 1 of 2 commands"), "{task:#?}");
    let settled = board.lead.get_request(req.id).await.expect("request");
    assert_eq!(settled.state, RequestState::Approved, "{settled:#?}");
    let log = board.transcript("alice");
    assert!(
        log.contains("round-one-done"),
        "the round in progress finished:\n{log}"
    );
    assert!(
        !log.contains("never-run\\n[exit"),
        "no new round started:\n{log}"
    );
    let inbox = board.lead.inbox().await.expect("inbox");
    assert!(
        inbox
            .iter()
            .any(|m| m.kind == MessageKind::ShutdownResponse
                && m.request_id == Some(req.id.to_string())),
        "{inbox:#?}"
    );
    board.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_too_big_for_boardd_is_cut_rather_than_lost() {
    let mut board = Board::start(TEAMMATED).await;
    let alice = board.spawn("alice", "dev", &[]);
    board.wait_idle("alice").await;
    // Six blocks of 48 KB each: more than boardd takes in one result (256 KiB).
    let block = "```sh\nhead -c 48000 /dev/zero | tr '\\000' x; echo\n```\n";
    let t = board.add("loud", &block.repeat(6), &[]).await;
    board.wait_done(&[t.id]).await;
    let done = board.task(t.id).await;
    assert_eq!(done.status, TaskStatus::Completed, "{}", alice.log_text());
    assert_eq!(done.attempts, 1);
    let result = done.result.unwrap_or_default();
    assert!(result.len() <= 64 * 1024, "{}", result.len());
    assert!(
        result.contains("more bytes cut"),
        "{}",
        &result[result.len().saturating_sub(200)..]
    );
    board.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_block_that_exits_non_zero_fails_the_task_with_its_output() {
    let mut board = Board::start(TEAMMATED).await;
    let alice = board.spawn("alice", "dev", &[]);
    board.wait_idle("alice").await;
    let t = board
        .add("broken", &script("echo 'config missing' >&2; exit 3"), &[])
        .await;
    board.wait_done(&[t.id]).await;
    let done = board.task(t.id).await;
    // Failed attempts are retried until boardd's three attempts are used up.
    assert_eq!(done.status, TaskStatus::Failed, "{}", alice.log_text());
    assert_eq!(done.attempts, 3);
    let error = done.last_error.unwrap_or_default();
    assert!(
        error.contains("exited with code 3") && error.contains("config missing"),
        "{error}"
    );
    for _ in 0..3 {
        board
            .wait_for("a result message", |e| {
                e.kind == EventKind::MessageSent && e.detail.contains("→ lead: result")
            })
            .await;
    }
    board.stop().await;
}

/// What `teamctl logs` shows of a message and of a shutdown request, both with a
/// request id, is plain words: no Rust debug text (`Some("x1")`, `ShutdownRequested
/// { by: "lead" }`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logs_show_requests_and_shutdowns_in_plain_words() {
    let mut board = Board::start(TEAMMATED).await;
    let mut alice = board.spawn("alice", "dev", &UNSANDBOXED);
    board.wait_idle("alice").await;
    let (one, two) = (board.dir().join("one"), board.dir().join("two"));
    let description = format!(
        "{}{}```sh\necho never-run\n```\n",
        script(&format!("touch {}; sleep 1", one.display())),
        script(&format!("touch {}; sleep 1", two.display())),
    );
    let t = board.add("three rounds", &description, &[]).await;
    board.wait_claimed(t.id).await;
    alice.wait_for_file(&one).await;
    let sent = board
        .lead
        .send(
            "alice",
            MessageKind::Message,
            "how is it going?",
            Some("x1"),
        )
        .await
        .expect("send");
    alice.wait_for_file(&two).await;
    let req = ask_shutdown(&board, "alice", "stop").await;
    assert_eq!(alice.exit_code().await, Some(0), "{}", alice.log_text());
    let socket = board.daemon.socket.clone();
    let state = board.state_dir().to_path_buf();
    let logs = tokio::task::spawn_blocking(move || {
        teamboard_testkit::Teamctl::new(teamboard_testkit::workspace_bin("teamctl"), &socket)
            .with_state_dir(&state)
            .ok(&["logs", "alice"])
    })
    .await
    .expect("teamctl");
    assert!(
        logs.contains(&format!(
            "[Message #{} from lead (message)] how is it going?",
            sent.id
        )),
        "{logs}"
    );
    assert!(
        logs.contains(&format!(
            "lead asks you to shut down (request r{}): stop.",
            req.id
        )),
        "{logs}"
    );
    assert!(
        logs.contains("work: ended (stopping: shutdown requested by lead)"),
        "{logs}"
    );
    for debug in ["Some(", "None", "ShutdownRequested", "{ by:", "\\\""] {
        assert!(!logs.contains(debug), "{debug} in:\n{logs}");
    }
    board.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_teammate_that_finds_work_at_once_sends_no_idle_notification_first() {
    let mut board = Board::start(TEAMMATED).await;
    let t = board
        .add("ready before the spawn", &script("echo done"), &[])
        .await;
    let alice = board.spawn("alice", "dev", &[]);
    assert_eq!(board.wait_claimed(t.id).await, "alice");
    board.wait_done(&[t.id]).await;
    // The result, then (having nothing left) one notice that alice went idle.
    board.wait_idle("alice").await;
    let inbox = board.lead.inbox().await.expect("inbox");
    let kinds: Vec<MessageKind> = inbox
        .iter()
        .filter(|m| m.from == "alice")
        .map(|m| m.kind)
        .collect();
    assert_eq!(
        kinds,
        [MessageKind::Result, MessageKind::IdleNotification],
        "{inbox:#?}\n{}",
        alice.log_text()
    );
    board.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_teammate_with_nothing_to_do_sends_one_idle_notification_however_often_it_waits() {
    let board = Board::start(TEAMMATED).await;
    // Twenty renewals of the wait in its one idle second.
    let mut alice = board.spawn(
        "alice",
        "dev",
        &["--idle-timeout", "1", "--poll-interval", "0.05"],
    );
    assert_eq!(alice.exit_code().await, Some(0), "{}", alice.log_text());
    let inbox = board.lead.inbox().await.expect("inbox");
    let notices = inbox
        .iter()
        .filter(|m| m.kind == MessageKind::IdleNotification)
        .count();
    assert_eq!(notices, 1, "{inbox:#?}");
    board.stop().await;
}

/// A context budget under the least a teammate works with is refused in the
/// same words whether it comes from the flag or the environment, and the
/// refusal names where it came from.
#[test]
fn a_context_budget_too_small_is_refused_from_the_flag_and_the_environment_alike() {
    let refusal = |args: &[&str], env: &[(&str, &str)]| {
        let out = std::process::Command::new(TEAMMATED)
            .args([
                "--name",
                "alice",
                "--role",
                "dev",
                "--socket",
                "/nonexistent/s",
            ])
            .args(["--reconnect-timeout", "0"])
            .args(args)
            .env_remove("TEAMMATE_CONTEXT_BUDGET")
            .envs(env.iter().copied())
            .output()
            .expect("teammated runs");
        assert_eq!(out.status.code(), Some(1), "{out:?}");
        String::from_utf8_lossy(&out.stderr).trim().to_string()
    };
    let why = "300 is too small: the budget must be at least 1000 tokens";
    assert_eq!(
        refusal(&["--context-budget", "300"], &[]),
        format!("teammated: --context-budget 300: {why}")
    );
    assert_eq!(
        refusal(&[], &[("TEAMMATE_CONTEXT_BUDGET", "300")]),
        format!("teammated: TEAMMATE_CONTEXT_BUDGET=300: {why}")
    );
}

/// A task of eight blocks on the smallest context budget: the conversation is
/// compacted half way, and the scripted model goes on with the blocks it has
/// not run, once each, rather than forget them; and no compaction makes the
/// context larger than it was.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scripted_teammate_compacted_half_way_runs_every_block_once() {
    let mut board = Board::start(TEAMMATED).await;
    let alice = board.spawn("alice", "dev", &["--context-budget", "1000"]);
    board.wait_idle("alice").await;
    let blocks: String = (1..=8)
        .map(|n| {
            format!("Step {n}.\n```sh\necho step-{n} >> steps.txt; printf 'step-{n} done %0300d\\n' 0\n```\n")
        })
        .collect();
    let t = board.add("eight steps", &blocks, &[]).await;
    board.wait_done(&[t.id]).await;
    let done = board.task(t.id).await;
    assert_eq!(done.status, TaskStatus::Completed, "{}", alice.log_text());
    let result = done.result.unwrap_or_default();
    assert!(result.contains("step-8 done 000"), "{result}");
    let steps =
        std::fs::read_to_string(board.workdir("alice").join("steps.txt")).unwrap_or_default();
    let want: Vec<String> = (1..=8).map(|n| format!("step-{n}")).collect();
    assert_eq!(
        steps.lines().collect::<Vec<_>>(),
        want,
        "{}",
        board.transcript("alice")
    );
    let transcript = board.transcript("alice");
    let compactions: Vec<(u64, u64)> = transcript
        .lines()
        .filter_map(|l| {
            let text = l.split("compacted: ").nth(1)?;
            let sizes = text.split("about ").nth(1)?;
            let (before, rest) = sizes.split_once(" -> ")?;
            let after = rest.split_whitespace().next()?;
            Some((before.parse().ok()?, after.parse().ok()?))
        })
        .collect();
    assert!(!compactions.is_empty(), "no compaction: {transcript}");
    for (before, after) in compactions {
        assert!(
            after < before,
            "a compaction grew the context: {before} -> {after}"
        );
    }
    drop(alice);
    board.stop().await;
}
