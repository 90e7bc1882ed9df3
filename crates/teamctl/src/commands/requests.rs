//! The team's tracked requests: `teamctl requests` (shutdowns and plans, and
//! the checks teammates proposed),
//! `teamctl plans` (the plans waiting for the lead's decision, with their text),
//! and the lead's decision on one, `teamctl approve` and `teamctl reject`.

use super::{Ctx, fetch_tasks};
use crate::cli::{PlansArgs, RejectArgs, RequestsArgs};
use crate::render;
use std::collections::HashMap;
use teamboard_protocol::request::{ListRequestsArgs, ReviewPlanArgs};
use teamboard_protocol::{
    Request, RequestId, RequestKind, RequestState, Task, TaskStatus, TeamRequest,
};

/// `teamctl requests`.
pub async fn list(ctx: &Ctx, args: RequestsArgs) -> anyhow::Result<()> {
    let client = ctx.connect().await?;
    // With --json, boardd's answer is already the array of request objects.
    let Some(requests) = ctx
        .call::<Vec<TeamRequest>>(&client, listing(args.all, args.kind))
        .await?
    else {
        return Ok(());
    };
    // Checks a teammate proposed wait for the lead too, on their task.
    let proposed = match args.kind {
        None => proposed_checks(&fetch_tasks(&client).await?),
        Some(_) => Vec::new(),
    };
    if requests.is_empty() && proposed.is_empty() {
        let what = args.kind.map_or("", <&str>::from);
        let space = if what.is_empty() { "" } else { " " };
        if args.all {
            render::note(format_args!(
                "no {what}{space}requests in team '{}'",
                ctx.team
            ));
        } else {
            render::note(format_args!(
                "no open {what}{space}requests in team '{}' (--all shows the settled ones)",
                ctx.team
            ));
        }
        return Ok(());
    }
    let now = render::now_ms();
    let mut lines: Vec<String> = requests
        .iter()
        .map(|r| render::request_line(r, now))
        .collect();
    lines.extend(proposed);
    render::lines(&lines)?;
    Ok(())
}

/// A line for each task with checks a teammate proposed, which never run
/// until the lead accepts them:
/// `#3  checks proposed: `cargo test`  (teamctl task accept-checks 3 [--reject])`.
fn proposed_checks(tasks: &[Task]) -> Vec<String> {
    tasks
        .iter()
        .filter(|t| !t.proposed_checks.is_empty() && t.status != TaskStatus::Completed)
        .map(|t| {
            format!(
                "#{}  checks proposed: `{}`  (teamctl task accept-checks {} [--reject])",
                t.id,
                t.proposed_checks.join("`, `"),
                t.id
            )
        })
        .collect()
}

/// The team's requests of `kind`, only the pending ones unless `all`.
fn listing(all: bool, kind: Option<RequestKind>) -> Request {
    Request::ListRequests(ListRequestsArgs {
        state: (!all).then_some(RequestState::Pending),
        kind,
        task: None,
    })
}

/// `teamctl plans`.
pub async fn plans(ctx: &Ctx, args: PlansArgs) -> anyhow::Result<()> {
    let client = ctx.connect().await?;
    let request = listing(args.all, Some(RequestKind::Plan));
    let Some(plans) = ctx.call::<Vec<TeamRequest>>(&client, request).await? else {
        return Ok(());
    };
    if plans.is_empty() {
        if args.all {
            render::note(format_args!("no plans in team '{}' yet", ctx.team));
        } else {
            render::note("no plans waiting for your decision (--all shows the decided ones)");
        }
        return Ok(());
    }
    let tasks = fetch_tasks(&client).await?;
    let subjects: HashMap<_, _> = tasks.iter().map(|t| (t.id, t.subject.as_str())).collect();
    let now = render::now_ms();
    let mut out = Vec::new();
    for (i, plan) in plans.iter().enumerate() {
        if i > 0 {
            out.push(String::new());
        }
        let subject = plan.task.and_then(|id| subjects.get(&id).copied());
        out.extend(render::plan_lines(plan, subject, now));
    }
    if plans.iter().any(TeamRequest::is_pending) {
        out.push(String::new());
        out.push(
            "decide with `teamctl approve REQ [--feedback TEXT]` or `teamctl reject REQ --feedback TEXT`"
                .into(),
        );
    }
    render::lines(&out)?;
    Ok(())
}

/// `teamctl reject`: the feedback is what the teammate writes its next plan from.
pub async fn reject(ctx: &Ctx, args: RejectArgs) -> anyhow::Result<()> {
    if args.feedback.trim().is_empty() {
        anyhow::bail!(
            "the feedback is empty, so nothing was decided; say what the teammate should change"
        );
    }
    decide(ctx, args.request, false, Some(args.feedback)).await
}

/// `teamctl approve`, and what `reject` sends.
pub async fn decide(
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
            "request r{id} is a shutdown request to {}, not a plan; only {} answers it \
             (see `teamctl plans` for the plans)",
            request.to,
            request.to
        );
    }
    let review = Request::ReviewPlan(ReviewPlanArgs {
        request: id,
        approve,
        feedback: feedback.filter(|f| !f.trim().is_empty()),
    });
    if let Some(r) = ctx.call::<TeamRequest>(&client, review).await? {
        let task = r.task.map(|t| format!(" for #{t}")).unwrap_or_default();
        render::line(&format!(
            "{} {}'s plan{task} (request r{}); {} is told now",
            r.state, r.from, r.id, r.from
        ))?;
    }
    Ok(())
}
