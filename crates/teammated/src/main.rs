//! `teammated`: one teammate process. See `teammated --help`.
//!
//! This file only turns flags and environment into a [`Config`] and runs the
//! library; everything else lives in the `teammated` library so tests can drive it.

mod lead_args;

use anyhow::Context as _;
use clap::parser::ValueSource;
use clap::{CommandFactory as _, FromArgMatches as _, Parser};
use std::path::PathBuf;
use std::time::Duration;
use teamboard_protocol::{DEFAULT_TEAM, Endpoint, Sandbox, SandboxMode, paths};
use teammated::config::{
    AGENT_ARGS_ENV, Config, RuntimeConfig, check_context_budget, keys_file, lookup_secret,
    parse_agent_args,
};
use teammated::provider_args::{ProviderArgs, SECRET_VARS};
use teammated::runtime::{AgentPolicy, RuntimeKind};
use tokio_util::sync::CancellationToken;

#[derive(Debug, Parser)]
#[command(
    name = "teammated",
    version,
    about = "Run one teamboard teammate: it claims ready tasks from boardd, works on them \
             with an LLM and tools, reports, and waits for more without spending tokens",
    after_help = "\
EXAMPLES:
  teammated --name alice --role backend                 # offline scripted model
  ANTHROPIC_API_KEY=... teammated --name bob --role backend --provider anthropic
  teammated --name carol --role docs --provider openai \\
      --base-url http://localhost:11434/v1 --model llama3.1   # ollama
  teammated --name dave --role backend --runtime claude --agent-model sonnet   # Claude Code

Usually started by `teamctl spawn NAME --role ROLE` or `systemctl --user start teammated@NAME`.
`teammated lead --help`: the team's LLM lead, which `teamctl lead` starts.
API keys come from ANTHROPIC_API_KEY / OPENAI_API_KEY or from ~/.config/teamboard/keys.env
(NAME=value lines); they are never logged. The transcript is in
<state dir>/teammates/<team>/<name>/transcript.jsonl (`teamctl logs NAME`)."
)]
struct Args {
    /// The teammate's name on the roster (letters, digits, '-' and '_').
    #[arg(long, env = "TEAMMATE_NAME")]
    name: String,
    /// The role: tasks with a role go only to teammates of that role.
    #[arg(long, env = "TEAMMATE_ROLE")]
    role: String,
    /// The team to join.
    #[arg(long, env = "TEAMBOARD_TEAM", default_value = DEFAULT_TEAM)]
    team: String,
    /// boardd's socket [default: $XDG_RUNTIME_DIR/teamboard/boardd.sock]
    #[arg(long, env = "TEAMBOARD_SOCKET")]
    socket: Option<PathBuf>,
    /// Reach boardd over the network instead of the socket: tls://HOST:PORT
    /// (`boardd --listen-tcp`), or several boardd of one board separated by
    /// commas, tried in turn at every reconnect; the teammate registers with the token in
    /// --token-file and presents it at every reconnect
    #[arg(long, env = "TEAMBOARD_CONNECT", value_name = "URL", requires = "token_file",
          value_parser = |s: &str| Endpoint::parse(s).map_err(|e| e.to_string()))]
    connect: Option<Endpoint>,
    /// With --connect: the file holding the teammate's token (`teamctl token create NAME`)
    #[arg(long, env = "TEAMBOARD_TOKEN_FILE", value_name = "FILE")]
    token_file: Option<PathBuf>,
    /// With --connect: the CA (PEM) boardd's certificate must be signed by; a
    /// self-signed certificate is its own CA [default: the system's roots]
    #[arg(long, env = "TEAMBOARD_CA_FILE", value_name = "FILE")]
    ca_file: Option<PathBuf>,
    /// Where transcripts go [default: ~/.local/state/teamboard]
    #[arg(long, env = "TEAMBOARD_STATE_DIR")]
    state_dir: Option<PathBuf>,
    #[command(flatten)]
    provider: ProviderArgs,
    /// The working directory for tools; file tools cannot leave it [default: .]
    #[arg(long, env = "TEAMMATE_WORKDIR")]
    workdir: Option<PathBuf>,
    /// Exit after this many seconds idle with nothing to do; 0 never exits.
    #[arg(long, env = "TEAMMATE_IDLE_TIMEOUT", default_value_t = 60)]
    idle_timeout: u64,
    /// Tool rounds per work phase before the task is failed.
    #[arg(long, env = "TEAMMATE_MAX_ROUNDS", default_value_t = 50)]
    max_rounds: u32,
    /// Seconds between renewals of the idle wait. boardd pushes work at once, so this
    /// is only a safety net; it causes no model calls.
    #[arg(long, env = "TEAMMATE_POLL_INTERVAL", default_value_t = 30.0)]
    poll_interval: f64,
    /// Estimated context tokens before older turns are summarised; at least 1000.
    #[arg(long, env = "TEAMMATE_CONTEXT_BUDGET", default_value_t = 100_000)]
    context_budget: u64,
    /// Whether the budget came from $TEAMMATE_CONTEXT_BUDGET, for the refusal.
    #[arg(skip)]
    budget_from_env: bool,
    /// Keep the conversation from one task to the next. By default each task
    /// starts afresh: the model sees who it is, the task, and the note the
    /// previous owner left when it gave the task back; earlier conversations stay
    /// in the transcript.
    #[arg(long, env = "TEAMMATE_CARRY_CONTEXT")]
    carry_context: bool,
    /// Default timeout of one `bash` call, in seconds.
    #[arg(long, env = "TEAMMATE_SHELL_TIMEOUT", default_value_t = 120)]
    shell_timeout: u64,
    /// Give up (exit 1) when boardd stays unreachable this many seconds, at start or
    /// after losing the connection. boardd keeps a claim for a restarting teammate
    /// only for its restart grace (30 s by default), so waiting longer only matters
    /// for picking up new work.
    #[arg(long, env = "TEAMMATE_RECONNECT_TIMEOUT", default_value_t = 300)]
    reconnect_timeout: u64,
    /// Every task needs a plan the lead approves before bash, write_file and
    /// edit_file open (tasks created with --require-plan need one anyway).
    #[arg(long, env = "TEAMMATE_REQUIRE_PLAN")]
    require_plan: bool,
    /// What does the work: `native` is teammated's own model loop; `claude`,
    /// `codex` and `acp` drive that agent through its structured interface, one
    /// session per task (see docs/runtimes.md). The model flags above are the
    /// native loop's and never reach an agent: it takes its model from its own
    /// settings or --agent-model, and its key from ANTHROPIC_API_KEY (claude) or
    /// OPENAI_API_KEY (codex).
    #[arg(long, env = "TEAMMATE_RUNTIME", value_enum, default_value = "native")]
    runtime: RuntimeKind,
    /// The agent's program [default: `claude` for claude, `codex` for codex;
    /// required for acp, e.g. `gemini`]
    #[arg(long, env = "TEAMMATE_AGENT_CMD", value_name = "CMD")]
    agent_cmd: Option<PathBuf>,
    /// One more argument for the agent, after teammated's own; repeat for more
    /// (`--agent-arg=--acp`, `--agent-arg=--tools --agent-arg=Bash,Read,Edit`). Without
    /// any, they are read from $TEAMMATE_AGENT_ARGS, a JSON array of strings.
    #[arg(long = "agent-arg", value_name = "ARG", allow_hyphen_values = true)]
    agent_args: Vec<String>,
    /// The agent's model: Claude Code's `--model` (e.g. `sonnet`), the model of
    /// Codex's threads [default: the agent's own, from its settings]. Not for
    /// acp: ACP has no standard way to choose a model, so give the agent's own
    /// flag (`--agent-arg=-m --agent-arg=gemini-2.5-flash`).
    #[arg(long, env = "TEAMMATE_AGENT_MODEL", value_name = "MODEL")]
    agent_model: Option<String>,
    /// How the agent's permission requests are answered: `workspace` allows what
    /// it asks for in the task's worktree; `read-only` refuses every command and
    /// change. Before an approved plan, changes are refused anyway.
    #[arg(
        long,
        env = "TEAMMATE_AGENT_POLICY",
        value_enum,
        default_value = "workspace"
    )]
    agent_policy: AgentPolicy,
    /// What the teammate's commands may touch: its `bash` commands, its agent's
    /// whole process and its tasks' checks run under bubblewrap. `workspace-write`
    /// writes the task's worktree (or the workdir) and a private /tmp and reads
    /// the rest of the system, but not boardd's state, its socket or the key
    /// files; `read-only` writes only /tmp; `off` runs them with your full rights.
    #[arg(
        long,
        env = "TEAMMATE_SANDBOX",
        value_enum,
        default_value = "workspace-write"
    )]
    sandbox: SandboxMode,
    /// Cut the sandbox's network: commands reach no host, not even localhost.
    #[arg(long, env = "TEAMMATE_NO_NETWORK")]
    no_network: bool,
}

impl Args {
    /// Parses the command line, exiting with clap's message on a mistake, and
    /// notes whether `--model` was on it (rather than from $TEAMMATE_MODEL).
    fn parse_args() -> (Args, bool) {
        Args::try_parse_args(std::env::args_os()).unwrap_or_else(|e| e.exit())
    }

    /// [`Args::parse_args`] for a given command line.
    fn try_parse_args<I, T>(argv: I) -> Result<(Args, bool), clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        let matches = Args::command().try_get_matches_from(argv)?;
        let mut args = Args::from_arg_matches(&matches)?;
        args.budget_from_env =
            matches.value_source("context_budget") == Some(ValueSource::EnvVariable);
        let model_given = matches.value_source("model") == Some(ValueSource::CommandLine);
        Ok((args, model_given))
    }

    /// The configuration. `model_given`: `--model` was on the command line,
    /// which an agent runtime refuses (it would not reach the agent);
    /// $TEAMMATE_MODEL is a default for the native loop, and an agent leaves it.
    fn into_config(self, model_given: bool) -> anyhow::Result<Config> {
        let workdir = match self.workdir {
            Some(w) => w,
            None => std::env::current_dir().context("cannot read the current directory")?,
        };
        if model_given && self.runtime != RuntimeKind::Native {
            anyhow::bail!(
                "--model is the native loop's model and does not reach the {} agent; \
                 name the agent's with --agent-model MODEL, or leave it to the agent's settings",
                self.runtime
            );
        }
        if !(self.poll_interval > 0.0 && self.poll_interval.is_finite()) {
            anyhow::bail!("--poll-interval must be a positive number of seconds");
        }
        let budget = self.context_budget;
        let context_budget =
            check_context_budget(budget).map_err(|why| match self.budget_from_env {
                true => anyhow::anyhow!("TEAMMATE_CONTEXT_BUDGET={budget}: {why}"),
                false => anyhow::anyhow!("--context-budget {budget}: {why}"),
            })?;
        let state_dir = self.state_dir.unwrap_or_else(paths::default_state_dir);
        Ok(Config {
            name: self.name,
            role: self.role,
            team: self.team,
            socket: self.socket.unwrap_or_else(paths::default_socket_path),
            // Absolute: the sandbox hides it by path (see `sandbox`).
            token_file: (self.connect.as_ref())
                .and(self.token_file)
                .map(|p| std::path::absolute(&p).unwrap_or(p)),
            connect: self.connect.map(|e| e.with_ca_file(self.ca_file)),
            // Read in `main`, once the settings are known to be good.
            lead_key: None,
            state_dir,
            workdir,
            provider: self.provider.into_config()?,
            idle_timeout: (self.idle_timeout > 0)
                .then(|| Duration::from_secs(self.idle_timeout.min(10 * 365 * 86_400))),
            // A day is as good as forever for a safety net, and keeps the arithmetic
            // on durations far from overflow.
            poll_interval: Duration::from_secs_f64(self.poll_interval.min(86_400.0)),
            max_rounds: self.max_rounds.max(1),
            context_budget,
            carry_context: self.carry_context,
            shell_timeout: Duration::from_secs(self.shell_timeout.clamp(1, 600)),
            reconnect_timeout: Duration::from_secs(self.reconnect_timeout),
            require_plan: self.require_plan,
            sandbox: Sandbox {
                mode: self.sandbox,
                network: !self.no_network,
            },
            runtime: runtime_config(
                self.runtime,
                self.agent_cmd,
                agent_args_or_env(self.agent_args)?,
                self.agent_model,
                self.agent_policy,
            )?,
        })
    }
}

/// The `--agent-arg`s, or those of $TEAMMATE_AGENT_ARGS when none were given (as
/// for every flag, the command line wins over the environment).
fn agent_args_or_env(given: Vec<String>) -> anyhow::Result<Vec<String>> {
    if !given.is_empty() {
        return Ok(given);
    }
    match std::env::var(AGENT_ARGS_ENV) {
        Ok(value) => parse_agent_args(&value).map_err(anyhow::Error::msg),
        Err(std::env::VarError::NotPresent) => Ok(Vec::new()),
        Err(std::env::VarError::NotUnicode(_)) => {
            anyhow::bail!("{AGENT_ARGS_ENV} is not valid UTF-8")
        }
    }
}

/// The runtime settings, checked: an agent's flags make sense only with an agent
/// runtime, an ACP agent has no default program and no standard way to choose
/// a model.
fn runtime_config(
    kind: RuntimeKind,
    agent_cmd: Option<PathBuf>,
    agent_args: Vec<String>,
    agent_model: Option<String>,
    policy: AgentPolicy,
) -> anyhow::Result<RuntimeConfig> {
    // `--agent-model ""` (or a blank variable) means the agent's default.
    let agent_model = agent_model
        .map(|m| m.trim().to_string())
        .filter(|m| !m.is_empty());
    if kind == RuntimeKind::Native
        && (agent_cmd.is_some() || !agent_args.is_empty() || agent_model.is_some())
    {
        anyhow::bail!(
            "--agent-cmd, --agent-arg and --agent-model are for an agent runtime; add \
             --runtime claude, codex or acp (the native loop's model is --model)"
        );
    }
    if kind == RuntimeKind::Acp && agent_model.is_some() {
        anyhow::bail!(
            "--agent-model is for claude and codex: ACP has no standard way to choose a \
             model; give the agent's own flag, e.g. `--agent-arg=-m --agent-arg=gemini-2.5-flash`"
        );
    }
    if kind == RuntimeKind::Acp && agent_cmd.is_none() {
        anyhow::bail!(
            "--runtime acp needs the agent's program: --agent-cmd CMD, e.g. \
             `--agent-cmd gemini --agent-arg=--acp`"
        );
    }
    // The agent reads its key from its environment; teammated's own is scrubbed
    // of keys below, so the agent's is handed over explicitly.
    let key_var = match kind {
        RuntimeKind::Claude => Some("ANTHROPIC_API_KEY"),
        RuntimeKind::Codex => Some("OPENAI_API_KEY"),
        RuntimeKind::Native | RuntimeKind::Acp => None,
    };
    let agent_env = key_var
        .and_then(|var| lookup_secret(var, &keys_file()).map(|v| (var.to_string(), v)))
        .into_iter()
        .collect();
    Ok(RuntimeConfig {
        kind,
        agent_cmd,
        agent_args,
        agent_model,
        policy,
        agent_env,
    })
}

#[allow(
    clippy::print_stderr,
    reason = "the error that stops teammated, its last word for the person who started it"
)]
fn main() {
    // Before anything else, and before any thread exists: this binary is also the
    // guard of its own tool commands (see `tools::guard`).
    if let Some(code) = teammated::tools::guard::serve_if_asked() {
        std::process::exit(code);
    }
    if let Err(e) = real_main() {
        // One line a person can act on; the details went to the log already. The
        // lead's person typed `teamctl lead`, and reads that name.
        let who = if lead_mode() { "lead" } else { "teammated" };
        eprintln!("{who}: {e:#}");
        std::process::exit(1);
    }
}

fn real_main() -> anyhow::Result<()> {
    let man = teamboard_protocol::man::generate_if_asked(std::env::args_os(), || {
        // `teammated lead` is a command line of its own rather than a clap
        // subcommand (see `lead_mode`), so its page is asked for by name.
        let lead = lead_args::LeadArgs::command().display_name("teammated-lead");
        vec![Args::command(), lead]
    });
    if let Some(done) = man {
        return done.context("cannot write the man pages");
    }
    if lead_mode() {
        return lead_main();
    }
    let (args, model_given) = Args::parse_args();
    init_tracing("info");
    let mut config = args.into_config(model_given)?;
    config.lead_key = Some(match (&config.connect, config.token_file.clone()) {
        // Over the network, the token only: a lead.key here belongs to
        // another boardd, if to any.
        (Some(endpoint), Some(token_file)) => {
            let remote = teamboard_protocol::Remote {
                endpoint: endpoint.clone(),
                token_file,
            };
            remote.token()?
        }
        _ => teamboard_protocol::lead_key::lead_key(Some(&config.state_dir))?,
    });
    // The keys now live in the config. Take them out of the environment so that
    // nothing the model runs with `bash` inherits them (`env` would show them to the
    // model, the transcript and the provider).
    let fallback_keys: Vec<String> = config
        .provider
        .account
        .chain_key_vars()
        .map(str::to_string)
        .collect();
    // The lead's credential file is named too, and the token's: nothing the
    // model runs learns where the key that opens the board lies (the sandbox
    // hides both).
    for var in SECRET_VARS
        .iter()
        .copied()
        .chain(fallback_keys.iter().map(String::as_str))
        .chain([
            teamboard_protocol::lead_key::LEAD_KEY_ENV,
            "TEAMBOARD_TOKEN_FILE",
        ])
    {
        // SAFETY: no other thread exists yet (the async runtime starts below), so
        // nothing reads the environment while it changes.
        unsafe { std::env::remove_var(var) };
    }
    tracing::debug!(provider = ?config.provider, "configuration");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async {
        let cancel = CancellationToken::new();
        tokio::spawn(stop_on_signal(cancel.clone()));
        let exit = teammated::run(config, cancel).await?;
        tracing::info!(%exit, "teammate stopped");
        Ok(())
    })
}

/// Whether this is `teammated lead ...`.
fn lead_mode() -> bool {
    std::env::args_os().nth(1).is_some_and(|a| a == "lead")
}

/// `teammated lead ...`: the lead in this terminal, until the person leaves or,
/// with `--goal`, the board is done. Exits 0 only when all went well.
#[allow(
    clippy::print_stdout,
    reason = "the lead's outcome is its last line to the person, on stdout"
)]
fn lead_main() -> anyhow::Result<()> {
    let args = lead_args::LeadArgs::parse_from(
        std::iter::once(std::ffi::OsString::from("teammated lead"))
            .chain(std::env::args_os().skip(2)),
    );
    // The person reads this terminal: only warnings and errors go to it.
    init_tracing("warn");
    // The API keys stay in the environment: the lead runs no commands, and the
    // teammates it spawns (through teamctl) need them.
    let config = args.into_config()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let outcome = runtime.block_on(async {
        let cancel = CancellationToken::new();
        tokio::spawn(stop_on_signal(cancel.clone()));
        let prompt = std::io::IsTerminal::is_terminal(&std::io::stdin());
        let input = tokio::io::BufReader::new(tokio::io::stdin());
        teammated::lead::run(config, input, prompt, cancel).await
    });
    // tokio reads stdin on a blocking thread, which a plain drop of the runtime
    // would wait for: until the person presses Enter once more.
    runtime.shutdown_background();
    let outcome = outcome?;
    use teammated::lead::Outcome;
    match outcome {
        Outcome::Quit => Ok(()),
        Outcome::Done { completed, total } if completed == total => {
            println!("all {total} task(s) completed");
            Ok(())
        }
        Outcome::Done { completed, total } => {
            println!("{completed} of {total} task(s) completed");
            std::process::exit(1)
        }
        Outcome::NotStarted(why) => anyhow::bail!("not started: {why}"),
        Outcome::GaveUp(why) => anyhow::bail!("gave up: {why}"),
        Outcome::Interrupted => std::process::exit(130),
    }
}

fn init_tracing(default: &str) {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("TEAMMATED_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default)),
        )
        .with_writer(std::io::stderr)
        // Colour only for a person at a terminal: the journal and redirected logs
        // would keep the escape codes as text.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
}

/// SIGTERM (systemctl stop) and SIGINT (Ctrl-C) both mean: give the task back and
/// leave cleanly.
async fn stop_on_signal(cancel: CancellationToken) {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        tracing::warn!("cannot install signal handlers");
        return;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
    cancel.cancel();
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The runtime settings of a command line, or the refusal.
    fn runtime_of(argv: &[&str]) -> Result<RuntimeConfig, String> {
        let argv = [
            "teammated",
            "--name",
            "ann",
            "--role",
            "dev",
            "--workdir",
            "/",
        ]
        .iter()
        .chain(argv);
        let (args, model_given) = Args::try_parse_args(argv).map_err(|e| e.to_string())?;
        args.into_config(model_given)
            .map(|c| c.runtime)
            .map_err(|e| format!("{e:#}"))
    }

    #[test]
    fn the_agent_model_is_the_agents_and_the_native_model_stays_with_the_native_loop() {
        let rt = runtime_of(&["--runtime", "claude", "--agent-model", "sonnet"]).expect("ok");
        assert_eq!(rt.agent_model.as_deref(), Some("sonnet"));
        let rt = runtime_of(&["--runtime", "codex"]).expect("ok");
        assert_eq!(rt.agent_model, None, "the agent's own default");
        let rt = runtime_of(&["--runtime", "codex", "--agent-model", " "]).expect("ok");
        assert_eq!(rt.agent_model, None, "blank is the default");
        // The native loop's model, named for an agent, would not reach it.
        let e = runtime_of(&["--runtime", "claude", "--model", "gpt-4o"]).expect_err("refused");
        assert!(
            e.starts_with("--model is the native loop's model and does not reach the claude agent"),
            "{e}"
        );
        assert!(runtime_of(&["--model", "gpt-4o"]).is_ok(), "native");
        let e = runtime_of(&["--agent-model", "sonnet"]).expect_err("native");
        assert!(e.contains("are for an agent runtime"), "{e}");
        let e = runtime_of(&[
            "--runtime",
            "acp",
            "--agent-cmd",
            "gemini",
            "--agent-model",
            "x",
        ])
        .expect_err("acp");
        assert!(
            e.contains("ACP has no standard way to choose a model"),
            "{e}"
        );
    }
}
