//! `teamctl task add`: create a task and print its id.

use super::{Ctx, decode};
use crate::cli::TaskAddArgs;
use crate::render;
use teamboard_protocol::request::NewTask;
use teamboard_protocol::{Request, Task};

pub async fn run(ctx: &Ctx, args: TaskAddArgs) -> anyhow::Result<()> {
    if args.subject.trim().is_empty() {
        anyhow::bail!("a task needs a subject: teamctl task add 'What to do'");
    }
    let client = ctx.connect().await?;
    let raw = client
        .call_value(Request::AddTask(NewTask {
            subject: args.subject,
            description: args.description,
            blocked_by: args.blocked_by,
            priority: args.priority,
            role: args.role.filter(|r| !r.is_empty()),
            require_plan: args.require_plan,
            checks: args.checks,
            no_worktree: args.no_worktree,
        }))
        .await?;
    if ctx.json {
        return render::json(&raw);
    }
    let task: Task = decode(&raw, "add_task")?;
    // Just the id, so that scripts can write `id=$(teamctl task add ...)`.
    render::line(&task.id.to_string())?;
    Ok(())
}
