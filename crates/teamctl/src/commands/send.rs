//! `teamctl send TO TEXT`: message one teammate.

use super::{Ctx, decode};
use crate::cli::SendArgs;
use crate::render;
use teamboard_protocol::request::SendArgs as WireSendArgs;
use teamboard_protocol::{Message, MessageKind, Request};

pub async fn run(ctx: &Ctx, args: SendArgs) -> anyhow::Result<()> {
    // Other kinds say what they mean by their kind (an idle notification needs no
    // text); a plain message with no text is almost surely a slip of the shell.
    if args.kind == MessageKind::Message && args.text.trim().is_empty() {
        anyhow::bail!(
            "the message to {} is empty, so nothing was sent; give its text as the second argument",
            args.to
        );
    }
    let client = ctx.connect().await?;
    let raw = client
        .call_value(Request::Send(WireSendArgs {
            to: args.to,
            kind: args.kind,
            content: args.text,
            request_id: args.request_id,
        }))
        .await?;
    if ctx.json {
        return render::json(&raw);
    }
    let m: Message = decode(&raw, "send")?;
    render::line(&format!("sent {} {} to {}", m.kind, m.id, m.to))?;
    Ok(())
}
