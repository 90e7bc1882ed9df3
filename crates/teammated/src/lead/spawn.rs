//! `spawn_teammate`: runs `teamctl spawn`, so that a teammate the lead starts comes
//! up exactly like one the person starts (detached, its own process group, its log
//! in the state dir, the wait until it is connected, the cleanup when it is not).
//! There is one spawn, and it lives in teamctl.

use super::{LeadConfig, SpawnConfig};
use std::ffi::OsString;
use std::process::Stdio;

/// What a spawn gave: the teammate's pid, or teamctl's error.
pub(super) async fn spawn(cfg: &LeadConfig, name: &str, role: &str) -> Result<u32, String> {
    let argv = argv(cfg, name, role);
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

/// `teamctl`'s command line for one teammate.
fn argv(cfg: &LeadConfig, name: &str, role: &str) -> Vec<OsString> {
    let SpawnConfig {
        provider,
        model,
        base_url,
        workdir,
        idle_timeout,
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
    for (flag, value) in [
        ("--provider", provider),
        ("--model", model),
        ("--base-url", base_url),
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
    argv
}
