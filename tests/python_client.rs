//! The Python example client in `docs/examples/teamboard_client.py` speaks the
//! protocol exactly as `docs/protocol.md` describes it. This test runs its self-check
//! against an in-process boardd, so the document, the example and the daemon cannot
//! drift apart unnoticed.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "test code: a panic fails the test, and the harness captures what it prints"
)]

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;
use teamboard_testkit::InProc;
use teamboard_testkit::boardd::server::{TcpListen, TlsFiles};
use tokio::process::Command;

/// How long the whole Python scenario may take. It needs well under a second; the
/// margin is for slow CI machines.
const SCENARIO_TIMEOUT: Duration = Duration::from_secs(120);

/// Whether `python3` can be run at all.
async fn have_python() -> bool {
    match Command::new("python3")
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .await
    {
        Ok(status) => status.success(),
        Err(_) => false,
    }
}

/// Runs the example's self-check with `args` and asserts that it printed `ok`.
async fn run_scenario(args: &[&std::ffi::OsStr]) -> anyhow::Result<()> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/examples/teamboard_client.py");
    assert!(script.is_file(), "{} is missing", script.display());
    let child = Command::new("python3")
        .arg(&script)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let output = tokio::time::timeout(SCENARIO_TIMEOUT, child.wait_with_output())
        .await
        .map_err(|_| {
            anyhow::anyhow!("the Python scenario did not finish in {SCENARIO_TIMEOUT:?}")
        })??;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the Python client failed ({}).\nstdout:\n{stdout}\nstderr:\n{stderr}",
        output.status
    );
    assert!(
        stdout.lines().any(|l| l.trim() == "ok"),
        "the Python client did not print ok.\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn python_example_client_runs_its_scenario() -> anyhow::Result<()> {
    if !have_python().await {
        eprintln!("note: python3 is not on PATH; skipping the Python client test");
        return Ok(());
    }
    let daemon = InProc::start().await;
    let socket = daemon.socket.clone();
    let key = teamboard_testkit::lead_key_path(&socket);
    let scenario = run_scenario(&[socket.as_os_str(), key.as_os_str()]).await;

    // boardd kept serving through the scenario's malformed frame: a fresh
    // connection still gets a welcome and answers.
    let key = teamboard_testkit::lead_key(&socket);
    let probe =
        teamboard_protocol::Client::connect(&socket, "test", "lead", "default", Some(&key)).await?;
    let status = probe.status().await?;
    assert_eq!(status.protocol, teamboard_protocol::PROTOCOL_VERSION);
    drop(probe);
    daemon.stop().await;
    scenario
}

/// The same scenario over boardd's TLS listener, trusting a self-signed
/// certificate given as the CA file.
#[tokio::test(flavor = "multi_thread")]
async fn python_example_client_runs_its_scenario_over_tls() -> anyhow::Result<()> {
    if !have_python().await {
        eprintln!("note: python3 is not on PATH; skipping the Python client test");
        return Ok(());
    }
    let certs_dir = teamboard_testkit::short_tempdir();
    let certs = teamboard_testkit::TestCerts::make(certs_dir.path());
    let tls = TlsFiles {
        cert: certs.self_signed.clone(),
        key: certs.self_signed_key.clone(),
    };
    let daemon = InProc::start_with(|config| {
        config.tcp = Some(TcpListen {
            addr: ([127, 0, 0, 1], 0).into(),
            tls: Some(tls),
        });
    })
    .await;
    let addr = daemon
        .running()
        .and_then(|r| r.tcp)
        .expect("a TCP listener");
    let url = std::ffi::OsString::from(format!("tls://{addr}"));
    let key = teamboard_testkit::lead_key_path(&daemon.socket);
    let ca = certs.self_signed.as_os_str();
    let scenario = run_scenario(&[&url, key.as_os_str(), ca]).await;
    daemon.stop().await;
    scenario
}
