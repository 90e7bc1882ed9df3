//! Looking at a team's worktrees on disk, and removing those whose work is safe.
//!
//! The board says what a task's state allows (`Merged`, `Discarded`, …); the
//! disk may only make a worktree *less* prunable: uncommitted files or commits
//! the target lacks turn `Merged` into `Unmerged`. So nothing with work that is
//! not on the target is ever removed, unless its task was cancelled with
//! `discard`. Whatever is at a worktree's path that is not a directory (a
//! symbolic link, a file) is not boardd's worktree: it is kept, as `missing`.

use super::git_error;
use std::path::Path;
use teamboard_git::Repo as Git;
use teamboard_protocol::{ErrorBody, Pruned, Repo, WorktreeEntry, WorktreeState};

/// Each entry with what the disk says: uncommitted paths, commits the target
/// lacks, size, and the state refined by them.
pub fn list(repo: &Repo, entries: Vec<WorktreeEntry>) -> Result<Vec<WorktreeEntry>, ErrorBody> {
    let git = Git::open(Path::new(&repo.path)).map_err(git_error)?;
    Ok(entries.into_iter().map(|e| look(&git, repo, e)).collect())
}

fn look(git: &Git, repo: &Repo, mut e: WorktreeEntry) -> WorktreeEntry {
    if e.state == WorktreeState::Reserved {
        return e;
    }
    let path = Path::new(&e.worktree.path);
    // Looked at, never followed: git would follow a symbolic link at the
    // path, and removing "the worktree" would delete what it points to.
    let at = std::fs::symlink_metadata(path);
    if at.as_ref().is_ok_and(|m| !m.is_dir()) {
        tracing::warn!(path = %path.display(), "something other than a directory is at a worktree's path; keeping it");
        e.state = WorktreeState::Missing;
        return e;
    }
    if at.is_err() {
        // The directory was removed by hand: what is left is the branch. A
        // discarded task's may go, and so may a landed one's whose commits are
        // all on the target; anything else is kept, as `missing`.
        e.unmerged_commits = git
            .count_commits(&repo.branch, &e.worktree.branch)
            .unwrap_or(u32::MAX);
        let branch_gone = matches!(git.branch_head(&e.worktree.branch), Ok(None));
        let safe = e.state == WorktreeState::Discarded
            || (e.state == WorktreeState::Merged && (e.unmerged_commits == 0 || branch_gone));
        if !safe {
            e.state = WorktreeState::Missing;
        }
        return e;
    }
    e.size = teamboard_git::dir_size(path);
    let state = match git.worktree_state(path) {
        Ok(state) => state,
        Err(err) => {
            // Not a worktree any more (or git cannot read it): never prunable.
            tracing::warn!(path = %path.display(), error = %err, "cannot read a worktree");
            e.state = WorktreeState::Unmerged;
            return e;
        }
    };
    e.uncommitted = state.changed.len() as u32;
    if state.rebasing || state.merging {
        e.uncommitted = e.uncommitted.max(1);
    }
    // What is checked out counts as well as the task's branch. Trap: commits
    // on a detached HEAD are on no branch, so removing the worktree would
    // leave them reachable from nothing.
    let unmerged = |rev: &str| git.count_commits(&repo.branch, rev).unwrap_or(u32::MAX);
    e.unmerged_commits = unmerged(&e.worktree.branch).max(unmerged(&state.head));
    let has_work = e.uncommitted > 0 || e.unmerged_commits > 0;
    if e.state == WorktreeState::Merged && has_work {
        e.state = WorktreeState::Unmerged;
    }
    e
}

/// Removes the worktree and branch of every prunable entry (none with
/// `dry_run`); answers what was removed and what was kept.
pub fn prune(repo: &Repo, entries: Vec<WorktreeEntry>, dry_run: bool) -> Result<Pruned, ErrorBody> {
    let git = Git::open(Path::new(&repo.path)).map_err(git_error)?;
    let mut out = Pruned::default();
    for entry in entries {
        let entry = look(&git, repo, entry);
        if !entry.state.prunable() {
            out.kept.push(entry);
            continue;
        }
        if dry_run {
            out.removed.push(entry);
            continue;
        }
        let path = Path::new(&entry.worktree.path);
        // A discarded task's work goes even if uncommitted: that is what
        // discard means. A merged one is clean, as `look` made sure.
        let force = entry.state == WorktreeState::Discarded;
        let removed = if path.is_dir() {
            git.remove_worktree(path, force)
        } else {
            git.prune()
        };
        let removed = removed.and_then(|()| git.delete_branch(&entry.worktree.branch));
        match removed {
            Ok(()) => out.removed.push(entry),
            Err(err) => {
                tracing::warn!(path = %path.display(), error = %err, "cannot prune a worktree");
                out.kept.push(entry);
            }
        }
    }
    Ok(out)
}
