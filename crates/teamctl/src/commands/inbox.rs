//! `teamctl inbox`: the lead's unacknowledged messages.

use super::{Ctx, decode};
use crate::cli::InboxArgs;
use crate::render;
use teamboard_protocol::request::NoArgs;
use teamboard_protocol::{Message, Request};

pub async fn run(ctx: &Ctx, args: InboxArgs) -> anyhow::Result<()> {
    let client = ctx.connect().await?;
    let raw = client.call_value(Request::Inbox(NoArgs {})).await?;
    let messages: Vec<Message> = decode(&raw, "inbox")?;
    if ctx.json {
        render::json(&raw)?;
    } else if messages.is_empty() {
        eprintln!("no unread messages");
    } else {
        let mut out = Vec::new();
        for (i, m) in messages.iter().enumerate() {
            if i > 0 {
                out.push(String::new());
            }
            out.extend(render::message_lines(m));
        }
        render::lines(&out)?;
    }
    // Acknowledge only after the messages were shown: delivery is at least once.
    if args.ack && !messages.is_empty() {
        let ids = messages.iter().map(|m| m.id).collect();
        let acked = client.ack(ids).await?;
        if !ctx.json {
            eprintln!(
                "acknowledged {} message{}",
                acked.acked,
                if acked.acked == 1 { "" } else { "s" }
            );
        }
    }
    Ok(())
}
