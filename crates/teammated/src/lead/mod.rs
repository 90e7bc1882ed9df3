//! The lead: `teammated lead`, which `teamctl lead` starts in the person's terminal.
//!
//! The lead is an LLM session with the person on one side and the board on the other.
//! It connects to boardd as `lead` (the person's name at teamctl; it does not join the
//! roster), proposes a team plan, and after "start" puts tasks on the board and spawns
//! teammates with its tools. Team events reach its context without a polling tool:
//! the runtime reads the lead's inbox whenever boardd says a message arrived, puts
//! results, errors, plan requests and shutdown answers into the context, folds idle
//! notifications into one digest line, and acknowledges messages only once they are
//! in the context. An event that needs a decision (a plan, an error), or the board
//! becoming done, starts a turn when the lead is idle.
//!
//! It reuses the teammate's providers (including `scripted`, which stands in for the
//! lead when offered the lead's tools), its context with compaction, and its
//! transcript (`teamctl logs lead`). The lead is not on the roster, so boardd does not
//! count its tokens; the lead keeps its own ledger by cause ([`ledger`]).
//!
//! Data flows one way: [`drive`] reads the person and the board and decides when a
//! turn runs; [`turn`] runs the model with [`tools`]; [`events`] turns inbox messages
//! into context text; the leaves ([`specs`], [`spawn`], [`ledger`], [`console`]) call
//! nothing back.

mod console;
mod drive;
mod events;
pub mod ledger;
mod spawn;
pub mod specs;
mod tools;
mod turn;

pub use drive::{LeadError, Outcome, run};

use crate::config::ProviderConfig;
use std::path::PathBuf;

/// How `spawn_teammate` starts teammates: through `teamctl spawn`, with these flags.
#[derive(Debug, Clone)]
pub struct SpawnConfig {
    /// The teamctl binary.
    pub teamctl: PathBuf,
    /// `--provider`, `--model`, `--base-url` for the teammates; `None` leaves each
    /// to teammated's default. With an agent `runtime`, `model` is the agent's
    /// and goes as `--agent-model`.
    pub provider: Option<String>,
    pub model: Option<String>,
    pub base_url: Option<String>,
    /// The teammates' working directory.
    pub workdir: PathBuf,
    /// `--idle-timeout` for the teammates, in seconds.
    pub idle_timeout: Option<u64>,
    /// `--runtime` for the teammates (`claude`, ...); `None` is the native loop.
    /// Their agent's program is then the runtime's default, found on PATH.
    pub runtime: Option<String>,
}

/// Everything the lead needs.
#[derive(Debug, Clone)]
pub struct LeadConfig {
    pub team: String,
    pub socket: PathBuf,
    pub state_dir: PathBuf,
    /// Whether the state dir was named (it is then passed on to `teamctl spawn`).
    pub state_dir_given: bool,
    pub provider: ProviderConfig,
    pub spawn: SpawnConfig,
    /// Non-interactive: the person's goal.
    pub goal: Option<String>,
    /// With a goal: start without asking.
    pub yes: bool,
    /// Model rounds per turn before the turn is cut short.
    pub max_rounds: u32,
    /// Estimated context tokens before older turns are summarised.
    pub context_budget: u64,
}
