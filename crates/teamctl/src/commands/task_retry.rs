//! `teamctl task retry ID`: put a failed or cancelled task back to pending.

use super::{Ctx, print_changed_task};
use crate::cli::TaskIdArg;
use teamboard_protocol::Request;
use teamboard_protocol::request::TaskRef;

pub async fn run(ctx: &Ctx, args: TaskIdArg) -> anyhow::Result<()> {
    let client = ctx.connect().await?;
    let raw = client
        .call_value(Request::RetryTask(TaskRef { id: args.id }))
        .await?;
    print_changed_task(ctx, &client, raw, "retry_task").await
}
