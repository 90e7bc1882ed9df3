//! [`MuteTeammate`]: a real process on the roster that never answers.

use crate::bins::workspace_bin;
use std::io::{BufRead as _, BufReader};
use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::{Child, Command, Stdio};

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
        let mut child = Command::new(workspace_bin("mute-teammate"))
            .arg(socket)
            .arg(name)
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start mute-teammate");
        let stdout = child.stdout.take().expect("piped stdout");
        let mut line = String::new();
        let read = BufReader::new(stdout).read_line(&mut line);
        let tool = line
            .trim()
            .strip_prefix("registered ")
            .and_then(|pid| pid.parse().ok());
        let Some(tool) = tool.filter(|_| matches!(read, Ok(n) if n > 0)) else {
            panic!(
                "mute-teammate {name} did not register ({read:?}, {line:?}); exit: {:?}",
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
            // SAFETY: kill(2) has no memory-safety preconditions; the group is our
            // own unreaped child's, so its id cannot have been reused.
            unsafe { libc::kill(-(self.child.id() as libc::pid_t), libc::SIGKILL) };
            let _ = self.child.wait();
        }
    }
}
