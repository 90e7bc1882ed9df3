//! A bench's board: a scratch directory, release boardds with their state in
//! it, teammates started against them, and the lead's view of the events.

use anyhow::{Context, bail};
use std::cell::Cell;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};
use teamboard_process::{Boardd, Launch, die_with_parent};
use teamboard_protocol::{Client, Event, EventKind, TaskId};
use tempfile::TempDir;
use tokio::process::Child;
use tokio::sync::mpsc;

/// How long boardd may take to answer (a restart replays its log).
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a SIGTERM may take before boardd is killed.
const STOP_TIMEOUT: Duration = Duration::from_secs(10);

/// Everything of one run, in one directory that goes when it is dropped.
pub struct Scratch {
    dir: TempDir,
    /// Socket paths must stay under 108 bytes, so sockets live in a short
    /// directory in /tmp rather than next to the state (which may be deep in
    /// target/). /tmp is named explicitly: $TMPDIR may itself be long.
    sockets: TempDir,
    boardds: Cell<usize>,
}

impl Scratch {
    /// A fresh directory `PREFIX…` under `dir`, or under `default` when none
    /// was given.
    pub fn new(prefix: &str, dir: Option<&Path>, default: PathBuf) -> anyhow::Result<Scratch> {
        let base = dir.map_or(default, Path::to_path_buf);
        std::fs::create_dir_all(&base)
            .with_context(|| format!("cannot create {}", base.display()))?;
        let temp = |prefix, dir: &Path| tempfile::Builder::new().prefix(prefix).tempdir_in(dir);
        let dir = temp(prefix, &base)
            .with_context(|| format!("cannot create a directory in {}", base.display()))?;
        let sockets =
            temp("tb-", Path::new("/tmp")).context("cannot create a socket directory in /tmp")?;
        Ok(Scratch {
            dir,
            sockets,
            boardds: Cell::new(0),
        })
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// A socket path of the run, short enough for the 108-byte limit.
    pub fn socket(&self, name: &str) -> PathBuf {
        self.sockets.path().join(name)
    }

    /// The socket the next [`Scratch::boardd`] listens on, for a flag that
    /// must name it before it starts.
    pub fn next_socket(&self) -> PathBuf {
        self.socket(&format!("boardd-{}.sock", self.boardds.get()))
    }

    /// Keeps the directory (for a failed run's logs) and says where it is.
    pub fn keep(self) -> PathBuf {
        self.dir.keep()
    }

    /// A scratch directory `PREFIX…` under `dir` (default `target/bench`) with a
    /// boardd started on `state/` in it, for a bench that needs one board.
    pub async fn with_boardd(
        prefix: &str,
        dir: Option<&Path>,
        bins: &super::Bins,
    ) -> anyhow::Result<(Scratch, Boardd)> {
        let scratch = Scratch::new(prefix, dir, super::bench_dir()?)?;
        let state = scratch.path().join("state");
        let boardd = scratch.boardd(&bins.get("boardd"), &state, &[]).await?;
        Ok((scratch, boardd))
    }

    /// Starts the release `boardd` on `state` and waits until it answers. Its
    /// log (warnings only) is `state/boardd.log`; leases and the restart grace
    /// are far beyond any phase, so that no expiry lands in a measurement.
    /// It dies with the bench.
    pub async fn boardd(&self, bin: &Path, state: &Path, extra: &[&str]) -> anyhow::Result<Boardd> {
        let n = self.boardds.replace(self.boardds.get() + 1);
        let socket = self.socket(&format!("boardd-{n}.sock"));
        let mut launch = Launch::new(bin, &socket, state, &state.join("boardd.log"));
        launch
            .command()
            .args(["--lease-ttl", "600", "--restart-grace", "600"])
            .args(extra)
            .env("RUST_LOG", "warn");
        die_with_parent(launch.command(), libc::SIGKILL);
        Ok(launch.start(START_TIMEOUT).await?)
    }
}

/// Stops a bench's boardd: SIGTERM, so that it finishes its commits.
pub async fn stop(mut boardd: Boardd) -> anyhow::Result<()> {
    Ok(boardd.stop(STOP_TIMEOUT).await?)
}

/// A teammated to start: who it is, where it works and logs, and its flags
/// beyond the common ones.
pub struct Mate<'a> {
    pub name: &'a str,
    pub role: &'a str,
    pub team: &'a str,
    pub workdir: &'a Path,
    /// Its stderr, appended to by every start.
    pub log: &'a Path,
    /// `TEAMMATED_LOG`.
    pub level: &'a str,
    pub flags: Vec<OsString>,
    pub env: Vec<(OsString, OsString)>,
}

/// The caller's settings that would change what a teammate does: none of them
/// reaches a measured teammate.
const FOREIGN: [&str; 10] = [
    "TEAMBOARD_SOCKET",
    "TEAMBOARD_STATE_DIR",
    "TEAMBOARD_LEAD_KEY",
    "TEAMMATE_CARRY_CONTEXT",
    "TEAMMATE_MODEL",
    "TEAMMATE_BASE_URL",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
];

impl<'a> Mate<'a> {
    /// `name` with role `role` in `team`, warnings only in its log.
    pub fn new(
        name: &'a str,
        role: &'a str,
        team: &'a str,
        workdir: &'a Path,
        log: &'a Path,
    ) -> Mate<'a> {
        Mate {
            name,
            role,
            team,
            workdir,
            log,
            level: "warn",
            flags: Vec::new(),
            env: Vec::new(),
        }
    }

    /// teammated's offline scripted model.
    pub fn scripted(mut self) -> Self {
        self.flags.extend(["--provider".into(), "scripted".into()]);
        self
    }

    /// The native loop on `provider` against the mock LLM server at `url`,
    /// with the mock's key.
    pub fn on_mock(mut self, provider: &str, url: &str) -> Self {
        self.flags
            .extend(["--provider", provider, "--base-url", url].map(OsString::from));
        for key in ["ANTHROPIC_API_KEY", "OPENAI_API_KEY"] {
            self.env.push((key.into(), "mock-key".into()));
        }
        self
    }

    pub fn flags<S: Into<OsString>>(mut self, flags: impl IntoIterator<Item = S>) -> Self {
        self.flags.extend(flags.into_iter().map(Into::into));
        self
    }

    /// Starts it against `boardd`, never idling out, dying with the bench.
    pub fn spawn(&self, teammated: &Path, boardd: &Boardd) -> anyhow::Result<Child> {
        std::fs::create_dir_all(self.workdir)
            .with_context(|| format!("cannot create {}", self.workdir.display()))?;
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log);
        let log = log.with_context(|| format!("cannot open {}", self.log.display()))?;
        let mut cmd = std::process::Command::new(teammated);
        cmd.args([
            "--name", self.name, "--role", self.role, "--team", self.team,
        ])
        .arg("--socket")
        .arg(&boardd.socket)
        .arg("--state-dir")
        .arg(&boardd.state_dir)
        .arg("--workdir")
        .arg(self.workdir)
        .args(["--idle-timeout", "0"])
        .args(&self.flags);
        for var in FOREIGN {
            cmd.env_remove(var);
        }
        cmd.envs(self.env.iter().cloned())
            .env("TEAMMATED_LOG", self.level)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log);
        die_with_parent(&mut cmd, libc::SIGKILL);
        let mut cmd = tokio::process::Command::from(cmd);
        cmd.kill_on_drop(true);
        cmd.spawn()
            .with_context(|| format!("cannot start {}", teammated.display()))
    }
}

/// The lead's subscribed session on one team, with boardd's events each
/// stamped when it was read (by a task of its own, so that the stamp does not
/// wait for whatever the bench is doing).
pub struct Lead {
    pub client: Arc<Client>,
    events: mpsc::UnboundedReceiver<(Event, Instant)>,
}

impl Lead {
    pub async fn open(socket: &Path, team: &str) -> anyhow::Result<Lead> {
        let key = teamboard_process::lead_key(socket)?;
        let client =
            Arc::new(Client::connect(socket, "xtask-bench", "lead", team, Some(&key)).await?);
        client.subscribe().await?;
        let (tx, events) = mpsc::unbounded_channel();
        let reader = client.clone();
        tokio::spawn(async move {
            while let Some(e) = reader.next_event().await {
                if tx.send((e, Instant::now())).is_err() {
                    return;
                }
            }
        });
        Ok(Lead { client, events })
    }

    /// The next event that `pred` takes, and when it was read; the events
    /// before it are passed over, so waits are made in the order the events
    /// happen.
    pub async fn next(
        &mut self,
        what: &str,
        within: Duration,
        pred: impl Fn(&Event) -> bool,
    ) -> anyhow::Result<(Event, Instant)> {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            match tokio::time::timeout_at(deadline, self.events.recv()).await {
                Ok(Some((e, at))) if pred(&e) => return Ok((e, at)),
                Ok(Some(_)) => {}
                Ok(None) => bail!("boardd's event stream ended while waiting for {what}"),
                Err(_) => bail!("no {what} within {within:?}"),
            }
        }
    }

    /// Waits until `name` tells the lead it is idle.
    pub async fn idle(&mut self, name: &str, within: Duration) -> anyhow::Result<Instant> {
        let needle = format!("{name} → lead: idle_notification");
        let idle = |e: &Event| e.kind == EventKind::MessageSent && e.detail.contains(&needle);
        Ok(self
            .next(&format!("the idle notice of {name}"), within, idle)
            .await?
            .1)
    }

    /// Waits until `name`'s own status says `word` (`working`, `idle`): its
    /// word, not boardd's liveness, which turns idle as soon as a claim ends.
    pub async fn status(
        &mut self,
        name: &str,
        word: &str,
        within: Duration,
    ) -> anyhow::Result<Instant> {
        let status = |e: &Event| {
            e.kind == EventKind::MemberStatus
                && e.member.as_deref() == Some(name)
                && e.actor == name
                && e.detail.ends_with(&format!(" {word}"))
        };
        Ok(self
            .next(&format!("{name} to be {word}"), within, status)
            .await?
            .1)
    }

    /// Waits for task `id` to end, and says how.
    pub async fn ended(
        &mut self,
        id: TaskId,
        within: Duration,
    ) -> anyhow::Result<(EventKind, Instant)> {
        use EventKind::{TaskCancelled, TaskCompleted, TaskFailed};
        let ended = |e: &Event| {
            e.task == Some(id) && matches!(e.kind, TaskCompleted | TaskFailed | TaskCancelled)
        };
        let (e, at) = self
            .next(&format!("the end of task #{id}"), within, ended)
            .await?;
        Ok((e.kind, at))
    }
}
