//! Committing everything in a worktree, and the identity commits are made under.

use crate::cmd::git;
use crate::error::GitError;
use crate::refs::head_at;
use crate::state::{in_progress, status};
use crate::{Oid, Repo};
use std::path::Path;

/// The identity used when the repository has none configured.
const FALLBACK_NAME: &str = "teamboard";
const FALLBACK_EMAIL: &str = "teamboard@localhost";

impl Repo {
    /// Stages everything in `wt` (`git add -A`, untracked files included) and
    /// commits it with `message`; a merge in progress is concluded even when
    /// nothing new is staged, unless a conflicted file still holds conflict
    /// markers ([`GitError::Unresolved`]). Returns the new commit, or `None`
    /// when there was nothing to commit.
    ///
    /// `author` (e.g. "alice <alice@teamboard.invalid>") becomes `--author`;
    /// the committer is the repository's configured identity, or teamboard's
    /// when it has none, so a commit never fails for a missing `user.email`.
    /// Hooks run: a failing pre-commit hook is a [`GitError::Command`] carrying
    /// its output. Refused during a rebase, whose commits are not ours to make.
    pub fn commit_all(
        &self,
        wt: &Path,
        message: &str,
        author: Option<&str>,
    ) -> Result<Option<Oid>, GitError> {
        let wt = self.worktree_top(wt)?;
        let progress = in_progress(&wt)?;
        if progress.rebasing {
            return Err(GitError::InProgress { what: "rebase" });
        }
        // Trap: `add -A` marks every conflict resolved, so what git's own
        // `commit` refuses (markers left in a stopped merge, a stash pop)
        // would be committed here.
        let paths = unresolved(&wt)?;
        if !paths.is_empty() {
            return Err(GitError::Unresolved { paths });
        }
        git(&wt).args(["add", "-A"]).run()?;
        let diff = git(&wt).args(["diff", "--cached", "--quiet"]);
        let staged = match diff.output()? {
            out if out.code == Some(0) => false,
            out if out.code == Some(1) => true,
            out => return Err(diff.failed(&out)),
        };
        if !staged && !progress.merging {
            return Ok(None);
        }
        let mut cmd = git(&wt)
            .args(identity(&wt)?)
            .args(["commit", "--quiet", "-F", "-"])
            .input(message);
        if let Some(author) = author {
            cmd = cmd.arg(format!("--author={author}"));
        }
        cmd.run()?;
        Ok(Some(head_at(&wt)?))
    }
}

/// The conflicted paths in `wt` whose files still hold conflict markers: a
/// line that opens a conflict and one that closes it. A conflicted file
/// without them was resolved by hand and only not `git add`ed yet.
fn unresolved(wt: &Path) -> Result<Vec<String>, GitError> {
    let marked = |text: &[u8]| {
        let mut lines = text.split(|b| *b == b'\n');
        let opens = |l: &[u8]| l.starts_with(b"<<<<<<< ") || l == b"<<<<<<<";
        let closes = |l: &[u8]| l.starts_with(b">>>>>>> ") || l == b">>>>>>>";
        lines.any(opens) && lines.any(closes)
    };
    Ok(status(wt)?
        .into_iter()
        .filter(|e| e.unmerged())
        .filter(|e| std::fs::read(wt.join(&e.path)).is_ok_and(|text| marked(&text)))
        .map(|e| e.path)
        .collect())
}

/// `-c user.name=… -c user.email=…` for whichever of the two the repository's
/// configuration (local, global or system) lacks; nothing when both are set.
pub(crate) fn identity(dir: &Path) -> Result<Vec<String>, GitError> {
    let cmd = git(dir).args(["config", "--get-regexp", r"^user\.(name|email)$"]);
    let out = cmd.output()?;
    // Exit 1: no such key at all.
    if !out.success() && out.code != Some(1) {
        return Err(cmd.failed(&out));
    }
    let is_set = |key: &str| {
        out.stdout.lines().any(|line| {
            line.split_once(' ')
                .is_some_and(|(k, v)| k == key && !v.trim().is_empty())
        })
    };
    let mut args = Vec::new();
    if !is_set("user.name") {
        args.extend(["-c".to_string(), format!("user.name={FALLBACK_NAME}")]);
    }
    if !is_set("user.email") {
        args.extend(["-c".to_string(), format!("user.email={FALLBACK_EMAIL}")]);
    }
    Ok(args)
}
