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
    /// `checkout` is the worktree where `target` is checked out, if it is: its
    /// files follow the branch first (`checkout.rs`), and the caller has made
    /// sure it is clean ([`Repo::checkout_blockers`]). A checkout this is not
    /// told of is left behind at the old commit (its `git status` then shows
    /// the landed work reversed).
    pub fn land(
        &self,
        target: &str,
        expected_old: &str,
        task_branch: &str,
        style: Style,
        message: &str,
        checkout: Option<&std::path::Path>,
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
                    .args(["-p", &old, "-p", &task, "-F", "-"])
                    .input(message)
                    .line()?;
                (merge, "merge")
            }
        };
        if let Some(dir) = checkout {
            self.move_checkout(dir, &old, &new)?;
        }
        // A lock held by another git (say, one a killed boardd left running
        // behind a slow hook) is waited for a little, instead of failing a
        // landing that the other git may be about to finish.
        let update = git(self.root())
            .args(["-c", "core.filesRefLockTimeout=3000", "update-ref", "-m"])
            .arg(format!("{} ({how})", land_message(task_branch)))
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

    /// The `(old, new)` of an earlier landing of `task_branch` on `target`, as
    /// the target's reflog recorded it: the most recent one whose `new`
    /// descends from `since` (the task's base) and is still in the target.
    ///
    /// For a landing whose ref update went through while its answer was lost
    /// (boardd killed after git moved the ref): the retry finds the work on
    /// the target already and lands nothing, but the task's change is still
    /// `old..new`, which only the reflog remembers. The ancestry conditions
    /// keep a branch name that an earlier board used for another task from
    /// matching: that landing's `new` is older than this task's base.
    ///
    /// `None` when there is no such entry, including when the repository
    /// keeps no reflog for the target (`core.logAllRefUpdates=false`, or the
    /// reftable backend, whose reflog is not a file).
    pub fn earlier_landing(
        &self,
        target: &str,
        task_branch: &str,
        since: &str,
    ) -> Result<Option<(Oid, Oid)>, GitError> {
        names::check(target)?;
        names::check(task_branch)?;
        let log = git(self.root())
            .args(["rev-parse", "--git-path"])
            .arg(format!("logs/refs/heads/{target}"))
            .line()?;
        let Ok(text) = std::fs::read_to_string(self.root().join(log)) else {
            return Ok(None);
        };
        let ours = format!("{} (", land_message(task_branch));
        let head = self.branch_oid(target)?;
        // Lines are `OLD NEW IDENTITY TIME ZONE<TAB>MESSAGE`, oldest first.
        for line in text.lines().rev() {
            let Some((who, message)) = line.split_once('\t') else {
                continue;
            };
            if !message.starts_with(&ours) {
                continue;
            }
            let mut ids = who.split(' ');
            let (Some(old), Some(new)) = (ids.next(), ids.next()) else {
                continue;
            };
            // An entry git cannot judge (its commit pruned since) is no match.
            let contains = |a: &str, b: &str| self.is_ancestor(a, b).unwrap_or(false);
            if new != since && contains(since, new) && contains(new, &head) {
                return Ok(Some((old.to_string(), new.to_string())));
            }
        }
        Ok(None)
    }
}

/// What the target's reflog says of a landing, before the style.
fn land_message(task_branch: &str) -> String {
    format!("teamboard: land {task_branch}")
}
