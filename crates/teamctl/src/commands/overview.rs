//! The state at a glance: `teamctl status` (is boardd running, and what is on each
//! team's board) and `teamctl team` (the roster).

use super::{Ctx, decode, fetch_tasks};
use crate::render;
use teamboard_protocol::request::{ListRequestsArgs, NoArgs};
use teamboard_protocol::{Member, Request, RequestKind, RequestState, ServerStatus, TeamRequest};

pub async fn status(ctx: &Ctx) -> anyhow::Result<()> {
    let client = ctx.connect().await?;
    let request = Request::Status(NoArgs {});
    let Some(s) = ctx.call::<ServerStatus>(&client, request).await? else {
        return Ok(());
    };
    let mut out = vec![
        format!(
            "boardd {} (protocol {}), pid {}, up {}",
            s.version,
            s.protocol,
            s.pid,
            render::duration(s.uptime_ms)
        ),
        format!("socket:    {}", s.socket),
        format!("state dir: {}", s.state_dir),
        format!("sessions:  {}", s.sessions),
        commits_line(&s),
    ];
    if s.teams.is_empty() {
        out.push("teams:     none yet (add a task to start one)".into());
    }
    for t in &s.teams {
        let current = if t.name == ctx.team {
            "  (current)"
        } else {
            ""
        };
        out.push(format!("team {}{current}", t.name));
        out.push(format!(
            "  tasks:    {} pending ({} ready), {} in progress, {} completed, {} failed, {} cancelled",
            t.pending, t.ready, t.in_progress, t.completed, t.failed, t.cancelled
        ));
        out.push(format!(
            "  members:  {} ({} connected)",
            t.members, t.connected
        ));
        out.push(format!(
            "  unread:   {}",
            render::plural(t.unread_messages, "message")
        ));
    }
    render::lines(&out)?;
    Ok(())
}

/// How well group commit is sharing fsyncs: one answer per fsync means every
/// request paid for its own.
fn commits_line(s: &ServerStatus) -> String {
    let c = s.commits;
    if c.transactions == 0 {
        return "commits:   none since start".to_string();
    }
    format!(
        "commits:   {} durable transactions since start, {:.1} answers per fsync",
        render::count(c.transactions),
        c.requests as f64 / c.transactions as f64
    )
}

pub async fn team(ctx: &Ctx) -> anyhow::Result<()> {
    let client = ctx.connect().await?;
    let mut raw = client.call_value(Request::Team(NoArgs {})).await?;
    let shutdowns = client
        .list_requests(ListRequestsArgs {
            state: Some(RequestState::Pending),
            kind: Some(RequestKind::Shutdown),
            task: None,
        })
        .await?;
    if ctx.json {
        with_shutdowns(&mut raw, &shutdowns)?;
        return render::json(&raw);
    }
    let members: Vec<Member> = decode(&raw, "team")?;
    if members.is_empty() {
        render::note(format_args!(
            "no teammates in team '{}' yet (start one with `teamctl spawn NAME --role ROLE`)",
            ctx.team
        ));
        return Ok(());
    }
    let tasks = fetch_tasks(&client).await?;
    let now = render::now_ms();
    render::lines(&render::member_lines(&members, &tasks, &shutdowns, now))?;
    Ok(())
}

/// Adds to each member of boardd's roster the pending shutdown request
/// addressed to it (`shutdown_request`, as `teamctl requests --json` prints a
/// request), which the text lines show too.
fn with_shutdowns(roster: &mut serde_json::Value, shutdowns: &[TeamRequest]) -> anyhow::Result<()> {
    for member in roster.as_array_mut().into_iter().flatten() {
        let name = member["name"].as_str().unwrap_or_default();
        let Some(r) = shutdowns.iter().find(|r| r.is_pending() && r.to == name) else {
            continue;
        };
        let r = serde_json::to_value(r)?;
        if let Some(obj) = member.as_object_mut() {
            obj.insert("shutdown_request".into(), r);
        }
    }
    Ok(())
}
