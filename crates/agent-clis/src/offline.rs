//! Each CLI set up to run offline against a local mock server
//! (`teamboard-mock-llm`), as a teammate's runtime: the files its home needs,
//! the variables it reads, and the `teammated` flags that start it.
//!
//! The runtime tests and `cargo xtask bench-runtimes` both start agents this
//! way, so what the bench measures is what the tests check. What each setting
//! is for is in the surveys (`docs/design/runtime-claude.md` §2,
//! `docs/design/runtime-codex-acp.md` §3.1 and §4.1). The kill switches that
//! teammated sets itself (Claude Code's telemetry variables, Codex's
//! `--disable` flags) are not repeated here.
//!
//! Traps:
//! - Codex refuses to put its helper binaries under `/tmp` (it warns and runs
//!   without its PATH aliases): its home must live elsewhere, and
//!   [`Cli::offline`] refuses a home there.
//! - The home must stay the same across restarts of a teammate, or its
//!   sessions cannot be resumed: it holds each CLI's session store.

use crate::Cli;
use std::io;
use std::path::{Path, PathBuf};

/// The model `gemini --acp` is told to use: ACP has no way to choose one, so
/// it goes on the agent's own command line.
pub const GEMINI_MODEL: &str = "gemini-2.5-flash";

/// Whether Codex counts `dir` as under its temporary directory.
fn under_temp(dir: &Path) -> bool {
    dir.starts_with("/tmp") || dir.starts_with(std::env::temp_dir())
}

/// A directory Codex homes can go under: `preferred` (a build directory, say)
/// unless it is under the temporary directory, as a checkout in `/tmp` makes
/// it; else `/var/tmp`, else `~/.cache/teamboard`. `preferred` when none will
/// do, so that [`Cli::offline`] says why.
pub fn codex_home_parent(preferred: &Path) -> PathBuf {
    let cache = std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache").join("teamboard"));
    std::iter::once(preferred.to_path_buf())
        .chain([PathBuf::from("/var/tmp")])
        .chain(cache)
        .find(|d| !under_temp(d) && std::fs::create_dir_all(d).is_ok())
        .unwrap_or_else(|| preferred.to_path_buf())
}

/// How a teammate runs one CLI offline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OfflineAgent {
    /// `teammated`'s flags: `--runtime`, `--agent-cmd` and any `--agent-arg`.
    pub args: Vec<String>,
    /// The variables the agent needs, for teammated's environment (the agent
    /// inherits them).
    pub env: Vec<(String, String)>,
}

impl OfflineAgent {
    /// [`OfflineAgent::args`] as string slices.
    pub fn arg_strs(&self) -> Vec<&str> {
        self.args.iter().map(String::as_str).collect()
    }

    /// [`OfflineAgent::env`] as pairs of string slices.
    pub fn env_strs(&self) -> Vec<(&str, &str)> {
        self.env
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect()
    }
}

impl Cli {
    /// The `teammated --runtime` that drives this CLI.
    pub fn runtime(self) -> &'static str {
        match self {
            Cli::Claude => "claude",
            Cli::Codex => "codex",
            Cli::Gemini => "acp",
        }
    }

    /// Sets up `home` (created if missing) for `program` to run as a
    /// teammate's agent against the mock server at `mock_url`
    /// (`http://127.0.0.1:PORT`), and says how to start it.
    pub fn offline(self, program: &Path, home: &Path, mock_url: &str) -> io::Result<OfflineAgent> {
        let program = program.display().to_string();
        let home_s = home.display().to_string();
        let pair = |k: &str, v: &str| (k.to_string(), v.to_string());
        let mut args = vec![
            "--runtime".to_string(),
            self.runtime().to_string(),
            "--agent-cmd".to_string(),
            program,
        ];
        let env = match self {
            Cli::Claude => {
                let config = home.join(".claude");
                std::fs::create_dir_all(&config)?;
                vec![
                    pair("ANTHROPIC_BASE_URL", mock_url),
                    pair("ANTHROPIC_API_KEY", "mock-key"),
                    pair("CLAUDE_CONFIG_DIR", &config.display().to_string()),
                    pair("HOME", &home_s),
                ]
            }
            Cli::Codex => {
                if under_temp(home) {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidInput,
                        format!(
                            "CODEX_HOME {} is under the temporary directory, where Codex will \
                             not put its helper binaries; choose one elsewhere",
                            home.display()
                        ),
                    ));
                }
                std::fs::create_dir_all(home)?;
                std::fs::write(home.join("config.toml"), codex_config(mock_url))?;
                // A key renamed by a new version then fails loudly.
                args.push("--agent-arg=--strict-config".to_string());
                vec![
                    pair("CODEX_HOME", &home_s),
                    pair("MOCK_API_KEY", "mock-key"),
                ]
            }
            Cli::Gemini => {
                let settings = home.join(".gemini");
                std::fs::create_dir_all(&settings)?;
                std::fs::write(settings.join("settings.json"), GEMINI_SETTINGS)?;
                args.extend([
                    "--agent-arg=--acp".to_string(),
                    "--agent-arg=-m".to_string(),
                    format!("--agent-arg={GEMINI_MODEL}"),
                ]);
                vec![
                    pair("GEMINI_CLI_HOME", &home_s),
                    pair("GEMINI_API_KEY", "mock-key"),
                    pair("GOOGLE_GEMINI_BASE_URL", mock_url),
                    // Else it refuses to work in a folder it was not told to trust.
                    pair("GEMINI_CLI_TRUST_WORKSPACE", "true"),
                    // Else it starts itself again as a second Node process.
                    pair("GEMINI_CLI_NO_RELAUNCH", "true"),
                ]
            }
        };
        Ok(OfflineAgent { args, env })
    }
}

/// `$CODEX_HOME/config.toml` for Codex 0.171.0: a model provider speaking the
/// Responses API at the mock, no retries (a failure shows at once), and
/// nothing sent anywhere else.
fn codex_config(mock_url: &str) -> String {
    format!(
        r#"model = "mock-model"
model_provider = "mock"
check_for_update_on_startup = false

[model_providers.mock]
name = "mock"
base_url = "{mock_url}/v1"
env_key = "MOCK_API_KEY"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0
supports_websockets = false

[analytics]
enabled = false

[feedback]
enabled = false

[otel]
exporter = "none"
log_user_prompt = false
"#
    )
}

/// `$GEMINI_CLI_HOME/.gemini/settings.json`: API key auth (against the mock),
/// no usage statistics, no telemetry, no update checks, and no session
/// cleanup. Trap (Gemini CLI 0.61.0): a `session/load` in a later minute than
/// the session's start leaves a second file of the session with no messages,
/// and the cleanup at the next start deletes every file of a session that has
/// such a file, the one with the conversation too: a task could be resumed
/// once, never twice (`docs/design/runtime-acp.md`).
const GEMINI_SETTINGS: &str = r#"{
  "security": {"auth": {"selectedType": "gemini-api-key"}},
  "privacy": {"usageStatisticsEnabled": false},
  "telemetry": {"enabled": false},
  "general": {
    "enableAutoUpdate": false,
    "enableAutoUpdateNotification": false,
    "sessionRetention": {"enabled": false}
  }
}
"#;

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    /// A scratch directory under the workspace's target directory (not /tmp,
    /// for Codex), removed when dropped.
    struct Scratch(PathBuf);

    impl Scratch {
        fn new(name: &str) -> Scratch {
            // Codex's home is among them: never under the temporary directory.
            let dir = codex_home_parent(&crate::workspace_root().join("target"))
                .join(format!("agent-clis-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            Scratch(dir)
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn value<'a>(agent: &'a OfflineAgent, key: &str) -> Option<&'a str> {
        agent
            .env
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    #[test]
    fn each_cli_is_pointed_at_the_mock_and_started_by_its_runtime() {
        let url = "http://127.0.0.1:4242";
        let scratch = Scratch::new("offline");
        let program = Path::new("/opt/agent");
        for cli in Cli::ALL {
            let home = scratch.0.join(cli.name());
            let agent = cli.offline(program, &home, url).expect("set up");
            assert_eq!(
                agent.arg_strs()[..4],
                ["--runtime", cli.runtime(), "--agent-cmd", "/opt/agent"]
            );
            let urls: Vec<&str> = agent
                .env
                .iter()
                .filter(|(_, v)| v.starts_with("http"))
                .map(|(_, v)| v.as_str())
                .collect();
            match cli {
                Cli::Claude => {
                    assert_eq!(urls, [url]);
                    assert!(home.join(".claude").is_dir());
                    assert_eq!(value(&agent, "HOME"), Some(home.to_str().expect("utf-8")));
                }
                Cli::Codex => {
                    assert!(urls.is_empty(), "the URL is in config.toml");
                    let config =
                        std::fs::read_to_string(home.join("config.toml")).expect("config.toml");
                    assert!(config.contains(r#"base_url = "http://127.0.0.1:4242/v1""#));
                    assert!(agent.args.contains(&"--agent-arg=--strict-config".into()));
                }
                Cli::Gemini => {
                    assert_eq!(urls, [url]);
                    let settings = std::fs::read_to_string(home.join(".gemini/settings.json"))
                        .expect("settings.json");
                    assert!(settings.contains(r#""telemetry": {"enabled": false}"#));
                    assert!(settings.contains(r#""sessionRetention": {"enabled": false}"#));
                    assert_eq!(value(&agent, "GEMINI_CLI_NO_RELAUNCH"), Some("true"));
                    assert!(agent.args.contains(&"--agent-arg=--acp".into()));
                }
            }
        }
    }

    #[test]
    fn codex_homes_go_outside_the_temporary_directory() {
        let built = crate::workspace_root().join("target");
        let parent = codex_home_parent(&built);
        assert!(!under_temp(&parent), "{}", parent.display());
        if !under_temp(&built) {
            assert_eq!(parent, built);
        }
        assert!(!under_temp(&codex_home_parent(Path::new(
            "/tmp/checkout/target"
        ))));
    }

    #[test]
    fn a_codex_home_under_tmp_is_refused() {
        let err = Cli::Codex
            .offline(Path::new("codex"), Path::new("/tmp/codex-home"), "http://x")
            .expect_err("refused");
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        assert!(!Path::new("/tmp/codex-home/config.toml").exists());
    }
}
