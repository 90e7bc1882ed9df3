//! Questions about branches and commits, and deleting a branch.

use crate::cmd::git;
use crate::error::GitError;
use crate::names;
use crate::{Oid, Repo};
use std::path::Path;

impl Repo {
    /// The branch checked out in the repository's root worktree; `None` when
    /// HEAD is detached.
    pub fn current_branch(&self) -> Result<Option<String>, GitError> {
        branch_at(self.root())
    }

    /// The commit `branch` points at; `None` if there is no such branch.
    pub fn branch_head(&self, branch: &str) -> Result<Option<Oid>, GitError> {
        names::check(branch)?;
        self.commit_of(&format!("refs/heads/{branch}"))
    }

    /// The commit `rev` names, if it names one.
    fn commit_of(&self, rev: &str) -> Result<Option<Oid>, GitError> {
        let out = git(self.root())
            .args(["rev-parse", "--verify", "--quiet"])
            .arg(format!("{rev}^{{commit}}"))
            .output()?;
        Ok(out.success().then(|| out.stdout.trim().to_string()))
    }

    /// Whether commit `a` is an ancestor of (or the same as) commit `b`.
    pub fn is_ancestor(&self, a: &str, b: &str) -> Result<bool, GitError> {
        names::check(a)?;
        names::check(b)?;
        let cmd = git(self.root()).args(["merge-base", "--is-ancestor", a, b]);
        let out = cmd.output()?;
        match out.code {
            Some(0) => Ok(true),
            Some(1) => Ok(false),
            _ => Err(cmd.failed(&out)),
        }
    }

    /// How many commits `head` has that `base` does not (`base..head`).
    pub fn count_commits(&self, base: &str, head: &str) -> Result<u32, GitError> {
        names::check(base)?;
        names::check(head)?;
        let range = format!("{base}..{head}");
        let text = git(self.root())
            .args(["rev-list", "--count", &range])
            .line()?;
        text.parse().map_err(|_| GitError::Command {
            args: vec!["rev-list".into(), "--count".into(), range],
            code: Some(0),
            stderr: format!("expected a number, got {text:?}"),
        })
    }

    /// Short names of the local branches whose name starts with `prefix`
    /// (e.g. "teamboard/"), sorted.
    pub fn branches_with_prefix(&self, prefix: &str) -> Result<Vec<String>, GitError> {
        // Listing all branches and filtering here: for-each-ref's own patterns
        // match whole path components only, so "teamboard/task-" would match nothing.
        let text = git(self.root())
            .args(["for-each-ref", "--format=%(refname)", "refs/heads/"])
            .run()?;
        let mut names: Vec<String> = text
            .lines()
            .filter_map(|r| r.strip_prefix("refs/heads/"))
            .filter(|name| name.starts_with(prefix))
            .map(str::to_string)
            .collect();
        names.sort();
        Ok(names)
    }

    /// Deletes local branch `branch` whether or not it was merged (`branch -D`).
    /// No such branch is success. A branch checked out in a worktree is an error.
    pub fn delete_branch(&self, branch: &str) -> Result<(), GitError> {
        if self.branch_head(branch)?.is_none() {
            return Ok(());
        }
        git(self.root()).args(["branch", "-D", branch]).run()?;
        Ok(())
    }

    /// The full id of the commit `rev` names, or [`GitError::UnknownRev`].
    pub(crate) fn resolve(&self, rev: &str) -> Result<Oid, GitError> {
        names::check(rev)?;
        self.commit_of(rev)?.ok_or_else(|| GitError::UnknownRev {
            rev: rev.to_string(),
        })
    }

    /// The commit `branch` points at, or [`GitError::NoBranch`].
    pub(crate) fn branch_oid(&self, branch: &str) -> Result<Oid, GitError> {
        self.branch_head(branch)?.ok_or_else(|| GitError::NoBranch {
            branch: branch.to_string(),
        })
    }
}

/// The branch checked out in the worktree at `dir`; `None` when detached
/// (which includes the middle of a rebase).
pub(crate) fn branch_at(dir: &Path) -> Result<Option<String>, GitError> {
    let cmd = git(dir).args(["symbolic-ref", "--quiet", "--short", "HEAD"]);
    let out = cmd.output()?;
    match out.code {
        Some(0) => Ok(Some(out.stdout.trim().to_string())),
        Some(1) => Ok(None),
        _ => Err(cmd.failed(&out)),
    }
}

/// The commit checked out in the worktree at `dir`.
pub(crate) fn head_at(dir: &Path) -> Result<Oid, GitError> {
    git(dir).args(["rev-parse", "--verify", "HEAD"]).line()
}
