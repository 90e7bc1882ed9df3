//! `teamctl broadcast TEXT`: message every teammate.

use super::{Ctx, decode};
use crate::cli::BroadcastArgs;
use crate::render;
use teamboard_protocol::request::BroadcastArgs as WireBroadcastArgs;
use teamboard_protocol::{Message, Request};

pub async fn run(ctx: &Ctx, args: BroadcastArgs) -> anyhow::Result<()> {
    if args.text.trim().is_empty() {
        anyhow::bail!("the broadcast is empty, so nothing was sent; give its text as the argument");
    }
    let client = ctx.connect().await?;
    let raw = client
        .call_value(Request::Broadcast(WireBroadcastArgs { content: args.text }))
        .await?;
    if ctx.json {
        return render::json(&raw);
    }
    let sent: Vec<Message> = decode(&raw, "broadcast")?;
    if sent.is_empty() {
        eprintln!(
            "nobody to broadcast to: team '{}' has no teammates",
            ctx.team
        );
        return Ok(());
    }
    let names: Vec<&str> = sent.iter().map(|m| m.to.as_str()).collect();
    render::line(&format!(
        "sent to {} teammate{}: {}",
        sent.len(),
        if sent.len() == 1 { "" } else { "s" },
        names.join(", ")
    ))?;
    Ok(())
}
