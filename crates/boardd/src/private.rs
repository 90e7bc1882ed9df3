//! What boardd keeps on disk is its user's alone: directories 0700, files 0600,
//! whatever the umask and whoever made them.
//!
//! The state directory and its files are boardd's, so they are made private at
//! every start, even when they exist with looser modes. The socket's directory
//! may be one the user shares, so an existing one is made private only when it
//! is boardd's own; see [`socket_dir`].

use std::fs::{DirBuilder, OpenOptions, Permissions};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The name of the directory boardd puts its socket in by default
/// (`$XDG_RUNTIME_DIR/teamboard`).
const OWN_DIR_NAME: &str = "teamboard";

#[derive(Debug, thiserror::Error)]
pub enum PrivateError {
    #[error("cannot create directory {path}: {source}")]
    Create {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot read {path}: {source}")]
    Stat {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "{path} belongs to uid {owner}, not to uid {me} that boardd runs as; boardd keeps its \
         state only where its own user owns it. Choose another --state-dir, or give it to uid {me}"
    )]
    NotOwned { path: PathBuf, owner: u32, me: u32 },
    #[error("cannot make {path} private (mode {mode:o}): {source}")]
    Chmod {
        path: PathBuf,
        mode: u32,
        source: std::io::Error,
    },
}

/// Creates the state directory (and its parents) if missing, and makes it 0700
/// whoever made it. One that belongs to another user is refused.
pub fn state_dir(path: &Path) -> Result<(), PrivateError> {
    create_dir(path)?;
    let meta = stat(path)?;
    let me = euid();
    if meta.uid() != me {
        return Err(PrivateError::NotOwned {
            path: path.to_path_buf(),
            owner: meta.uid(),
            me,
        });
    }
    tighten(path, meta.mode(), 0o700)
}

/// Creates the socket's directory 0700 if missing. An existing one is made
/// 0700 only if it is boardd's own: its user owns it, it is named `teamboard`
/// (the default `$XDG_RUNTIME_DIR/teamboard` is), and it is neither sticky nor
/// the home directory. Any other directory (`/tmp`, a home, a project directory
/// named by `--socket`) is likely shared on purpose and keeps its mode: the
/// socket in it is 0600 and boardd checks every peer's uid, so its mode is a
/// second fence, not the only one.
pub fn socket_dir(path: &Path) -> Result<(), PrivateError> {
    if !path.exists() {
        return create_dir(path);
    }
    let meta = stat(path)?;
    match keeps_its_mode(path, &meta) {
        Some(why) => {
            tracing::debug!(path = %path.display(), mode = format!("{:o}", meta.mode() & 0o7777), why, "socket directory keeps its mode");
            Ok(())
        }
        None => tighten(path, meta.mode(), 0o700),
    }
}

/// Why an existing socket directory is left as it is, if it is.
fn keeps_its_mode(path: &Path, meta: &std::fs::Metadata) -> Option<&'static str> {
    if meta.mode() & 0o077 == 0 {
        Some("already private")
    } else if meta.uid() != euid() {
        Some("another user's")
    } else if meta.mode() & libc::S_ISVTX != 0 {
        Some("sticky, shared like /tmp")
    } else if is_home(path) {
        Some("the home directory")
    } else if path.file_name().is_none_or(|n| n != OWN_DIR_NAME) {
        Some("not named teamboard: not boardd's own")
    } else {
        None
    }
}

fn is_home(path: &Path) -> bool {
    let Some(home) = std::env::var_os("HOME") else {
        return false;
    };
    let canonical = |p: &Path| std::fs::canonicalize(p).ok();
    canonical(path).is_some_and(|p| Some(p) == canonical(Path::new(&home)))
}

/// Creates `path` 0600 if it is missing, and makes it 0600 if it is not. For
/// files that others (SQLite) create and open: SQLite gives a new database file
/// the umask's mode, and its WAL the database file's.
pub fn file(path: &Path) -> Result<(), PrivateError> {
    OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(path)
        .map_err(|source| PrivateError::Create {
            path: path.to_path_buf(),
            source,
        })?;
    existing_file(path)
}

/// Makes `path` 0600 if it exists.
pub fn existing_file(path: &Path) -> Result<(), PrivateError> {
    match std::fs::metadata(path) {
        Ok(meta) => tighten(path, meta.mode(), 0o600),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(source) => Err(PrivateError::Stat {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// Sets `mode` if `current` lets anyone but the owner in.
fn tighten(path: &Path, current: u32, mode: u32) -> Result<(), PrivateError> {
    if current & 0o077 == 0 {
        return Ok(());
    }
    std::fs::set_permissions(path, Permissions::from_mode(mode)).map_err(|source| {
        PrivateError::Chmod {
            path: path.to_path_buf(),
            mode,
            source,
        }
    })?;
    tracing::info!(path = %path.display(), was = format!("{:o}", current & 0o7777), now = format!("{mode:o}"), "made private");
    Ok(())
}

fn create_dir(path: &Path) -> Result<(), PrivateError> {
    DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(path)
        .map_err(|source| PrivateError::Create {
            path: path.to_path_buf(),
            source,
        })
}

fn stat(path: &Path) -> Result<std::fs::Metadata, PrivateError> {
    std::fs::metadata(path).map_err(|source| PrivateError::Stat {
        path: path.to_path_buf(),
        source,
    })
}

fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

#[cfg(test)]
mod tests;
