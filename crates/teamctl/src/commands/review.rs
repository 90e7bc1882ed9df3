//! `teamctl approve` and `teamctl reject`: the lead's decision on a plan.

use super::{Ctx, decode};
use crate::cli::{ApproveArgs, RejectArgs};
use crate::render;
use teamboard_protocol::request::ReviewPlanArgs;
use teamboard_protocol::{Request, RequestId, RequestKind, TeamRequest};

pub async fn approve(ctx: &Ctx, args: ApproveArgs) -> anyhow::Result<()> {
    decide(ctx, args.request, true, args.feedback).await
}

pub async fn reject(ctx: &Ctx, args: RejectArgs) -> anyhow::Result<()> {
    if args.feedback.trim().is_empty() {
        anyhow::bail!(
            "the feedback is empty, so nothing was decided; say what the teammate should change"
        );
    }
    decide(ctx, args.request, false, Some(args.feedback)).await
}

async fn decide(
    ctx: &Ctx,
    id: RequestId,
    approve: bool,
    feedback: Option<String>,
) -> anyhow::Result<()> {
    let client = ctx.connect().await?;
    // boardd would answer a shutdown request with the op a teammate uses; the
    // lead is better told what it is.
    let request = client.get_request(id).await?;
    if request.kind == RequestKind::Shutdown {
        anyhow::bail!(
            "request {id} is a shutdown request to {}, not a plan; only {} answers it \
             (see `teamctl plans` for the plans)",
            request.to,
            request.to
        );
    }
    let raw = client
        .call_value(Request::ReviewPlan(ReviewPlanArgs {
            request: id,
            approve,
            feedback: feedback.filter(|f| !f.trim().is_empty()),
        }))
        .await?;
    if ctx.json {
        return render::json(&raw);
    }
    let r: TeamRequest = decode(&raw, "review_plan")?;
    let task = r.task.map(|t| format!(" for #{t}")).unwrap_or_default();
    render::line(&format!(
        "{} {}'s plan{task} (request {}); {} is told now",
        r.state, r.from, r.id, r.from
    ))?;
    Ok(())
}
