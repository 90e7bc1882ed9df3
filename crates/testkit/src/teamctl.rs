//! The `teamctl` binary against a daemon.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// Runs `teamctl --socket S [--state-dir D] ...` with nothing inherited that would
/// point it elsewhere: `TEAMBOARD_SOCKET`, `TEAMBOARD_TEAM`, `TEAMBOARD_STATE_DIR`
/// and `LINES` are removed, `TEAMBOARD_LEAD_KEY` names the daemon's key, and
/// stdin is empty.
#[derive(Debug, Clone)]
pub struct Teamctl {
    bin: PathBuf,
    socket: PathBuf,
    state_dir: Option<PathBuf>,
}

impl Teamctl {
    /// `bin` is the binary: `env!("CARGO_BIN_EXE_teamctl")` inside teamctl's own
    /// package, [`crate::workspace_bin`]`("teamctl")` elsewhere.
    pub fn new(bin: impl Into<PathBuf>, socket: &Path) -> Teamctl {
        Teamctl {
            bin: bin.into(),
            socket: socket.to_path_buf(),
            state_dir: None,
        }
    }

    /// Passes `--state-dir state_dir` too.
    pub fn with_state_dir(mut self, state_dir: &Path) -> Teamctl {
        self.state_dir = Some(state_dir.to_path_buf());
        self
    }

    /// The command with the global flags set, for a test to add to and run.
    pub fn command(&self) -> Command {
        let mut cmd = Command::new(&self.bin);
        cmd.arg("--socket").arg(&self.socket);
        if let Some(state_dir) = &self.state_dir {
            cmd.arg("--state-dir").arg(state_dir);
        }
        let (key_var, key) = crate::lead_key_env(&self.socket);
        cmd.env(key_var, key)
            .env_remove("TEAMBOARD_SOCKET")
            .env_remove("TEAMBOARD_TEAM")
            .env_remove("TEAMBOARD_STATE_DIR")
            .env_remove("LINES")
            .stdin(Stdio::null());
        cmd
    }

    /// Runs `teamctl ... ARGS` to completion.
    pub fn run(&self, args: &[&str]) -> Output {
        self.command().args(args).output().expect("teamctl runs")
    }

    /// Runs teamctl and insists that it succeeds; returns stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "teamctl {args:?} failed ({:?}):\nstdout: {}\nstderr: {}",
            out.status.code(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("utf-8 stdout")
    }

    /// Runs teamctl with `--json`, insists that it succeeds, and parses stdout.
    pub fn json(&self, args: &[&str]) -> Value {
        let mut all = args.to_vec();
        all.push("--json");
        let out = self.ok(&all);
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?}: bad JSON ({e}):\n{out}"))
    }
}
