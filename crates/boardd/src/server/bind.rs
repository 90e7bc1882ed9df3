//! Claiming the socket safely: stale socket cleanup, mode 0600, and refusing peers
//! of another user.

use crate::private::{self, PrivateError};
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use tokio::net::{UnixListener, UnixStream};

#[derive(Debug, thiserror::Error)]
pub enum BindError {
    #[error(transparent)]
    Dir(#[from] PrivateError),
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

/// Binds the socket with mode 0600, in a directory made as private as
/// [`private::socket_dir`] allows. A socket file left by a crashed daemon is
/// removed; one that a live daemon answers on is not.
pub async fn bind(path: &Path) -> Result<UnixListener, BindError> {
    let len = path.as_os_str().len();
    if len > 107 {
        return Err(BindError::PathTooLong {
            path: path.to_path_buf(),
            len,
        });
    }
    if let Some(parent) = path.parent() {
        private::socket_dir(parent)?;
    }
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        // Only a socket can be a crashed daemon's leftover: never delete anything
        // else that a mistyped --socket happens to name.
        if !meta.file_type().is_socket() {
            return Err(BindError::NotASocket(path.to_path_buf()));
        }
        if UnixStream::connect(path).await.is_ok() {
            return Err(BindError::SocketInUse(path.to_path_buf()));
        }
        tracing::info!(path = %path.display(), "removing stale socket");
        let _ = std::fs::remove_file(path);
    }
    let bind_error = |source| BindError::Bind {
        path: path.to_path_buf(),
        source,
    };
    let listener = UnixListener::bind(path).map_err(bind_error)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(bind_error)?;
    Ok(listener)
}

/// Why a peer may not use this daemon.
#[derive(Debug, thiserror::Error)]
pub enum PeerError {
    #[error("uid {peer} may not use the board of uid {me}")]
    OtherUser { peer: u32, me: u32 },
    #[error("cannot read peer credentials: {0}")]
    Credentials(std::io::Error),
}

/// Whether the peer runs as the same user as boardd. `Ok` carries the peer's pid
/// when the kernel gives one: the process boardd would stop for a shutdown.
pub fn same_user(stream: &UnixStream) -> Result<Option<u32>, PeerError> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    let cred = stream.peer_cred().map_err(PeerError::Credentials)?;
    if cred.uid() == me {
        Ok(cred.pid().and_then(|p| u32::try_from(p).ok()))
    } else {
        Err(PeerError::OtherUser {
            peer: cred.uid(),
            me,
        })
    }
}
