//! Real `teammated` processes.

use crate::eventually::{Later, PATIENCE, eventually};
use crate::process::with_marker;
use std::path::{Path, PathBuf};
use std::process::Stdio;

/// Where teammates connect and keep their state, and which binary plays them.
#[derive(Debug, Clone)]
pub struct Teammated {
    /// `env!("CARGO_BIN_EXE_teammated")` inside teammated's own package,
    /// [`crate::workspace_bin`]`("teammated")` elsewhere.
    pub bin: PathBuf,
    pub socket: PathBuf,
    pub state_dir: PathBuf,
}

impl Teammated {
    pub fn new(bin: impl Into<PathBuf>, socket: &Path, state_dir: &Path) -> Teammated {
        Teammated {
            bin: bin.into(),
            socket: socket.to_path_buf(),
            state_dir: state_dir.to_path_buf(),
        }
    }

    /// Starts `teammated --name NAME --role ROLE` in `workdir`, with `extra` flags and
    /// `env` added. Its stderr (at debug level) goes to `log`. No API key is
    /// inherited: a test that wants a provider passes its key in `env`. Must be
    /// called inside a tokio runtime; the process is killed when the [`Teammate`]
    /// is dropped.
    pub fn spawn(
        &self,
        name: &str,
        role: &str,
        workdir: &Path,
        log: &Path,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> Teammate {
        let file = std::fs::File::create(log).expect("create the teammate's log file");
        let (key_var, key) = crate::lead_key_env(&self.socket);
        let child = tokio::process::Command::new(&self.bin)
            .args(["--name", name, "--role", role])
            .arg("--socket")
            .arg(&self.socket)
            .arg("--state-dir")
            .arg(&self.state_dir)
            .arg("--workdir")
            .arg(workdir)
            .args(extra)
            .env("TEAMMATED_LOG", "debug")
            .env(key_var, key)
            .env_remove("TEAMBOARD_SOCKET")
            .env_remove("TEAMBOARD_STATE_DIR")
            .env_remove("ANTHROPIC_API_KEY")
            .env_remove("OPENAI_API_KEY")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(file)
            .kill_on_drop(true)
            .spawn()
            .expect("teammated starts");
        Teammate {
            name: name.to_string(),
            child,
            log: log.to_path_buf(),
            workdir: workdir.to_path_buf(),
        }
    }
}

/// A running `teammated`, killed when dropped.
pub struct Teammate {
    pub name: String,
    pub child: tokio::process::Child,
    /// Its stderr.
    pub log: PathBuf,
    pub workdir: PathBuf,
}

impl Teammate {
    /// Waits for the process to exit and returns its exit code.
    pub async fn exit_code(&mut self) -> Option<i32> {
        let status = tokio::time::timeout(PATIENCE, self.child.wait())
            .await
            .unwrap_or_else(|_| panic!("{} did not exit; log:\n{}", self.name, self.log_text()))
            .expect("wait");
        status.code()
    }

    /// What it wrote to its log so far.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    pub fn pid(&self) -> u32 {
        self.child.id().expect("running")
    }

    /// `kill -9`. Our own unreaped child: its pid cannot have been recycled.
    pub fn kill9(&self) {
        crate::kill9(self.pid());
    }

    /// Waits until `path` exists (a marker its work creates), or panics with its
    /// log after [`PATIENCE`].
    pub async fn wait_for_file(&self, path: &Path) {
        let what = format!("{} to create {}", self.name, path.display());
        eventually(self.with_log(what), PATIENCE, || async {
            path.exists().then_some(())
        })
        .await;
    }

    /// Waits until a process whose command line carries `marker` runs (a
    /// command its agent started), or panics with its log after [`PATIENCE`].
    pub async fn wait_for_process(&self, marker: &str) {
        let what = format!("{}'s agent to run a process marked {marker}", self.name);
        eventually(self.with_log(what), PATIENCE, || async {
            (!with_marker(marker).is_empty()).then_some(())
        })
        .await;
    }

    /// `what` it is awaited to do, and its log, read only if the wait fails.
    fn with_log(&self, what: String) -> impl std::fmt::Display {
        Later(move || format!("{what}; its log:\n{}", self.log_text()))
    }
}

/// The transcript of teammate `name` of the default team, as text (empty if it has
/// none yet), for assertions and failure messages.
pub fn transcript(state_dir: &Path, name: &str) -> String {
    std::fs::read_to_string(teamboard_protocol::transcript::transcript_path(
        state_dir,
        crate::TEAM,
        name,
    ))
    .unwrap_or_default()
}
