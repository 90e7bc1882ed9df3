//! The soak's boardd: a real release process on a fixed socket and state
//! directory, so that it can be killed with SIGKILL and started again on the
//! same state, as a crash and a restart by systemd would.

use super::git;
use anyhow::{Context, bail};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::process::{Child, Command};

/// How long boardd may take to open its socket (a restart replays the log).
const START_TIMEOUT: Duration = Duration::from_secs(30);
const STOP_TIMEOUT: Duration = Duration::from_secs(10);

pub struct Boardd {
    bin: PathBuf,
    pub socket: PathBuf,
    state: PathBuf,
    pub log: PathBuf,
    flags: Vec<String>,
    child: Option<Child>,
}

impl Boardd {
    /// Starts boardd and waits until its socket accepts. `flags` are its
    /// options beyond the socket and the state directory.
    pub async fn start(
        bin: &Path,
        socket: &Path,
        state: &Path,
        flags: Vec<String>,
    ) -> anyhow::Result<Boardd> {
        let mut b = Boardd {
            bin: bin.to_path_buf(),
            socket: socket.to_path_buf(),
            state: state.to_path_buf(),
            log: state.join("boardd.log"),
            flags,
            child: None,
        };
        std::fs::create_dir_all(state)
            .with_context(|| format!("cannot create {}", state.display()))?;
        b.spawn().await?;
        Ok(b)
    }

    async fn spawn(&mut self) -> anyhow::Result<()> {
        // Appended to across restarts: one log for the whole run.
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .with_context(|| format!("cannot open {}", self.log.display()))?;
        let mut cmd = Command::new(&self.bin);
        cmd.arg("--socket")
            .arg(&self.socket)
            .arg("--state-dir")
            .arg(&self.state)
            .args(&self.flags)
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .kill_on_drop(true);
        git::isolate_tokio(&mut cmd);
        crate::bench::die_with_parent(&mut cmd);
        let mut child = cmd
            .spawn()
            .with_context(|| format!("cannot start {}", self.bin.display()))?;
        let started = Instant::now();
        loop {
            if tokio::net::UnixStream::connect(&self.socket).await.is_ok() {
                break;
            }
            if let Some(status) = child.try_wait()? {
                bail!(
                    "boardd exited during start ({status}); the end of its log:\n{}",
                    tail(&self.log, 20)
                );
            }
            if started.elapsed() > START_TIMEOUT {
                bail!(
                    "boardd did not open {} within {START_TIMEOUT:?}; the end of its log:\n{}",
                    self.socket.display(),
                    tail(&self.log, 20)
                );
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        self.child = Some(child);
        Ok(())
    }

    /// `kill -9`, then a new boardd on the same state. Answers how long the
    /// restart took until the socket accepted.
    pub async fn crash_and_restart(&mut self) -> anyhow::Result<Duration> {
        if let Some(mut child) = self.child.take() {
            child.start_kill().context("cannot kill boardd")?;
            child.wait().await?;
        }
        let t = Instant::now();
        self.spawn().await?;
        Ok(t.elapsed())
    }

    /// Stops boardd with SIGTERM, as a person would.
    pub async fn stop(&mut self) -> anyhow::Result<()> {
        let Some(mut child) = self.child.take() else {
            return Ok(());
        };
        if let Some(pid) = child.id() {
            // SAFETY: kill(2) on a child we spawned and have not reaped.
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGTERM) };
        }
        match tokio::time::timeout(STOP_TIMEOUT, child.wait()).await {
            Ok(status) => {
                let status = status?;
                if !status.success() {
                    bail!("boardd exited with {status} on SIGTERM");
                }
                Ok(())
            }
            Err(_) => {
                child.kill().await?;
                bail!("boardd did not stop within {STOP_TIMEOUT:?} of SIGTERM")
            }
        }
    }

    /// Whether the process is still there (`Some(status)` if it exited).
    pub fn exited(&mut self) -> anyhow::Result<Option<std::process::ExitStatus>> {
        match self.child.as_mut() {
            Some(c) => Ok(c.try_wait()?),
            None => Ok(None),
        }
    }
}

/// The last `n` lines of a file, for failure reports.
pub fn tail(path: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}
