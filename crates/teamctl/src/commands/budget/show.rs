//! `teamctl budget` (`budget show`): every limit with what is spent, reserved
//! and left, then the accounts boardd schedules calls on.

use super::Ctx;
use crate::render;
use teamboard_protocol::Request;
use teamboard_protocol::request::NoArgs;
use teamboard_protocol::spend::BudgetReport;

pub async fn run(ctx: &Ctx) -> anyhow::Result<()> {
    let client = ctx.connect().await?;
    let request = Request::Budgets(NoArgs {});
    let Some(report) = ctx.call::<BudgetReport>(&client, request).await? else {
        return Ok(());
    };
    let now = render::now_ms();
    render::lines(&render::budget_report_lines(&report, &ctx.team, now))?;
    Ok(())
}
