//! `teamctl plans`: the plans waiting for the lead's decision, with their text.

use super::{Ctx, decode, fetch_tasks};
use crate::cli::PlansArgs;
use crate::render;
use std::collections::HashMap;
use teamboard_protocol::request::ListRequestsArgs;
use teamboard_protocol::{Request, RequestKind, RequestState, TeamRequest};

pub async fn run(ctx: &Ctx, args: PlansArgs) -> anyhow::Result<()> {
    let client = ctx.connect().await?;
    let raw = client
        .call_value(Request::ListRequests(ListRequestsArgs {
            state: (!args.all).then_some(RequestState::Pending),
            kind: Some(RequestKind::Plan),
            task: None,
        }))
        .await?;
    if ctx.json {
        return render::json(&raw);
    }
    let plans: Vec<TeamRequest> = decode(&raw, "list_requests")?;
    if plans.is_empty() {
        if args.all {
            eprintln!("no plans in team '{}' yet", ctx.team);
        } else {
            eprintln!("no plans waiting for your decision (--all shows the decided ones)");
        }
        return Ok(());
    }
    let (_, tasks) = fetch_tasks(&client, None).await?;
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
