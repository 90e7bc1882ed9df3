//! Comparing paths that git and callers spell differently (symlinked temp
//! dirs, relative paths, trailing slashes).

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
