//! `teamctl task cancel ID [--discard]`: withdraw a task.

use super::{Ctx, print_changed_task};
use crate::cli::TaskCancelArgs;
use teamboard_protocol::Request;
use teamboard_protocol::request::CancelArgs;

pub async fn run(ctx: &Ctx, args: TaskCancelArgs) -> anyhow::Result<()> {
    let client = ctx.connect().await?;
    let raw = client
        .call_value(Request::CancelTask(CancelArgs {
            id: args.id,
            discard: args.discard,
        }))
        .await?;
    print_changed_task(ctx, &client, raw, "cancel_task").await
}
