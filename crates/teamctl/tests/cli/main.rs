//! End-to-end tests of the `teamctl` binary against a real boardd running in-process.
//!
//! Each test starts its own daemon (the test kit's [`blocking::InProc`]: socket and
//! state in a short directory under /tmp, on a runtime of its own, so that the test
//! can block on the binary), runs the real binary with `--socket`, and checks
//! stdout, stderr and the exit code. Teammates are played by protocol clients
//! inside the test.
//!
//! One test binary with a module per command (or group of commands): each extra
//! binary costs a link on CI.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "test code: a panic fails the test, and the harness captures what it prints"
)]

mod budget;
mod completions;
mod events;
mod global;
mod lead;
mod logs;
mod mcp;
mod mcp_claude;
mod messages;
mod repo;
mod requests;
mod review;
mod runtime;
mod spawn;
mod tasks;
mod team;
mod teams;
mod watch;
mod web;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use teamboard_protocol::Client;
use teamboard_testkit::{Teamctl, blocking, teammate_with_pid};

/// The binary under test, built by cargo for this package's tests.
const TEAMCTL: &str = env!("CARGO_BIN_EXE_teamctl");

/// The pid the protocol-client teammates report, as a real teammated would its own.
const FAKE_PID: u32 = 4242;

/// A boardd on its own runtime and `teamctl` pointed at it. The daemon stops when
/// this is dropped.
struct Cli {
    daemon: blocking::InProc,
    teamctl: Teamctl,
    socket: PathBuf,
}

impl Cli {
    fn start() -> Cli {
        Cli::start_with(|_| {})
    }

    fn start_with(tune: impl FnOnce(&mut teamboard_testkit::boardd::Config)) -> Cli {
        let daemon = blocking::InProc::start_with(tune);
        Cli {
            teamctl: Teamctl::new(TEAMCTL, &daemon.socket),
            socket: daemon.socket.clone(),
            daemon,
        }
    }

    /// Runs `teamctl --socket <ours> ARGS...` to completion.
    fn run(&self, args: &[&str]) -> Output {
        self.teamctl.run(args)
    }

    /// Runs teamctl and insists that it succeeds; returns stdout.
    fn ok(&self, args: &[&str]) -> String {
        self.teamctl.ok(args)
    }

    /// Runs teamctl with `--json` and parses stdout.
    fn json(&self, args: &[&str]) -> Value {
        self.teamctl.json(args)
    }

    /// A teammate: a registered protocol session that stays connected.
    fn teammate(&self, name: &str, role: &str) -> Client {
        self.teammate_with_pid(name, role, FAKE_PID)
    }

    /// A teammate that reports `pid` as its process, as a real teammated would.
    fn teammate_with_pid(&self, name: &str, role: &str, pid: u32) -> Client {
        self.block_on(teammate_with_pid(&self.socket, name, role, Some(pid)))
    }

    fn block_on<F: Future>(&self, f: F) -> F::Output {
        self.daemon.block_on(f)
    }

    /// Restarts the daemon on the same state; see [`blocking::InProc::restart`].
    fn restart(&mut self) {
        self.daemon.restart();
    }

    /// Stops the daemon the way a process exit would; see [`blocking::InProc::stop`].
    fn stop(&mut self) {
        self.daemon.stop();
    }
}

/// Runs `teamctl --socket SOCKET ARGS...` to completion.
fn teamctl(socket: &Path, args: &[&str]) -> Output {
    Teamctl::new(TEAMCTL, socket).run(args)
}

/// `teamctl --socket SOCKET`, for a test to add to and run.
fn base_command(socket: &Path) -> Command {
    Teamctl::new(TEAMCTL, socket).command()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}
