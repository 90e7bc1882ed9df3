//! The demo's git repository: the person makes the backend a repository and
//! attaches it to the team before asking the lead, and at the end the demo checks
//! what it claims (with git), shows the target branch's history and tidies the
//! merged worktrees away.
//!
//! Git runs as the `git` command line, as a person would run it. boardd creates
//! the worktrees, commits the teammates' work and moves the target branch; the
//! demo only reads what it did.

use super::{Demo, script};
use anyhow::{Context, bail};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Stdio;
use teamboard_protocol::{CheckOutcome, CheckRun, Task, TaskId};

/// The identity of the repository's first commit, and the committer of the
/// commits boardd makes in it (the teammates are their authors).
const NAME: &str = "Demo Person";
const EMAIL: &str = "person@demo.invalid";

/// The history the demo ends with.
const LOG: [&str; 5] = ["log", "--graph", "--oneline", "--decorate", script::BRANCH];

impl Demo {
    /// Makes the working directory a repository whose target branch holds the
    /// backend and is checked out nowhere, then attaches it with `teamctl repo set`.
    pub(super) async fn attach_repo(&self) -> anyhow::Result<()> {
        let work = Path::new(&self.work);
        let branch = script::BRANCH;
        let head = format!("refs/heads/{branch}");
        println!(
            "\nThe person makes {} a git repository and attaches it to the team:",
            self.work
        );
        // `git init -b` needs git 2.28; boardd accepts 2.25, and so does the demo.
        println!("$ git init -q && git symbolic-ref HEAD {head}");
        git(work, &["init", "-q"]).await?;
        git(work, &["symbolic-ref", "HEAD", &head]).await?;
        println!("$ git config user.name '{NAME}' && git config user.email {EMAIL}");
        git(work, &["config", "user.name", NAME]).await?;
        git(work, &["config", "user.email", EMAIL]).await?;
        // Not shown, as it is no step of the person's: a global commit.gpgsign
        // would make every commit of the demo (boardd's too) ask for a key.
        git(work, &["config", "commit.gpgsign", "false"]).await?;
        println!(
            "$ git add backend/app.py && git commit -q -m '{}'",
            script::FIRST_COMMIT
        );
        git(work, &["add", "backend/app.py"]).await?;
        git(work, &["commit", "-q", "-m", script::FIRST_COMMIT]).await?;
        println!(
            "$ git switch -q --detach    ({branch} is checked out nowhere: boardd moves it \
             as work lands)"
        );
        git(work, &["switch", "-q", "--detach"]).await?;

        println!("$ teamctl repo set {} --branch {branch}", self.work);
        let out = self
            .teamctl(&["repo", "set", &self.work, "--branch", branch])
            .await?;
        for line in String::from_utf8_lossy(&out).lines() {
            println!("  {line}");
        }
        Ok(())
    }

    /// Checks, with git, what the demo tells: every task landed on the target,
    /// each started from a commit that holds its blockers' landed work, and each
    /// check passed before its task landed. Prints what it checked. A demo that
    /// regressed fails here (in CI) instead of telling a wrong story.
    pub(super) async fn verify(&self, tasks: &[Task]) -> anyhow::Result<()> {
        let work = Path::new(&self.work);
        let branch = script::BRANCH;
        let by_id: BTreeMap<TaskId, &Task> = tasks.iter().map(|t| (t.id, t)).collect();
        let name = |id: TaskId| match by_id.get(&id) {
            Some(t) => format!("#{id} {}", t.subject),
            None => format!("#{id}"),
        };
        let mut lines = Vec::new();
        for t in tasks {
            let me = name(t.id);
            let w = t
                .worktree
                .as_ref()
                .with_context(|| format!("{me} never had a worktree"))?;
            let merged = w.merged.as_deref();
            let merged = merged.with_context(|| format!("{me} completed but did not land"))?;
            if !is_ancestor(work, merged, branch).await? {
                bail!("{me} landed as {merged}, which {branch} does not hold");
            }
            if !t.blocked_by.is_empty() {
                let base = w
                    .base
                    .as_deref()
                    .with_context(|| format!("{me} has no base commit"))?;
                for b in &t.blocked_by {
                    let landed = by_id
                        .get(b)
                        .and_then(|b| b.worktree.as_ref()?.merged.as_deref());
                    let landed = landed.with_context(|| format!("{} did not land", name(*b)))?;
                    if !is_ancestor(work, landed, base).await? {
                        let (base, b) = (short(base), name(*b));
                        bail!("{me} started from {base}, which lacks the work of {b}");
                    }
                }
                let blockers: Vec<String> = t.blocked_by.iter().map(|b| name(*b)).collect();
                let (base, blockers) = (short(base), blockers.join(" and "));
                lines.push(format!(
                    "  {me} started from {branch} at {base}, which holds {blockers}"
                ));
            }
            for check in &t.checks {
                let passed =
                    |r: &&CheckRun| &r.command == check && r.outcome == CheckOutcome::Passed;
                let run = t.check_runs.iter().find(passed);
                let run = run.with_context(|| format!("{me} landed without passing `{check}`"))?;
                let at = short(&run.commit);
                lines.push(format!(
                    "  {me} passed `{check}` in its worktree at {at} before it landed"
                ));
            }
        }
        println!(
            "\nChecked with git: all {} tasks landed on {branch}, each in its own worktree;",
            tasks.len()
        );
        for line in lines {
            println!("{line}");
        }
        Ok(())
    }

    /// Prints the target branch's history: a commit per task, in the order the
    /// merge queue landed them, on top of the first commit.
    pub(super) async fn show_log(&self) -> anyhow::Result<()> {
        println!(
            "\nThe team's work on {}, one commit per task in the order the merge queue \
             landed them:\n$ git {}",
            script::BRANCH,
            LOG.join(" ")
        );
        let log = git(Path::new(&self.work), &LOG).await?;
        for line in log.lines() {
            println!("  {line}");
        }
        Ok(())
    }

    /// Removes the worktrees whose work landed, with `teamctl worktrees prune`.
    pub(super) async fn prune(&self) -> anyhow::Result<()> {
        println!("\nTidying up the landed worktrees:\n$ teamctl worktrees prune");
        let out = self.teamctl(&["worktrees", "prune"]).await?;
        for line in String::from_utf8_lossy(&out).lines() {
            println!("  {line}");
        }
        Ok(())
    }
}

/// A commit id as people read it.
fn short(oid: &str) -> &str {
    oid.get(..7).unwrap_or(oid)
}

/// Whether commit `a` is `b` or one of its ancestors.
async fn is_ancestor(dir: &Path, a: &str, b: &str) -> anyhow::Result<bool> {
    let status = command(dir, &["merge-base", "--is-ancestor", a, b])
        .status()
        .await
        .context("cannot run git; the demo needs it on the PATH")?;
    match status.code() {
        Some(0) => Ok(true),
        Some(1) => Ok(false),
        _ => bail!("`git merge-base --is-ancestor {a} {b}` failed ({status})"),
    }
}

/// Runs git in `dir` and returns its output. The variables that would point git
/// at another repository (set when the demo runs from a git hook) are dropped.
async fn git(dir: &Path, args: &[&str]) -> anyhow::Result<String> {
    let out = command(dir, args)
        .output()
        .await
        .context("cannot run git; the demo needs it on the PATH")?;
    if !out.status.success() {
        bail!(
            "`git {}` failed ({}): {}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn command(dir: &Path, args: &[&str]) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new("git");
    cmd.arg("-C")
        .arg(dir)
        .args(args)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .stdin(Stdio::null())
        .kill_on_drop(true);
    cmd
}
