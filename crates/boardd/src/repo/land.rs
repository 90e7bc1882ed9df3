//! The merge queue's one step: land a task whose checks passed.

use super::gate::{conflict_message, style};
use super::job::Landed;
use super::validate::checked_out;
use std::path::Path;
use teamboard_board::{LandJob, LandRefusal};
use teamboard_git::{GitError, Land, Repo as Git, Update};
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
    // The task is queued, so its owner is not working here: a rebase or merge
    // in progress is an update of ours that a killed boardd left half done.
    if git.abort_in_progress(wt).map_err(refuse_git)? {
        tracing::warn!("aborted an update a previous boardd left in progress");
    }
    let state = git.worktree_state(wt).map_err(refuse_git)?;
    if !state.changed.is_empty() {
        return Err(LandRefusal {
            code: ErrorCode::Git,
            message: format!(
                "files changed in the worktree after its checks passed ({}); complete again so they are checked too",
                state.changed.join(", ")
            ),
        });
    }
    for _ in 0..ATTEMPTS {
        let old = git
            .branch_head(target)
            .map_err(refuse_git)?
            .ok_or_else(|| LandRefusal {
                code: ErrorCode::Git,
                message: format!("the target branch '{target}' is gone"),
            })?;
        if let Some(at) = git.checked_out_in(target).map_err(refuse_git)? {
            let e = checked_out(target, &at);
            return Err(LandRefusal {
                code: e.code,
                message: e.message,
            });
        }
        match git
            .land(
                target,
                &old,
                &job.worktree.branch,
                style(job.repo.merge),
                &job.message,
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
                    Update::Conflict { paths } => {
                        return Err(LandRefusal {
                            code: ErrorCode::MergeConflict,
                            message: conflict_message(target, job.repo.merge, &paths),
                        });
                    }
                    Update::UpToDate | Update::Updated(_) => continue,
                }
            }
        }
    }
    Err(LandRefusal {
        code: ErrorCode::Git,
        message: format!(
            "'{target}' kept moving while #{} landed; complete again",
            job.task
        ),
    })
}

fn refuse_git(e: GitError) -> LandRefusal {
    LandRefusal {
        code: ErrorCode::Git,
        message: e.to_string(),
    }
}
