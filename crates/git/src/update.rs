//! Bringing a task branch up to date with the target branch, all or nothing.

use crate::cmd::git;
use crate::commit::identity;
use crate::error::GitError;
use crate::refs::{branch_at, head_at};
use crate::state::{OwnUpdate, abort, in_progress, status};
use crate::{Repo, Style, Update};
use std::collections::BTreeSet;
use std::path::Path;

impl Repo {
    /// Brings the branch checked out in `wt` up to date with branch `target`:
    /// `git rebase` onto it, or `git merge --no-edit` of it, per `style`.
    ///
    /// The worktree must be clean ([`GitError::Dirty`] otherwise) and not in
    /// the middle of another merge or rebase. On a conflict the operation is
    /// aborted, so the worktree and branch are exactly as before, and the
    /// answer is [`Update::Conflict`] naming at least one path.
    pub fn update(&self, wt: &Path, target: &str, style: Style) -> Result<Update, GitError> {
        let wt = self.worktree_top(wt)?;
        if let Some(what) = in_progress(&wt)?.what() {
            return Err(GitError::InProgress { what });
        }
        // Untracked files do not stop a rebase or merge (git refuses to
        // overwrite one, so none is lost); tracked changes would.
        let dirty: Vec<_> = status(&wt)?
            .into_iter()
            .filter(|e| !e.untracked())
            .collect();
        if !dirty.is_empty() {
            return Err(GitError::Dirty {
                paths: dirty.into_iter().map(|e| e.path).collect(),
            });
        }
        let onto = self.branch_oid(target)?;
        let head = head_at(&wt)?;
        if self.is_ancestor(&onto, &head)? {
            return Ok(Update::UpToDate);
        }
        // Rebased and merge commits need a committer like any other commit.
        let cmd = git(&wt).args(identity(&wt)?);
        let cmd = match style {
            // The resolved commit, so the branch is rebased onto exactly what
            // was checked above even if the target moves meanwhile.
            Style::Rebase => cmd.arg("rebase").arg(&onto),
            // The full ref name, because a bare "main" means a tag of that name
            // if there is one; the message is git's usual one for a branch.
            Style::Merge => {
                let message = match branch_at(&wt)? {
                    Some(ours) => format!("Merge branch '{target}' into {ours}"),
                    None => format!("Merge branch '{target}'"),
                };
                cmd.args(["merge", "--no-edit", "-m", &message])
                    .arg(format!("refs/heads/{target}"))
            }
        };
        let own = OwnUpdate::at(&wt)?;
        own.start(match style {
            Style::Rebase => "rebase",
            Style::Merge => "merge",
        })?;
        let out = cmd.output()?;
        if out.success() {
            own.clear()?;
            return Ok(Update::Updated(head_at(&wt)?));
        }
        let mut paths = unmerged(&wt)?;
        let conflict = !paths.is_empty() || out.mentions("CONFLICT");
        abort(&wt, in_progress(&wt)?)?;
        // Only once it is undone: if the abort fails, the mark stays, so the
        // next gate, opening or landing aborts it again.
        own.clear()?;
        if conflict && paths.is_empty() {
            // Git stopped on a conflict it did not list (a rename/delete
            // tangle, say): name what both sides touched instead.
            paths = changed_on_both_sides(&wt, &head, &onto)?;
        }
        if !conflict || paths.is_empty() {
            // Not a conflict: a hook refused, or git itself failed.
            return Err(cmd.failed(&out));
        }
        Ok(Update::Conflict { paths, onto })
    }
}

/// The paths a stopped merge or rebase left unmerged in `wt`, as both the
/// index (`diff --diff-filter=U`) and `status` see them.
fn unmerged(wt: &Path) -> Result<Vec<String>, GitError> {
    let mut paths: BTreeSet<String> = status(wt)?
        .into_iter()
        .filter(|e| e.unmerged())
        .map(|e| e.path)
        .collect();
    paths.extend(names(
        wt,
        &["diff", "--name-only", "-z", "--diff-filter=U"],
    )?);
    Ok(paths.into_iter().collect())
}

/// The paths changed both between the merge base and `ours`, and between the
/// merge base and `theirs`.
fn changed_on_both_sides(wt: &Path, ours: &str, theirs: &str) -> Result<Vec<String>, GitError> {
    let base = git(wt).args(["merge-base", ours, theirs]).line()?;
    let diff = |tip: &str| {
        names(
            wt,
            &["diff", "--name-only", "-z", "--no-renames", &base, tip],
        )
    };
    let ours: BTreeSet<String> = diff(ours)?.into_iter().collect();
    let theirs: BTreeSet<String> = diff(theirs)?.into_iter().collect();
    Ok(ours.intersection(&theirs).cloned().collect())
}

/// The NUL-separated names a git command prints.
fn names(wt: &Path, args: &[&str]) -> Result<Vec<String>, GitError> {
    let text = git(wt).args(args).run()?;
    Ok(text
        .split('\0')
        .filter(|n| !n.is_empty())
        .map(str::to_string)
        .collect())
}
