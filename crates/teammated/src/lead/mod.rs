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
//! into context text; the leaves ([`spawn`], [`ledger`], [`console`]) call
//! nothing back.

mod console;
mod drive;
mod events;
pub mod ledger;
mod settled;
mod spawn;
mod tools;
mod turn;
mod unstaffed;

pub use drive::{LeadError, Outcome, run};

use crate::config::ProviderConfig;
use std::path::PathBuf;
use teamboard_protocol::SandboxMode;
pub use teamboard_protocol::lead_args::PlanReviewer;

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
    /// `--sandbox` for the teammates; `None` is `teamctl spawn`'s default.
    pub sandbox: Option<SandboxMode>,
    /// `--no-network` for the teammates.
    pub no_network: bool,
}

/// Everything the lead needs.
#[derive(Debug, Clone)]
pub struct LeadConfig {
    pub team: String,
    pub socket: PathBuf,
    /// boardd over the network (`--connect`), in place of `socket`: the lead
    /// presents the token, and issues one to each teammate it spawns.
    pub remote: Option<teamboard_protocol::Remote>,
    pub state_dir: PathBuf,
    /// Whether the state dir was named (it is then passed on to `teamctl spawn`).
    pub state_dir_given: bool,
    pub provider: ProviderConfig,
    pub spawn: SpawnConfig,
    /// Non-interactive: the person's goal.
    pub goal: Option<String>,
    /// With a goal: start without asking.
    pub yes: bool,
    /// With a goal: end the session once the open tasks have had no teammate
    /// connected for this long (`--give-up-after`); `None` waits for ever.
    pub give_up_after: Option<std::time::Duration>,
    /// Model rounds per turn before the turn is cut short.
    pub max_rounds: u32,
    /// Estimated context tokens before older turns are summarised.
    pub context_budget: u64,
    /// Who decides the teammates' plans: the lead's model, or the person, in
    /// which case the lead only hears of them (see `events`, `tools`).
    pub review_plans: PlanReviewer,
    /// Create `team` if no team has that name (`teamctl lead --new-team`).
    pub new_team: bool,
}

#[cfg(test)]
mod tests {
    use teamboard_protocol::board_call::{Front, ToolSpec};

    /// A tool's section of `docs/lead.md`: its heading, description and schema.
    fn section(s: &ToolSpec) -> String {
        let pretty = serde_json::to_string_pretty(&s.input_schema).unwrap();
        format!(
            "### `{}`\n\n{}\n\n```json\n{pretty}\n```\n",
            s.name, s.description
        )
    }

    #[test]
    #[ignore = "a helper for updating docs/lead.md, not a check"]
    fn print_tool_schemas() {
        for s in Front::Lead.specs() {
            println!("{}", section(&s));
        }
    }

    /// The "Tools" section of `docs/lead.md` is exactly what the lead's model
    /// receives (the specs `drive` gives its model loop): one section per tool, in
    /// the order the model gets them, each with its description and schema, and
    /// no other.
    #[test]
    fn the_docs_show_exactly_the_tools_the_model_receives() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/lead.md");
        let doc = std::fs::read_to_string(path).unwrap();
        let tools = doc.split_once("\n## Tools\n").expect("a Tools section").1;
        let tools = tools.split("\n## ").next().unwrap_or_default();
        let shown: Vec<String> = tools
            .split("\n### ")
            .skip(1)
            .map(|s| format!("### {}", s.trim_end()))
            .collect();
        let specs = Front::Lead.specs();
        let heading = |s: &str| s.lines().next().unwrap_or_default().to_string();
        assert_eq!(
            shown.iter().map(|s| heading(s)).collect::<Vec<_>>(),
            specs
                .iter()
                .map(|s| heading(&section(s)))
                .collect::<Vec<_>>(),
            "docs/lead.md's tool headings are not the lead's tools, in order"
        );
        for (shown, spec) in shown.iter().zip(&specs) {
            assert_eq!(
                shown,
                section(spec).trim_end(),
                "docs/lead.md does not show {} as the model receives it",
                spec.name
            );
        }
    }
}
