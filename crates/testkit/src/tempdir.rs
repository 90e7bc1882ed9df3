//! Scratch directories.

use tempfile::TempDir;

/// A fresh private directory like `/tmp/tbXXXXXX`, removed on drop.
///
/// Short on purpose: a Unix socket path must stay under 108 bytes, and a socket
/// under `target/` of a deep checkout would not.
pub fn short_tempdir() -> TempDir {
    tempfile::Builder::new()
        .prefix("tb")
        .tempdir_in("/tmp")
        .expect("create a temporary directory in /tmp")
}
