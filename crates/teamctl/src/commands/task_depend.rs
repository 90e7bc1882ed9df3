//! `teamctl task depend ID --on ID...`: make a task wait for others.

use super::{Ctx, print_changed_task};
use crate::cli::TaskDependArgs;
use teamboard_protocol::Request;
use teamboard_protocol::request::AddDependencyArgs;

pub async fn run(ctx: &Ctx, args: TaskDependArgs) -> anyhow::Result<()> {
    if args.on.contains(&args.id) {
        anyhow::bail!("#{} cannot wait for itself", args.id);
    }
    let client = ctx.connect().await?;
    let raw = client
        .call_value(Request::AddDependency(AddDependencyArgs {
            id: args.id,
            on: args.on,
        }))
        .await?;
    print_changed_task(ctx, &client, raw, "add_dependency").await
}
