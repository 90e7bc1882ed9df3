//! `teamctl team`: the roster.

use super::{Ctx, decode, fetch_tasks};
use crate::render;
use teamboard_protocol::request::{ListRequestsArgs, NoArgs};
use teamboard_protocol::{Member, Request, RequestKind, RequestState};

pub async fn run(ctx: &Ctx) -> anyhow::Result<()> {
    let client = ctx.connect().await?;
    let raw = client.call_value(Request::Team(NoArgs {})).await?;
    if ctx.json {
        return render::json(&raw);
    }
    let members: Vec<Member> = decode(&raw, "team")?;
    if members.is_empty() {
        eprintln!(
            "no teammates in team '{}' yet (start one with `teamctl spawn NAME --role ROLE`)",
            ctx.team
        );
        return Ok(());
    }
    let (_, tasks) = fetch_tasks(&client, None).await?;
    let shutdowns = client
        .list_requests(ListRequestsArgs {
            state: Some(RequestState::Pending),
            kind: Some(RequestKind::Shutdown),
            task: None,
        })
        .await?;
    render::lines(&render::member_lines(
        &members,
        &tasks,
        &shutdowns,
        render::now_ms(),
    ))?;
    Ok(())
}
