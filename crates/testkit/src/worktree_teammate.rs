//! [`WorktreeTeammate`]: a real process that claims a task, leaves uncommitted
//! work in its worktree and waits to be killed.

use crate::bins::workspace_bin;
use std::io::{BufRead as _, BufReader};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};

/// This kit's `worktree-teammate` binary as a child process, in a process group
/// of its own. It has claimed its task, opened the worktree and written its
/// files by the time [`WorktreeTeammate::spawn`] returns. Killed (the group,
/// SIGKILL) and reaped on drop.
pub struct WorktreeTeammate {
    child: Option<Child>,
    /// The epoch of its claim.
    pub epoch: u64,
    /// The worktree it works in.
    pub worktree: PathBuf,
}

impl WorktreeTeammate {
    /// Starts it against `socket` as `name`, claiming `task` and writing each
    /// `(path, content)` of `files` into the worktree.
    pub fn spawn(socket: &Path, name: &str, task: u64, files: &[(&str, &str)]) -> WorktreeTeammate {
        let mut child = Command::new(workspace_bin("worktree-teammate"))
            .arg(socket)
            .arg(name)
            .arg(task.to_string())
            .args(files.iter().map(|(p, c)| format!("{p}={c}")))
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start worktree-teammate");
        let stdout = child.stdout.take().expect("piped stdout");
        let mut line = String::new();
        let read = BufReader::new(stdout).read_line(&mut line);
        let parsed = line
            .trim()
            .strip_prefix("opened ")
            .and_then(|rest| rest.split_once(' '))
            .and_then(|(epoch, path)| Some((epoch.parse().ok()?, PathBuf::from(path))));
        let Some((epoch, worktree)) = parsed.filter(|_| matches!(read, Ok(n) if n > 0)) else {
            panic!(
                "worktree-teammate {name} did not open #{task} ({read:?}, {line:?}); exit: {:?}",
                child.try_wait()
            );
        };
        WorktreeTeammate {
            child: Some(child),
            epoch,
            worktree,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("already reaped").id()
    }

    /// `kill -9` of its process group, and reap it.
    pub fn kill9(&mut self) -> ExitStatus {
        let mut child = self.child.take().expect("already reaped");
        // SAFETY: kill(2) has no memory-safety preconditions; the group is our
        // own unreaped child's, so its id cannot have been reused.
        let rc = unsafe { libc::kill(-(child.id() as libc::pid_t), libc::SIGKILL) };
        assert_eq!(rc, 0, "kill -9 of worktree-teammate's group failed");
        child.wait().expect("wait for worktree-teammate")
    }
}

impl Drop for WorktreeTeammate {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take()
            && child.try_wait().ok().flatten().is_none()
        {
            // SAFETY: as in `kill9`.
            unsafe { libc::kill(-(child.id() as libc::pid_t), libc::SIGKILL) };
            let _ = child.wait();
        }
    }
}
