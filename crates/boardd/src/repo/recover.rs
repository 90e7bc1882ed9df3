//! After a restart: undoing the update a killed boardd's gate left half done.

use std::path::Path;
use teamboard_board::RecoverJob;
use teamboard_git::Repo as Git;

/// Aborts a rebase or merge left in progress in the worktree of a task whose
/// gate the restart interrupted. The gate committed the owner's work before
/// it started the update, so the abort puts the branch and the files back at
/// that commit: nothing of the owner's is lost. Failures are only logged: the
/// owner then finds the update in progress when it opens the worktree.
pub fn recover(job: &RecoverJob) {
    let wt = Path::new(&job.worktree.path);
    if !wt.is_dir() {
        return;
    }
    let aborted = Git::open(Path::new(&job.repo.path)).and_then(|git| git.abort_in_progress(wt));
    match aborted {
        Ok(true) => tracing::warn!(
            task = job.task,
            "aborted the update a killed boardd left in progress in the worktree"
        ),
        Ok(false) => {}
        Err(e) => tracing::warn!(task = job.task, error = %e, "cannot recover the worktree"),
    }
}
