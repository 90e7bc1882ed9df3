//! The team's repository and its task worktrees: `teamctl repo` (show),
//! `teamctl repo set PATH` (attach one), `teamctl worktrees` (list) and
//! `teamctl worktrees prune` (remove the finished ones).

use super::Ctx;
use crate::cli::{RepoArgs, RepoCommand, RepoSetArgs, WorktreesArgs, WorktreesCommand};
use crate::render;
use anyhow::Context as _;
use teamboard_protocol::request::{NoArgs, PruneArgs, SetRepoArgs};
use teamboard_protocol::{Pruned, Repo, Request, WorktreeEntry};

pub async fn repo(ctx: &Ctx, args: RepoArgs) -> anyhow::Result<()> {
    match args.command {
        None => show(ctx).await,
        Some(RepoCommand::Set(args)) => set(ctx, args).await,
    }
}

async fn show(ctx: &Ctx) -> anyhow::Result<()> {
    let client = ctx.connect().await?;
    // With --json: the repository object, or `null`.
    let request = Request::GetRepo(NoArgs {});
    match ctx.call::<Option<Repo>>(&client, request).await? {
        None => {}
        Some(Some(repo)) => render::lines(&render::repo_lines(&repo, render::now_ms()))?,
        Some(None) => render::note(format_args!(
            "team '{}' has no repository; attach one with `teamctl repo set PATH`",
            ctx.team
        )),
    }
    Ok(())
}

async fn set(ctx: &Ctx, args: RepoSetArgs) -> anyhow::Result<()> {
    // boardd runs elsewhere: a relative path would be read against its directory.
    let absolute = std::path::absolute(&args.path)
        .with_context(|| format!("cannot make {} absolute", args.path.display()))?;
    let path = absolute
        .to_str()
        .with_context(|| {
            format!(
                "{} is not valid UTF-8, which the protocol cannot carry",
                absolute.display()
            )
        })?
        .to_string();
    let client = ctx.connect().await?;
    let request = Request::SetRepo(SetRepoArgs {
        path,
        branch: args.branch.filter(|b| !b.is_empty()),
        merge: args.merge,
        checks: args.checks,
        check_timeout_ms: args.check_timeout.map(|s| s.saturating_mul(1000)),
        review: args.review,
    });
    let Some(repo) = ctx.call::<Repo>(&client, request).await? else {
        return Ok(());
    };
    let mut out = vec![format!(
        "team '{}' works in {} now; each task gets a worktree of its own when it is claimed",
        ctx.team, repo.path
    )];
    out.extend(render::repo_lines(&repo, render::now_ms()));
    render::lines(&out)?;
    Ok(())
}

pub async fn worktrees(ctx: &Ctx, args: WorktreesArgs) -> anyhow::Result<()> {
    let client = ctx.connect().await?;
    if let Some(WorktreesCommand::Prune(args)) = args.command {
        let request = Request::PruneWorktrees(PruneArgs {
            dry_run: args.dry_run,
        });
        if let Some(pruned) = ctx.call::<Pruned>(&client, request).await? {
            render::lines(&render::prune_lines(&pruned, args.dry_run))?;
        }
        return Ok(());
    }
    let request = Request::ListWorktrees(NoArgs {});
    let Some(entries) = ctx.call::<Vec<WorktreeEntry>>(&client, request).await? else {
        return Ok(());
    };
    if entries.is_empty() {
        render::note(format_args!(
            "no worktrees in team '{}' (with a repository, `teamctl repo`, a task gets one \
             when it is first claimed)",
            ctx.team
        ));
        return Ok(());
    }
    render::lines(&render::worktree_table(&entries))?;
    Ok(())
}
