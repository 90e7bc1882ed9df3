//! A claim ended by someone else (the lead's cancel) reaches its teammate at once,
//! pushed by boardd, rather than at the teammate's next heartbeat: the running
//! command stops, no further model call is made, and the teammate goes idle.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "test code: a panic fails the test, and the harness captures what it prints"
)]

use std::time::{Duration, Instant};
use teamboard_protocol::TaskStatus;
use teamboard_testkit::{Board, PATIENCE, alive, eventually};

/// The binary under test, built by cargo for this package's tests.
const TEAMMATED: &str = env!("CARGO_BIN_EXE_teammated");

/// These tests share files with the commands outside the teammates' workdirs
/// (marks, pid files, the fake agent's home), which the sandbox hides; they run
/// unsandboxed, and `tests/sandbox.rs` tests the sandbox itself.
const UNSANDBOXED: [&str; 2] = ["--sandbox", "off"];

/// Far below the heartbeat interval (a third of boardd's 30 s default lease), and
/// far above what the push takes.
const WITHIN: Duration = Duration::from_secs(3);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_task_stops_its_teammate_at_once() {
    let mut board = Board::start(TEAMMATED).await;
    let lease = board.lead.welcome().lease_ttl_ms;
    assert!(
        Duration::from_millis(lease / 3) > WITHIN * 3,
        "the heartbeat ({lease} ms / 3) must be far slower than the bound"
    );
    let alice = board.spawn("alice", "dev", &UNSANDBOXED);
    board.wait_idle("alice").await;
    let pid_file = board.dir().join("block.pid");
    let description = format!(
        "Two steps.\n```sh\necho $$ > {p}.tmp && mv {p}.tmp {p}; sleep 30\n```\n\
         ```sh\necho second-step-ran\n```\n",
        p = pid_file.display()
    );
    let t = board.add("long job", &description, &[]).await;
    assert_eq!(board.wait_claimed(t.id).await, "alice");
    let pid: u32 = eventually("the block's pid", PATIENCE, || async {
        std::fs::read_to_string(&pid_file).ok()?.trim().parse().ok()
    })
    .await;
    // The board is quiet from here on: alice is working, nothing else happens.
    let working = board.wait_status("alice", "working").await;
    assert!(working.seq > 0);

    let cancelled = Instant::now();
    board.lead.cancel_task(t.id).await.expect("cancel");
    let idle = tokio::time::timeout(WITHIN, board.wait_status("alice", "idle"))
        .await
        .unwrap_or_else(|_| {
            panic!(
                "alice not idle {WITHIN:?} after the cancel; log:\n{}",
                alice.log_text()
            )
        });
    let to_idle = cancelled.elapsed();
    eventually("the cancelled block to die", WITHIN, || async {
        (!alive(pid)).then_some(())
    })
    .await;
    eprintln!(
        "cancel -> idle {to_idle:?}, -> block gone {:?}",
        cancelled.elapsed()
    );
    assert!(idle.seq > working.seq);
    assert_eq!(board.task(t.id).await.status, TaskStatus::Cancelled);

    let log = board.transcript("alice");
    assert!(
        log.contains("claim lost: #1 cancelled by lead"),
        "no word of the loss in the transcript:\n{log}"
    );
    let second_step = log
        .lines()
        .filter(|l| l.contains(r#""kind":"tool_use""#))
        .any(|l| l.contains("second-step-ran"));
    assert!(!second_step, "a model step ran after the cancel:\n{log}");
    board.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cancel_reaches_a_teammate_on_the_connection_it_made_after_a_boardd_restart() {
    let mut board = Board::start(TEAMMATED).await;
    let alice = board.spawn("alice", "dev", &UNSANDBOXED);
    board.wait_idle("alice").await;
    let pid_file = board.dir().join("block.pid");
    let block = format!(
        "Run this.\n```sh\necho $$ > {p}.tmp && mv {p}.tmp {p}; sleep 30\n```\n",
        p = pid_file.display()
    );
    let t = board.add("long job", &block, &[]).await;
    assert_eq!(board.wait_claimed(t.id).await, "alice");
    let pid: u32 = eventually("the block's pid", PATIENCE, || async {
        std::fs::read_to_string(&pid_file).ok()?.trim().parse().ok()
    })
    .await;

    // boardd restarts under the running block; alice reconnects at once (not at
    // her next heartbeat) and keeps her claim.
    board.daemon.restart().await;
    board.lead = teamboard_testkit::lead(&board.daemon.socket).await;
    board.lead.subscribe().await.expect("subscribe");
    eventually("alice to hold her claim again", WITHIN, || async {
        let team = board.lead.team().await.ok()?;
        team.iter()
            .any(|m| m.name == "alice" && m.connected && m.task == Some(t.id))
            .then_some(())
    })
    .await;
    assert!(alive(pid), "the block stopped during the restart");

    board.lead.cancel_task(t.id).await.expect("cancel");
    tokio::time::timeout(WITHIN, board.wait_status("alice", "idle"))
        .await
        .unwrap_or_else(|_| {
            panic!(
                "alice not idle {WITHIN:?} after the cancel; log:\n{}",
                alice.log_text()
            )
        });
    eventually("the cancelled block to die", WITHIN, || async {
        (!alive(pid)).then_some(())
    })
    .await;
    board.stop().await;
}
