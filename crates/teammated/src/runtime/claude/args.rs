//! How Claude Code is started: its command line, its environment, and the id
//! of a new session.
//!
//! What each flag and variable does, and why it is there, is in
//! `docs/design/runtime-claude.md` (§2, §5, §6, §8). The ones that matter:
//!
//! - `--replay-user-messages`: every user line is echoed when the CLI takes it,
//!   which is how a message is known to be delivered, and how the final answer
//!   is told from a turn with more to come (see `stream`).
//! - `--include-partial-messages`: each model call's raw `message_start` and
//!   `message_delta`, so that its usage is settled when the call ends rather
//!   than when the turn does (see `stream`).
//! - `--max-budget-usd` with what the dollar budgets leave, on an API key
//!   (`ANTHROPIC_API_KEY`): the CLI stops itself there too. Not on a login,
//!   whose calls cost nothing per call: the CLI would price them all the same.
//! - `--permission-prompt-tool stdio`: teammated answers the permission
//!   requests itself, by the policy and the plan gate, so the CLI needs no
//!   `--dangerously-skip-permissions` (which it refuses as root without
//!   `IS_SANDBOX=1`). `--permission-mode plan` while the gate is closed.
//! - `--session-id` for a new session (teammated chooses the id, so it is known
//!   before the CLI says it), `--resume` for every later start of the same task:
//!   a second `--session-id` with a used id fails.
//! - The kill switches: no telemetry, no auto-update, no error reports, no
//!   non-essential traffic. With them, the CLI connects to its API base URL
//!   only.
//! - `ENABLE_TOOL_SEARCH=false` with an MCP server: otherwise MCP tools are
//!   deferred behind a search tool, and a direct call of a board tool fails.
//! - No `CLAUDE_CONFIG_DIR`: the agent keeps the user's own configuration and
//!   login. Whoever wants a teammate's agent apart sets it in teammated's
//!   environment, which the agent inherits.

use crate::runtime::process::Launch;
use crate::runtime::{AgentSpec, Brief};
use serde_json::json;
use teamboard_protocol::spend::MicroUsd;

/// Variables that keep Claude Code from reaching anything but its API.
pub(super) const KILL_SWITCHES: &[&str] = &[
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC",
    "DISABLE_TELEMETRY",
    "DISABLE_AUTOUPDATER",
    "DISABLE_ERROR_REPORTING",
    "DISABLE_BUG_COMMAND",
    "DO_NOT_TRACK",
];

/// Variables with which the CLI calls the API on credentials other than a
/// claude.ai login or an API key: a gateway's token, Bedrock, Vertex, Foundry.
/// With the first three, 2.1.332 says `apiKeySource: none` as on a login.
const OTHER_CREDENTIALS: &[&str] = &[
    "ANTHROPIC_AUTH_TOKEN",
    "CLAUDE_CODE_USE_BEDROCK",
    "CLAUDE_CODE_USE_VERTEX",
    "CLAUDE_CODE_USE_FOUNDRY",
];

/// Whether `key` is set, and not empty, in the CLI's environment: the spec's
/// or teammated's own, which the CLI inherits.
fn in_env(spec: &AgentSpec, key: &str) -> bool {
    spec.env.iter().any(|(k, v)| k == key && !v.is_empty())
        || std::env::var_os(key).is_some_and(|v| !v.is_empty())
}

/// Whether the CLI has credentials other than a claude.ai login or an API
/// key: then `apiKeySource: none` is no subscription.
pub(super) fn other_credentials(spec: &AgentSpec) -> bool {
    OTHER_CREDENTIALS.iter().any(|k| in_env(spec, k))
}

/// `--max-budget-usd` for what is left, on an API key. Not for nothing left:
/// the CLI reads 0 as no cap.
fn spend_cap(left: Option<MicroUsd>, api_key: bool) -> Option<[String; 2]> {
    let left = left.filter(|l| api_key && l.0 > 0)?;
    let usd = format!("{}.{:06}", left.0 / 1_000_000, left.0 % 1_000_000);
    Some(["--max-budget-usd".to_string(), usd])
}

/// Which session a process opens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum SessionArg {
    /// A new session with this id (`--session-id`).
    New(String),
    /// The task's session (`--resume`).
    Resume(String),
}

/// The launch of one CLI process for `brief`. `plan_mode`: the plan gate is
/// closed.
pub(super) fn launch(
    spec: &AgentSpec,
    brief: &Brief,
    session: &SessionArg,
    plan_mode: bool,
) -> Launch {
    let mut args: Vec<String> = [
        "-p",
        "--input-format",
        "stream-json",
        "--output-format",
        "stream-json",
        "--verbose",
        "--replay-user-messages",
        "--include-partial-messages",
        "--max-turns",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.push(spec.max_turns.max(1).to_string());
    if let Some(model) = &spec.model {
        args.extend(["--model".to_string(), model.clone()]);
    }
    if let Some(cap) = spend_cap(brief.usd_cap, in_env(spec, "ANTHROPIC_API_KEY")) {
        args.extend(cap);
    }
    match session {
        SessionArg::New(id) => args.extend(["--session-id".to_string(), id.clone()]),
        SessionArg::Resume(id) => args.extend(["--resume".to_string(), id.clone()]),
    }
    if !brief.identity.trim().is_empty() {
        args.extend(["--append-system-prompt".to_string(), brief.identity.clone()]);
    }
    args.extend(
        [
            "--permission-prompt-tool",
            "stdio",
            "--permission-mode",
            if plan_mode { "plan" } else { "default" },
        ]
        .iter()
        .map(|s| s.to_string()),
    );
    let mut env: Vec<(String, String)> = KILL_SWITCHES
        .iter()
        .map(|k| (k.to_string(), "1".to_string()))
        .collect();
    if let Some(mcp) = &brief.mcp {
        let server_env: serde_json::Map<String, serde_json::Value> =
            mcp.env.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
        let servers = json!({
            "mcpServers": {
                "teamboard": {
                    "type": "stdio",
                    "command": mcp.command.display().to_string(),
                    "args": mcp.args,
                    "env": server_env,
                },
            },
        });
        args.extend([
            "--strict-mcp-config".to_string(),
            "--mcp-config".to_string(),
            servers.to_string(),
        ]);
        env.push(("ENABLE_TOOL_SEARCH".to_string(), "false".to_string()));
    }
    spec.launch(brief, args, env)
}

/// A fresh random UUID (version 4), for `--session-id`.
pub(super) fn new_session_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::{AgentPolicy, McpServer, RuntimeKind};
    use std::path::PathBuf;

    fn spec() -> AgentSpec {
        AgentSpec {
            kind: RuntimeKind::Claude,
            program: PathBuf::from("/opt/claude"),
            extra_args: vec!["--tools".into(), "Bash,Read".into()],
            max_turns: 30,
            model: Some("sonnet".into()),
            policy: AgentPolicy::Workspace,
            env: vec![("ANTHROPIC_API_KEY".into(), "k".into())],
            guard: Some(PathBuf::from("/proc/self/exe")),
            jail: None,
        }
    }

    fn brief(mcp: Option<McpServer>) -> Brief {
        Brief {
            task: 7,
            cwd: PathBuf::from("/work/tree"),
            resume: None,
            identity: "You are alice.".into(),
            prompt: "do it".into(),
            plan_first: false,
            mcp,
            usd_cap: None,
        }
    }

    /// The value after `flag`.
    fn after<'a>(args: &'a [String], flag: &str) -> Option<&'a str> {
        let i = args.iter().position(|a| a == flag)?;
        args.get(i + 1).map(String::as_str)
    }

    #[test]
    fn a_new_session_is_started_with_its_id_the_stream_flags_and_the_policy_host() {
        let l = launch(&spec(), &brief(None), &SessionArg::New("abc".into()), false);
        assert_eq!(l.program, PathBuf::from("/opt/claude"));
        assert_eq!(l.cwd, PathBuf::from("/work/tree"));
        assert_eq!(l.guard, Some(PathBuf::from("/proc/self/exe")));
        let a = &l.args;
        assert_eq!(a[0], "-p");
        assert_eq!(after(a, "--input-format"), Some("stream-json"));
        assert_eq!(after(a, "--output-format"), Some("stream-json"));
        assert!(a.contains(&"--verbose".to_string()));
        assert!(a.contains(&"--replay-user-messages".to_string()));
        assert!(a.contains(&"--include-partial-messages".to_string()));
        assert_eq!(after(a, "--max-turns"), Some("30"));
        assert_eq!(after(a, "--max-budget-usd"), None, "no dollar budget");
        assert_eq!(after(a, "--model"), Some("sonnet"));
        assert_eq!(after(a, "--session-id"), Some("abc"));
        assert_eq!(after(a, "--resume"), None);
        assert_eq!(after(a, "--append-system-prompt"), Some("You are alice."));
        assert_eq!(after(a, "--permission-prompt-tool"), Some("stdio"));
        assert_eq!(after(a, "--permission-mode"), Some("default"));
        assert!(!a.iter().any(|x| x.contains("mcp")), "{a:?}");
        // The user's own flags come last, so that they win.
        assert_eq!(&a[a.len() - 2..], ["--tools", "Bash,Read"]);
        for k in KILL_SWITCHES {
            assert!(l.env.contains(&(k.to_string(), "1".to_string())), "{k}");
        }
        assert!(
            l.env
                .contains(&("ANTHROPIC_API_KEY".to_string(), "k".to_string()))
        );
        assert!(!l.env.iter().any(|(k, _)| k == "CLAUDE_CONFIG_DIR"));
        assert!(!l.env.iter().any(|(k, _)| k == "ENABLE_TOOL_SEARCH"));
    }

    #[test]
    fn a_resume_in_plan_mode_with_the_board_server() {
        let mcp = McpServer {
            command: PathBuf::from("/bin/teamctl"),
            args: vec!["mcp".into(), "--name".into(), "alice".into()],
            env: vec![("TEAMBOARD_MEMBER_SOCKET".into(), "/tmp/m.sock".into())],
        };
        let mut s = spec();
        s.model = None;
        let l = launch(
            &s,
            &brief(Some(mcp)),
            &SessionArg::Resume("abc".into()),
            true,
        );
        let a = &l.args;
        assert_eq!(after(a, "--resume"), Some("abc"));
        assert_eq!(after(a, "--session-id"), None);
        assert_eq!(after(a, "--model"), None);
        assert_eq!(after(a, "--permission-mode"), Some("plan"));
        assert!(a.contains(&"--strict-mcp-config".to_string()));
        let config: serde_json::Value =
            serde_json::from_str(after(a, "--mcp-config").unwrap()).unwrap();
        assert_eq!(
            config,
            json!({"mcpServers": {"teamboard": {
                "type": "stdio",
                "command": "/bin/teamctl",
                "args": ["mcp", "--name", "alice"],
                "env": {"TEAMBOARD_MEMBER_SOCKET": "/tmp/m.sock"},
            }}})
        );
        assert!(
            l.env
                .contains(&("ENABLE_TOOL_SEARCH".to_string(), "false".to_string()))
        );
    }

    #[test]
    fn an_api_key_gets_what_the_dollar_budgets_leave_as_its_own_cap() {
        let mut b = brief(None);
        b.usd_cap = Some(MicroUsd(1_250_000));
        let l = launch(&spec(), &b, &SessionArg::New("abc".into()), false);
        assert_eq!(after(&l.args, "--max-budget-usd"), Some("1.250000"));
        assert_eq!(
            spend_cap(Some(MicroUsd(125)), true),
            Some(["--max-budget-usd".to_string(), "0.000125".to_string()])
        );
        // Not on a login, and never 0, which the CLI reads as no cap.
        assert_eq!(spend_cap(Some(MicroUsd(1_250_000)), false), None);
        assert_eq!(spend_cap(Some(MicroUsd(0)), true), None);
        assert_eq!(spend_cap(None, true), None);
    }

    #[test]
    fn a_gateway_token_or_a_cloud_provider_are_other_credentials() {
        let mut s = spec();
        for key in ["ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_USE_BEDROCK"] {
            s.env = vec![(key.into(), "1".into())];
            assert!(other_credentials(&s), "{key}");
        }
    }

    #[test]
    fn session_ids_are_random_version_4_uuids() {
        let a = new_session_id();
        let b = new_session_id();
        assert_ne!(a, b);
        for id in [&a, &b] {
            let parts: Vec<&str> = id.split('-').collect();
            assert_eq!(
                parts.iter().map(|p| p.len()).collect::<Vec<_>>(),
                [8, 4, 4, 4, 12],
                "{id}"
            );
            assert!(
                id.chars()
                    .all(|c| c == '-' || c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
            );
            assert!(parts[2].starts_with('4'), "version 4: {id}");
            assert!(
                matches!(parts[3].chars().next(), Some('8' | '9' | 'a' | 'b')),
                "RFC 4122 variant: {id}"
            );
        }
    }
}
