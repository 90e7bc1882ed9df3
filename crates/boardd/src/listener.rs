//! Claiming the socket safely: single instance, stale socket cleanup, 0600 mode,
//! and refusing peers of another user.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use tokio::net::{UnixListener, UnixStream};

#[derive(Debug, thiserror::Error)]
pub enum ListenError {
    #[error("cannot create directory {path}: {source}")]
    Dir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot open lock file {path}: {source}")]
    Lock {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("another boardd is already running with state directory {dir} (it holds {lock})")]
    AlreadyRunning { dir: PathBuf, lock: PathBuf },
    #[error("another boardd is already listening on {0}; stop it or choose another --socket")]
    SocketInUse(PathBuf),
    #[error("{0} exists and is not a socket; refusing to replace it. Choose another --socket")]
    NotASocket(PathBuf),
    #[error(
        "socket path {path} is {len} bytes; Linux allows at most 107. Choose a shorter --socket"
    )]
    PathTooLong { path: PathBuf, len: usize },
    #[error("cannot listen on {path}: {source}")]
    Bind {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Holds the single-instance lock for as long as it lives.
#[derive(Debug)]
pub struct InstanceLock {
    _file: File,
}

/// Creates a directory (and parents) readable only by this user.
pub fn private_dir(path: &Path) -> Result<(), ListenError> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(path)
        .map_err(|source| ListenError::Dir {
            path: path.to_path_buf(),
            source,
        })
}

/// Takes the exclusive lock in the state directory, so that two daemons never
/// write the same database.
pub fn lock_state_dir(state_dir: &Path) -> Result<InstanceLock, ListenError> {
    private_dir(state_dir)?;
    let path = state_dir.join("boardd.lock");
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|source| ListenError::Lock {
            path: path.clone(),
            source,
        })?;
    match file.try_lock() {
        Ok(()) => Ok(InstanceLock { _file: file }),
        Err(std::fs::TryLockError::WouldBlock) => Err(ListenError::AlreadyRunning {
            dir: state_dir.to_path_buf(),
            lock: path,
        }),
        Err(std::fs::TryLockError::Error(source)) => Err(ListenError::Lock { path, source }),
    }
}

/// Binds the socket with mode 0600. A socket file left by a crashed daemon is
/// removed; one that a live daemon answers on is not.
pub async fn bind(path: &Path) -> Result<UnixListener, ListenError> {
    let len = path.as_os_str().len();
    if len > 107 {
        return Err(ListenError::PathTooLong {
            path: path.to_path_buf(),
            len,
        });
    }
    if let Some(parent) = path.parent() {
        private_dir(parent)?;
    }
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        // Only a socket can be a crashed daemon's leftover: never delete anything
        // else that a mistyped --socket happens to name.
        if !meta.file_type().is_socket() {
            return Err(ListenError::NotASocket(path.to_path_buf()));
        }
        if UnixStream::connect(path).await.is_ok() {
            return Err(ListenError::SocketInUse(path.to_path_buf()));
        }
        tracing::info!(path = %path.display(), "removing stale socket");
        let _ = std::fs::remove_file(path);
    }
    let listener = UnixListener::bind(path).map_err(|source| ListenError::Bind {
        path: path.to_path_buf(),
        source,
    })?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(|source| {
        ListenError::Bind {
            path: path.to_path_buf(),
            source,
        }
    })?;
    Ok(listener)
}

/// Whether the peer runs as the same user as boardd.
pub fn same_user(stream: &UnixStream) -> Result<(), String> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    match stream.peer_cred() {
        Ok(cred) if cred.uid() == me => Ok(()),
        Ok(cred) => Err(format!(
            "uid {} may not use the board of uid {me}",
            cred.uid()
        )),
        Err(e) => Err(format!("cannot read peer credentials: {e}")),
    }
}
