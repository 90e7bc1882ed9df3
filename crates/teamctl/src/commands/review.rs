//! Review before merge: `teamctl review` (what waits), `teamctl merge ID` (land
//! it) and `teamctl send-back ID --feedback TEXT` (return it to its owner).
//! boardd decides and refuses; these print its answers.

use super::Ctx;
use crate::cli::SendBackArgs;
use crate::render;
use teamboard_protocol::request::{ListTasksArgs, SendBackArgs as Args, TaskRef};
use teamboard_protocol::{LandingStage, Request, Task, TaskId};

pub async fn list(ctx: &Ctx) -> anyhow::Result<()> {
    let client = ctx.connect().await?;
    let request = Request::ListTasks(ListTasksArgs {
        status: None,
        landing: Some(LandingStage::Review),
    });
    let Some(tasks) = ctx.call::<Vec<Task>>(&client, request).await? else {
        return Ok(());
    };
    if tasks.is_empty() {
        render::note(format_args!(
            "nothing waits for review in team '{}' (work waits here with `teamctl repo set \
             --review` or `teamctl task add --review`)",
            ctx.team
        ));
        return Ok(());
    }
    render::lines(&render::review_table(&tasks, render::now_ms()))?;
    Ok(())
}

pub async fn merge(ctx: &Ctx, id: TaskId) -> anyhow::Result<()> {
    let client = ctx.connect().await?;
    let request = Request::MergeTask(TaskRef { id });
    if let Some(task) = ctx.call::<Task>(&client, request).await? {
        render::line(&render::merged_line(&task))?;
    }
    Ok(())
}

pub async fn send_back(ctx: &Ctx, args: SendBackArgs) -> anyhow::Result<()> {
    let client = ctx.connect().await?;
    let request = Request::SendBack(Args {
        id: args.id,
        feedback: args.feedback,
    });
    if let Some(task) = ctx.call::<Task>(&client, request).await? {
        render::line(&render::sent_back_line(&task))?;
    }
    Ok(())
}
