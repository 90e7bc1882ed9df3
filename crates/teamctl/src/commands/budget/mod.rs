//! `teamctl budget`: the spend limits boardd enforces before each model call.
//! One file per mode: `show` (the default), `set` and `clear`.

mod clear;
mod set;
mod show;

use super::Ctx;
use crate::cli::{BudgetArgs, BudgetCommand, BudgetScopeArgs};
use teamboard_protocol::spend::BudgetScope;

pub async fn run(ctx: &Ctx, args: BudgetArgs) -> anyhow::Result<()> {
    match args.command {
        None | Some(BudgetCommand::Show) => show::run(ctx).await,
        Some(BudgetCommand::Set(args)) => set::run(ctx, args).await,
        Some(BudgetCommand::Clear(args)) => clear::run(ctx, args).await,
    }
}

/// The team, unless --member or --task names a part of it (clap refuses both).
fn scope(args: &BudgetScopeArgs) -> BudgetScope {
    match (&args.member, args.task) {
        (Some(name), _) => BudgetScope::Member { name: name.clone() },
        (None, Some(id)) => BudgetScope::Task { id },
        (None, None) => BudgetScope::Team,
    }
}
