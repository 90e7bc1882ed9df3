//! Opening a repository, and making sure a worktree path handed in belongs to it.

use crate::cmd::git;
use crate::error::GitError;
use crate::paths;
use std::path::{Path, PathBuf};

/// A non-bare git repository, addressed by the top of its working tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repo {
    root: PathBuf,
    /// The repository's shared `.git` directory (resolved), which every one of
    /// its worktrees points at: how a worktree path is recognised as ours.
    common_dir: PathBuf,
}

impl Repo {
    /// Opens the repository whose working tree contains `path`. A plain
    /// directory, a bare repository or a path inside `.git` is
    /// [`GitError::NotARepo`], saying which.
    pub fn open(path: &Path) -> Result<Repo, GitError> {
        let not_a_repo = |why: String| GitError::NotARepo {
            path: path.to_path_buf(),
            why,
        };
        if !path.is_dir() {
            return Err(not_a_repo(if path.exists() {
                "it is not a directory".into()
            } else {
                "it does not exist".into()
            }));
        }
        let probe = git(path)
            .args(["rev-parse", "--is-bare-repository", "--is-inside-work-tree"])
            .output()?;
        if !probe.success() {
            return Err(not_a_repo(
                "it is not inside a git repository (run `git init` there, or give the repository's path)"
                    .into(),
            ));
        }
        let mut answers = probe.stdout.lines();
        if answers.next() == Some("true") {
            return Err(not_a_repo(
                "it is a bare repository; teamboard needs one with a working tree (clone it without --bare)"
                    .into(),
            ));
        }
        if answers.next() != Some("true") {
            return Err(not_a_repo(
                "it is inside the repository's .git directory, not its working tree".into(),
            ));
        }
        let root = PathBuf::from(git(path).args(["rev-parse", "--show-toplevel"]).line()?);
        let common_dir = common_dir(&root)?;
        Ok(Repo { root, common_dir })
    }

    /// The top of the working tree that [`Repo::open`] found.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Runs `git fsck --no-progress`: `Ok` when the object database is
    /// consistent, otherwise the error carries fsck's report.
    pub fn fsck(&self) -> Result<(), GitError> {
        git(&self.root).args(["fsck", "--no-progress"]).run()?;
        Ok(())
    }

    /// `wt` as the top of one of this repository's worktrees, or an error.
    ///
    /// The trap this guards: `git -C DIR` works in any directory *inside* a
    /// working tree. A worktree directory that was deleted and recreated empty
    /// under the main checkout would otherwise send `git add -A` to the main
    /// checkout.
    pub(crate) fn worktree_top(&self, wt: &Path) -> Result<PathBuf, GitError> {
        let not_ours = |why: String| GitError::Worktree {
            path: wt.to_path_buf(),
            why,
        };
        if !wt.is_dir() {
            return Err(not_ours("it does not exist".into()));
        }
        let out = git(wt)
            .args(["rev-parse", "--show-toplevel", "--git-common-dir"])
            .output()?;
        let mut lines = out.stdout.lines();
        let (Some(top), Some(common), true) = (lines.next(), lines.next(), out.success()) else {
            return Err(not_ours("it is not a git working tree".into()));
        };
        if !paths::same(Path::new(top), wt) {
            return Err(not_ours(format!(
                "it is a directory inside the working tree {top}, not a worktree of its own"
            )));
        }
        if paths::real(&wt.join(common)) != self.common_dir {
            return Err(not_ours(format!(
                "it belongs to another repository than {}",
                self.root.display()
            )));
        }
        Ok(paths::real(wt))
    }
}

/// The resolved `--git-common-dir` of the working tree at `dir` (git prints it
/// relative to `dir` in the main worktree and absolute in linked ones).
fn common_dir(dir: &Path) -> Result<PathBuf, GitError> {
    let printed = git(dir).args(["rev-parse", "--git-common-dir"]).line()?;
    Ok(paths::real(&dir.join(printed)))
}
