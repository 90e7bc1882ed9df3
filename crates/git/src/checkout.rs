//! Landing on a target branch that a person keeps checked out: what git's
//! `receive.denyCurrentBranch=updateInstead` does for a push into a checked-out
//! branch, done by the queue itself.
//!
//! A clean checkout follows the branch: its files move from the old head to the
//! new one, then the branch moves. A checkout with changes git would have to
//! touch (or lose) stops the landing, and the caller waits until it is clean.
//!
//! Alternatives that lost:
//! - *Pushing into the repository* with `receive.denyCurrentBranch=updateInstead`
//!   given to `receive-pack`: git does the same two steps, but its refusal says
//!   only "Working directory has unstaged changes", naming no file, and its ref
//!   update is logged as "push", which hides the landing from the reflog entry
//!   a restarted queue reads (`Repo::earlier_landing`).
//! - *`git merge --ff-only` in the checkout*: a fast-forward only, while the
//!   merge style lands a merge commit that is made without any checkout; and it
//!   moves the branch with its own reflog message too.
//!
//! So this does the two steps `updateInstead` does: `git read-tree -u -m OLD NEW`
//! in the checkout (which itself refuses to touch a file that differs from OLD,
//! the safety net under the check made before), then the ref's compare-and-swap
//! (`Repo::land`).

use crate::cmd::git;
use crate::error::GitError;
use crate::state::{in_progress, status};
use crate::{Repo, names};
use std::collections::BTreeSet;
use std::path::Path;

impl Repo {
    /// What stops the checkout at `dir` from following its branch from `old` to
    /// `new`: the paths with uncommitted changes to tracked files, untracked
    /// files the move would overwrite, or the merge or rebase in progress
    /// there. Empty when it can follow.
    ///
    /// Trap: a queue killed between moving the files and moving the ref leaves
    /// the checkout holding exactly `new` while its branch is still at `old`,
    /// which reads as changes to every file the task touched. That checkout is
    /// not blocked: its index and files are `new` already.
    pub fn checkout_blockers(
        &self,
        dir: &Path,
        old: &str,
        new: &str,
    ) -> Result<Vec<String>, GitError> {
        names::check(old)?;
        names::check(new)?;
        if let Some(what) = in_progress(dir)?.what() {
            return Ok(vec![format!("(a {what} in progress)")]);
        }
        let entries = status(dir)?;
        let (untracked, tracked): (Vec<_>, Vec<_>) =
            entries.into_iter().partition(|e| e.untracked());
        if !tracked.is_empty() {
            if self.checkout_holds(dir, new)? {
                return Ok(Vec::new());
            }
            return Ok(tracked.into_iter().map(|e| e.path).collect());
        }
        if untracked.is_empty() {
            return Ok(Vec::new());
        }
        // Untracked files block only where the landing writes: an untracked
        // directory is listed as "dir/", so it blocks any path under it.
        let touched: BTreeSet<String> = git(dir)
            .args(["diff", "--name-only", "-z", "--no-renames", old, new])
            .run()?
            .split('\0')
            .filter(|p| !p.is_empty())
            .map(str::to_string)
            .collect();
        Ok(untracked
            .into_iter()
            .map(|e| e.path)
            .filter(|u| {
                touched
                    .iter()
                    .any(|t| t == u || (u.ends_with('/') && t.starts_with(u.as_str())))
            })
            .collect())
    }

    /// Moves the files and index of the checkout at `dir` from `old` to `new`
    /// (a two-way `read-tree`, as `updateInstead` does). Git refuses, changing
    /// nothing, if a file it must touch differs from `old`.
    pub(crate) fn move_checkout(&self, dir: &Path, old: &str, new: &str) -> Result<(), GitError> {
        if self.checkout_holds(dir, new)? {
            return Ok(());
        }
        git(dir)
            .args(["update-index", "-q", "--ignore-submodules", "--refresh"])
            .output()?;
        git(dir).args(["read-tree", "-u", "-m", old, new]).run()?;
        Ok(())
    }

    /// Whether the index and files of `dir` are exactly `commit`'s tree.
    fn checkout_holds(&self, dir: &Path, commit: &str) -> Result<bool, GitError> {
        let index = git(dir)
            .args(["diff-index", "--cached", "--quiet", commit, "--"])
            .output()?;
        if !index.success() {
            return Ok(false);
        }
        Ok(git(dir).args(["diff-files", "--quiet"]).output()?.success())
    }
}
