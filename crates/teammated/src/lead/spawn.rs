//! `spawn_teammate`: runs `teamctl spawn`, so that a teammate the lead starts comes
//! up exactly like one the person starts (detached, its own process group, its log
//! in the state dir, the wait until it is connected, the cleanup when it is not).
//! There is one spawn, and it lives in teamctl.
//!
//! Over the network (`--connect`) the lead issues the teammate a token of its
//! own first (`create_token`, which replaces any it had), keeps it 0600 in the
//! teammate's directory, and hands teamctl the endpoint and that file.

use super::{LeadConfig, SpawnConfig};
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Stdio;
use teamboard_protocol::token::{CreateTokenArgs, IssuedToken};
use teamboard_protocol::{Client, Remote, Request};

/// What a spawn gave: the teammate's pid, or teamctl's error.
pub(super) async fn spawn(
    cfg: &LeadConfig,
    client: &Client,
    name: &str,
    role: &str,
) -> Result<u32, String> {
    let mut argv = argv(cfg, name, role);
    if let Some(remote) = &cfg.remote {
        let token = issue_token(cfg, client, name).await?;
        let given = Remote {
            endpoint: remote.endpoint.clone(),
            token_file: token,
        };
        // In place of `--socket`: the first two words of `argv`.
        argv.splice(0..2, given.args());
    }
    let out = tokio::process::Command::new(&cfg.spawn.teamctl)
        .args(&argv)
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output()
        .await
        .map_err(|e| format!("cannot run {}: {e}", cfg.spawn.teamctl.display()))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let err = err.trim().trim_start_matches("teamctl: ");
        return Err(if err.is_empty() {
            format!("teamctl spawn {name} failed ({})", out.status)
        } else {
            err.to_string()
        });
    }
    #[derive(serde::Deserialize)]
    struct Spawned {
        pid: u32,
    }
    serde_json::from_slice::<Spawned>(&out.stdout)
        .map(|s| s.pid)
        .map_err(|e| format!("cannot read what `teamctl spawn --json` printed: {e}"))
}

/// A fresh token for teammate `name`, written where only this user reads it:
/// the path of its file.
async fn issue_token(cfg: &LeadConfig, client: &Client, name: &str) -> Result<PathBuf, String> {
    let args = CreateTokenArgs {
        name: name.to_string(),
        team: None,
    };
    let issued: IssuedToken = (client.call(Request::CreateToken(args)).await)
        .map_err(|e| format!("cannot issue a token for {name}: {e}"))?;
    let dir = teamboard_protocol::transcript::teammate_dir(&cfg.state_dir, &cfg.team, name);
    let path = dir.join("token");
    let write = || -> std::io::Result<()> {
        use std::io::Write as _;
        use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)?;
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&path)?;
        writeln!(file, "{}", issued.token.as_str())
    };
    write().map_err(|e| format!("cannot write {name}'s token to {}: {e}", path.display()))?;
    Ok(path)
}

/// `teamctl`'s command line for one teammate.
fn argv(cfg: &LeadConfig, name: &str, role: &str) -> Vec<OsString> {
    let SpawnConfig {
        provider,
        model,
        base_url,
        workdir,
        idle_timeout,
        runtime,
        sandbox,
        no_network,
        ..
    } = &cfg.spawn;
    let mut argv: Vec<OsString> = vec![
        "--socket".into(),
        cfg.socket.clone().into(),
        "--team".into(),
        cfg.team.clone().into(),
    ];
    if cfg.state_dir_given {
        argv.push("--state-dir".into());
        argv.push(cfg.state_dir.clone().into());
    }
    argv.extend([
        "spawn".into(),
        name.into(),
        "--role".into(),
        role.into(),
        "--workdir".into(),
        workdir.clone().into(),
        "--json".into(),
    ]);
    // The provider, `--model` and the base URL are the native loop's, and `teamctl
    // spawn` refuses them for an agent; an agent's model is `--agent-model`.
    let agent = runtime.as_deref().is_some_and(|r| r != "native");
    let none = None;
    let native = |v| if agent { &none } else { v };
    for (flag, value) in [
        ("--provider", native(provider)),
        (if agent { "--agent-model" } else { "--model" }, model),
        ("--base-url", native(base_url)),
        ("--runtime", runtime),
    ] {
        if let Some(v) = value {
            argv.push(flag.into());
            argv.push(v.into());
        }
    }
    if let Some(s) = idle_timeout {
        argv.push("--idle-timeout".into());
        argv.push(s.to_string().into());
    }
    if let Some(mode) = sandbox {
        argv.push("--sandbox".into());
        argv.push(mode.to_string().into());
    }
    if *no_network {
        argv.push("--no-network".into());
    }
    argv
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backoff::RetryPolicy;
    use crate::config::{ProviderConfig, ProviderKind};
    use std::time::Duration;
    use teamboard_protocol::SandboxMode;

    fn config(runtime: Option<&str>, model: Option<&str>) -> LeadConfig {
        LeadConfig {
            team: "default".into(),
            socket: "/run/b.sock".into(),
            remote: None,
            state_dir: "/state".into(),
            state_dir_given: false,
            provider: ProviderConfig {
                kind: ProviderKind::Scripted,
                model: None,
                base_url: None,
                api_key: None,
                max_tokens: 1024,
                max_tokens_field: None,
                request_timeout: Duration::from_secs(10),
                retry: RetryPolicy::default(),
                account: Default::default(),
            },
            spawn: SpawnConfig {
                teamctl: "teamctl".into(),
                provider: Some("scripted".into()),
                model: model.map(str::to_string),
                base_url: None,
                workdir: "/work".into(),
                idle_timeout: Some(0),
                runtime: runtime.map(str::to_string),
                sandbox: None,
                no_network: false,
            },
            goal: None,
            yes: false,
            give_up_after: None,
            max_rounds: 10,
            context_budget: 100_000,
            review_plans: Default::default(),
            new_team: false,
        }
    }

    #[test]
    fn the_teammates_runtime_goes_to_teamctl_spawn() {
        let words = |a: Vec<OsString>| -> Vec<String> {
            a.into_iter()
                .map(|w| w.to_string_lossy().into_owned())
                .collect()
        };
        let with = words(argv(&config(Some("claude"), None), "ada", "dev"));
        let at = with
            .iter()
            .position(|w| w == "--runtime")
            .expect("--runtime");
        assert_eq!(with[at + 1], "claude");
        let without = words(argv(&config(None, None), "ada", "dev"));
        assert!(!without.iter().any(|w| w == "--runtime"), "{without:?}");
    }

    #[test]
    fn the_teammates_sandbox_goes_to_teamctl_spawn() {
        let words = |c: &LeadConfig| -> Vec<String> {
            argv(c, "ada", "dev")
                .into_iter()
                .map(|w| w.to_string_lossy().into_owned())
                .collect()
        };
        let mut cfg = config(None, None);
        cfg.spawn.sandbox = Some(SandboxMode::ReadOnly);
        cfg.spawn.no_network = true;
        let with = words(&cfg);
        let at = with
            .iter()
            .position(|w| w == "--sandbox")
            .expect("--sandbox");
        assert_eq!(with[at + 1], "read-only");
        assert!(with.iter().any(|w| w == "--no-network"), "{with:?}");
        // Neither given: the spawn's own default (workspace-write, network on).
        let without = words(&config(None, None));
        assert!(
            !without
                .iter()
                .any(|w| w == "--sandbox" || w == "--no-network"),
            "{without:?}"
        );
    }

    #[test]
    fn the_teammates_model_goes_to_the_agent_as_its_agent_model() {
        let words = |a: Vec<OsString>| -> Vec<String> {
            a.into_iter()
                .map(|w| w.to_string_lossy().into_owned())
                .collect()
        };
        let after = |argv: &[String], flag: &str| {
            argv.iter()
                .position(|w| w == flag)
                .map(|at| argv[at + 1].clone())
        };
        let agent = words(argv(&config(Some("codex"), Some("o3")), "ada", "dev"));
        assert_eq!(after(&agent, "--agent-model").as_deref(), Some("o3"));
        assert_eq!(after(&agent, "--model"), None, "{agent:?}");
        // teamctl spawn refuses the native loop's provider for an agent.
        assert_eq!(after(&agent, "--provider"), None, "{agent:?}");
        for runtime in [None, Some("native")] {
            let native = words(argv(&config(runtime, Some("gpt-4.1")), "ada", "dev"));
            assert_eq!(after(&native, "--model").as_deref(), Some("gpt-4.1"));
            assert_eq!(after(&native, "--agent-model"), None, "{native:?}");
            assert_eq!(after(&native, "--provider").as_deref(), Some("scripted"));
        }
    }
}
