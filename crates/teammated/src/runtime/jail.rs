//! What an agent keeps inside the teammate's sandbox: its own home, writable
//! (sessions, settings, logins), and the member socket its MCP server reaches
//! the teammate through. Nothing of boardd's: the board's socket and state stay
//! hidden, so the MCP server's calls all go through the teammate.

use std::path::{Path, PathBuf};
use teamboard_protocol::member::MEMBER_SOCKET_ENV;
use teamboard_sandbox::Jail;

/// The variables that move an agent's home, and the default under `$HOME` of
/// each; the homes of every runtime are kept, so that an ACP agent that is one
/// of these CLIs (`gemini --acp`, a Claude Code adapter) finds its own too.
const HOMES: [(&str, &str); 3] = [
    ("CLAUDE_CONFIG_DIR", ".claude"),
    ("CODEX_HOME", ".codex"),
    ("GEMINI_CLI_HOME", ".gemini"),
];

/// Files in `$HOME` the agents write beside their homes: Claude Code's state.
const HOME_FILES: [&str; 2] = [".claude.json", ".claude.json.backup"];

/// The teammate's jail for an agent working in `cwd` with `env` added to
/// teammated's environment. A task's worktree (a `cwd` other than the
/// teammate's workdir) hides its siblings, the team's other worktrees.
pub fn for_agent(jail: &Jail, cwd: &Path, env: &[(String, String)]) -> Jail {
    let var = |name: &str| {
        env.iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| std::ffi::OsString::from(v))
            .or_else(|| std::env::var_os(name))
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let home = var("HOME");
    let mut writable: Vec<PathBuf> = HOMES
        .iter()
        .filter_map(|(name, default)| var(name).or_else(|| Some(home.as_ref()?.join(default))))
        .collect();
    if let Some(home) = &home {
        writable.extend(HOME_FILES.iter().map(|f| home.join(f)));
    }
    let mut agent = jail
        .in_dir(cwd)
        .writable(writable)
        .readable(var(MEMBER_SOCKET_ENV))
        .keep_secret_vars();
    if cwd != jail.workdir() {
        agent = agent.hide(cwd.parent().map(Path::to_path_buf));
    }
    agent
}

#[cfg(test)]
mod tests {
    use super::*;
    use teamboard_protocol::{Sandbox, SandboxMode};

    #[test]
    fn the_agent_keeps_its_home_and_the_member_socket() {
        let dir = tempfile::tempdir().expect("tempdir");
        let codex = dir.path().join("codex-home");
        let socket = dir.path().join("member.sock");
        std::fs::create_dir_all(&codex).expect("mkdir");
        std::fs::write(&socket, "").expect("socket stand-in");
        let policy = Sandbox {
            mode: SandboxMode::WorkspaceWrite,
            network: true,
        };
        let jail = Jail::new(policy, dir.path());
        let env = [
            ("CODEX_HOME".to_string(), codex.display().to_string()),
            (MEMBER_SOCKET_ENV.to_string(), socket.display().to_string()),
        ];
        let args: Vec<String> = for_agent(&jail, dir.path(), &env)
            .bwrap_args()
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let args = args.join(" ");
        let real = |p: &Path| p.canonicalize().expect("real").display().to_string();
        assert!(
            args.contains(&format!("--bind {0} {0}", real(&codex))),
            "{args}"
        );
        assert!(
            args.contains(&format!("--ro-bind {0} {0}", real(&socket))),
            "{args}"
        );
    }
}
