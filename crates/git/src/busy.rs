//! Waiting until no git works in a directory any more.
//!
//! boardd's git commands are not killed with boardd: a git killed half way
//! leaves its lock files (`index.lock`, a ref's `.lock`) behind, which would
//! block every later git there until someone removed them by hand. So when
//! boardd is killed, the git it started (a gate's rebase, say) runs on as an
//! orphan and finishes cleanly. The trap is the restarted boardd: it must not
//! work in that worktree (abort the update, rebase, open it for a new owner)
//! while the orphan still does, or the two interleave (an abort that resets
//! the files under a rebase that then moves the branch, leaving files that
//! undo other people's work). The orphans are found by what the kernel says
//! of every process: a `git` whose working directory (`git -C` changes into
//! it) is in the worktree.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How often the processes are looked at again while one still runs.
const POLL: Duration = Duration::from_millis(20);

/// Waits until no git process has its working directory in `dir` (or below
/// it), or `timeout` has passed. Answers how long it waited for one to end
/// (zero: there was none), or `None` if one still runs. A directory that does
/// not exist has none.
pub fn wait_for_git_in(dir: &Path, timeout: Duration) -> Option<Duration> {
    let Ok(dir) = std::fs::canonicalize(dir) else {
        return Some(Duration::ZERO);
    };
    let start = Instant::now();
    let mut waited = false;
    loop {
        if git_in(&dir).is_none() {
            return Some(if waited {
                start.elapsed()
            } else {
                Duration::ZERO
            });
        }
        if start.elapsed() >= timeout {
            return None;
        }
        waited = true;
        std::thread::sleep(POLL);
    }
}

/// The pid of a git process working in `dir`, if there is one.
fn git_in(dir: &Path) -> Option<u32> {
    let me = std::process::id();
    std::fs::read_dir("/proc")
        .ok()?
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| *pid != me)
        .find(|pid| {
            let is_git = std::fs::read_to_string(format!("/proc/{pid}/comm"))
                .is_ok_and(|comm| comm.trim_end().starts_with("git"));
            // A process of another user, or one that just exited, cannot be
            // read: neither is ours to wait for.
            is_git
                && std::fs::read_link(format!("/proc/{pid}/cwd"))
                    .is_ok_and(|cwd: PathBuf| cwd.starts_with(dir))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::{Command, Stdio};

    #[test]
    fn waits_while_a_git_works_in_the_directory_and_not_after() {
        let dir = tempfile::tempdir().expect("tempdir");
        let other = tempfile::tempdir().expect("tempdir");
        // A repository, as a worktree is: outside one, git looks for one in
        // the directories above, changing into each, and could be seen there.
        let init = Command::new("git")
            .args(["init", "-q"])
            .current_dir(dir.path())
            .status()
            .expect("git init");
        assert!(init.success());
        // A git that runs until its input closes.
        let mut git = Command::new("git")
            .args(["hash-object", "--stdin"])
            .current_dir(dir.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .expect("git");
        // `spawn` returns once the child is in execve, a moment before the
        // kernel gives it git's name.
        let comm = format!("/proc/{}/comm", git.id());
        let named = Instant::now();
        while !std::fs::read_to_string(&comm).is_ok_and(|c| c.starts_with("git")) {
            assert!(
                named.elapsed() < Duration::from_secs(10),
                "git never got its name"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(
            wait_for_git_in(dir.path(), Duration::from_millis(100)),
            None
        );
        assert_eq!(
            wait_for_git_in(other.path(), Duration::ZERO),
            Some(Duration::ZERO)
        );
        drop(git.stdin.take());
        git.wait().expect("git exits");
        assert_eq!(
            wait_for_git_in(dir.path(), Duration::ZERO),
            Some(Duration::ZERO)
        );
        assert_eq!(
            wait_for_git_in(&dir.path().join("gone"), Duration::ZERO),
            Some(Duration::ZERO)
        );
    }
}
