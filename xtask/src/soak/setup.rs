//! The soak's repository and task graph.

use super::git;
use super::lead::Lead;
use super::plan::{Planned, TARGET, shared_file};
use anyhow::Context;
use std::path::Path;
use teamboard_protocol::request::{NewTask, SetRepoArgs};

/// A repository at `path` with one commit on `main`, whose working tree is
/// detached so that `main` is checked out nowhere (boardd moves it by ref).
/// Answers the initial commit.
pub fn repository(path: &Path, shared_files: usize) -> anyhow::Result<String> {
    std::fs::create_dir_all(path.join("shared"))?;
    std::fs::create_dir_all(path.join("tasks"))?;
    git::run(path, &["init", "-q", "-b", TARGET])?;
    git::run(path, &["config", "user.name", "soak"])?;
    git::run(path, &["config", "user.email", "soak@soak.invalid"])?;
    let readme = "A repository for `cargo xtask soak-git`.\n";
    std::fs::write(path.join("README.md"), readme)?;
    std::fs::write(path.join("tasks/README"), "One file per task.\n")?;
    for k in 1..=shared_files {
        let text = format!("shared file {k}: every task that names it appends here\n");
        std::fs::write(path.join(shared_file(k)), text)?;
    }
    git::run(path, &["add", "-A"])?;
    git::run(path, &["commit", "-q", "-m", "initial"])?;
    git::run(path, &["switch", "-q", "--detach", TARGET])?;
    git::line(path, &["rev-parse", "refs/heads/main"])
}

/// Attaches the repository and adds the tasks in plan order; answers their
/// ids, by plan number - 1.
pub async fn board(lead: &mut Lead, repo: &Path, plan: &[Planned]) -> anyhow::Result<Vec<u64>> {
    let args = SetRepoArgs {
        path: repo.display().to_string(),
        branch: Some(TARGET.into()),
        merge: None,
        checks: Vec::new(),
        check_timeout_ms: Some(60_000),
        review: false,
    };
    let set = lead.call(|c| Box::pin(c.set_repo(args.clone()))).await;
    set.context("set_repo")?;
    let mut ids: Vec<u64> = Vec::with_capacity(plan.len());
    for p in plan {
        let task = NewTask {
            subject: p.subject.clone(),
            description: p.description.clone(),
            blocked_by: p.blocked_by.iter().map(|b| ids[b - 1]).collect(),
            checks: p.checks.clone(),
            ..NewTask::default()
        };
        let added = lead.call(|c| Box::pin(c.add_task(task.clone()))).await;
        ids.push(added.with_context(|| format!("add_task {}", p.subject))?.id);
    }
    Ok(ids)
}
