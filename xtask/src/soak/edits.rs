//! What a soak teammate does in its worktree with files and git: append lines,
//! commit now and then, and resolve conflicts the way a model would (rebase
//! onto the target, keep both sides or its own, continue).

use super::git;
use anyhow::{Context, bail};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

/// How a conflict is resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::Display)]
#[strum(serialize_all = "lowercase")]
pub enum How {
    /// Both sides' lines, the target's first.
    Both,
    /// The task's own version of the file (`checkout --theirs` in a rebase).
    Own,
}

/// How often a git command that found another git's `index.lock` is retried:
/// the lock of a teammate killed in the middle of a git command outlives it
/// for as long as that orphaned git runs.
const LOCK_RETRIES: usize = 60;
const LOCK_PAUSE: Duration = Duration::from_millis(50);

/// A worktree, worked in by `name`.
pub struct Edits {
    pub wt: PathBuf,
    name: String,
}

impl Edits {
    pub fn new(wt: &Path, name: &str) -> Edits {
        Edits {
            wt: wt.to_path_buf(),
            name: name.to_string(),
        }
    }

    /// Git as the teammate, retried while another git holds the index lock.
    fn git(&self, args: &[&str]) -> anyhow::Result<Output> {
        let user = format!("user.name={}", self.name);
        let email = format!("user.email={}@soak.invalid", self.name);
        let mut tries = 0;
        loop {
            let out = git::command(&self.wt)
                .args(["-c", &user, "-c", &email])
                .args(args)
                .output()
                .with_context(|| format!("cannot run git {}", args.join(" ")))?;
            let locked = !out.status.success()
                && String::from_utf8_lossy(&out.stderr).contains("index.lock");
            if !locked || tries == LOCK_RETRIES {
                return Ok(out);
            }
            tries += 1;
            std::thread::sleep(LOCK_PAUSE);
        }
    }

    fn git_ok(&self, args: &[&str]) -> anyhow::Result<String> {
        let out = self.git(args)?;
        if !out.status.success() {
            bail!("{}", git::failure(args, &out));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// Appends `line` to `rel`, creating it (and its directory) if need be, in
    /// one write.
    pub fn append(&self, rel: &str, line: &str) -> anyhow::Result<()> {
        let path = self.wt.join(rel);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .with_context(|| format!("cannot open {}", path.display()))?;
        f.write_all(format!("{line}\n").as_bytes())
            .with_context(|| format!("cannot append to {}", path.display()))
    }

    /// The lines of `rel` (none if it does not exist).
    pub fn lines(&self, rel: &str) -> Vec<String> {
        std::fs::read_to_string(self.wt.join(rel))
            .map(|t| t.lines().map(str::to_string).collect())
            .unwrap_or_default()
    }

    /// Commits everything with the task's subject (so that every commit of a
    /// task branch names its task). `false`: nothing to commit.
    pub fn commit(&self, subject: &str) -> anyhow::Result<bool> {
        self.git_ok(&["add", "-A"])?;
        let staged = self.git(&["diff", "--cached", "--quiet"])?;
        if staged.status.success() {
            return Ok(false);
        }
        let body = format!("work in progress by {}", self.name);
        self.git_ok(&["commit", "-q", "-m", subject, "-m", &body])?;
        Ok(true)
    }

    /// Rebases the task branch onto `target` and resolves every conflict the
    /// rebase stops on, by `how`. Answers the paths resolved.
    pub fn rebase_onto(&self, target: &str, how: How) -> anyhow::Result<Vec<String>> {
        let out = self.git(&["rebase", target])?;
        if out.status.success() {
            return Ok(Vec::new());
        }
        if !git::rebasing(&self.wt)? {
            bail!("{}", git::failure(&["rebase", target], &out));
        }
        self.finish_rebase(how)
    }

    /// Resolves and continues a stopped rebase until it is done.
    pub fn finish_rebase(&self, how: How) -> anyhow::Result<Vec<String>> {
        let mut resolved = Vec::new();
        for _ in 0..100 {
            if !git::rebasing(&self.wt)? {
                return Ok(resolved);
            }
            for path in git::unmerged(&self.wt)? {
                self.resolve(&path, how)?;
                self.git_ok(&["add", "--", &path])?;
                resolved.push(path);
            }
            let out = self.git(&["rebase", "--continue"])?;
            if out.status.success() || !git::rebasing(&self.wt)? {
                continue;
            }
            if git::unmerged(&self.wt)?.is_empty() {
                let text = String::from_utf8_lossy(&out.stdout).to_string()
                    + &String::from_utf8_lossy(&out.stderr);
                if text.contains("No changes") || text.contains("nothing to commit") {
                    // The resolution left this commit empty: drop it.
                    self.git_ok(&["rebase", "--skip"])?;
                } else {
                    bail!("{}", git::failure(&["rebase", "--continue"], &out));
                }
            }
        }
        bail!("the rebase did not finish after 100 steps")
    }

    pub fn abort_rebase(&self) -> anyhow::Result<()> {
        if git::rebasing(&self.wt)? {
            self.git_ok(&["rebase", "--abort"])?;
        }
        Ok(())
    }

    /// One unmerged file, resolved by `how`. A file without conflict markers
    /// (a resolution written before a kill, not yet added) is kept as it is.
    fn resolve(&self, rel: &str, how: How) -> anyhow::Result<()> {
        let path = self.wt.join(rel);
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        if !text.lines().any(|l| l.starts_with("<<<<<<<")) {
            return Ok(());
        }
        if how == How::Own {
            // In a rebase, "theirs" is the task's own commit being replayed.
            let out = self.git(&["checkout", "--theirs", "--", rel])?;
            if out.status.success() {
                return Ok(());
            }
        }
        std::fs::write(&path, both_sides(&text))
            .with_context(|| format!("cannot write {}", path.display()))
    }
}

/// A file's conflicts resolved by keeping both sides, the first side first
/// (and the merge base of a diff3-style conflict dropped).
pub fn both_sides(text: &str) -> String {
    #[derive(PartialEq)]
    enum At {
        Outside,
        First,
        Base,
        Second,
    }
    let mut at = At::Outside;
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let bare = line.trim_end_matches('\n');
        if bare.starts_with("<<<<<<<") {
            at = At::First;
        } else if bare.starts_with("|||||||") && at == At::First {
            at = At::Base;
        } else if bare == "=======" && at != At::Outside {
            at = At::Second;
        } else if bare.starts_with(">>>>>>>") && at == At::Second {
            at = At::Outside;
        } else if at != At::Base {
            out.push_str(line);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::both_sides;

    #[test]
    fn both_sides_keeps_every_line_once_and_drops_markers_and_base() {
        let text = "a\n<<<<<<< HEAD\nt1 x\n||||||| base\nold\n=======\nt2 y\n>>>>>>> t2\nz\n";
        assert_eq!(both_sides(text), "a\nt1 x\nt2 y\nz\n");
    }
}
