//! What of teamboard's own a sandboxed command must never see.

use std::path::{Path, PathBuf};

/// teamboard's private paths, for [`crate::Jail::hide`]: the state
/// directories given (boardd's and the teammate's, when they differ: the
/// database, the worktrees of every task, transcripts and logs), the socket and
/// its directory, the user's runtime directory (`$XDG_RUNTIME_DIR`, where the
/// socket lives by default beside the session bus), and the configuration
/// directory (`keys.env`, `teammates/*.env`).
pub fn private_paths<'a>(
    state_dirs: impl IntoIterator<Item = &'a Path>,
    socket: &Path,
) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = state_dirs.into_iter().map(Path::to_path_buf).collect();
    paths.push(socket.to_path_buf());
    if let Some(dir) = socket.parent().filter(|d| d.parent().is_some()) {
        paths.push(dir.to_path_buf());
    }
    if let Some(runtime) = std::env::var_os("XDG_RUNTIME_DIR").filter(|v| !v.is_empty()) {
        paths.push(PathBuf::from(runtime));
    }
    paths.extend(teamboard_protocol::paths::config_dir());
    paths.sort();
    paths.dedup();
    paths
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_socket_its_directory_the_state_and_the_keys() {
        let paths = private_paths([Path::new("/s/state")], Path::new("/r/tb/boardd.sock"));
        for p in ["/s/state", "/r/tb/boardd.sock", "/r/tb"] {
            assert!(paths.contains(&PathBuf::from(p)), "{p} in {paths:?}");
        }
        if let Some(config) = teamboard_protocol::paths::config_dir() {
            assert!(paths.contains(&config));
        }
        // A socket at the root never hides the whole filesystem.
        let paths = private_paths([], Path::new("/boardd.sock"));
        assert!(!paths.contains(&PathBuf::from("/")), "{paths:?}");
    }
}
