//! A boardd child process for one measurement, always killed when dropped.

use anyhow::{Context, bail};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};
use tempfile::TempDir;
use tokio::process::{Child, Command};

/// How boardd commits, as the bench compares them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Group commit: the default.
    Group,
    /// `--no-group-commit`: one transaction per request.
    PerRequest,
}

impl Mode {
    pub fn label(self) -> &'static str {
        match self {
            Mode::Group => "group commit",
            Mode::PerRequest => "per request",
        }
    }
}

/// How long boardd may take to open its socket.
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a SIGTERM may take before the daemon is killed.
const STOP_TIMEOUT: Duration = Duration::from_secs(10);

/// A running boardd. Dropping it kills the process (`kill_on_drop`), so an early
/// return or a panic in the bench never leaves a daemon behind.
pub struct Daemon {
    child: Child,
    pub socket: PathBuf,
    /// The socket's directory under /tmp, removed on drop.
    _socket_dir: TempDir,
}

impl Daemon {
    /// Starts `boardd` on `state_dir` and waits until its socket accepts.
    pub async fn start(boardd: &Path, state_dir: &Path, mode: Mode) -> anyhow::Result<Daemon> {
        Daemon::start_with(boardd, state_dir, mode, &[]).await
    }

    /// [`Daemon::start`] with `extra` flags for boardd.
    pub async fn start_with(
        boardd: &Path,
        state_dir: &Path,
        mode: Mode,
        extra: &[&str],
    ) -> anyhow::Result<Daemon> {
        // Socket paths must stay under 108 bytes, so the socket lives in a short
        // directory in /tmp rather than next to the state (which may be deep in
        // target/). /tmp is named explicitly: $TMPDIR may itself be long.
        let socket_dir = tempfile::Builder::new()
            .prefix("tb-")
            .tempdir_in("/tmp")
            .context("cannot create a socket directory in /tmp")?;
        let socket = socket_dir.path().join("boardd.sock");
        let log_path = state_dir.join("boardd.log");
        std::fs::create_dir_all(state_dir)
            .with_context(|| format!("cannot create {}", state_dir.display()))?;
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .with_context(|| format!("cannot create {}", log_path.display()))?;
        let mut cmd = Command::new(boardd);
        cmd.arg("--socket")
            .arg(&socket)
            .arg("--state-dir")
            .arg(state_dir)
            // Leases and restart grace far beyond any phase, so that no expiry
            // work lands in the middle of a measurement.
            .args(["--lease-ttl", "600", "--restart-grace", "600"])
            .args(extra)
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .kill_on_drop(true);
        if mode == Mode::PerRequest {
            cmd.arg("--no-group-commit");
        }
        super::die_with_parent(&mut cmd);
        let mut child = cmd
            .spawn()
            .with_context(|| format!("cannot start {}", boardd.display()))?;
        let started = Instant::now();
        loop {
            if tokio::net::UnixStream::connect(&socket).await.is_ok() {
                break;
            }
            if let Some(status) = child.try_wait()? {
                bail!(
                    "boardd exited during start ({status}); its log:\n{}",
                    tail(&log_path)
                );
            }
            if started.elapsed() > START_TIMEOUT {
                bail!(
                    "boardd did not open {} within {START_TIMEOUT:?}; its log:\n{}",
                    socket.display(),
                    tail(&log_path)
                );
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        Ok(Daemon {
            child,
            socket,
            _socket_dir: socket_dir,
        })
    }

    /// The daemon's process id, empty once it has been reaped.
    pub fn pid(&self) -> Vec<u32> {
        self.child.id().into_iter().collect()
    }

    /// CPU time (user + system) the daemon has used so far.
    pub fn cpu_time(&self) -> Option<Duration> {
        cpu_time(self.child.id()?)
    }

    /// Stops the daemon gracefully (SIGTERM, so it persists and releases its lock),
    /// killing it if that takes too long.
    pub async fn stop(mut self) -> anyhow::Result<()> {
        if let Some(pid) = self.child.id() {
            // SAFETY: kill(2) with a pid we spawned and have not reaped yet.
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGTERM) };
        }
        match tokio::time::timeout(STOP_TIMEOUT, self.child.wait()).await {
            Ok(status) => {
                let status = status?;
                if !status.success() {
                    bail!("boardd exited with {status} on SIGTERM");
                }
            }
            Err(_) => {
                self.child.kill().await?;
                bail!("boardd did not stop within {STOP_TIMEOUT:?} of SIGTERM");
            }
        }
        Ok(())
    }
}

/// The last lines of a log file, for error messages.
fn tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}

/// User + system CPU time of a process, from /proc/PID/stat.
pub fn cpu_time(pid: u32) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may contain spaces; the fields after it are plain.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the whole line, 11 and 12 after ')'.
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    (hz > 0).then(|| Duration::from_secs_f64(ticks as f64 / hz as f64))
}
