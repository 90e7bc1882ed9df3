//! `teammated`: one teammate process. See `teammated --help`.
//!
//! This file only turns flags and environment into a [`Config`] and runs the
//! library; everything else lives in the `teammated` library so tests can drive it.

use anyhow::Context as _;
use clap::Parser;
use std::path::PathBuf;
use std::time::Duration;
use teamboard_protocol::{DEFAULT_TEAM, paths};
use teammated::backoff::RetryPolicy;
use teammated::config::{
    Config, MaxTokensField, ProviderConfig, ProviderKind, keys_file, lookup_secret,
};
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

Usually started by `teamctl spawn NAME --role ROLE` or `systemctl --user start teammated@NAME`.
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
    /// Where transcripts go [default: ~/.local/state/teamboard]
    #[arg(long, env = "TEAMBOARD_STATE_DIR")]
    state_dir: Option<PathBuf>,
    /// The model provider. `scripted` is an offline stand-in that runs the task's
    /// ```sh blocks; it needs no key.
    #[arg(
        long,
        env = "TEAMMATE_PROVIDER",
        value_enum,
        default_value = "scripted"
    )]
    provider: ProviderKind,
    /// The model [default: claude-sonnet-4-5 for anthropic, gpt-4o-mini for openai]
    #[arg(long, env = "TEAMMATE_MODEL")]
    model: Option<String>,
    /// The API's base URL, e.g. http://localhost:11434/v1 for ollama
    /// [env: ANTHROPIC_BASE_URL / OPENAI_BASE_URL]
    #[arg(long, env = "TEAMMATE_BASE_URL")]
    base_url: Option<String>,
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
    /// Estimated context tokens before older turns are summarised.
    #[arg(long, env = "TEAMMATE_CONTEXT_BUDGET", default_value_t = 100_000)]
    context_budget: u64,
    /// Keep the conversation from one task to the next. By default each task
    /// starts afresh: the model sees who it is, the task, and the note the
    /// previous owner left when it gave the task back; earlier conversations stay
    /// in the transcript.
    #[arg(long, env = "TEAMMATE_CARRY_CONTEXT")]
    carry_context: bool,
    /// Output tokens per model call.
    #[arg(long, env = "TEAMMATE_MAX_TOKENS", default_value_t = 4096)]
    max_tokens: u32,
    /// openai only: the request field that carries --max-tokens. OpenAI's own API
    /// wants max_completion_tokens (its reasoning models refuse max_tokens); ollama,
    /// llama.cpp, vLLM and LM Studio know max_tokens, and ignore a field they do not
    /// know, which would leave the output unlimited
    /// [default: max_completion_tokens on api.openai.com, max_tokens elsewhere]
    #[arg(
        long,
        env = "TEAMMATE_MAX_TOKENS_FIELD",
        value_enum,
        value_name = "FIELD"
    )]
    max_tokens_field: Option<MaxTokensField>,
    /// anthropic only: send no `cache_control` breakpoints, so nothing is cached.
    /// For measuring what prompt caching saves (`cargo xtask tokens`), or for a
    /// proxy that refuses the field.
    #[arg(long, env = "TEAMMATE_NO_PROMPT_CACHE", hide = true)]
    no_prompt_cache: bool,
    /// Default timeout of one `bash` call, in seconds.
    #[arg(long, env = "TEAMMATE_SHELL_TIMEOUT", default_value_t = 120)]
    shell_timeout: u64,
    /// Give up (exit 1) when boardd stays unreachable this many seconds, at start or
    /// after losing the connection. boardd keeps a claim for a restarting teammate
    /// only for its restart grace (30 s by default), so waiting longer only matters
    /// for picking up new work.
    #[arg(long, env = "TEAMMATE_RECONNECT_TIMEOUT", default_value_t = 300)]
    reconnect_timeout: u64,
    /// Timeout of one HTTP request to the model, in seconds.
    #[arg(long, env = "TEAMMATE_REQUEST_TIMEOUT", default_value_t = 300)]
    request_timeout: u64,
    /// Attempts per model call on 429, 5xx, 529 and timeouts.
    #[arg(long, env = "TEAMMATE_LLM_ATTEMPTS", default_value_t = 6)]
    llm_attempts: u32,
    /// The first retry's backoff in milliseconds; it doubles, with jitter.
    #[arg(long, env = "TEAMMATE_RETRY_BASE_MS", default_value_t = 500)]
    retry_base_ms: u64,
    /// Every task needs a plan the lead approves before bash, write_file and
    /// edit_file open (tasks created with --require-plan need one anyway).
    #[arg(long, env = "TEAMMATE_REQUIRE_PLAN")]
    require_plan: bool,
}

impl Args {
    fn into_config(self) -> anyhow::Result<Config> {
        let keys = keys_file();
        let (key_var, url_var) = match self.provider {
            ProviderKind::Anthropic => (Some("ANTHROPIC_API_KEY"), Some("ANTHROPIC_BASE_URL")),
            ProviderKind::Openai => (Some("OPENAI_API_KEY"), Some("OPENAI_BASE_URL")),
            ProviderKind::Scripted => (None, None),
        };
        let api_key = key_var.and_then(|v| lookup_secret(v, &keys));
        let base_url = self
            .base_url
            .or_else(|| url_var.and_then(|v| std::env::var(v).ok()))
            .filter(|u| !u.is_empty());
        let workdir = match self.workdir {
            Some(w) => w,
            None => std::env::current_dir().context("cannot read the current directory")?,
        };
        if !(self.poll_interval > 0.0 && self.poll_interval.is_finite()) {
            anyhow::bail!("--poll-interval must be a positive number of seconds");
        }
        Ok(Config {
            name: self.name,
            role: self.role,
            team: self.team,
            socket: self.socket.unwrap_or_else(paths::default_socket_path),
            state_dir: self.state_dir.unwrap_or_else(paths::default_state_dir),
            workdir,
            provider: ProviderConfig {
                kind: self.provider,
                model: self.model,
                base_url,
                api_key,
                max_tokens: self.max_tokens,
                max_tokens_field: self.max_tokens_field,
                prompt_cache: !self.no_prompt_cache,
                request_timeout: Duration::from_secs(self.request_timeout.max(1)),
                retry: RetryPolicy {
                    max_attempts: self.llm_attempts.max(1),
                    base: Duration::from_millis(self.retry_base_ms),
                    ..RetryPolicy::default()
                },
            },
            idle_timeout: (self.idle_timeout > 0)
                .then(|| Duration::from_secs(self.idle_timeout.min(10 * 365 * 86_400))),
            // A day is as good as forever for a safety net, and keeps the arithmetic
            // on durations far from overflow.
            poll_interval: Duration::from_secs_f64(self.poll_interval.min(86_400.0)),
            max_rounds: self.max_rounds.max(1),
            context_budget: self.context_budget.max(1000),
            carry_context: self.carry_context,
            shell_timeout: Duration::from_secs(self.shell_timeout.clamp(1, 600)),
            reconnect_timeout: Duration::from_secs(self.reconnect_timeout),
            require_plan: self.require_plan,
        })
    }
}

/// Environment variables that hold API keys.
const SECRET_VARS: [&str; 2] = ["ANTHROPIC_API_KEY", "OPENAI_API_KEY"];

fn main() {
    // Before anything else, and before any thread exists: this binary is also the
    // guard of its own tool commands (see `tools::guard`).
    if let Some(code) = teammated::tools::guard::serve_if_asked() {
        std::process::exit(code);
    }
    if let Err(e) = real_main() {
        // One line a person can act on; the details went to the log already.
        eprintln!("teammated: {e:#}");
        std::process::exit(1);
    }
}

fn real_main() -> anyhow::Result<()> {
    let args = Args::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("TEAMMATED_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        // Colour only for a person at a terminal: the journal and redirected logs
        // would keep the escape codes as text.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let config = args.into_config()?;
    // The keys now live in the config. Take them out of the environment so that
    // nothing the model runs with `bash` inherits them (`env` would show them to the
    // model, the transcript and the provider). Safe: no other thread exists yet.
    for var in SECRET_VARS {
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
