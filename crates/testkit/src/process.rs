//! Processes the tests started, directly or through teamctl.

/// Whether `pid` is a live process: not gone, and not a zombie awaiting its reaper
/// (a zombie has stopped running, though `kill -0` still finds it).
pub fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit_once(") ").map(|(_, rest)| !rest.starts_with('Z')))
        .unwrap_or(false)
}
