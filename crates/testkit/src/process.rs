//! Processes the tests started, directly or through teamctl.

/// Whether `pid` is a live process: not gone, and not a zombie awaiting its reaper
/// (a zombie has stopped running, though `kill -0` still finds it).
pub fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit_once(") ").map(|(_, rest)| !rest.starts_with('Z')))
        .unwrap_or(false)
}

/// The process group of a live process.
pub fn process_group(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // After the command name: state, ppid, pgrp, …
    let (_, rest) = stat.rsplit_once(") ")?;
    rest.split(' ').nth(2)?.parse().ok()
}

/// The live processes (zombies left out) whose process group is `pgid`: what
/// is left of a check or a tool command after its leader was stopped.
pub fn group_members(pgid: u32) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut found: Vec<u32> = dir
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|s| {
                    // After the command name: state, ppid, pgrp, …
                    let (_, rest) = s.rsplit_once(") ")?;
                    let mut fields = rest.split(' ');
                    let state = fields.next()?;
                    let pgrp: u32 = fields.nth(1)?.parse().ok()?;
                    Some(state != "Z" && pgrp == pgid)
                })
                .unwrap_or(false)
        })
        .collect();
    found.sort_unstable();
    found
}

/// `kill -9` of a process the test did not start (a git that boardd ran, say),
/// if it still exists.
pub fn kill9(pid: u32) {
    // SAFETY: kill(2) has no memory-safety preconditions.
    unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
}
