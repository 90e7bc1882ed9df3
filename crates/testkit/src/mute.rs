//! [`MuteTeammate`]: a real process on the roster that never answers.

use crate::process::{kill_group, start_kit_bin};
use std::path::Path;
use std::process::Child;

/// The `mute-teammate` binary of this kit as a child process: connected and
/// registered under its name, answering nothing. It leads a process group of its
/// own, as `teamctl spawn` arranges for teammated, so that boardd may signal the
/// group without reaching the test runner. Killed (the group, SIGKILL) and reaped
/// on drop.
pub struct MuteTeammate {
    child: Child,
    tool: u32,
}

impl MuteTeammate {
    /// Starts it against `socket` as `name` in the default team and returns once it
    /// has registered.
    pub fn spawn(socket: &Path, name: &str) -> MuteTeammate {
        let (mut child, line) = start_kit_bin("mute-teammate", socket, [name]);
        let tool = line.as_ref().ok().and_then(|line| {
            let pid = line.trim().strip_prefix("registered ")?;
            pid.parse().ok()
        });
        let Some(tool) = tool else {
            panic!(
                "mute-teammate {name} did not register ({line:?}); exit: {:?}",
                child.try_wait()
            );
        };
        MuteTeammate { child, tool }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The pid of the `sleep` it started in its process group, standing for a tool
    /// command: only a signal to the whole group stops it.
    pub fn tool_pid(&self) -> u32 {
        self.tool
    }

    /// Its exit status once it has exited, reaping it; `None` while it runs.
    pub fn try_wait(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().expect("try_wait")
    }
}

impl Drop for MuteTeammate {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = kill_group(&mut self.child);
        }
    }
}
