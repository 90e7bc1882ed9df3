//! What the codex runtime tests share: a `CODEX_HOME` whose configuration
//! points the real CLI at the mock (`teamboard_testkit::agents::offline`), teammates started with it, and a look at
//! the processes they leave.

use serde_json::json;
use std::path::{Path, PathBuf};
use teamboard_testkit::agents::Cli;
use teamboard_testkit::mock_llm::{MockLlm, MockReply};
use teamboard_testkit::{Board, TEAM, Teammate};

/// The binary under test, built by cargo for this package's tests.
pub const TEAMMATED: &str = env!("CARGO_BIN_EXE_teammated");

/// The CLI, its home and the mock it talks to, for one test.
pub struct CodexHome {
    pub program: PathBuf,
    pub mock: MockLlm,
    /// `CODEX_HOME`. Not under /tmp: codex refuses to put its helper binaries
    /// there. Under cargo's target dir instead, removed when the test ends.
    home: tempfile::TempDir,
}

impl CodexHome {
    pub fn new(program: PathBuf) -> CodexHome {
        let mock = MockLlm::start(vec![]);
        let home = tempfile::Builder::new()
            .prefix("codex-home-")
            .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
            .expect("a CODEX_HOME under the target dir");
        CodexHome {
            program,
            mock,
            home,
        }
    }

    pub fn home(&self) -> &Path {
        self.home.path()
    }

    /// Starts teammate `name` with the codex runtime and `extra` flags. Codex
    /// takes its configuration (`teamboard_testkit::agents::offline`) from
    /// `CODEX_HOME` in teammated's environment.
    pub fn spawn(&self, board: &Board, name: &str, extra: &[&str]) -> Teammate {
        let agent = Cli::Codex
            .offline(&self.program, self.home(), &self.mock.url())
            .expect("CODEX_HOME");
        let mut args = agent.arg_strs();
        args.extend_from_slice(extra);
        board.spawn_with_env(name, "dev", &args, &agent.env_strs())
    }

    /// Live processes with this `CODEX_HOME` in their environment, other than
    /// `except` (the teammate itself): its agent, the agent's guard, and what
    /// they started.
    pub fn processes(&self, except: &[u32]) -> Vec<(u32, String)> {
        let needle = format!("CODEX_HOME={}", self.home().display());
        live_processes()
            .into_iter()
            .filter(|(pid, _)| !except.contains(pid))
            .filter(|(pid, _)| {
                std::fs::read(format!("/proc/{pid}/environ"))
                    .map(|env| env.split(|b| *b == 0).any(|var| var == needle.as_bytes()))
                    .unwrap_or(false)
            })
            .collect()
    }
}

/// Live processes (not zombies) and their command lines, spaces between the
/// arguments.
pub fn live_processes() -> Vec<(u32, String)> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| teamboard_testkit::alive(*pid))
        .filter_map(|pid| {
            let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
            let cmd: Vec<String> = cmd
                .split(|b| *b == 0)
                .filter(|a| !a.is_empty())
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect();
            Some((pid, cmd.join(" ")))
        })
        .collect()
}

/// Live processes whose command line contains `marker`.
pub fn with_marker(marker: &str) -> Vec<(u32, String)> {
    live_processes()
        .into_iter()
        .filter(|(_, cmd)| cmd.contains(marker))
        .collect()
}

/// A number no other test of this run uses, for markers.
pub fn nonce() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!("{}{:09}", std::process::id() % 1000, nanos)
}

/// The model calls Codex's shell tool with `cmd`.
pub fn exec(call_id: &str, cmd: &str) -> MockReply {
    MockReply::responses_function_call(
        call_id,
        "exec_command",
        &json!({"cmd": cmd}).to_string(),
        None,
    )
}

/// The teammate's `agent/sessions.json`, parsed (`Null` when absent).
pub fn sessions(board: &Board, name: &str) -> serde_json::Value {
    let path = teamboard_protocol::transcript::teammate_dir(board.state_dir(), TEAM, name)
        .join("agent")
        .join("sessions.json");
    std::fs::read_to_string(path)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default()
}

/// The `p`-th percentile (0–100) of `values`, sorted in place.
pub fn percentile(values: &mut [std::time::Duration], p: usize) -> std::time::Duration {
    values.sort_unstable();
    let i = (values.len() * p).div_ceil(100).saturating_sub(1);
    values.get(i).copied().unwrap_or_default()
}
