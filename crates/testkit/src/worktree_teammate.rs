//! [`WorktreeTeammate`]: a real process that claims a task, leaves uncommitted
//! work in its worktree and waits to be killed.

use crate::process::{kill_group, start_kit_bin};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus};

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
        let files = files.iter().map(|(p, c)| format!("{p}={c}").into());
        let args = [name.into(), task.to_string().into()];
        let args: Vec<OsString> = args.into_iter().chain(files).collect();
        let (mut child, line) = start_kit_bin("worktree-teammate", socket, args);
        let parsed = line.as_ref().ok().and_then(|line| {
            let (epoch, path) = line.trim().strip_prefix("opened ")?.split_once(' ')?;
            Some((epoch.parse().ok()?, PathBuf::from(path)))
        });
        let Some((epoch, worktree)) = parsed else {
            panic!(
                "worktree-teammate {name} did not open #{task} ({line:?}); exit: {:?}",
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
        kill_group(&mut child).expect("kill -9 of worktree-teammate's group")
    }
}

impl Drop for WorktreeTeammate {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take()
            && child.try_wait().ok().flatten().is_none()
        {
            let _ = kill_group(&mut child);
        }
    }
}
