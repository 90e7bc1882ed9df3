//! The merge queue's one step: land a task whose checks passed.

use super::gate::{conflict_message, off_branch, style};
use super::job::Landed;
use std::path::{Path, PathBuf};
use teamboard_board::{Blocked, Conflict, LandJob, LandRefusal, short};
use teamboard_git::{Land, Repo as Git, Update};
use teamboard_protocol::ErrorCode;

/// How often the target may move under one landing before it gives up. Only
/// someone committing to the target by hand moves it: the queue is the only
/// other writer, and it runs one landing at a time.
const ATTEMPTS: usize = 5;

/// Moves the target to include the task's branch, all or nothing.
pub fn land(job: &LandJob) -> Result<Landed, LandRefusal> {
    let git = Git::open(Path::new(&job.repo.path)).map_err(refuse_git)?;
    let wt = Path::new(&job.worktree.path);
    let target = &job.repo.branch;
    // An update of ours that a killed boardd left half done is ours to abort.
    // Trap: the owner still holds the task and may be resolving a rebase of
    // its own here; `rebase --abort` would throw that work away, so only a
    // marked update is aborted and any other refuses the landing.
    if git.abort_own_update(wt).map_err(refuse_git)? {
        tracing::warn!("aborted an update a previous boardd left in progress");
    }
    let state = git.worktree_state(wt).map_err(refuse_git)?;
    if let Some(what) = state.in_progress() {
        return Err(refuse_git(format!(
            "a {what} that boardd did not start is in progress in the worktree; finish it (or abort it) and complete again"
        )));
    }
    if let Some(message) = off_branch(&state.branch, &job.worktree) {
        return Err(refuse_git(message));
    }
    if let Some(landed) = moved_since_checks(&git, job)? {
        return Ok(landed);
    }
    // Untracked files never land (only the branch does), and checks often
    // leave some behind (caches, reports); a change to a tracked file after the
    // checks is what must not go unchecked.
    if state.changed.len() > state.untracked {
        return Err(refuse_git(format!(
            "files changed in the worktree after its checks passed ({}); complete again so they are checked too",
            state.changed.join(", ")
        )));
    }
    for _ in 0..ATTEMPTS {
        let old = git
            .branch_head(target)
            .map_err(refuse_git)?
            .ok_or_else(|| refuse_git(format!("the target branch '{target}' is gone")))?;
        let checkout = person_checkout(&git, job)?;
        if let Some(dir) = &checkout {
            let task = git
                .branch_head(&job.worktree.branch)
                .map_err(refuse_git)?
                .unwrap_or_else(|| job.head.clone());
            let paths = git
                .checkout_blockers(dir, &old, &task)
                .map_err(refuse_git)?;
            if !paths.is_empty() {
                return Err(blocked(job, dir, paths));
            }
        }
        match git
            .land(
                target,
                &old,
                &job.worktree.branch,
                style(job.repo.merge),
                &job.message,
                checkout.as_deref(),
            )
            .map_err(refuse_git)?
        {
            // Nothing moved now: the work was on the target already. If an
            // earlier landing of ours put it there (boardd killed after git
            // moved the ref), its reflog entry says what the task changed.
            Land::Landed(new) if new == old => {
                let earlier = match &job.worktree.base {
                    Some(base) => git
                        .earlier_landing(target, &job.worktree.branch, base)
                        .map_err(refuse_git)?,
                    None => None,
                };
                return Ok(match earlier {
                    Some((old, new)) => Landed { old, new },
                    None => Landed { old, new },
                });
            }
            Land::Landed(new) => return Ok(Landed { old, new }),
            Land::Moved { .. } => continue,
            Land::Behind => {
                match git
                    .update(wt, target, style(job.repo.merge))
                    .map_err(refuse_git)?
                {
                    Update::Conflict { paths, onto } => {
                        let message = conflict_message(
                            job.task,
                            target,
                            &onto,
                            &job.worktree,
                            job.repo.merge,
                            &paths,
                        );
                        return Err(LandRefusal::conflict(message, Conflict { paths, onto }));
                    }
                    Update::UpToDate | Update::Updated(_) => continue,
                }
            }
        }
    }
    Err(refuse_git(format!(
        "'{target}' kept moving while #{} landed; complete again",
        job.task
    )))
}

/// The working tree where the person keeps the target checked out, if one
/// does: the landing updates it as `receive.denyCurrentBranch=updateInstead`
/// would (`teamboard_git`'s `checkout.rs`). A task's worktree with the target
/// checked out is refused instead: its owner switched it there, and its files
/// are the task's, not the person's.
fn person_checkout(git: &Git, job: &LandJob) -> Result<Option<PathBuf>, LandRefusal> {
    let Some(at) = git.checked_out_in(&job.repo.branch).map_err(refuse_git)? else {
        return Ok(None);
    };
    if at.starts_with(&job.repo.worktrees) {
        return Err(refuse_git(format!(
            "the target branch '{}' is checked out in the task worktree {}; switch that worktree back to its own branch and complete again",
            job.repo.branch,
            at.display()
        )));
    }
    Ok(Some(at))
}

/// The landing waits: the person's checkout has changes in the way.
fn blocked(job: &LandJob, dir: &Path, paths: Vec<String>) -> LandRefusal {
    let checkout = dir.display().to_string();
    let message = format!(
        "{} has {} checked out with changes the landing of #{} would touch ({}); it lands once they are committed or undone",
        checkout,
        job.repo.branch,
        job.task,
        paths.join(", ")
    );
    LandRefusal::blocked(message, Blocked { checkout, paths })
}

/// The branch must still be at the head that passed the checks: a commit
/// made there since (by an owner still at work, or by a check) was checked
/// by nobody, and is refused. The one other head accepted is that of a
/// landing of ours that a killed boardd finished after its own rebase had
/// moved the branch: the work is on the target already, and the target's
/// reflog says where it landed (`Some`, nothing more to do).
fn moved_since_checks(git: &Git, job: &LandJob) -> Result<Option<Landed>, LandRefusal> {
    let branch = &job.worktree.branch;
    let head = git
        .branch_head(branch)
        .map_err(refuse_git)?
        .ok_or_else(|| refuse_git(format!("the task's branch '{branch}' is gone")))?;
    if head == job.head {
        return Ok(None);
    }
    if let Some(base) = &job.worktree.base
        && let Some((old, new)) = git
            .earlier_landing(&job.repo.branch, branch, base)
            .map_err(refuse_git)?
        && git.is_ancestor(&head, &new).map_err(refuse_git)?
    {
        return Ok(Some(Landed { old, new }));
    }
    Err(refuse_git(format!(
        "the branch {branch} moved from {} (which passed the checks) to {} since; complete again so that what lands is checked",
        short(&job.head),
        short(&head)
    )))
}

/// A `git` refusal: what git said, or what boardd found in the repository.
fn refuse_git(why: impl std::fmt::Display) -> LandRefusal {
    LandRefusal::new(ErrorCode::Git, why.to_string())
}
