//! Command-line definitions for a teammate's runtime: what carries out its work
//! (`teamctl spawn --runtime ...`). `docs/runtimes.md` is the contract.

use clap::Args;
use std::path::PathBuf;
use teamboard_protocol::{AgentPolicy, RuntimeKind};

/// `teamctl spawn`'s runtime flags, flattened into its arguments.
#[derive(Debug, Args)]
#[command(next_help_heading = "Runtime (docs/runtimes.md)")]
pub struct RuntimeArgs {
    /// What does the work: teammated's own loop, or an agent driven through its
    /// structured interface, one session per task; teammated keeps the board side
    /// (claims, inbox, plans, results) [default: native]
    #[arg(long, value_enum, value_name = "RUNTIME")]
    pub runtime: Option<RuntimeKind>,

    /// The agent's program, a path or a name on PATH; checked before the teammate
    /// starts [default: `claude` for claude, `codex` for codex; acp needs it]
    #[arg(long, value_name = "CMD")]
    pub agent_cmd: Option<PathBuf>,

    /// One more argument for the agent, after teammated's own; repeat for more
    /// (`--agent-arg=--acp`, `--agent-arg=--tools --agent-arg=Bash,Read,Edit`)
    #[arg(
        long = "agent-arg",
        value_name = "ARG",
        allow_hyphen_values = true,
        action = clap::ArgAction::Append
    )]
    pub agent_args: Vec<String>,

    /// The agent's model: Claude Code's `--model` (e.g. `sonnet`), the model of
    /// Codex's threads. --model is the native loop's and never reaches an agent;
    /// an ACP agent takes its own flag (`--agent-arg=-m --agent-arg=MODEL`)
    /// [default: the agent's own, from its settings]
    #[arg(long, value_name = "MODEL")]
    pub agent_model: Option<String>,

    /// How the agent's permission requests are answered; before an approved plan,
    /// changes are refused anyway [default: workspace]
    #[arg(long, value_enum, value_name = "POLICY")]
    pub agent_policy: Option<AgentPolicy>,
}

/// The examples `teamctl spawn --help` ends with, one per runtime.
pub const SPAWN_RUNTIME_EXAMPLES: &str = "\
Runtimes:
  teamctl spawn bob --role backend --runtime claude         Claude Code (`claude` on PATH)
  teamctl spawn cleo --role backend --runtime claude --agent-model sonnet \\
      --agent-arg=--allowedTools --agent-arg='Bash(git *)'
  teamctl spawn carl --role docs --runtime codex --agent-cmd ~/.local/bin/codex
  teamctl spawn dana --role review --runtime acp --agent-cmd gemini --agent-arg=--acp \\
      --agent-policy read-only
  `teamctl team` shows each teammate's runtime.";
