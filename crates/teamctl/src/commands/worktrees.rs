//! `teamctl worktrees`: the team's task worktrees; `teamctl worktrees prune`:
//! remove the finished ones.

use super::{Ctx, decode};
use crate::cli::{PruneArgs, WorktreesArgs, WorktreesCommand};
use crate::render;
use teamboard_protocol::request::{NoArgs, PruneArgs as WirePruneArgs};
use teamboard_protocol::{Pruned, Request, WorktreeEntry};

pub async fn run(ctx: &Ctx, args: WorktreesArgs) -> anyhow::Result<()> {
    match args.command {
        None => list(ctx).await,
        Some(WorktreesCommand::Prune(args)) => prune(ctx, args).await,
    }
}

async fn list(ctx: &Ctx) -> anyhow::Result<()> {
    let client = ctx.connect().await?;
    let raw = client.call_value(Request::ListWorktrees(NoArgs {})).await?;
    if ctx.json {
        return render::json(&raw);
    }
    let entries: Vec<WorktreeEntry> = decode(&raw, "list_worktrees")?;
    if entries.is_empty() {
        // A note for people, on stderr, so that stdout stays empty for scripts.
        eprintln!(
            "no worktrees in team '{}' (with a repository, `teamctl repo`, a task gets one \
             when it is first claimed)",
            ctx.team
        );
        return Ok(());
    }
    render::lines(&render::worktree_table(&entries))?;
    Ok(())
}

async fn prune(ctx: &Ctx, args: PruneArgs) -> anyhow::Result<()> {
    let client = ctx.connect().await?;
    let raw = client
        .call_value(Request::PruneWorktrees(WirePruneArgs {
            dry_run: args.dry_run,
        }))
        .await?;
    if ctx.json {
        return render::json(&raw);
    }
    let pruned: Pruned = decode(&raw, "prune_worktrees")?;
    render::lines(&render::prune_lines(&pruned, args.dry_run))?;
    Ok(())
}
