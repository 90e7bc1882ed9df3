//! [`Pause`]: a point where a git hook stops until the test lets it go, so that
//! a test can kill boardd (or git) at a known step of its work.

use crate::eventually::{PATIENCE, eventually};
use std::path::{Path, PathBuf};

/// A marker file the hook writes when it reaches the point, and a file the
/// test creates to let it go on.
pub struct Pause {
    marker: PathBuf,
    go: PathBuf,
}

/// Where a paused hook was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Paused {
    /// The git process that ran the hook (the hook's parent).
    pub git: u32,
    /// The hook's shell.
    pub hook: u32,
}

impl Pause {
    /// A pause named `name`, with its files in `dir`.
    pub fn new(dir: &Path, name: &str) -> Pause {
        Pause {
            marker: dir.join(format!("{name}.paused")),
            go: dir.join(format!("{name}.go")),
        }
    }

    /// Shell lines for a hook: write the marker (git's pid and the hook's),
    /// then wait for the go file. Bounded (30 s), so that a test that fails
    /// before it lets go leaves no hook waiting forever.
    pub fn script(&self) -> String {
        let marker = self.marker.display();
        let go = self.go.display();
        format!(
            "echo \"$PPID $$\" > '{marker}.tmp' && mv '{marker}.tmp' '{marker}'\n\
             n=0\n\
             while [ ! -e '{go}' ] && [ $n -lt 600 ]; do sleep 0.05; n=$((n+1)); done\n"
        )
    }

    /// Waits until a hook has reached the point.
    pub async fn reached(&self) -> Paused {
        eventually(
            format!("a hook to reach {}", self.marker.display()),
            PATIENCE,
            || async { self.read() },
        )
        .await
    }

    /// Whether a hook has reached the point.
    pub fn read(&self) -> Option<Paused> {
        let text = std::fs::read_to_string(&self.marker).ok()?;
        let (git, hook) = text.trim().split_once(' ')?;
        Some(Paused {
            git: git.parse().ok()?,
            hook: hook.parse().ok()?,
        })
    }

    /// Lets the waiting hook (and every later one) go on.
    pub fn release(&self) {
        std::fs::write(&self.go, "").expect("write the go file");
    }
}
