//! Landing a finished task branch on the target branch: one compare-and-swap
//! of one ref, with no checkout touched.

use crate::cmd::git;
use crate::commit::identity;
use crate::error::GitError;
use crate::{Land, Oid, Repo, Style, names};

impl Repo {
    /// Lands `task_branch` on branch `target`, only if `target` is still at
    /// `expected_old` ([`Land::Moved`] otherwise) and `expected_old` is an
    /// ancestor of the task branch ([`Land::Behind`] otherwise); either way the
    /// caller updates the task branch and tries again.
    ///
    /// [`Style::Rebase`] fast-forwards `target` to the task branch.
    /// [`Style::Merge`] makes a merge commit with parents `expected_old` and the
    /// task branch and the task branch's tree, with `message` (no hooks run:
    /// this is `git commit-tree`, not `git commit`). A task branch that adds
    /// nothing lands as [`Land::Landed`]`(expected_old)` without touching the ref.
    ///
    /// The ref moves with `git update-ref NEW OLD`, so it is all or nothing.
    /// Nothing is checked out: if `target` is checked out in some worktree, that
    /// checkout is left behind at the old commit (its `git status` then shows
    /// the landed work reversed), so callers keep `target` checked out nowhere.
    pub fn land(
        &self,
        target: &str,
        expected_old: &str,
        task_branch: &str,
        style: Style,
        message: &str,
    ) -> Result<Land, GitError> {
        let old = self.resolve(expected_old)?;
        let now = self.branch_oid(target)?;
        if now != old {
            return Ok(Land::Moved { now });
        }
        let task = self.branch_oid(task_branch)?;
        if !self.is_ancestor(&old, &task)? {
            return Ok(Land::Behind);
        }
        if task == old {
            return Ok(Land::Landed(old));
        }
        let (new, how) = match style {
            Style::Rebase => (task, "fast-forward"),
            Style::Merge => {
                // The task branch already contains `old`, so its tree is the
                // merge result: no merge to compute, no index, no worktree.
                let merge = git(self.root())
                    .args(identity(self.root())?)
                    .arg("commit-tree")
                    .arg(format!("{task}^{{tree}}"))
                    .args(["-p", &old, "-p", &task, "-m", message])
                    .line()?;
                (merge, "merge")
            }
        };
        // The reflog entry is what finds this landing again if boardd is
        // killed before it records it (`recorded_landing`), so one is written
        // even where reflogs are off.
        let update = git(self.root())
            .args(["update-ref", "--create-reflog", "-m"])
            .arg(format!("{} ({how})", landing_message(task_branch)))
            .arg(format!("refs/heads/{target}"))
            .args([&new, &old]);
        let out = update.output()?;
        if out.success() {
            return Ok(Land::Landed(new));
        }
        // The compare-and-swap failed: if someone moved the target between the
        // check above and now, that is an ordinary race, not an error.
        match self.branch_head(target)? {
            Some(now) if now != old => Ok(Land::Moved { now }),
            _ => Err(update.failed(&out)),
        }
    }

    /// The landing of `task_branch` on `target` that the target's reflog
    /// records, as (old, new): where [`Repo::land`] found the target, and where
    /// it moved it. A boardd killed between moving the target and recording the
    /// landing finds it here after the restart, with the commit it landed on.
    /// `None` when the last 1,000 moves of the target have no such entry, or
    /// when it is the oldest entry left (its old value is then unknown).
    pub fn recorded_landing(
        &self,
        target: &str,
        task_branch: &str,
    ) -> Result<Option<(Oid, Oid)>, GitError> {
        names::check(target)?;
        names::check(task_branch)?;
        let out = git(self.root())
            .args(["log", "--walk-reflogs", "--format=%H %gs", "-n", "1000"])
            .arg(format!("refs/heads/{target}"))
            .output()?;
        if !out.success() {
            // No reflog at all.
            return Ok(None);
        }
        // Newest first: each entry's old value is the next entry's new one.
        let entries: Vec<(&str, &str)> = out
            .stdout
            .lines()
            .filter_map(|l| l.split_once(' '))
            .collect();
        let want = format!("{} (", landing_message(task_branch));
        let Some(i) = entries.iter().position(|(_, s)| s.starts_with(&want)) else {
            return Ok(None);
        };
        Ok(entries
            .get(i + 1)
            .map(|(old, _)| (old.to_string(), entries[i].0.to_string())))
    }
}

/// The reflog message of a landing, before its style.
fn landing_message(task_branch: &str) -> String {
    format!("teamboard: land {task_branch}")
}
