//! The agent runtime's setup, once per teammate.

use super::AgentRun;
use crate::error::Error;
use crate::member::MemberServer;
use crate::runtime::{AgentSpec, McpServer, RuntimeKind};
use teamboard_protocol::member::MEMBER_SOCKET_ENV;

/// The agent runtime's work, from the configuration: `None` for the native
/// runtime. Fails when the agent's program cannot be found, or the member
/// socket cannot be bound: nothing could run then.
pub(crate) fn setup(cfg: &crate::config::Config) -> Result<Option<AgentRun>, Error> {
    let rt = &cfg.runtime;
    if rt.kind == RuntimeKind::Native {
        return Ok(None);
    }
    let named = match (&rt.agent_cmd, rt.kind.default_cmd()) {
        (Some(cmd), _) => cmd.clone(),
        (None, Some(cmd)) => std::path::PathBuf::from(cmd),
        (None, None) => {
            return Err(Error::Agent(format!(
                "--runtime {} needs the agent's program: --agent-cmd CMD",
                rt.kind
            )));
        }
    };
    let program = crate::runtime::process::resolve(&named).ok_or_else(|| {
        Error::Agent(format!(
            "the {} agent '{}' is not found or not executable; install it, or name it with --agent-cmd",
            rt.kind,
            named.display()
        ))
    })?;
    let dir = teamboard_protocol::transcript::teammate_dir(&cfg.state_dir, &cfg.team, &cfg.name)
        .join("agent");
    std::fs::create_dir_all(&dir)
        .map_err(|e| Error::Agent(format!("cannot create {}: {e}", dir.display())))?;
    let member = MemberServer::bind(&cfg.name)
        .map_err(|e| Error::Agent(format!("cannot open the member socket: {e}")))?;
    let socket = member.path().display().to_string();
    let mut env = rt.agent_env.clone();
    env.extend([
        (MEMBER_SOCKET_ENV.to_string(), socket.clone()),
        (
            "TEAMBOARD_SOCKET".to_string(),
            cfg.socket.display().to_string(),
        ),
        ("TEAMBOARD_TEAM".to_string(), cfg.team.clone()),
    ]);
    let teamctl = teamctl_program();
    let mcp = McpServer {
        command: teamctl,
        args: vec![
            "mcp".into(),
            "--name".into(),
            cfg.name.clone(),
            "--team".into(),
            cfg.team.clone(),
        ],
        env: vec![
            (MEMBER_SOCKET_ENV.to_string(), socket),
            (
                "TEAMBOARD_SOCKET".to_string(),
                cfg.socket.display().to_string(),
            ),
        ],
    };
    Ok(Some(AgentRun {
        spec: AgentSpec {
            kind: rt.kind,
            program,
            extra_args: rt.agent_args.clone(),
            max_turns: cfg.max_rounds,
            model: rt.agent_model.clone(),
            policy: rt.policy,
            env,
            guard: crate::tools::guard::program(),
            // Set once the teammate has registered and knows boardd's state.
            jail: None,
        },
        sessions: crate::runtime::sessions::Sessions::new(&dir),
        member: Some(member),
        mcp,
        opening: String::new(),
        inbox: Vec::new(),
        unacked: Vec::new(),
        stashed: None,
    }))
}

/// `teamctl`, for the board's MCP server: `TEAMBOARD_TEAMCTL` when set, else the
/// one next to this teammated (they are installed together), else the one on
/// PATH.
fn teamctl_program() -> std::path::PathBuf {
    if let Some(p) = std::env::var_os("TEAMBOARD_TEAMCTL") {
        return p.into();
    }
    let sibling = std::env::current_exe().ok().and_then(|exe| {
        let dir = exe.parent()?;
        // A test binary lives in target/<profile>/deps, the binaries one up.
        [dir.join("teamctl"), dir.parent()?.join("teamctl")]
            .into_iter()
            .find(|p| p.is_file())
    });
    sibling.unwrap_or_else(|| std::path::PathBuf::from("teamctl"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Config, ProviderConfig, ProviderKind, RuntimeConfig};

    /// A claude teammate whose native loop has a model of its own.
    fn config(state: &std::path::Path, agent_model: Option<&str>) -> Config {
        let base = Config::for_tests_in(state);
        Config {
            name: "ann".into(),
            provider: ProviderConfig {
                kind: ProviderKind::Openai,
                model: Some("gpt-4o-mini".into()),
                ..base.provider.clone()
            },
            runtime: RuntimeConfig {
                kind: RuntimeKind::Claude,
                agent_cmd: Some("/bin/sh".into()),
                agent_model: agent_model.map(str::to_string),
                ..RuntimeConfig::default()
            },
            ..base
        }
    }

    #[tokio::test]
    async fn the_agent_gets_the_agent_model_never_the_native_loops() {
        let state = tempfile::tempdir().expect("tempdir");
        let spec = |agent_model| {
            setup(&config(state.path(), agent_model))
                .expect("set up")
                .expect("an agent runtime")
                .spec
        };
        assert_eq!(spec(None).model, None, "the agent's own default");
        assert_eq!(spec(Some("sonnet")).model.as_deref(), Some("sonnet"));
    }
}
