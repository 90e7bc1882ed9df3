//! Whether bubblewrap is there and works, asked once per process.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// Names the bubblewrap program instead of `bwrap` on `PATH`: for a build of
/// one's own, and for tests of a machine without it.
pub const BWRAP_ENV: &str = "TEAMBOARD_BWRAP";

/// The bubblewrap program.
pub fn bwrap() -> PathBuf {
    std::env::var_os(BWRAP_ENV)
        .filter(|v| !v.is_empty())
        .map_or_else(|| PathBuf::from("bwrap"), PathBuf::from)
}

/// bubblewrap is missing or does not work here; says what to install.
#[derive(Debug, Clone, thiserror::Error)]
#[error(
    "the sandbox needs bubblewrap, and `{program} --ro-bind / / true` {why}. Install it \
     (`apt install bubblewrap`, or your system's `bubblewrap` package), or give \
     `--sandbox off` to run the teammate's commands with your full rights"
)]
pub struct Missing {
    program: String,
    why: String,
}

/// Runs `bwrap --ro-bind / / true` with the namespaces every sandbox asks for,
/// once per process: a machine whose kernel refuses them fails here, not at the
/// first command.
pub fn probe() -> Result<(), Missing> {
    static PROBED: OnceLock<Result<(), Missing>> = OnceLock::new();
    PROBED.get_or_init(run).clone()
}

fn run() -> Result<(), Missing> {
    let program = bwrap();
    let missing = |why: String| Missing {
        program: program.display().to_string(),
        why,
    };
    let out = Command::new(&program)
        .args(["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"])
        .args([
            "--unshare-pid",
            "--unshare-net",
            "--die-with-parent",
            "true",
        ])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| missing(format!("cannot start: {e}")))?;
    if out.status.success() {
        return Ok(());
    }
    let said = String::from_utf8_lossy(&out.stderr);
    Err(missing(format!("failed ({}): {}", out.status, said.trim())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_refusal_names_the_package_and_the_way_out() {
        let e = Missing {
            program: "bwrap".into(),
            why: "cannot start: No such file or directory".into(),
        };
        let text = e.to_string();
        assert!(text.contains("apt install bubblewrap"), "{text}");
        assert!(text.contains("--sandbox off"), "{text}");
    }
}
