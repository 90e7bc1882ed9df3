//! `teamctl budget set`: a limit in tokens and/or dollars on the team, a
//! teammate or a task, for all time or per rolling window.

use super::{Ctx, scope};
use crate::cli::BudgetSetArgs;
use crate::render;
use teamboard_protocol::Request;
use teamboard_protocol::request::SetBudgetArgs;
use teamboard_protocol::spend::{Budget, Limits};

pub async fn run(ctx: &Ctx, args: BudgetSetArgs) -> anyhow::Result<()> {
    let limits = Limits {
        tokens: args.tokens,
        input_tokens: args.input_tokens,
        usd: args.usd,
    };
    // Checked here as well as by boardd, to teach the flags rather than the
    // wire's field names.
    if limits.is_empty() {
        anyhow::bail!(
            "name at least one amount to limit: --tokens N, --input-tokens N or --usd X \
             (e.g. `teamctl budget set --usd 5 --per 1d`)"
        );
    }
    let client = ctx.connect().await?;
    let request = Request::SetBudget(SetBudgetArgs {
        scope: scope(&args.scope),
        per_ms: args.scope.per,
        limits,
    });
    let Some(budget) = ctx.call::<Budget>(&client, request).await? else {
        return Ok(());
    };
    render::line(&render::budget_set_line(&budget))?;
    if budget.limits.usd.is_some() {
        render::note(
            "a dollar limit refuses calls to models without a price; add theirs to \
             ~/.config/teamboard/prices.toml (see `teamctl budget set --help`)",
        );
    }
    Ok(())
}
