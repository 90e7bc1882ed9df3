//! The `codex` runtime: Codex driven through `codex app-server`, JSON-RPC over
//! stdio. See `docs/runtimes.md` for the mapping of board events.
//!
//! - [`params`]: what teammated asks of the app-server, and the texts it adds;
//! - [`answers`]: how it answers the agent's approval requests;
//! - [`state`]: the session as a state machine over the lines (no I/O);
//! - [`actor`]: the task that owns the process and moves the lines.
//!
//! The agent keeps the user's configuration (`$CODEX_HOME`, default
//! `~/.codex`): teammated writes none and sets no `CODEX_HOME` of its own. A
//! teammate meant to run apart sets `CODEX_HOME` in its environment, and keeps
//! it across restarts, or its threads cannot be resumed.
//!
//! The program is the native `codex` binary: the npm package's Node wrapper
//! would leave the real process behind when it is killed.

mod actor;
mod answers;
mod params;
// Public for the fuzz targets (`crates/fuzz-entry`) only.
#[doc(hidden)]
pub mod state;
#[cfg(test)]
mod tests;

use crate::runtime::handle::{Intake, Pid, Unopened};
use crate::runtime::process::AgentProcess;
use crate::runtime::{Agent, AgentError, AgentSpec, Brief, with_tail};
use std::time::Duration;
use tracing::Instrument as _;

/// How long the app-server may take to initialise and open the task's thread.
/// It takes well under a second; the bound is for a CLI that hangs.
pub const START_TIMEOUT: Duration = Duration::from_secs(60);

/// Starts `codex app-server` under the guard and opens (or resumes) the
/// task's thread. Returns once the thread is open, with its
/// [`crate::runtime::AgentEvent::Session`] as the first event; fails with the
/// agent's error (and its last stderr lines) when it cannot be opened.
///
/// An input is handed to the [`actor`] ([`Intake::Queued`]), which steers it
/// into the running turn or starts a turn with it. A stop interrupts the
/// running turn (bounded by [`actor::INTERRUPT_GRACE`]), then ends the process
/// group and everything in it.
pub async fn start(spec: &AgentSpec, brief: Brief) -> Result<Agent, AgentError> {
    let launch = spec.launch(&brief, params::args(), Vec::new());
    let process = AgentProcess::spawn(&launch)?;
    let pid = process.pid();
    let span = tracing::info_span!("codex", task = brief.task, pid);
    let core = state::Core::new(state::Setup {
        cwd: brief.cwd,
        identity: brief.identity,
        prompt: brief.prompt,
        resume: brief.resume,
        model: spec.model.clone(),
        mcp: brief.mcp,
        policy: spec.policy,
        plan_first: brief.plan_first,
        max_rounds: spec.max_turns,
    });
    let intake = Intake::Queued {
        refused_after_exit: false,
    };
    let mut codex = Agent::spawn(intake, Pid::new(pid), None, |commands, events| {
        actor::run(process, core, commands, events).instrument(span)
    });
    let why = match tokio::time::timeout(START_TIMEOUT, codex.opened()).await {
        Ok(Ok(())) => return Ok(codex),
        Ok(Err(Unopened::Failed(why))) => why,
        Ok(Err(Unopened::Exited { status, stderr })) => with_tail(
            format!("codex exited ({status}) before its thread opened"),
            &stderr,
        ),
        Ok(Err(Unopened::Ended)) => "the codex session ended before its thread opened".into(),
        Err(_) => format!(
            "codex app-server opened no thread within {} s",
            START_TIMEOUT.as_secs()
        ),
    };
    codex.stop().await;
    Err(AgentError::Start(why))
}
