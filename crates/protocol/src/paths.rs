//! Where boardd keeps its socket and its state, shared by every program so that
//! `teamctl` finds the daemon without being told.
//!
//! Order of precedence, first match wins:
//! - socket: `TEAMBOARD_SOCKET`; `$XDG_RUNTIME_DIR/teamboard/boardd.sock`;
//!   `<state dir>/boardd.sock` when `XDG_RUNTIME_DIR` is unset.
//! - state: `TEAMBOARD_STATE_DIR`; `$STATE_DIRECTORY` (set by systemd's
//!   `StateDirectory=`); `~/.local/state/teamboard`.
//!
//! Command-line flags (`--socket`, `--state-dir`) override all of these.

use std::path::PathBuf;

/// The environment variable that overrides the socket path.
pub const SOCKET_ENV: &str = "TEAMBOARD_SOCKET";
/// The environment variable that overrides the state directory.
pub const STATE_DIR_ENV: &str = "TEAMBOARD_STATE_DIR";

fn non_empty_env(name: &str) -> Option<PathBuf> {
    std::env::var_os(name)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// The state directory: the SQLite database, the lock file and teammates' logs.
pub fn default_state_dir() -> PathBuf {
    if let Some(dir) = non_empty_env(STATE_DIR_ENV) {
        return dir;
    }
    if let Some(dir) = non_empty_env("STATE_DIRECTORY") {
        // systemd may pass several colon-separated directories; ours is the first.
        let first = dir.to_string_lossy().split(':').next().map(PathBuf::from);
        if let Some(first) = first {
            return first;
        }
    }
    if let Some(dirs) = directories::ProjectDirs::from("", "", "teamboard")
        && let Some(state) = dirs.state_dir()
    {
        return state.to_path_buf();
    }
    if let Some(home) = non_empty_env("HOME") {
        return home.join(".local/state/teamboard");
    }
    std::env::temp_dir().join("teamboard-state")
}

/// The socket path clients connect to and boardd listens on.
pub fn default_socket_path() -> PathBuf {
    if let Some(path) = non_empty_env(SOCKET_ENV) {
        return path;
    }
    if let Some(runtime) = non_empty_env("XDG_RUNTIME_DIR") {
        return runtime.join("teamboard").join("boardd.sock");
    }
    default_state_dir().join("boardd.sock")
}

/// teamboard's configuration directory: `$XDG_CONFIG_HOME/teamboard`, or
/// `~/.config/teamboard`. `None` when neither variable is set. It holds
/// `keys.env` (API keys) and `teammates/NAME.env` (what `teammated@NAME` reads).
pub fn config_dir() -> Option<PathBuf> {
    non_empty_env("XDG_CONFIG_HOME")
        .or_else(|| non_empty_env("HOME").map(|h| h.join(".config")))
        .map(|c| c.join("teamboard"))
}
