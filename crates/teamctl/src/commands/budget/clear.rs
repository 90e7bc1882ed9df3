//! `teamctl budget clear`: removes one limit.

use super::{Ctx, scope};
use crate::cli::BudgetClearArgs;
use crate::render;
use teamboard_protocol::Request;
use teamboard_protocol::request::ClearBudgetArgs;
use teamboard_protocol::spend::Budget;

pub async fn run(ctx: &Ctx, args: BudgetClearArgs) -> anyhow::Result<()> {
    let client = ctx.connect().await?;
    let request = Request::ClearBudget(ClearBudgetArgs {
        scope: scope(&args.scope),
        per_ms: args.scope.per,
    });
    if let Some(budget) = ctx.call::<Budget>(&client, request).await? {
        render::line(&render::budget_cleared_line(&budget))?;
    }
    Ok(())
}
