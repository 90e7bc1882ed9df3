//! Comparing paths that git and callers spell differently (symlinked temp
//! dirs, relative paths, trailing slashes), and looking at what is at a
//! worktree's path without following it.

use std::path::{Path, PathBuf};

/// `path` with symlinks resolved when it exists, else made absolute as written.
pub(crate) fn real(path: &Path) -> PathBuf {
    path.canonicalize()
        .or_else(|_| std::path::absolute(path))
        .unwrap_or_else(|_| path.to_path_buf())
}

pub(crate) fn same(a: &Path, b: &Path) -> bool {
    real(a) == real(b)
}

/// Why what is at a worktree's path is no worktree boardd may make or remove,
/// if it is not: a symbolic link, or something that is not a directory.
/// Looked at with `symlink_metadata`, never followed. Trap: git follows a link
/// at the path, so it builds the worktree where the link points, and
/// `git worktree remove` deletes what is there. Only the last component is
/// looked at: the directories above it are the caller's to choose, and may be
/// links of the person's own (a state directory on another disk).
pub(crate) fn not_a_worktree_dir(path: &Path) -> Option<String> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    if meta.file_type().is_symlink() {
        Some(
            "it is a symbolic link, which boardd never follows at a worktree's path; remove the link \
             (the worktree is made there again)"
                .into(),
        )
    } else if !meta.is_dir() {
        Some("it is not a directory; move it away (the worktree is made there again)".into())
    } else {
        None
    }
}
