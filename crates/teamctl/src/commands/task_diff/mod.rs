//! `teamctl task diff ID`: what a task changed, shown by git run here. Which diff
//! that is, is decided in `teamboard_web::task_diff` (the web page shows the same);
//! this shows it in the person's terminal, paged as their git is configured.

mod git;

use super::{Ctx, within};
use crate::cli::TaskDiffArgs;
use crate::render;
use teamboard_protocol::{Repo, Task, TaskId};
use teamboard_web::task_diff::git::{merge_base, untracked};
use teamboard_web::task_diff::{Diff, plan};

pub async fn run(ctx: &Ctx, args: TaskDiffArgs) -> anyhow::Result<()> {
    if ctx.json {
        anyhow::bail!(
            "task diff prints git's output and has no JSON form; the worktree, branch and \
             commits are in `teamctl task show {} --json | jq .worktree`",
            args.id
        );
    }
    // Only boardd's part runs under --timeout: git may page, and a pager waits for
    // the person (`commands::run` leaves this command's timing to it).
    let (task, repo) = within(ctx.timeout(), fetch(ctx, args.id)).await?;
    let diff = plan(
        &task,
        repo.as_ref(),
        |dir| dir.is_dir(),
        teamboard_web::task_diff::git::branch_exists,
    )?;
    // What `git diff` prints: the patch, or with a flag the counts or the names.
    let format = [(args.stat, "--stat"), (args.name_only, "--name-only")]
        .into_iter()
        .find_map(|(given, flag)| given.then_some(flag));
    // Ctrl-C reaches git and its pager too: teamctl must outlive them, or the shell
    // would take the terminal back while the pager still draws on it. A handler
    // (unlike an ignored signal) is reset in the children, so git still stops.
    let _outlive = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())?;
    match diff {
        Diff::Landed { repo, from, to } => git::show_diff(&repo, &[from, to], format),
        Diff::Passed { repo, target, head } => {
            git::show_diff(&repo, &[format!("refs/heads/{target}...{head}")], format)
        }
        Diff::Worktree { dir, target } => {
            let base = merge_base(&dir, &format!("refs/heads/{target}"))?;
            git::show_diff(&dir, &[base], format)?;
            let untracked = untracked(&dir)?;
            if !untracked.is_empty() {
                let mut out = vec![
                    String::new(),
                    "untracked files (not in the diff above; completing commits them):".into(),
                ];
                out.extend(untracked.iter().map(|p| format!("  {p}")));
                render::lines(&out)?;
            }
            Ok(())
        }
        Diff::Branch {
            repo,
            target,
            branch,
        } => git::show_diff(
            &repo,
            &[format!("refs/heads/{target}...refs/heads/{branch}")],
            format,
        ),
    }
}

/// The task and the team's repository, from boardd.
async fn fetch(ctx: &Ctx, id: TaskId) -> anyhow::Result<(Task, Option<Repo>)> {
    let client = ctx.connect().await?;
    let task = client.get_task(id).await?.task;
    let repo = client.get_repo().await?;
    Ok((task, repo))
}
