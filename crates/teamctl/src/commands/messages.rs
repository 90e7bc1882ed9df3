//! Messages: `teamctl send TO TEXT` (one teammate), `teamctl broadcast TEXT`
//! (every teammate) and `teamctl inbox` (the lead's unacknowledged messages).

use super::{Ctx, decode};
use crate::cli::{BroadcastArgs, InboxArgs, SendArgs};
use crate::render;
use teamboard_protocol::request::{BroadcastArgs as WireBroadcastArgs, NoArgs, SendArgs as Wire};
use teamboard_protocol::{Message, MessageKind, Request};

pub async fn send(ctx: &Ctx, args: SendArgs) -> anyhow::Result<()> {
    // Other kinds say what they mean by their kind (an idle notification needs no
    // text); a plain message with no text is almost surely a slip of the shell.
    if args.kind == MessageKind::Message && args.text.trim().is_empty() {
        anyhow::bail!(
            "the message to {} is empty, so nothing was sent; give its text as the second argument",
            args.to
        );
    }
    let client = ctx.connect().await?;
    let request = Request::Send(Wire {
        to: args.to,
        kind: args.kind,
        content: args.text,
        request_id: args.request_id,
    });
    if let Some(m) = ctx.call::<Message>(&client, request).await? {
        render::line(&format!("sent {} {} to {}", m.kind, m.id, m.to))?;
    }
    Ok(())
}

pub async fn broadcast(ctx: &Ctx, args: BroadcastArgs) -> anyhow::Result<()> {
    if args.text.trim().is_empty() {
        anyhow::bail!("the broadcast is empty, so nothing was sent; give its text as the argument");
    }
    let client = ctx.connect().await?;
    let request = Request::Broadcast(WireBroadcastArgs { content: args.text });
    let Some(sent) = ctx.call::<Vec<Message>>(&client, request).await? else {
        return Ok(());
    };
    if sent.is_empty() {
        render::note(format_args!(
            "nobody to broadcast to: team '{}' has no teammates",
            ctx.team
        ));
        return Ok(());
    }
    let names: Vec<&str> = sent.iter().map(|m| m.to.as_str()).collect();
    render::line(&format!(
        "sent to {}: {}",
        render::plural(sent.len() as u64, "teammate"),
        names.join(", ")
    ))?;
    Ok(())
}

pub async fn inbox(ctx: &Ctx, args: InboxArgs) -> anyhow::Result<()> {
    let client = ctx.connect().await?;
    let raw = client.call_value(Request::Inbox(NoArgs {})).await?;
    let messages: Vec<Message> = decode(&raw, "inbox")?;
    if ctx.json {
        render::json(&raw)?;
    } else if messages.is_empty() {
        render::note("no unread messages");
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
        let acked = client.ack(messages.iter().map(|m| m.id).collect()).await?;
        if !ctx.json {
            render::note(format_args!(
                "acknowledged {}",
                render::plural(acked.acked, "message")
            ));
        }
    }
    Ok(())
}
