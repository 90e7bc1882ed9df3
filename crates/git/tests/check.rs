//! run_check against real shells: verdicts, tails, and stopping process groups.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "test code: a panic fails the test, and the harness captures what it prints"
)]

use std::path::Path;
use std::time::{Duration, Instant};
use teamboard_git::{CheckOutcome, CheckResult, CheckSpec, Interrupt, TAIL_BYTES, run_check};

fn run(command: &str, timeout: Duration) -> CheckResult {
    let dir = tempfile::tempdir().expect("temp dir");
    run_in(command, dir.path(), timeout, &Interrupt::new())
}

fn run_in(command: &str, cwd: &Path, timeout: Duration, interrupt: &Interrupt) -> CheckResult {
    let spec = CheckSpec {
        command,
        cwd,
        timeout,
        env: &[],
        shell: &["sh".into()],
    };
    run_check(&spec, interrupt)
}

const LONG: Duration = Duration::from_secs(30);
/// Whatever the machine's load, a stopped check must end well within this.
const PROMPT: Duration = Duration::from_secs(5);

/// Whether process `pid` has ended (gone, or a zombie awaiting its reaper).
fn ended(pid: &str) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z')),
    }
}

/// Waits (bounded) for process `pid` to end: a SIGKILL is delivered at once
/// but the process leaves the table a moment later.
fn ends_soon(pid: &str) -> bool {
    let until = Instant::now() + PROMPT;
    while Instant::now() < until {
        if ended(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    false
}

#[test]
fn exit_zero_passes_with_both_streams_in_the_tail() {
    let got = run("echo out; echo err >&2; echo again", LONG);
    assert_eq!(got.outcome, CheckOutcome::Passed);
    assert_eq!(got.exit_code, Some(0));
    assert_eq!(got.tail, "out\nerr\nagain\n");
}

/// A limit past the end of the clock (a lead's `check_timeout_ms` of
/// u64::MAX, say) is no limit, not a panic that fails every completion.
#[test]
fn a_limit_too_far_away_to_reach_is_no_limit() {
    let got = run("echo fine", Duration::MAX);
    assert_eq!(got.outcome, CheckOutcome::Passed);
    assert_eq!(got.tail, "fine\n");
}

#[test]
fn a_non_zero_exit_fails_with_its_code_and_output() {
    let got = run("echo 'test foo ... FAILED'; exit 3", LONG);
    assert_eq!(got.outcome, CheckOutcome::Failed);
    assert_eq!(got.exit_code, Some(3));
    assert_eq!(got.tail, "test foo ... FAILED\n");
}

#[test]
fn death_by_a_signal_fails_and_names_the_signal() {
    let got = run("echo before; kill -KILL $$", LONG);
    assert_eq!(got.outcome, CheckOutcome::Failed);
    assert_eq!(got.exit_code, None);
    assert_eq!(got.tail, "before\n[killed by signal 9 (SIGKILL)]");
}

#[test]
fn the_check_runs_in_its_directory_with_its_environment() {
    let dir = tempfile::tempdir().expect("temp dir");
    let env = [("TEAMBOARD_TASK".to_string(), "12".to_string())];
    let spec = CheckSpec {
        command: "pwd; echo task=$TEAMBOARD_TASK; cat <&0; echo stdin-done",
        cwd: dir.path(),
        timeout: LONG,
        env: &env,
        shell: &["sh".into()],
    };
    let got = run_check(&spec, &Interrupt::new());
    assert_eq!(got.outcome, CheckOutcome::Passed, "{got:?}");
    let cwd = dir.path().canonicalize().expect("canonical");
    assert_eq!(
        got.tail,
        format!("{}\ntask=12\nstdin-done\n", cwd.display())
    );
}

#[test]
fn a_check_that_cannot_start_fails_and_says_why() {
    let got = run_in(
        "true",
        Path::new("/nonexistent/dir"),
        LONG,
        &Interrupt::new(),
    );
    assert_eq!(got.outcome, CheckOutcome::Failed);
    assert_eq!(got.exit_code, None);
    assert!(got.tail.contains("could not start"), "{}", got.tail);
    assert!(got.tail.contains("/nonexistent/dir"), "{}", got.tail);
}

#[test]
fn a_slow_check_times_out_promptly() {
    let got = run("echo started; sleep 30", Duration::from_millis(300));
    assert_eq!(got.outcome, CheckOutcome::TimedOut);
    assert!(got.duration >= Duration::from_millis(300), "{got:?}");
    assert!(got.duration < PROMPT, "{got:?}");
    assert_eq!(got.tail, "started\n[timed out after 300ms; stopped]");
}

#[test]
fn a_timeout_stops_the_grandchildren_too() {
    let dir = tempfile::tempdir().expect("temp dir");
    let got = run_in(
        "sh -c 'sleep 30 & echo $! > pid; wait'",
        dir.path(),
        Duration::from_millis(300),
        &Interrupt::new(),
    );
    assert_eq!(got.outcome, CheckOutcome::TimedOut, "{got:?}");
    assert!(got.duration < PROMPT, "{got:?}");
    let pid = std::fs::read_to_string(dir.path().join("pid")).expect("pid file");
    assert!(
        ends_soon(pid.trim()),
        "the grandchild sleep {pid} is still running"
    );
}

#[test]
fn a_check_that_ignores_sigterm_is_killed_after_the_grace() {
    let got = run("trap '' TERM; sleep 30", Duration::from_millis(100));
    assert_eq!(got.outcome, CheckOutcome::TimedOut, "{got:?}");
    assert!(
        got.duration >= Duration::from_secs(2),
        "SIGKILL only after the grace: {got:?}"
    );
    assert!(got.duration < PROMPT, "{got:?}");
}

#[test]
fn a_timed_out_check_that_exits_zero_is_still_not_passed() {
    let got = run(
        "trap 'exit 0' TERM; sleep 30 & wait",
        Duration::from_millis(200),
    );
    assert_eq!(got.outcome, CheckOutcome::TimedOut, "{got:?}");
    assert_eq!(got.exit_code, Some(0), "it did exit 0, late");
}

#[test]
fn an_interrupt_from_another_thread_stops_the_check() {
    let interrupt = Interrupt::new();
    let remote = interrupt.clone();
    let stopper = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        remote.interrupt();
    });
    let dir = tempfile::tempdir().expect("temp dir");
    let got = run_in("sleep 30", dir.path(), LONG, &interrupt);
    stopper.join().expect("stopper thread");
    assert_eq!(got.outcome, CheckOutcome::Interrupted, "{got:?}");
    assert!(got.duration < PROMPT, "{got:?}");
    assert_eq!(got.tail, "[interrupted; stopped]");
}

#[test]
fn an_interrupted_handle_runs_nothing() {
    let dir = tempfile::tempdir().expect("temp dir");
    let interrupt = Interrupt::new();
    interrupt.interrupt();
    let got = run_in("touch ran", dir.path(), LONG, &interrupt);
    assert_eq!(got.outcome, CheckOutcome::Interrupted);
    assert!(!dir.path().join("ran").exists());
}

#[test]
fn background_jobs_left_by_a_finished_check_neither_hang_it_nor_survive() {
    let dir = tempfile::tempdir().expect("temp dir");
    let got = run_in(
        "sleep 30 & echo $! > pid; echo done",
        dir.path(),
        LONG,
        &Interrupt::new(),
    );
    assert_eq!(got.outcome, CheckOutcome::Passed, "{got:?}");
    assert_eq!(got.tail, "done\n");
    assert!(got.duration < Duration::from_secs(2), "{got:?}");
    let pid = std::fs::read_to_string(dir.path().join("pid")).expect("pid file");
    assert!(
        ends_soon(pid.trim()),
        "the background sleep {pid} is still running"
    );
}

#[test]
fn output_held_open_by_an_escaped_process_does_not_hang_the_check() {
    let dir = tempfile::tempdir().expect("temp dir");
    // setsid takes the sleep out of the check's process group, so nothing
    // kills it, and it keeps the output pipe open for 30 s.
    let got = run_in(
        "setsid sleep 30 & echo $! > pid; echo done",
        dir.path(),
        LONG,
        &Interrupt::new(),
    );
    let pid = std::fs::read_to_string(dir.path().join("pid")).expect("pid file");
    if let Ok(pid) = pid.trim().parse::<i32>() {
        // SAFETY: kill(2) on the sleep this test started, which is still
        // running (nothing killed it, and it is not reaped until it exits).
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    assert_eq!(got.outcome, CheckOutcome::Passed, "{got:?}");
    assert_eq!(got.tail, "done\n");
    assert!(got.duration < Duration::from_secs(2), "{got:?}");
}

#[test]
fn the_tail_keeps_the_last_bytes_cut_on_a_character_boundary() {
    // 5000 three-byte characters, then "x\n": 15002 bytes, so the last 4096
    // start on the last byte but one of a character. Those two bytes are
    // skipped rather than shown as a mangled character.
    let got = run(
        "i=0; while [ $i -lt 1000 ]; do printf '€€€€€'; i=$((i+1)); done; echo x",
        LONG,
    );
    assert_eq!(got.outcome, CheckOutcome::Passed);
    let body = got.tail.strip_prefix('…').expect("marked as cut");
    assert_eq!(body.len(), TAIL_BYTES - 2);
    let chars = body.strip_suffix("x\n").expect("ends with the last line");
    assert!(chars.chars().all(|c| c == '€'), "no mangled character");
}

#[test]
fn a_failing_checks_tail_ends_with_its_last_words() {
    let got = run("seq 1 100000; echo 'error: the last line'; exit 1", LONG);
    assert_eq!(got.outcome, CheckOutcome::Failed);
    assert!(got.tail.starts_with('…'));
    assert!(
        got.tail.ends_with("100000\nerror: the last line\n"),
        "{}",
        got.tail
    );
}
