//! Creating, listing and removing the worktrees of a repository.

use crate::cmd::git;
use crate::error::GitError;
use crate::state::rebasing_branch;
use crate::{Created, Repo, names, paths};
use std::path::{Path, PathBuf};

/// One entry of `git worktree list --porcelain`.
#[derive(Debug)]
struct Listed {
    path: PathBuf,
    /// The branch checked out there, or being rebased there.
    branch: Option<String>,
    bare: bool,
}

impl Repo {
    /// Every worktree of the repository, the main one first.
    pub fn worktrees(&self) -> Result<Vec<PathBuf>, GitError> {
        Ok(self
            .listed()?
            .into_iter()
            .filter(|w| !w.bare)
            .map(|w| w.path)
            .collect())
    }

    /// The worktree where `branch` is checked out (or being rebased), if any;
    /// possibly one whose directory was deleted and is not pruned yet.
    pub fn checked_out_in(&self, branch: &str) -> Result<Option<PathBuf>, GitError> {
        names::check(branch)?;
        Ok(self
            .listed()?
            .into_iter()
            .find(|w| w.branch.as_deref() == Some(branch))
            .map(|w| w.path))
    }

    /// Creates the worktree `path` on a new branch `branch` starting at `start`.
    ///
    /// Safe to retry after a crash, and never resets a branch: if `path` is
    /// already this repository's worktree on `branch`, or `branch` exists
    /// without a worktree (a crash between the two steps, or a worktree
    /// directory deleted by hand), the existing branch is used and the answer
    /// is [`Created::Reused`]. Missing parent directories are created. A
    /// symbolic link or a file at `path` is refused, never followed.
    pub fn add_worktree(
        &self,
        path: &Path,
        branch: &str,
        start: &str,
    ) -> Result<Created, GitError> {
        names::check(branch)?;
        names::check(start)?;
        let path = std::path::absolute(path)
            .map_err(|e| GitError::io(format!("cannot resolve {}", path.display()), e))?;
        let refuse = |why: String| GitError::Worktree {
            path: path.clone(),
            why,
        };
        if let Some(why) = paths::not_a_worktree_dir(&path) {
            return Err(refuse(why));
        }
        // A worktree whose directory is gone stays registered until pruned, and
        // would block both its path and its branch.
        self.prune()?;
        let listed = self.listed()?;
        if let Some(found) = listed.iter().find(|w| paths::same(&w.path, &path)) {
            return match found.branch.as_deref() {
                Some(b) if b == branch && path.is_dir() => Ok(Created::Reused),
                Some(b) if b == branch => Err(refuse(
                    "it is registered as a worktree but its directory is missing and it is locked; \
                     run `git worktree unlock` on it"
                        .into(),
                )),
                Some(other) => Err(refuse(format!(
                    "it is already a worktree on branch '{other}', not '{branch}'"
                ))),
                None => Err(refuse(format!(
                    "it is already a worktree with a detached HEAD, not on branch '{branch}'"
                ))),
            };
        }
        if let Some(elsewhere) = listed.iter().find(|w| w.branch.as_deref() == Some(branch)) {
            return Err(refuse(format!(
                "branch '{branch}' is already checked out in {}",
                elsewhere.path.display()
            )));
        }
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| GitError::io(format!("cannot create {}", parent.display()), e))?;
        }
        if self.branch_head(branch)?.is_some() {
            git(self.root())
                .args(["worktree", "add"])
                .arg(&path)
                .arg(branch)
                .run()?;
            return Ok(Created::Reused);
        }
        let start = self.resolve(start)?;
        git(self.root())
            .args(["worktree", "add", "-b", branch])
            .arg(&path)
            .arg(start)
            .run()?;
        Ok(Created::Fresh)
    }

    /// Removes the worktree at `path` (`git worktree remove`, which refuses a
    /// worktree with changes unless `force`), then prunes. A path that is not a
    /// linked worktree of this repository is refused, as is the main worktree,
    /// and a symbolic link at the path.
    pub fn remove_worktree(&self, path: &Path, force: bool) -> Result<(), GitError> {
        let refuse = |why: String| GitError::Worktree {
            path: path.to_path_buf(),
            why,
        };
        if let Some(why) = paths::not_a_worktree_dir(path) {
            return Err(refuse(why));
        }
        let listed = self.listed()?;
        match listed.iter().position(|w| paths::same(&w.path, path)) {
            None => {
                return Err(refuse(format!(
                    "it is not a worktree of {}",
                    self.root().display()
                )));
            }
            Some(0) => {
                return Err(refuse(
                    "it is the repository's main working tree, which is never removed".into(),
                ));
            }
            Some(_) if paths::same(path, self.root()) => {
                return Err(refuse(
                    "it is the working tree this repository was opened at".into(),
                ));
            }
            Some(_) => {}
        }
        if path.exists() {
            let mut cmd = git(self.root()).args(["worktree", "remove"]);
            if force {
                cmd = cmd.arg("--force");
            }
            cmd.arg(path).run()?;
        }
        self.prune()
    }

    /// Forgets worktrees whose directories are gone (`git worktree prune`).
    pub fn prune(&self) -> Result<(), GitError> {
        git(self.root()).args(["worktree", "prune"]).run()?;
        Ok(())
    }

    fn listed(&self) -> Result<Vec<Listed>, GitError> {
        let text = git(self.root())
            .args(["worktree", "list", "--porcelain"])
            .run()?;
        let mut listed = parse_list(&text);
        // During a rebase the worktree's HEAD is detached, yet the branch is
        // still taken (git refuses to check it out elsewhere): report it as such.
        for w in listed.iter_mut().filter(|w| w.branch.is_none() && !w.bare) {
            if w.path.is_dir() {
                w.branch = rebasing_branch(&w.path)?;
            }
        }
        Ok(listed)
    }
}

/// Reads `git worktree list --porcelain`: blocks of `key value` lines, one
/// block per worktree, each starting with `worktree PATH`.
fn parse_list(text: &str) -> Vec<Listed> {
    let mut listed: Vec<Listed> = Vec::new();
    for line in text.lines() {
        let (key, value) = line.split_once(' ').unwrap_or((line, ""));
        match (key, listed.last_mut()) {
            ("worktree", _) => listed.push(Listed {
                path: PathBuf::from(value),
                branch: None,
                bare: false,
            }),
            ("branch", Some(w)) => {
                w.branch = Some(
                    value
                        .strip_prefix("refs/heads/")
                        .unwrap_or(value)
                        .to_string(),
                );
            }
            ("bare", Some(w)) => w.bare = true,
            _ => {}
        }
    }
    listed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn porcelain_list_is_read_per_block() {
        let text = "worktree /r\nHEAD 1111\nbranch refs/heads/main\n\n\
                    worktree /w/task 1\nHEAD 2222\ndetached\nlocked reason\n\n\
                    worktree /w/t2\nHEAD 3333\nbranch refs/heads/teamboard/task-2\nprunable gitdir file points to non-existent location\n";
        let listed = parse_list(text);
        let got: Vec<(&str, Option<&str>)> = listed
            .iter()
            .map(|w| (w.path.to_str().unwrap_or(""), w.branch.as_deref()))
            .collect();
        assert_eq!(
            got,
            [
                ("/r", Some("main")),
                ("/w/task 1", None),
                ("/w/t2", Some("teamboard/task-2"))
            ]
        );
    }
}
