//! The `bash` tool under its guard (the teammated binary re-run as a supervisor),
//! driven through the library: what the model sees is the same as without a
//! guard, and stopping a command reaches every process it started, even one that
//! left the command's process group with `setsid`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "test code: a panic fails the test, and the harness captures what it prints"
)]

use serde_json::json;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use teamboard_testkit::{PATIENCE, alive, eventually, short_tempdir};
use teammated::tools::{LocalEnv, ToolOutput, run_local};

/// The binary under test, built by cargo for this package's tests.
const TEAMMATED: &str = env!("CARGO_BIN_EXE_teammated");

fn guarded(dir: &Path) -> LocalEnv {
    let mut env = LocalEnv::new(dir.to_path_buf(), Duration::from_secs(30));
    env.guard = Some(PathBuf::from(TEAMMATED));
    env
}

async fn bash(env: &LocalEnv, input: serde_json::Value) -> ToolOutput {
    run_local(env, "bash", &input)
        .await
        .expect("bash is a local tool")
}

async fn read_pid(file: &Path) -> u32 {
    eventually(format!("{}", file.display()), PATIENCE, || async {
        std::fs::read_to_string(file).ok()?.trim().parse().ok()
    })
    .await
}

async fn all_gone(pids: &[u32]) {
    let what = format!("{pids:?} to die");
    eventually(what, Duration::from_secs(5), || async {
        pids.iter().all(|p| !alive(*p)).then_some(())
    })
    .await;
}

/// A command that leaves two sleepers behind: one in its process group, one that
/// escaped it with `setsid`. Each writes its pid to a file in `dir`.
fn sleepers(dir: &Path) -> (String, [PathBuf; 2]) {
    let files = [dir.join("bg.pid"), dir.join("escaped.pid")];
    let command = format!(
        "sh -c 'echo $$ > {bg}; exec sleep 60' > /dev/null 2>&1 &\n\
         setsid sh -c 'echo $$ > {esc}; exec sleep 60' > /dev/null 2>&1 &\n",
        bg = files[0].display(),
        esc = files[1].display()
    );
    (command, files)
}

#[tokio::test]
async fn output_exit_codes_and_signals_are_reported_as_without_a_guard() {
    let dir = short_tempdir();
    let env = guarded(dir.path());
    let out = bash(
        &env,
        json!({"command": "echo out1; echo err1 >&2; echo out2; exit 3"}),
    )
    .await;
    assert_eq!(out.content, "out1\nerr1\nout2\n[exit code: 3]");
    assert!(out.is_error);
    let out = bash(&env, json!({"command": "pwd; cat; echo done"})).await;
    let workdir = std::fs::canonicalize(dir.path()).expect("canonical");
    assert_eq!(
        out.content,
        format!("{}\ndone\n[exit code: 0]", workdir.display())
    );
    assert!(!out.is_error);
    let out = bash(&env, json!({"command": "kill -TERM $$"})).await;
    assert_eq!(out.content, "[killed by signal 15]");
}

#[tokio::test]
async fn a_timeout_kills_everything_the_command_started_even_what_left_its_group() {
    let dir = short_tempdir();
    let env = guarded(dir.path());
    let (start, files) = sleepers(dir.path());
    let started = Instant::now();
    let out = bash(
        &env,
        json!({"command": format!("{start}echo before; sleep 60"), "timeout_secs": 1}),
    )
    .await;
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(out.content.starts_with("before\n"), "{}", out.content);
    assert!(
        out.content.ends_with("[timed out after 1s; killed]"),
        "{}",
        out.content
    );
    let pids = [read_pid(&files[0]).await, read_pid(&files[1]).await];
    // Gone when the tool returns, not some time later.
    assert!(pids.iter().all(|p| !alive(*p)), "{pids:?} survived");
}

#[tokio::test]
async fn background_jobs_outlive_their_command_until_the_teammate_lets_them_go() {
    let dir = short_tempdir();
    let env = guarded(dir.path());
    let (start, files) = sleepers(dir.path());
    let started = Instant::now();
    let out = bash(&env, json!({"command": format!("{start}echo started")})).await;
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(out.content, "started\n[exit code: 0]");
    let pids = [read_pid(&files[0]).await, read_pid(&files[1]).await];
    assert!(pids.iter().all(|p| alive(*p)), "{pids:?}");
    env.guards.stop_all(Duration::from_secs(5)).await;
    assert!(pids.iter().all(|p| !alive(*p)), "{pids:?} survived");
}

#[tokio::test]
async fn an_abandoned_call_kills_its_command_and_everything_it_started() {
    let dir = short_tempdir();
    let env = guarded(dir.path());
    let (start, files) = sleepers(dir.path());
    let shell_pid = dir.path().join("shell.pid");
    let command = format!("echo $$ > {}\n{start}sleep 60", shell_pid.display());
    let call = bash(&env, json!({ "command": command }));
    let pids = tokio::select! {
        _ = call => panic!("the command ended by itself"),
        pids = async {
            [read_pid(&shell_pid).await, read_pid(&files[0]).await, read_pid(&files[1]).await]
        } => pids,
    };
    // The call was dropped by the select above, as the work loop drops it when
    // the claim is lost.
    all_gone(&pids).await;
    env.guards.stop_all(Duration::from_secs(5)).await;
}
