//! Directories only this user may enter.

use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
#[error("cannot create directory {path}: {source}")]
pub struct DirError {
    pub path: PathBuf,
    pub source: std::io::Error,
}

/// Creates a directory (and parents) readable only by this user.
pub fn private_dir(path: &Path) -> Result<(), DirError> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(path)
        .map_err(|source| DirError {
            path: path.to_path_buf(),
            source,
        })
}
