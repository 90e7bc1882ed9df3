//! `teamctl lead`: the team's LLM lead in this terminal.
//!
//! The lead is teammated's runtime in its lead mode (`teammated lead`), so teamctl
//! stays thin: it finds teammated, turns its own flags into the lead's, and replaces
//! itself with it (`exec`), so the lead owns the terminal and its signals, and its
//! exit status is the command's. The lead spawns teammates by running this teamctl.

use super::Ctx;
use super::find_bin::{absolute, find_teammated};
use crate::cli::LeadArgs;
use anyhow::Context as _;
use std::ffi::OsString;
use std::os::unix::process::CommandExt as _;
use teamboard_protocol::RuntimeKind;

pub fn run(ctx: &Ctx, args: LeadArgs) -> anyhow::Result<()> {
    let argv = lead_args(ctx, args)?;
    let bin = find_teammated()?;
    let err = std::process::Command::new(&bin).args(&argv).exec();
    Err(err).with_context(|| format!("cannot start {}", bin.display()))
}

/// `teammated lead`'s command line.
fn lead_args(ctx: &Ctx, args: LeadArgs) -> anyhow::Result<Vec<OsString>> {
    if ctx.json {
        anyhow::bail!("`teamctl lead` talks to a person; it has no --json output");
    }
    let (goal, spawn) = (args.goal, args.spawn);
    if spawn.teammate_runtime == Some(RuntimeKind::Acp) {
        anyhow::bail!(
            "--teammate-runtime acp needs the agent's program, which the lead cannot name; \
             spawn ACP teammates yourself: `teamctl spawn NAME --role ROLE --runtime acp \
             --agent-cmd CMD`"
        );
    }
    // An agent teammate runs its own model: the native loop's settings would
    // be dropped without a word (`teamctl spawn` refuses them for an agent).
    let agent = spawn
        .teammate_runtime
        .is_some_and(|r| r != RuntimeKind::Native);
    if agent {
        let given = super::given([
            (spawn.teammate_provider.is_some(), "--teammate-provider"),
            (spawn.teammate_base_url.is_some(), "--teammate-base-url"),
        ]);
        if !given.is_empty() {
            anyhow::bail!(
                "{} for native teammates; an agent teammate uses its agent's own settings \
                 (--teammate-model names its model)",
                super::flags_are(&given)
            );
        }
    }
    if let Some(runtime) = spawn.teammate_runtime {
        super::spawn::agent::check_lead_teammates(runtime)?;
    }
    let teamctl = std::env::current_exe().context("cannot find teamctl's own path")?;
    let mut argv: Vec<OsString> = vec![
        "lead".into(),
        "--team".into(),
        ctx.team.clone().into(),
        "--socket".into(),
        absolute(&ctx.socket, "socket path")?.into(),
        "--teamctl".into(),
        teamctl.into(),
    ];
    // Over the network: the lead presents the token, and issues its
    // teammates theirs (`teammated lead` and its `spawn`).
    if let Some(remote) = &ctx.remote {
        let mut remote = remote.clone();
        remote.token_file = absolute(&remote.token_file, "token file")?;
        if let Some(ca) = remote.endpoint.ca_file() {
            let ca = absolute(ca, "CA file")?;
            remote.endpoint = remote.endpoint.with_ca_file(Some(ca));
        }
        argv.extend(remote.args());
    }
    if ctx.new_team {
        argv.push("--new-team".into());
    }
    if let Some(dir) = &ctx.state_dir_given {
        argv.push("--state-dir".into());
        argv.push(absolute(dir, "state dir")?.into());
    }
    fn opt(argv: &mut Vec<OsString>, flag: &str, value: Option<impl std::fmt::Display>) {
        if let Some(v) = value {
            argv.extend([flag.into(), v.to_string().into()]);
        }
    }
    opt(&mut argv, "--goal", goal.goal);
    opt(&mut argv, "--give-up-after", goal.give_up_after);
    opt(&mut argv, "--provider", args.provider);
    opt(&mut argv, "--model", args.model);
    opt(&mut argv, "--base-url", args.base_url);
    opt(&mut argv, "--max-tokens-field", args.max_tokens_field);
    opt(&mut argv, "--teammate-provider", spawn.teammate_provider);
    opt(&mut argv, "--teammate-model", spawn.teammate_model);
    opt(&mut argv, "--teammate-base-url", spawn.teammate_base_url);
    opt(
        &mut argv,
        "--teammate-idle-timeout",
        spawn.teammate_idle_timeout,
    );
    opt(&mut argv, "--teammate-runtime", spawn.teammate_runtime);
    opt(&mut argv, "--teammate-sandbox", spawn.teammate_sandbox);
    opt(&mut argv, "--review-plans", spawn.review_plans);
    if let Some(dir) = &spawn.workdir {
        argv.push("--workdir".into());
        argv.push(absolute(dir, "workdir")?.into());
    }
    if goal.yes {
        argv.push("--yes".into());
    }
    if spawn.teammate_no_network {
        argv.push("--teammate-no-network".into());
    }
    Ok(argv)
}
