//! What the codex runtime tests share: a `CODEX_HOME` whose configuration
//! points the real CLI at the mock (`teamboard_testkit::agents::offline`),
//! teammates started with it, and a look at the processes they leave.

use serde_json::json;
use std::path::{Path, PathBuf};
use teamboard_testkit::agents::{Cli, OfflineAgent, agent_cli};
use teamboard_testkit::mock_llm::{MockLlm, MockReply};
use teamboard_testkit::{Board, PATIENCE, Teammate, with_env};

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
    /// Codex as installed, its home and the mock, and a board; `None`, after
    /// saying why the test is skipped, where Codex is not installed.
    pub async fn start() -> Option<(CodexHome, Board)> {
        let program = agent_cli(Cli::Codex)?;
        Some((CodexHome::new(program), Board::start(TEAMMATED).await))
    }

    fn new(program: PathBuf) -> CodexHome {
        let mock = MockLlm::start(vec![]);
        let home = tempfile::Builder::new()
            .prefix("codex-home-")
            .tempdir_in(teamboard_testkit::agents::offline::codex_home_parent(
                Path::new(env!("CARGO_TARGET_TMPDIR")),
            ))
            .expect("a CODEX_HOME under the target dir, or /var/tmp for a checkout in /tmp");
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
        board.spawn_agent(name, &self.agent(), extra, &[])
    }

    /// teammated's flags and environment for this Codex.
    pub fn agent(&self) -> OfflineAgent {
        Cli::Codex
            .offline(&self.program, self.home(), &self.mock.url())
            .expect("CODEX_HOME")
    }

    /// Live processes with this `CODEX_HOME` in their environment, other than
    /// `except` (the teammate itself): its agent, the agent's guard, and what
    /// they started.
    pub fn processes(&self, except: &[u32]) -> Vec<(u32, String)> {
        with_env("CODEX_HOME", &self.home().display().to_string())
            .into_iter()
            .filter(|(pid, _)| !except.contains(pid))
            .collect()
    }

    /// Waits until the mock has had `calls` model calls; else fails, saying
    /// `missing` and showing `by`'s log.
    pub async fn wait_for_calls(&self, calls: usize, missing: &str, by: &Teammate) {
        tokio::time::timeout(PATIENCE, self.mock.wait_for_calls(calls))
            .await
            .unwrap_or_else(|_| panic!("{missing}; log:\n{}", by.log_text()));
    }
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

/// The `p`-th percentile (0–100) of `values`, sorted in place.
pub fn percentile(values: &mut [std::time::Duration], p: usize) -> std::time::Duration {
    values.sort_unstable();
    let i = (values.len() * p).div_ceil(100).saturating_sub(1);
    values.get(i).copied().unwrap_or_default()
}
