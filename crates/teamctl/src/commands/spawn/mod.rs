//! `teamctl spawn`: start a teammate.
//!
//! Two modes, each in a module of its own: by default teammated runs as a detached
//! child of teamctl ([`detached`]); with `--systemd` it becomes the user unit
//! `teammated@NAME` ([`systemd`]). This module checks what both need (the names, the
//! working directory, the runtime and its agent) and picks the mode. The modes
//! share only the leaf helpers of [`checks`] and [`agent`] and never call back
//! into this module.

mod agent;
mod checks;
mod detached;
mod systemd;

use super::Ctx;
use crate::cli::SpawnArgs;
use checks::{check_names, workdir};

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
    let launch = agent::check(&args.runtime, &native_only(&args))?;
    let workdir = workdir(args.workdir.as_deref())?;
    if args.systemd {
        systemd::run(ctx, &args, &launch, &workdir).await
    } else {
        detached::run(ctx, &args, &launch, &workdir).await
    }
}
