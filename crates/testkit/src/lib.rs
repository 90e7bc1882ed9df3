//! The one test kit of the teamboard workspace: every test that needs a daemon, a
//! client or a scratch directory takes it from here.
//!
//! Directories and waiting:
//! - [`short_tempdir`]: a private directory under `/tmp` with a short name, because
//!   Linux socket paths must stay under 108 bytes (`target/` is too deep).
//! - [`eventually`] / [`eventually_blocking`]: poll a condition until a bounded
//!   deadline, for async and blocking tests. No test sleeps for a fixed time to let
//!   something happen.
//! - [`PATIENCE`]: how long a test waits for what should take milliseconds.
//!
//! Daemons:
//! - [`InProc`]: boardd inside the test's own tokio runtime, on a real socket with a
//!   real SQLite store. [`InProc::start_paused`] configures it for tokio's paused
//!   clock (commits inline, see there), so leases and timeouts run in virtual time;
//!   [`InProc::restart`] stops it and starts it again on the same state, with the
//!   claims kept, as after a crash.
//! - [`blocking::InProc`]: the same daemon on a runtime of its own, for plain
//!   `#[test]` functions that run blocking child processes (the teamctl tests).
//! - [`Daemon`]: the real `boardd` binary as a child process, killed on drop, for
//!   signals, exit codes and `kill -9`. [`workspace_bin`] finds (and builds once per
//!   test process) the workspace's binaries.
//!
//! Clients and wire:
//! - [`lead`], [`connect`], [`teammate`], [`teammate_with_pid`]: protocol clients on
//!   the real socket, presenting the lead's credential, which [`lead_key`] finds
//!   for every daemon this kit started (teamctl, teammated and the kit's own
//!   processes are pointed at it too); [`task`] builds a plain new task; [`park`] sends
//!   `wait_for_work` and returns once boardd holds it; [`code_of`] unwraps a
//!   server error.
//! - [`raw`]: hand-made frames on a plain `UnixStream` for malformed input, and
//!   [`raw::Session`], a handshaken connection whose request ids and answers the
//!   test controls (send now, read the answer later, see the session id).
//!
//! The other binaries:
//! - [`TestCerts`]: a CA, a server certificate it signed and a self-signed one
//!   for 127.0.0.1, made by the `openssl` command.
//! - [`Teamctl`]: runs the `teamctl` binary against a socket and checks its output.
//! - [`Teammated`] / [`Teammate`]: starts real `teammated` processes, each with its
//!   log in a file; [`transcript`] reads what a teammate wrote.
//! - [`Board`]: an [`InProc`] daemon with the lead subscribed to its events, which
//!   waits for events in order (`wait_idle`, `wait_claimed`, `wait_released`,
//!   `wait_acked`, `wait_done`, `wait_completed`) and spawns teammates against it,
//!   native or with an agent CLI (`spawn_agent`, `agent_sessions`).
//! - [`mock_llm`]: a scripted Anthropic/OpenAI HTTP server on 127.0.0.1 (the
//!   `teamboard-mock-llm` crate); it answers the model list a teammate asks for at
//!   start apart from its script, and can simulate prompt caching.
//! - [`GitRepo`]: a scratch git repository whose `main` is checked out nowhere, for
//!   the worktree tests; [`git::git`] runs git in it, [`GitRepo::hook`] installs
//!   a hook, [`git::manifest`] hashes a worktree's uncommitted files.
//! - [`Pause`]: a point in a git hook where git waits until the test lets it
//!   go, for killing boardd or git at a known step; [`add_held_task`] adds a
//!   task whose check waits at one, [`pause_main_update`] stops `main`'s update.
//! - [`claim_and_write`], [`complete_in_background`], [`stage_is`]: a task
//!   through its worktree and its landing.
//! - [`WorktreeTeammate`]: a real process (this kit's `worktree-teammate`
//!   binary) that claims a task, leaves uncommitted work in its worktree and
//!   waits to be killed.
//! - [`alive`]: whether a process still runs (a zombie does not);
//!   [`group_members`]: what still runs in a process group, [`process_group`]:
//!   the group of a process; [`with_marker`] / [`with_env`]: the processes found
//!   by their command line or their environment (an agent and its tools), and
//!   [`wait_gone`], a wait until none is left whose failure names what still runs.
//! - `fake-acp-agent` (this kit's binary, [`workspace_bin`]): a scripted Agent
//!   Client Protocol agent (`RUN:`, `SLEEP:`, `PLAN:`, `CRASH`, `ANSWER:` lines),
//!   for tests of the agent runtime that need no npm and no model.
//! - [`agents::agent_cli`]: the real Claude Code, Codex or Gemini CLI at its
//!   pinned version, or a clear "skipped" when it is not installed.
//! - [`MuteTeammate`]: a real process (this kit's `mute-teammate` binary) that
//!   registers and then answers nothing, in a process group of its own, for
//!   shutdown deadlines that boardd enforces with signals.
//!
//! Histories:
//! - [`ownership::check`] (also [`check_ownership`]): replays a team's events
//!   and refuses a history in which a task had two owners at once, a claim's
//!   epoch did not rise, or a teammate held two tasks; [`read_history`] reads
//!   a team's whole history through a client, paging with `since`.
//!
//! Several hosts on one machine:
//! - [`Net`]: hosts in network namespaces on one bridge, each with its own
//!   address, reachable from the test's own namespace through
//!   [`Net::gateway`] (where the database runs). [`netns::Host::command`]
//!   runs a program inside a host (it enters the namespace with `setns`, so
//!   the child is the program: `kill -9` and the parent-death signal reach
//!   it), [`netns::Host::within`] makes the test's own sockets there;
//!   [`Net::cut`] drops every packet of a host, so its connections stall
//!   rather than fail, until [`Net::heal`]. Needs root and `ip`:
//!   [`Net::or_skip`] prints `skipped` without them, or panics under
//!   `TEAMBOARD_REQUIRE_NETNS=1`. Drop takes it all down, and a killed test's
//!   namespaces are swept by the next.
//!
//! Only the public API of boardd and teamboard-protocol is used, so the kit runs
//! the daemon exactly as its binary does. `boardd` is re-exported so that a test can
//! name [`boardd::Config`] in a `start_with` closure without depending on it.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stderr,
    reason = "test support: a panic fails the calling test with its message, and notes go to its output"
)]

mod agent_board;
pub mod agents;
mod bins;
pub mod blocking;
mod board;
mod certs;
mod clients;
mod daemon;
mod eventually;
pub mod git;
mod inproc;
mod keys;
mod landing;
mod mute;
pub mod netns;
pub mod ownership;
mod pause;
pub mod pg;
mod process;
pub mod raw;
mod teamctl;
mod teammated;
mod tempdir;
mod worktree_teammate;

pub use bins::{boardd_bin, workspace_bin};
pub use board::Board;
pub use boardd;
pub use certs::TestCerts;
pub use clients::{
    Parked, TEAM, code_of, connect, lead, park, register_unsandboxed, task, teammate,
    teammate_with_pid, unsandboxed_teammate,
};
pub use daemon::Daemon;
pub use eventually::{PATIENCE, eventually, eventually_blocking};
pub use git::GitRepo;
pub use inproc::InProc;
pub use keys::{lead_key, lead_key_env, lead_key_path};
pub use landing::{
    add_held_task, claim_and_write, complete_in_background, pause_main_update, stage_is,
};
pub use mute::MuteTeammate;
pub use netns::Net;
pub use ownership::{check as check_ownership, read_history};
pub use pause::{Pause, Paused};
pub use process::{
    alive, group_members, kill9, live_processes, process_group, wait_gone, with_env, with_marker,
};
pub use teamboard_mock_llm as mock_llm;
pub use teamctl::Teamctl;
pub use teammated::{Teammate, Teammated, transcript};
pub use tempdir::short_tempdir;
pub use worktree_teammate::WorktreeTeammate;

#[cfg(test)]
mod tests;
