//! The single-instance lock: one boardd per state directory, so that two daemons
//! never write the same database.

use crate::private::{self, PrivateError};
use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The lock file inside the state directory.
pub const LOCK_FILE: &str = "boardd.lock";

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error(transparent)]
    Private(#[from] PrivateError),
    #[error("cannot open lock file {path}: {source}")]
    Open {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("another boardd is already running with state directory {dir} (it holds {lock})")]
    AlreadyRunning { dir: PathBuf, lock: PathBuf },
}

/// Holds the lock for as long as it lives.
#[derive(Debug)]
pub struct InstanceLock {
    _file: File,
}

/// Takes the exclusive lock in the state directory, creating the directory if
/// needed. The directory and the lock file are made private to this user.
pub fn lock_state_dir(state_dir: &Path) -> Result<InstanceLock, LockError> {
    private::state_dir(state_dir)?;
    let path = state_dir.join(LOCK_FILE);
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(&path)
        .map_err(|source| LockError::Open {
            path: path.clone(),
            source,
        })?;
    // The mode above applies only to a new file.
    private::existing_file(&path)?;
    match file.try_lock() {
        Ok(()) => Ok(InstanceLock { _file: file }),
        Err(std::fs::TryLockError::WouldBlock) => Err(LockError::AlreadyRunning {
            dir: state_dir.to_path_buf(),
            lock: path,
        }),
        Err(std::fs::TryLockError::Error(source)) => Err(LockError::Open { path, source }),
    }
}
