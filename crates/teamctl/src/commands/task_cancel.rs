//! `teamctl task cancel ID`: withdraw a task.

use super::{Ctx, print_changed_task};
use crate::cli::TaskIdArg;
use teamboard_protocol::Request;
use teamboard_protocol::request::CancelArgs;

pub async fn run(ctx: &Ctx, args: TaskIdArg) -> anyhow::Result<()> {
    let client = ctx.connect().await?;
    let raw = client
        .call_value(Request::CancelTask(CancelArgs {
            id: args.id,
            discard: false,
        }))
        .await?;
    print_changed_task(ctx, &client, raw, "cancel_task").await
}
