//! `teamctl send TO TEXT`: message one teammate.

use super::{Ctx, decode};
use crate::cli::SendArgs;
use crate::render;
use teamboard_protocol::request::SendArgs as WireSendArgs;
use teamboard_protocol::{Message, Request};

pub async fn run(ctx: &Ctx, args: SendArgs) -> anyhow::Result<()> {
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
    render::line(&format!("sent {} {} to {}", m.kind.as_str(), m.id, m.to))?;
    Ok(())
}
