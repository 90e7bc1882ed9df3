//! `teammated lead`'s command line, a module of the binary (the library's
//! [`LeadConfig`] is what it becomes). `teamctl lead` is the way a person starts
//! it; it passes these flags on.

use anyhow::Context as _;
use std::path::PathBuf;
use teamboard_protocol::lead_args::{LeadGoalArgs, LeadSpawnArgs};
use teamboard_protocol::{DEFAULT_TEAM, Endpoint, Remote, RuntimeKind, paths};
use teammated::lead::{LeadConfig, SpawnConfig};
use teammated::provider_args::ProviderArgs;

#[derive(Debug, clap::Parser)]
#[command(
    name = "teammated lead",
    version,
    about = "Run the team's LLM lead in this terminal (usually started by `teamctl lead`)",
    after_help = "\
EXAMPLES:
  teamctl lead                                   # interactive, offline scripted lead
  teamctl lead --provider anthropic              # a real model
  teamctl lead --goal \"$(cat plan.md)\" --yes     # plan, start, wait, summarise, exit

The lead connects to boardd as `lead`, proposes a team plan, and after \"start\" creates
tasks and spawns teammates (through `teamctl spawn`). Team events reach it without
polling. Its transcript is <state dir>/teammates/<team>/lead/transcript.jsonl
(`teamctl logs lead`) and its token count by cause is usage.json next to it."
)]
pub struct LeadArgs {
    /// The team to lead; one that does not exist is refused unless --new-team.
    #[arg(long, env = "TEAMBOARD_TEAM", default_value = DEFAULT_TEAM)]
    pub team: String,
    /// Create the team if no team has that name (`teamctl lead --new-team TEAM`).
    #[arg(long)]
    pub new_team: bool,
    /// boardd's socket [default: $XDG_RUNTIME_DIR/teamboard/boardd.sock]
    #[arg(long, env = "TEAMBOARD_SOCKET")]
    pub socket: Option<PathBuf>,
    /// boardd over the network: tls://HOST:PORT (or several, separated by
    /// commas, tried in turn), with the lead's token in
    /// --token-file; each teammate spawned gets a token of its own
    #[arg(long, env = "TEAMBOARD_CONNECT", value_name = "URL", requires = "token_file",
          value_parser = |s: &str| Endpoint::parse(s).map_err(|e| e.to_string()))]
    pub connect: Option<Endpoint>,
    /// With --connect: the file holding the lead's token
    #[arg(long, env = "TEAMBOARD_TOKEN_FILE", value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// With --connect: the CA (PEM) boardd's certificate must be signed by
    #[arg(long, env = "TEAMBOARD_CA_FILE", value_name = "FILE")]
    pub ca_file: Option<PathBuf>,
    /// Where transcripts go [default: ~/.local/state/teamboard]
    #[arg(long, env = "TEAMBOARD_STATE_DIR")]
    pub state_dir: Option<PathBuf>,
    #[command(flatten)]
    pub provider: ProviderArgs,
    #[command(flatten)]
    pub goal: LeadGoalArgs,
    /// The teamctl binary `spawn_teammate` runs [default: teamctl next to this
    /// binary, else on $PATH]
    #[arg(long, env = "TEAMCTL_BIN", value_name = "PATH")]
    pub teamctl: Option<PathBuf>,
    #[command(flatten)]
    pub spawn: LeadSpawnArgs,
    /// Model rounds per turn before the turn stops and asks the person.
    #[arg(long, default_value_t = 40)]
    pub max_rounds: u32,
    /// Estimated context tokens before older turns are summarised; at least 1000.
    #[arg(long, default_value_t = 100_000)]
    pub context_budget: u64,
}

impl LeadArgs {
    pub fn into_config(self) -> anyhow::Result<LeadConfig> {
        let (goal, spawn) = (self.goal, self.spawn);
        let workdir = match spawn.workdir {
            Some(w) => w,
            None => std::env::current_dir().context("cannot read the current directory")?,
        };
        let workdir = std::fs::canonicalize(&workdir)
            .with_context(|| format!("the working directory {}", workdir.display()))?;
        let teamctl = match self.teamctl {
            Some(t) => t,
            None => find_teamctl()?,
        };
        let provider = self.provider.provider;
        // The lead's model and URL carry over only to teammates of the same provider.
        let same = spawn.teammate_provider.is_none_or(|p| p == provider);
        // Its model names a model of its own provider, which an agent does not
        // speak: an agent teammate keeps its own default unless
        // --teammate-model names one.
        let agent = spawn
            .teammate_runtime
            .is_some_and(|r| r != RuntimeKind::Native);
        let model = self.provider.model.clone().filter(|_| same && !agent);
        let base_url = self.provider.base_url.clone().filter(|_| same);
        let state_dir_given = self.state_dir.is_some();
        let budget = self.context_budget;
        let context_budget = teammated::config::check_context_budget(budget)
            .map_err(|why| anyhow::anyhow!("--context-budget {budget}: {why}"))?;
        Ok(LeadConfig {
            team: self.team,
            socket: self.socket.unwrap_or_else(paths::default_socket_path),
            remote: self.connect.map(|endpoint| Remote {
                endpoint: endpoint.with_ca_file(self.ca_file),
                token_file: self.token_file.unwrap_or_default(),
            }),
            state_dir: self.state_dir.unwrap_or_else(paths::default_state_dir),
            state_dir_given,
            spawn: SpawnConfig {
                teamctl,
                provider: Some(spawn.teammate_provider.unwrap_or(provider).to_string()),
                model: spawn.teammate_model.or(model),
                base_url: spawn.teammate_base_url.or(base_url),
                workdir,
                idle_timeout: spawn.teammate_idle_timeout,
                runtime: spawn.teammate_runtime.map(|r| r.to_string()),
                sandbox: spawn.teammate_sandbox,
                no_network: spawn.teammate_no_network,
            },
            provider: self.provider.into_config()?,
            goal: goal.goal.filter(|g| !g.trim().is_empty()),
            yes: goal.yes,
            give_up_after: match goal.give_up_after.unwrap_or(LeadGoalArgs::GIVE_UP_AFTER) {
                0 => None,
                secs => Some(std::time::Duration::from_secs(secs)),
            },
            max_rounds: self.max_rounds.max(1),
            context_budget,
            review_plans: spawn.review_plans.unwrap_or_default(),
            new_team: self.new_team,
        })
    }
}

/// teamctl next to this binary (as `cargo build` and `cargo xtask install` leave
/// them), else the first on `$PATH`.
fn find_teamctl() -> anyhow::Result<PathBuf> {
    let beside = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|d| d.join("teamctl")));
    let on_path: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join("teamctl"))
                .collect()
        })
        .unwrap_or_default();
    beside
        .into_iter()
        .chain(on_path)
        .find(|p| p.is_file())
        .context("cannot find teamctl (looked next to teammated and on $PATH); pass --teamctl")
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser as _;
    use teamboard_protocol::SandboxMode;

    /// The model the lead passes to the teammates it spawns.
    fn teammates_model(extra: &[&str]) -> Option<String> {
        let argv = [
            "teammated lead",
            "--provider",
            "anthropic",
            "--model",
            "claude-opus-4-1",
            "--teamctl",
            "/bin/true",
            "--workdir",
            "/",
        ]
        .iter()
        .chain(extra);
        let args = LeadArgs::try_parse_from(argv).expect("parses");
        args.into_config().expect("a config").spawn.model
    }

    #[test]
    fn a_context_budget_too_small_is_refused_not_raised() {
        let parse = |budget: &str| {
            let argv = ["teammated lead", "--teamctl", "/bin/true", "--workdir", "/"];
            let args = LeadArgs::try_parse_from(argv.iter().chain(&["--context-budget", budget]));
            args.expect("parses")
                .into_config()
                .map(|c| c.context_budget)
                .map_err(|e| e.to_string())
        };
        assert_eq!(parse("1000"), Ok(1000));
        let refused = parse("300").expect_err("too small");
        assert_eq!(
            refused,
            "--context-budget 300: 300 is too small: the budget must be at least 1000 tokens"
        );
    }

    #[test]
    fn the_teammates_sandbox_is_the_spawns_default_unless_given() {
        let spawn = |extra: &[&str]| {
            let argv = ["teammated lead", "--teamctl", "/bin/true", "--workdir", "/"];
            let args = LeadArgs::try_parse_from(argv.iter().chain(extra)).expect("parses");
            let spawn = args.into_config().expect("a config").spawn;
            (spawn.sandbox, spawn.no_network)
        };
        assert_eq!(spawn(&[]), (None, false));
        assert_eq!(
            spawn(&["--teammate-sandbox", "off", "--teammate-no-network"]),
            (Some(SandboxMode::Off), true)
        );
        assert_eq!(
            spawn(&["--teammate-sandbox", "read-only"]),
            (Some(SandboxMode::ReadOnly), false)
        );
    }

    #[test]
    fn the_leads_model_carries_over_to_native_teammates_only() {
        let lead = Some("claude-opus-4-1".to_string());
        assert_eq!(teammates_model(&[]), lead);
        assert_eq!(teammates_model(&["--teammate-runtime", "native"]), lead);
        assert_eq!(teammates_model(&["--teammate-runtime", "claude"]), None);
        assert_eq!(
            teammates_model(&["--teammate-runtime", "codex", "--teammate-model", "o3"]).as_deref(),
            Some("o3")
        );
    }
}
