//! `teamctl status`: is boardd running, and what is on each team's board.

use super::{Ctx, decode};
use crate::render;
use teamboard_protocol::request::NoArgs;
use teamboard_protocol::{Request, ServerStatus};

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

pub async fn run(ctx: &Ctx) -> anyhow::Result<()> {
    let client = ctx.connect().await?;
    let raw = client.call_value(Request::Status(NoArgs {})).await?;
    if ctx.json {
        return render::json(&raw);
    }
    let s: ServerStatus = decode(&raw, "status")?;
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
            "  unread:   {} message{}",
            t.unread_messages,
            if t.unread_messages == 1 { "" } else { "s" }
        ));
    }
    render::lines(&out)?;
    Ok(())
}
