//! A teammate's settings, as the command line, the environment and the keys file
//! give them.

use crate::backoff::RetryPolicy;
use std::path::{Path, PathBuf};
use std::time::Duration;
pub use teamboard_protocol::{MaxTokensField, ProviderKind};

/// How to reach the model. `Debug` shows the key as `<redacted>`.
#[derive(Clone)]
pub struct ProviderConfig {
    pub kind: ProviderKind,
    /// The model name; each provider has a default.
    pub model: Option<String>,
    /// The API's base URL; each provider has a default.
    pub base_url: Option<String>,
    /// Never logged or printed.
    pub api_key: Option<String>,
    /// Output tokens per call.
    pub max_tokens: u32,
    /// Where an OpenAI-compatible request puts `max_tokens`; `None` picks by the
    /// base URL (see `llm::openai`). Other providers ignore it.
    pub max_tokens_field: Option<MaxTokensField>,
    /// How long one HTTP request may take before it counts as a timeout.
    pub request_timeout: Duration,
    pub retry: RetryPolicy,
    /// The account its calls go to, and the fallbacks (see `accounts`).
    pub account: crate::accounts::AccountConfig,
}

impl std::fmt::Debug for ProviderConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProviderConfig")
            .field("kind", &self.kind)
            .field("model", &self.model)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("max_tokens", &self.max_tokens)
            .field("max_tokens_field", &self.max_tokens_field)
            .field("request_timeout", &self.request_timeout)
            .field("retry", &self.retry)
            .field("account", &self.account)
            .finish()
    }
}

/// Everything a teammate needs to run.
#[derive(Debug, Clone)]
pub struct Config {
    pub name: String,
    pub role: String,
    pub team: String,
    pub socket: PathBuf,
    /// boardd over the network (`--connect`), in place of `socket`.
    pub connect: Option<teamboard_protocol::Endpoint>,
    /// The token's file with `connect`: hidden from the sandbox as `lead.key` is.
    pub token_file: Option<PathBuf>,
    pub state_dir: PathBuf,
    /// The credential that registers the member, read at start and taken by
    /// the session: the lead's, after which the member's own credential (see
    /// `session`) vouches for it; or, with `connect`, the member's token,
    /// which it keeps presenting.
    pub lead_key: Option<teamboard_protocol::Credential>,
    /// The directory the tools work in; file tools cannot leave it.
    pub workdir: PathBuf,
    pub provider: ProviderConfig,
    /// Exit after this long idle with nothing to do. `None` never exits.
    pub idle_timeout: Option<Duration>,
    /// The safety net: how long one wait on boardd lasts before it is renewed. boardd
    /// pushes work the moment it exists, so this only matters if a wake-up were lost.
    pub poll_interval: Duration,
    /// Tool rounds per WORK phase.
    pub max_rounds: u32,
    /// Estimated tokens of context before the teammate compacts.
    pub context_budget: u64,
    /// Keep the conversation from one task to the next instead of starting each
    /// task afresh.
    pub carry_context: bool,
    /// How long a `bash` call may run when the model names no timeout.
    pub shell_timeout: Duration,
    /// How long boardd may stay unreachable (at start or after losing the
    /// connection) before the teammate exits with an error.
    pub reconnect_timeout: Duration,
    /// Every task this teammate claims needs an approved plan before it changes
    /// anything.
    pub require_plan: bool,
    /// What the teammate's commands may touch (`--sandbox`, `--no-network`).
    pub sandbox: teamboard_protocol::Sandbox,
    /// What does the WORK phase: the native loop, or an agent (`docs/runtimes.md`).
    pub runtime: RuntimeConfig,
}

pub use teamboard_protocol::launch::{MIN_CONTEXT_BUDGET, check_context_budget};

/// The runtime and how to start its agent.
#[derive(Clone, Default)]
pub struct RuntimeConfig {
    pub kind: crate::runtime::RuntimeKind,
    /// `--agent-cmd`: the agent's program; the runtime's default when `None`.
    pub agent_cmd: Option<PathBuf>,
    /// `--agent-arg`s, passed after teammated's own arguments.
    pub agent_args: Vec<String>,
    /// `--agent-model`: the agent's model; `None` leaves it to the agent's own
    /// settings. Never the native loop's `--model` (docs/runtimes.md).
    pub agent_model: Option<String>,
    pub policy: crate::runtime::AgentPolicy,
    /// Environment only the agent gets: its API key, taken out of teammated's
    /// own environment like the native provider's. Never logged.
    pub agent_env: Vec<(String, String)>,
}

impl std::fmt::Debug for RuntimeConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RuntimeConfig")
            .field("kind", &self.kind)
            .field("agent_cmd", &self.agent_cmd)
            .field("agent_args", &self.agent_args)
            .field("agent_model", &self.agent_model)
            .field("policy", &self.policy)
            .field(
                "agent_env",
                &self
                    .agent_env
                    .iter()
                    .map(|(k, _)| format!("{k}=<redacted>"))
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

/// The variable that carries the `--agent-arg`s of a teammate started without a
/// command line of its own (the systemd unit, whose settings `teamctl spawn
/// --systemd` writes): a JSON array of strings, so that any argument survives.
pub const AGENT_ARGS_ENV: &str = "TEAMMATE_AGENT_ARGS";

/// Decodes [`AGENT_ARGS_ENV`]'s value; blank means none.
pub fn parse_agent_args(value: &str) -> Result<Vec<String>, String> {
    if value.trim().is_empty() {
        return Ok(Vec::new());
    }
    serde_json::from_str(value).map_err(|e| {
        format!(
            "{AGENT_ARGS_ENV} must be a JSON array of strings, e.g. [\"--model\",\"sonnet\"]: {e}"
        )
    })
}

/// A configured text with surrounding blanks removed, or `None` when nothing is left:
/// an empty `--model ""` or `OPENAI_BASE_URL=` means "the default".
pub(crate) fn setting(value: Option<&str>) -> Option<&str> {
    value.map(str::trim).filter(|v| !v.is_empty())
}

/// The file that may hold API keys, as `NAME=value` lines:
/// `$XDG_CONFIG_HOME/teamboard/keys.env` (usually `~/.config/teamboard/keys.env`).
pub fn keys_file() -> PathBuf {
    teamboard_protocol::paths::config_dir()
        .unwrap_or_else(|| PathBuf::from("teamboard"))
        .join("keys.env")
}

/// Looks `var` up in the environment first, then in the keys file.
pub fn lookup_secret(var: &str, file: &Path) -> Option<String> {
    if let Some(v) = std::env::var(var).ok().filter(|v| !v.trim().is_empty()) {
        return Some(v.trim().to_string());
    }
    let text = std::fs::read_to_string(file).ok()?;
    parse_env_file(&text)
        .into_iter()
        .find(|(k, _)| k == var)
        .map(|(_, v)| v)
        .filter(|v| !v.is_empty())
}

/// Parses `NAME=value` lines. Blank lines and `#` comments are skipped, an optional
/// `export ` prefix is allowed, and one pair of surrounding quotes is removed.
pub fn parse_env_file(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line.strip_prefix("export ").unwrap_or(line);
        let Some((k, v)) = line.split_once('=') else {
            continue;
        };
        let v = v.trim();
        let v = v
            .strip_prefix('"')
            .and_then(|s| s.strip_suffix('"'))
            .or_else(|| v.strip_prefix('\'').and_then(|s| s.strip_suffix('\'')))
            .unwrap_or(v);
        out.push((k.trim().to_string(), v.to_string()));
    }
    out
}

#[cfg(test)]
impl Config {
    /// alice, a `dev` of team `default`, against an in-process boardd, with the
    /// scripted provider and the native runtime: what in-crate tests start from.
    pub(crate) fn for_tests(daemon: &teamboard_testkit::InProc) -> Config {
        Config {
            socket: daemon.socket.clone(),
            connect: None,
            token_file: None,
            state_dir: daemon.state_dir.clone(),
            lead_key: Some(teamboard_testkit::lead_key(&daemon.socket)),
            workdir: daemon.dir().to_path_buf(),
            ..Config::for_tests_in(&daemon.state_dir)
        }
    }

    /// [`Config::for_tests`] with its socket, state and work directory in
    /// `dir`, for tests that start no boardd.
    pub(crate) fn for_tests_in(dir: &Path) -> Config {
        Config {
            name: "alice".into(),
            role: "dev".into(),
            team: "default".into(),
            socket: dir.join("boardd.sock"),
            connect: None,
            token_file: None,
            state_dir: dir.to_path_buf(),
            lead_key: None,
            workdir: dir.to_path_buf(),
            provider: ProviderConfig {
                kind: ProviderKind::Scripted,
                model: None,
                base_url: None,
                api_key: None,
                max_tokens: 1000,
                max_tokens_field: None,
                request_timeout: Duration::from_secs(300),
                retry: RetryPolicy::default(),
                account: Default::default(),
            },
            idle_timeout: None,
            poll_interval: Duration::from_secs(30),
            max_rounds: 50,
            context_budget: 100_000,
            carry_context: false,
            shell_timeout: Duration::from_secs(120),
            reconnect_timeout: Duration::from_secs(30),
            require_plan: false,
            sandbox: Default::default(),
            runtime: Default::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_args_come_from_a_json_array() {
        assert_eq!(
            parse_agent_args(r#"["--allowedTools","Bash(git *)","a \"b\""]"#),
            Ok(vec![
                "--allowedTools".to_string(),
                "Bash(git *)".to_string(),
                "a \"b\"".to_string()
            ])
        );
        assert_eq!(parse_agent_args("  "), Ok(vec![]));
        for bad in ["--acp", "[1]", r#"{"a":"b"}"#] {
            let e = parse_agent_args(bad).expect_err(bad);
            assert!(
                e.starts_with("TEAMMATE_AGENT_ARGS must be a JSON array"),
                "{e}"
            );
        }
    }

    #[test]
    fn debug_never_shows_the_key() {
        let cfg = ProviderConfig {
            kind: ProviderKind::Anthropic,
            model: None,
            base_url: None,
            api_key: Some("sk-very-secret".into()),
            max_tokens: 1,
            max_tokens_field: None,
            request_timeout: Duration::from_secs(1),
            retry: RetryPolicy::default(),
            account: Default::default(),
        };
        let text = format!("{cfg:?}");
        assert!(
            !text.contains("sk-very-secret") && text.contains("<redacted>"),
            "{text}"
        );
    }

    #[test]
    fn env_file_lines_are_parsed_like_a_shell_would() {
        let text = "# keys\nexport ANTHROPIC_API_KEY=\"sk-ant\"\n\nOPENAI_API_KEY='sk-o'\nBAD LINE\nX = y \n";
        let pairs = parse_env_file(text);
        assert_eq!(
            pairs,
            vec![
                ("ANTHROPIC_API_KEY".into(), "sk-ant".into()),
                ("OPENAI_API_KEY".into(), "sk-o".into()),
                ("X".into(), "y".into()),
            ]
        );
    }

    #[test]
    fn secrets_come_from_the_file_when_the_environment_has_none() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("keys.env");
        std::fs::write(&file, "TEAMMATED_TEST_ONLY_KEY=from-file\n").unwrap();
        assert_eq!(
            lookup_secret("TEAMMATED_TEST_ONLY_KEY", &file).as_deref(),
            Some("from-file")
        );
        assert_eq!(lookup_secret("TEAMMATED_TEST_NO_SUCH_KEY", &file), None);
    }
}
