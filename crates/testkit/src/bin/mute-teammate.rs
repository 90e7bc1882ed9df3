//! A teammate that registers and then answers nothing, ever: the stand-in for a
//! hung teammated in tests of shutdown deadlines, which boardd must stop by
//! signalling its process group.
//!
//! Usage: `mute-teammate SOCKET NAME`. Starts a `sleep` in its own process group,
//! as teammated's tool commands are, prints `registered PID` (the sleep's pid) on
//! stdout once it is on the roster, then runs until it is killed.

#![allow(
    clippy::print_stderr,
    reason = "a stand-in for tests: stderr is its log"
)]

use std::io::Write as _;
use std::path::Path;
use std::process::ExitCode;
use teamboard_protocol::Client;

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let [_, socket, name] = args.as_slice() else {
        eprintln!("usage: mute-teammate SOCKET NAME");
        return ExitCode::from(2);
    };
    let client = match Client::connect(
        Path::new(socket),
        "mute-teammate",
        name,
        teamboard_protocol::DEFAULT_TEAM,
        teamboard_protocol::lead_key::lead_key(None).ok().as_ref(),
    )
    .await
    {
        Ok(c) => c,
        Err(e) => {
            eprintln!("mute-teammate: cannot connect: {e}");
            return ExitCode::FAILURE;
        }
    };
    if let Err(e) = client.register("mute", Some(std::process::id())).await {
        eprintln!("mute-teammate: cannot register: {e}");
        return ExitCode::FAILURE;
    }
    // A stand-in for a tool command: it dies only if the whole group is signalled.
    let tool = match std::process::Command::new("sleep")
        .arg("600")
        .stdin(std::process::Stdio::null())
        .spawn()
    {
        Ok(child) => child,
        Err(e) => {
            eprintln!("mute-teammate: cannot start sleep: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut out = std::io::stdout();
    if writeln!(out, "registered {}", tool.id())
        .and_then(|()| out.flush())
        .is_err()
    {
        return ExitCode::FAILURE;
    }
    // Holds the session open and reads nothing: requests pile up unanswered.
    std::future::pending::<()>().await;
    ExitCode::SUCCESS
}
