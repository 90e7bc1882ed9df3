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

pub async fn run(ctx: &Ctx, args: SpawnArgs) -> anyhow::Result<()> {
    check_names(ctx, &args)?;
    let launch = agent::check(&args.runtime, args.model.is_some())?;
    let workdir = workdir(args.workdir.as_deref())?;
    if args.systemd {
        systemd::run(ctx, &args, &launch, &workdir).await
    } else {
        detached::run(ctx, &args, &launch, &workdir).await
    }
}
