//! The flags `teamctl lead` and `teammated lead` share: the goal of a run
//! without a conversation, and how the lead spawns its teammates. A person types
//! them to teamctl, which hands them on to `teammated lead`; one definition keeps
//! the two programs' flags and help the same. They live in the protocol crate for
//! the reason `launch` does: it is the vocabulary both programs share already.
//!
//! Each program adds its own flags around them: teamctl checks the model flags of
//! the lead and its teammates before anything starts; teammated reads the model's
//! settings from its environment too.

use crate::launch::parse_base_url;
use crate::{ProviderKind, RuntimeKind, SandboxMode};
use std::path::PathBuf;

/// A run without a conversation (`--goal`).
#[derive(Debug, Clone, clap::Args)]
pub struct LeadGoalArgs {
    /// Run without a conversation: plan this goal, start, wait until every task has
    /// ended, print the summary; exit 0 only if every task completed
    #[arg(long, value_name = "TEXT")]
    pub goal: Option<String>,

    /// With --goal: start without asking for "start" on stdin
    #[arg(long, requires = "goal")]
    pub yes: bool,

    /// With --goal: give up (exit 1) once the open tasks have had no teammate on
    /// the team for this many seconds, e.g. because the lead's spawns failed; 0
    /// waits for ever [default: 120]
    #[arg(long, value_name = "SECS", requires = "goal")]
    pub give_up_after: Option<u64>,
}

impl LeadGoalArgs {
    /// `--give-up-after` when it is not given.
    pub const GIVE_UP_AFTER: u64 = 120;
}

/// Who decides the plans teammates submit (`--review-plans`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum, strum::Display)]
#[strum(serialize_all = "lowercase")]
pub enum PlanReviewer {
    /// The lead's model reviews each plan as it arrives.
    #[default]
    Lead,
    /// The lead leaves plans to the person (`teamctl plans`, `teamctl approve`,
    /// `teamctl reject`); its model only hears of them.
    Person,
}

/// How the lead spawns and oversees its teammates.
#[derive(Debug, Clone, clap::Args)]
pub struct LeadSpawnArgs {
    /// The directory the teammates it spawns work in [default: the current directory]
    #[arg(long, value_name = "DIR")]
    pub workdir: Option<PathBuf>,

    /// The teammates' provider [default: the lead's]
    #[arg(long, value_enum, value_name = "PROVIDER")]
    pub teammate_provider: Option<ProviderKind>,

    /// The teammates' model; with --teammate-runtime claude or codex, their
    /// agent's (--agent-model) [default: the lead's, for native teammates of the
    /// same provider; an agent's own default]
    #[arg(long, value_name = "MODEL")]
    pub teammate_model: Option<String>,

    /// The teammates' API base URL [default: the lead's, for the same provider]
    #[arg(long, value_name = "URL", value_parser = parse_base_url)]
    pub teammate_base_url: Option<String>,

    /// Stop each teammate after this many seconds with nothing to do; 0 never
    /// [default: teammated's]
    #[arg(long, value_name = "SECS")]
    pub teammate_idle_timeout: Option<u64>,

    /// What does the teammates' work: `claude` or `codex` run that agent (found
    /// on PATH) for each teammate (see `teamctl spawn --help`) [default: native]
    #[arg(long, value_enum, value_name = "RUNTIME")]
    pub teammate_runtime: Option<RuntimeKind>,

    /// What the teammates' commands, agents and checks may touch: `workspace-write`,
    /// `read-only` or `off` (your full rights), as `teamctl spawn --sandbox`
    /// [default: workspace-write]
    #[arg(long, value_enum, value_name = "POLICY")]
    pub teammate_sandbox: Option<SandboxMode>,

    /// Cut the teammates' commands off the network, as `teamctl spawn
    /// --no-network` (builds that fetch packages fail)
    #[arg(long)]
    pub teammate_no_network: bool,

    /// Who decides the plans teammates submit: `lead` (its model, as each
    /// arrives) or `person` (you, with `teamctl approve` or `reject`; the lead
    /// only hears of them) [default: lead]
    #[arg(long, value_enum, value_name = "WHO")]
    pub review_plans: Option<PlanReviewer>,
}
