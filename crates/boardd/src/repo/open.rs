//! Creating a task's worktree, or reopening it for a new owner.

use super::git_error;
use super::job::Opened;
use std::path::Path;
use teamboard_board::OpenJob;
use teamboard_git::{Created, Repo as Git};
use teamboard_protocol::{ErrorBody, Found};

/// The most uncommitted paths an opening lists.
const MAX_LISTED: usize = 100;

/// Creates the worktree from the target's head, or finds it there, and says
/// what a previous owner left in it.
pub fn open(job: &OpenJob) -> Result<Opened, ErrorBody> {
    let git = Git::open(Path::new(&job.repo.path)).map_err(git_error)?;
    let target = &job.repo.branch;
    let head = git.branch_head(target).map_err(git_error)?;
    let head = head.ok_or_else(|| {
        git_error(format!(
            "the target branch '{target}' of {} is gone",
            job.repo.path
        ))
    })?;
    let path = Path::new(&job.worktree.path);
    let created = git
        .add_worktree(path, &job.worktree.branch, &head)
        .map_err(git_error)?;
    if created == Created::Fresh && job.worktree.base.is_none() {
        return Ok(Opened {
            base: head,
            fresh: true,
            found: Found::default(),
        });
    }
    // The new owner finds its predecessor's work, not a half-done update of
    // ours (boardd killed while a gate rebased the branch).
    if git.abort_own_update(path).map_err(git_error)? {
        tracing::warn!("aborted an update a previous boardd left in progress");
    }
    let state = git.worktree_state(path).map_err(git_error)?;
    let base = job.worktree.base.clone().unwrap_or(head);
    let commits = git.count_commits(&base, &state.head).unwrap_or(0);
    let more_changed = state.changed.len() > MAX_LISTED;
    let in_progress = state.in_progress().map(str::to_string);
    let mut changed = state.changed;
    changed.truncate(MAX_LISTED);
    Ok(Opened {
        base,
        fresh: false,
        found: Found {
            commits,
            changed,
            more_changed,
            in_progress,
        },
    })
}
