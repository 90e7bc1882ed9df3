//! `teamctl spawn`: start a teammate.
//!
//! Two modes, each in a module of its own: by default teammated runs as a detached
//! child of teamctl ([`detached`]); with `--systemd` it becomes the user unit
//! `teammated@NAME` ([`systemd`]). This module checks what both need (the names, the
//! working directory, the runtime and its agent) and picks the mode. The modes
//! share only the leaf helpers of [`checks`] and [`agent`] and never call back
//! into this module.

pub(crate) mod agent;
mod checks;
mod detached;
pub(crate) mod systemd;

use super::Ctx;
use crate::cli::SpawnArgs;
use checks::{absolute, check_names, workdir};
use std::path::{Path, PathBuf};

/// The flags given that only the native loop reads. `--max-rounds` is not one: it
/// bounds an agent's turns too.
fn native_only(args: &SpawnArgs) -> Vec<&'static str> {
    super::given([
        (args.model.is_some(), "--model"),
        (args.provider.is_some(), "--provider"),
        (args.base_url.is_some(), "--base-url"),
        (args.context_budget.is_some(), "--context-budget"),
        (args.carry_context, "--carry-context"),
        (args.max_tokens_field.is_some(), "--max-tokens-field"),
    ])
}

pub async fn run(ctx: &Ctx, args: SpawnArgs) -> anyhow::Result<()> {
    check_names(ctx, &args)?;
    let program = agent::check(&args.runtime, &native_only(&args))?;
    // Refused here rather than by the teammate at start, with the same words.
    if args.sandbox != Some(teamboard_protocol::SandboxMode::Off) {
        teamboard_sandbox::probe()?;
    }
    let workdir = workdir(args.workdir.as_deref())?;
    let settings = settings(ctx, &args, program, &workdir)?;
    if args.systemd {
        systemd::run(ctx, &args, &settings).await
    } else {
        detached::run(ctx, &args, &settings, &workdir).await
    }
}

/// One setting the teammate starts with, for teammated's command line (a
/// detached teammate) or its variables (a systemd unit's settings file).
struct Setting {
    /// teammated's flag, without the `--`.
    flag: &'static str,
    to: To,
    value: Value,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum To {
    Flag,
    Var,
    Both,
}

#[derive(Clone)]
enum Value {
    Text(String),
    /// A path, absolute; a settings file holds only UTF-8, and the error names it
    /// by the label.
    Path(PathBuf, &'static str),
    /// A flag without a value; `true` in a settings file.
    Switch,
    /// Each as `--flag=ARG`, in one word, so that an argument that starts with `-`
    /// cannot be taken for a flag of teammated's own; one JSON array of strings in
    /// a settings file, which teammated decodes.
    List(Vec<String>),
}

impl Setting {
    /// The variable teammated reads the setting from: `TEAMMATE_` and the flag in
    /// capitals (`TEAMMATE_MAX_ROUNDS`), and for the board's own settings
    /// `TEAMBOARD_`.
    fn var(&self) -> String {
        let name = self.flag.to_uppercase().replace('-', "_");
        match self.flag {
            "team" | "socket" | "state-dir" | "connect" | "token-file" | "ca-file" => {
                format!("TEAMBOARD_{name}")
            }
            "agent-arg" => "TEAMMATE_AGENT_ARGS".to_string(),
            _ => format!("TEAMMATE_{name}"),
        }
    }
}

/// Everything teammated is told, in the order both modes write it. Paths are
/// absolute because a detached child starts in the workdir. A boardd or state dir
/// named to this teamctl is the one the teammate must use too; the command line
/// always names the socket, a settings file only when it was given (the defaults
/// are the same for both), and the state dir is passed only when teamctl was given
/// one, so that otherwise teammated works out the same default itself.
fn settings(
    ctx: &Ctx,
    args: &SpawnArgs,
    program: Option<PathBuf>,
    workdir: &Path,
) -> anyhow::Result<Vec<Setting>> {
    use To::{Both, Flag, Var};
    use Value::{List, Path, Switch};
    fn text(value: Option<impl std::fmt::Display>) -> Option<Value> {
        value.map(|v| Value::Text(v.to_string()))
    }
    let socket = absolute(&ctx.socket, "socket path")?;
    let state = match &ctx.state_dir_given {
        Some(dir) => Some(Path(absolute(dir, "state dir")?, "state dir")),
        None => None,
    };
    let mut all = Vec::new();
    let mut set = |to, flag, value: Option<Value>| {
        if let Some(value) = value {
            all.push(Setting { flag, to, value });
        }
    };
    set(Flag, "name", text(Some(&args.name)));
    set(Both, "role", text(Some(&args.role)));
    set(Flag, "team", text(Some(&ctx.team)));
    set(Flag, "socket", Some(Path(socket.clone(), "socket path")));
    set(Flag, "state-dir", state.clone());
    set(Both, "provider", text(args.provider));
    set(Both, "model", text(args.model.as_ref()));
    set(
        Both,
        "workdir",
        Some(Path(workdir.to_path_buf(), "workdir")),
    );
    set(Var, "team", text(Some(&ctx.team)));
    set(Both, "idle-timeout", text(args.idle_timeout));
    set(Both, "max-rounds", text(args.max_rounds));
    set(Both, "base-url", text(args.base_url.as_ref()));
    set(Both, "context-budget", text(args.context_budget));
    set(Both, "max-tokens-field", text(args.max_tokens_field));
    set(Both, "carry-context", args.carry_context.then_some(Switch));
    set(Both, "require-plan", args.require_plan.then_some(Switch));
    set(Both, "sandbox", text(args.sandbox));
    set(Both, "no-network", args.no_network.then_some(Switch));
    let runtime = &args.runtime;
    set(Both, "runtime", text(runtime.runtime));
    let program = program.map(|p| Path(p, "agent program"));
    set(Both, "agent-cmd", program);
    let agent_args = (!runtime.agent_args.is_empty()).then(|| List(runtime.agent_args.clone()));
    set(Both, "agent-arg", agent_args);
    set(Both, "agent-model", text(runtime.agent_model.as_ref()));
    set(Both, "agent-policy", text(runtime.agent_policy));
    let given = ctx.socket_given.then_some(Path(socket, "socket path"));
    set(Var, "socket", given);
    // Over the network, the same endpoint, token and CA as this teamctl's.
    if let Some(remote) = &ctx.remote {
        set(Both, "connect", text(Some(&remote.endpoint)));
        let token = absolute(&remote.token_file, "token file")?;
        set(Both, "token-file", Some(Path(token, "token file")));
        if let Some(ca) = remote.endpoint.ca_file() {
            set(
                Both,
                "ca-file",
                Some(Path(absolute(ca, "CA file")?, "CA file")),
            );
        }
    }
    set(Var, "state-dir", state);
    Ok(all)
}
