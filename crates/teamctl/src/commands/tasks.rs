//! `teamctl tasks`: the board, one line per task.

use super::{Ctx, fetch_tasks};
use crate::cli::TasksArgs;
use crate::render;

pub async fn run(ctx: &Ctx, args: TasksArgs) -> anyhow::Result<()> {
    let client = ctx.connect().await?;
    if ctx.json {
        // Exactly what boardd returned, filtered by boardd.
        let (raw, _) = fetch_tasks(&client, args.status).await?;
        return render::json(&raw);
    }
    // Open blockers need every task's status, so fetch the whole board and filter here.
    let (_, all) = fetch_tasks(&client, None).await?;
    let board = render::Board::new(&all);
    let shown: Vec<_> = all
        .iter()
        .filter(|t| args.status.is_none_or(|s| t.status == s))
        .cloned()
        .collect();
    if shown.is_empty() {
        // A note for people, on stderr, so that stdout stays empty for scripts.
        match args.status {
            Some(s) => eprintln!("no {} tasks in team '{}'", render::status_word(s), ctx.team),
            None => eprintln!(
                "no tasks in team '{}' yet (add one with `teamctl task add SUBJECT`)",
                ctx.team
            ),
        }
        return Ok(());
    }
    render::lines(&render::task_lines(&shown, &board))?;
    Ok(())
}
