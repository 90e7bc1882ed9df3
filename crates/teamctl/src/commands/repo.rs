//! `teamctl repo`: show the team's repository; `teamctl repo set PATH`: attach one.

use super::{Ctx, decode};
use crate::cli::{RepoArgs, RepoCommand, RepoSetArgs};
use crate::render;
use anyhow::Context as _;
use teamboard_protocol::request::{NoArgs, SetRepoArgs};
use teamboard_protocol::{Repo, Request};

pub async fn run(ctx: &Ctx, args: RepoArgs) -> anyhow::Result<()> {
    match args.command {
        None => show(ctx).await,
        Some(RepoCommand::Set(args)) => set(ctx, args).await,
    }
}

async fn show(ctx: &Ctx) -> anyhow::Result<()> {
    let client = ctx.connect().await?;
    let raw = client.call_value(Request::GetRepo(NoArgs {})).await?;
    if ctx.json {
        // The repository object, or `null`.
        return render::json(&raw);
    }
    let repo: Option<Repo> = decode(&raw, "get_repo")?;
    match repo {
        Some(repo) => render::lines(&render::repo_lines(&repo, render::now_ms()))?,
        // A note for people, on stderr, so that stdout stays empty for scripts.
        None => eprintln!(
            "team '{}' has no repository; attach one with `teamctl repo set PATH`",
            ctx.team
        ),
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
    let raw = client
        .call_value(Request::SetRepo(SetRepoArgs {
            path,
            branch: args.branch.filter(|b| !b.is_empty()),
            merge: args.merge.map(|m| m.style()),
            checks: args.checks,
            check_timeout_ms: args.check_timeout.map(|s| s.saturating_mul(1000)),
        }))
        .await?;
    if ctx.json {
        return render::json(&raw);
    }
    let repo: Repo = decode(&raw, "set_repo")?;
    let mut out = vec![format!(
        "team '{}' works in {} now; each task gets a worktree of its own when it is claimed",
        ctx.team, repo.path
    )];
    out.extend(render::repo_lines(&repo, render::now_ms()));
    render::lines(&out)?;
    Ok(())
}
