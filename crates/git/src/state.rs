//! What a worktree holds: its commit, its branch, its uncommitted paths and
//! whether a merge or rebase was left in the middle.

use crate::cmd::git;
use crate::error::GitError;
use crate::refs::{branch_at, head_at};
use crate::{Repo, WorktreeState};
use std::path::{Path, PathBuf};

impl Repo {
    /// The state of worktree `wt`. `branch` is the branch checked out there or,
    /// in the middle of a rebase (when HEAD is detached), the branch being rebased.
    pub fn worktree_state(&self, wt: &Path) -> Result<WorktreeState, GitError> {
        let wt = self.worktree_top(wt)?;
        let progress = in_progress(&wt)?;
        let branch = match branch_at(&wt)? {
            Some(branch) => Some(branch),
            None => rebasing_branch(&wt)?,
        };
        let entries = status(&wt)?;
        Ok(WorktreeState {
            head: head_at(&wt)?,
            branch,
            untracked: entries.iter().filter(|e| e.untracked()).count(),
            changed: entries.into_iter().map(|e| e.path).collect(),
            merging: progress.merging,
            rebasing: progress.rebasing,
        })
    }

    /// Aborts a rebase or merge left in progress in `wt` (boardd killed in the
    /// middle of an update), putting the branch back where it was before it
    /// started. `Ok(false)` when there was none.
    pub fn abort_in_progress(&self, wt: &Path) -> Result<bool, GitError> {
        let wt = self.worktree_top(wt)?;
        let aborted = abort(&wt, in_progress(&wt)?)?;
        OwnUpdate::at(&wt)?.clear()?;
        Ok(aborted)
    }

    /// Aborts a rebase or merge in `wt` only if [`Repo::update`] started it
    /// and did not get to finish it (boardd killed in the middle): one that
    /// the worktree's owner started is theirs to finish. `Ok(false)` when
    /// there was none of ours.
    pub fn abort_own_update(&self, wt: &Path) -> Result<bool, GitError> {
        let wt = self.worktree_top(wt)?;
        let own = OwnUpdate::at(&wt)?;
        if !own.0.exists() {
            return Ok(false);
        }
        let aborted = abort(&wt, in_progress(&wt)?)?;
        own.clear()?;
        Ok(aborted)
    }
}

/// The file [`Repo::update`] keeps in a worktree's git directory while its
/// rebase or merge runs: what tells an update of ours, left half done by a
/// killed boardd, from one the worktree's owner started (and may be in the
/// middle of resolving). Trap: a stopped rebase looks the same either way,
/// so without it boardd could only abort both or neither.
pub(crate) struct OwnUpdate(PathBuf);

impl OwnUpdate {
    pub(crate) fn at(wt: &Path) -> Result<OwnUpdate, GitError> {
        let path = git_paths(wt, &["teamboard-update"])?.pop().ok_or_else(|| {
            GitError::io("git named no path", std::io::ErrorKind::NotFound.into())
        })?;
        Ok(OwnUpdate(path))
    }

    /// Marks the update as ours, before it starts.
    pub(crate) fn start(&self, what: &str) -> Result<(), GitError> {
        std::fs::write(&self.0, format!("{what}\n"))
            .map_err(|e| GitError::io(format!("cannot write {}", self.0.display()), e))
    }

    /// The update finished, or was aborted.
    pub(crate) fn clear(&self) -> Result<(), GitError> {
        match std::fs::remove_file(&self.0) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(GitError::io(
                format!("cannot remove {}", self.0.display()),
                e,
            )),
            _ => Ok(()),
        }
    }
}

/// Which multi-step operations are under way in a worktree.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Progress {
    pub merging: bool,
    pub rebasing: bool,
}

impl Progress {
    /// The git command of the operation under way (also its name in errors).
    pub(crate) fn what(self) -> Option<&'static str> {
        if self.rebasing {
            Some("rebase")
        } else if self.merging {
            Some("merge")
        } else {
            None
        }
    }
}

/// Reads the marker files git keeps while a merge or rebase is stopped. Their
/// location differs between the main worktree and linked ones, so git is asked.
pub(crate) fn in_progress(wt: &Path) -> Result<Progress, GitError> {
    let found = git_paths(wt, &["MERGE_HEAD", "rebase-merge", "rebase-apply"])?;
    let exists = |i: usize| found.get(i).is_some_and(|p| p.exists());
    Ok(Progress {
        merging: exists(0),
        rebasing: exists(1) || exists(2),
    })
}

/// Aborts what `progress` says is under way; whether there was anything.
pub(crate) fn abort(wt: &Path, progress: Progress) -> Result<bool, GitError> {
    let Some(verb) = progress.what() else {
        return Ok(false);
    };
    git(wt).args([verb, "--abort"]).run()?;
    Ok(true)
}

/// The branch a stopped rebase in `wt` will put back or move, if one is stopped there.
pub(crate) fn rebasing_branch(wt: &Path) -> Result<Option<String>, GitError> {
    for file in git_paths(wt, &["rebase-merge/head-name", "rebase-apply/head-name"])? {
        if let Ok(text) = std::fs::read_to_string(&file) {
            let name = text.trim();
            if let Some(branch) = name.strip_prefix("refs/heads/") {
                return Ok(Some(branch.to_string()));
            }
        }
    }
    Ok(None)
}

/// One line of `git status`: its two-letter code and the path (the new path
/// for a rename or copy).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub code: String,
    pub path: String,
}

impl Entry {
    /// A file git does not track yet.
    pub(crate) fn untracked(&self) -> bool {
        self.code == "??"
    }

    /// Both sides changed this path and the merge stopped on it.
    pub(crate) fn unmerged(&self) -> bool {
        matches!(
            self.code.as_str(),
            "DD" | "AU" | "UD" | "UA" | "DU" | "AA" | "UU"
        )
    }
}

/// Every path with uncommitted changes in `wt`, untracked files included.
pub(crate) fn status(wt: &Path) -> Result<Vec<Entry>, GitError> {
    let text = git(wt)
        // Explicit, so a user's status.showUntrackedFiles=no cannot hide new
        // files from the "never lose uncommitted work" rule.
        .args(["status", "--porcelain=v1", "-z", "--untracked-files=normal"])
        .without_optional_locks()
        .run()?;
    Ok(parse_status(&text))
}

/// Reads `status --porcelain=v1 -z`: `XY PATH\0`, where a rename or copy is
/// followed by one more field, its original path.
pub fn parse_status(text: &str) -> Vec<Entry> {
    let mut entries = Vec::new();
    let mut fields = text.split('\0').filter(|f| !f.is_empty());
    while let Some(field) = fields.next() {
        let (Some(code), Some(path)) = (field.get(..2), field.get(3..)) else {
            continue;
        };
        if code.contains('R') || code.contains('C') {
            fields.next();
        }
        entries.push(Entry {
            code: code.to_string(),
            path: path.to_string(),
        });
    }
    entries
}

/// `git rev-parse --git-path` for each name, resolved against `wt`.
fn git_paths(wt: &Path, names: &[&str]) -> Result<Vec<PathBuf>, GitError> {
    let mut cmd = git(wt).arg("rev-parse");
    for name in names {
        cmd = cmd.args(["--git-path", name]);
    }
    Ok(cmd.run()?.lines().map(|p| wt.join(p)).collect())
}

#[cfg(test)]
mod tests {
    use super::parse_status;

    #[test]
    fn renames_report_their_new_path_and_skip_the_old() {
        let text = " M src/a.rs\0R  new name.rs\0old name.rs\0?? notes/\0UU both.rs\0";
        let got: Vec<(String, String, bool)> = parse_status(text)
            .into_iter()
            .map(|e| (e.code.clone(), e.path.clone(), e.unmerged()))
            .collect();
        let want = [
            (" M", "src/a.rs", false),
            ("R ", "new name.rs", false),
            ("??", "notes/", false),
            ("UU", "both.rs", true),
        ];
        let want: Vec<(String, String, bool)> = want
            .iter()
            .map(|(c, p, u)| (c.to_string(), p.to_string(), *u))
            .collect();
        assert_eq!(got, want);
    }
}
