//! The lead's credential of each boardd this kit started, found by its socket
//! (`teamboard-process` keeps the record; see there).
//!
//! Every daemon this kit starts ([`crate::InProc`], [`crate::Daemon`]) is
//! noted with its state directory, where boardd keeps the lead's credential.
//! The clients of [`crate::lead`] and [`crate::connect`], the raw
//! [`crate::raw::Session`], and the `teamctl`, `teammated` and kit processes
//! this kit starts all find it here, so that a test names only the socket.

use std::path::{Path, PathBuf};
use teamboard_protocol::Credential;

/// The lead's credential of the daemon on `socket`.
pub fn lead_key(socket: &Path) -> Credential {
    teamboard_process::lead_key(socket).unwrap_or_else(|e| panic!("{e}"))
}

/// The lead's credential file of the daemon on `socket`.
pub fn lead_key_path(socket: &Path) -> PathBuf {
    teamboard_process::lead_key_path(socket)
}

/// The environment that points a child process at the daemon's credential.
pub fn lead_key_env(socket: &Path) -> (&'static str, PathBuf) {
    teamboard_process::lead_key_env(socket)
}
