//! `teamctl task cancel ID`: withdraw a task.

use super::{Ctx, print_changed_task};
use crate::cli::TaskIdArg;
use teamboard_protocol::Request;
use teamboard_protocol::request::TaskRef;

pub async fn run(ctx: &Ctx, args: TaskIdArg) -> anyhow::Result<()> {
    let client = ctx.connect().await?;
    let raw = client
        .call_value(Request::CancelTask(TaskRef { id: args.id }))
        .await?;
    print_changed_task(ctx, &client, raw, "cancel_task").await
}
