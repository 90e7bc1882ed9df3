//! `teamctl requests`: the team's shutdown and plan requests.

use super::{Ctx, decode};
use crate::cli::RequestsArgs;
use crate::render;
use teamboard_protocol::request::ListRequestsArgs;
use teamboard_protocol::{Request, RequestState, TeamRequest};

pub async fn run(ctx: &Ctx, args: RequestsArgs) -> anyhow::Result<()> {
    let client = ctx.connect().await?;
    let raw = client
        .call_value(Request::ListRequests(ListRequestsArgs {
            state: (!args.all).then_some(RequestState::Pending),
            kind: args.kind,
            task: None,
        }))
        .await?;
    if ctx.json {
        // boardd's answer is already the array of request objects.
        return render::json(&raw);
    }
    let requests: Vec<TeamRequest> = decode(&raw, "list_requests")?;
    if requests.is_empty() {
        let what = args.kind.map_or("", <&str>::from);
        let space = if what.is_empty() { "" } else { " " };
        if args.all {
            eprintln!("no {what}{space}requests in team '{}'", ctx.team);
        } else {
            eprintln!(
                "no open {what}{space}requests in team '{}' (--all shows the settled ones)",
                ctx.team
            );
        }
        return Ok(());
    }
    let now = render::now_ms();
    let lines: Vec<String> = requests
        .iter()
        .map(|r| render::request_line(r, now))
        .collect();
    render::lines(&lines)?;
    Ok(())
}
