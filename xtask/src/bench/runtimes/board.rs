//! The board of a `bench-runtimes` run: a real boardd, the lead's subscribed
//! session, and real teammated processes started with each runtime.

use super::runtime::Runtime;
use crate::bench::daemon::{Daemon, Mode};
use anyhow::{Context, bail};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};
use teamboard_agent_clis::Cli;
use teamboard_protocol::request::NewTask;
use teamboard_protocol::transcript::{TranscriptEntry, teammate_dir, transcript_path};
use teamboard_protocol::{Client, Event, EventKind, TaskId};
use tokio::process::Child;
use tokio::sync::mpsc;

pub const TEAM: &str = "bench-runtimes";

/// Where a run's binaries are.
pub struct Bins {
    pub boardd: PathBuf,
    pub teammated: PathBuf,
    /// For the board's MCP server, which every agent is configured with.
    pub teamctl: PathBuf,
}

/// boardd and the lead, for one run.
pub struct Board {
    daemon: Daemon,
    pub lead: Arc<Client>,
    /// boardd's events, each with the instant it was read (by a task of its
    /// own, so the stamp does not wait for the bench).
    events: mpsc::UnboundedReceiver<(Event, Instant)>,
    teammated: PathBuf,
    teamctl: PathBuf,
    pub state: PathBuf,
    /// Teammates' work directories and agents' homes go under here.
    pub root: PathBuf,
}

impl Board {
    /// Starts boardd with its state under `root`. Attempts are unbounded for
    /// the bench's purposes: the wakes give a task back on purpose.
    pub async fn start(bins: &Bins, root: &Path) -> anyhow::Result<Board> {
        let state = root.join("state");
        let daemon = Daemon::start_with(
            &bins.boardd,
            &state,
            Mode::Group,
            &["--max-attempts", "1000"],
        )
        .await?;
        let lead = Arc::new(Client::connect(&daemon.socket, "xtask-bench", "lead", TEAM).await?);
        lead.subscribe().await?;
        let (tx, events) = mpsc::unbounded_channel();
        let reader = lead.clone();
        tokio::spawn(async move {
            while let Some(e) = reader.next_event().await {
                if tx.send((e, Instant::now())).is_err() {
                    return;
                }
            }
        });
        Ok(Board {
            daemon,
            lead,
            events,
            teammated: bins.teammated.clone(),
            teamctl: bins.teamctl.clone(),
            state,
            root: root.to_path_buf(),
        })
    }

    pub async fn stop(self) -> anyhow::Result<()> {
        self.daemon.stop().await
    }

    /// The next event that `pred` takes, and when it was read; the events
    /// before it are passed over. Waits are made in the order the events
    /// happen, so nothing waited for is passed over first.
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

    /// Waits until `name` says it is idle.
    pub async fn idle(&mut self, name: &str, within: Duration) -> anyhow::Result<()> {
        let needle = format!("{name} → lead: idle_notification");
        self.next(&format!("idle notice of {name}"), within, |e| {
            e.kind == EventKind::MessageSent && e.detail.contains(&needle)
        })
        .await?;
        Ok(())
    }

    /// Adds a task for role `role`.
    pub async fn add(
        &self,
        role: &str,
        subject: &str,
        description: &str,
    ) -> anyhow::Result<TaskId> {
        let task = self
            .lead
            .add_task(NewTask {
                subject: subject.to_string(),
                description: description.to_string(),
                role: Some(role.to_string()),
                ..NewTask::default()
            })
            .await?;
        Ok(task.id)
    }

    /// Waits for task `id` to end, and says how.
    pub async fn ended(
        &mut self,
        id: TaskId,
        within: Duration,
    ) -> anyhow::Result<(EventKind, Instant)> {
        let (e, at) = self
            .next(&format!("the end of task #{id}"), within, |e| {
                e.task == Some(id)
                    && matches!(
                        e.kind,
                        EventKind::TaskCompleted | EventKind::TaskFailed | EventKind::TaskCancelled
                    )
            })
            .await?;
        Ok((e.kind, at))
    }

    /// Starts teammate `name` (its role is its name) with runtime `rt`: the
    /// native loop against `mock_url`, or the agent at `program` set up
    /// offline in `home`. `extra` goes last.
    pub fn spawn(&self, mate: &MateSpec<'_>) -> anyhow::Result<Mate> {
        let workdir = self.root.join("work").join(mate.name);
        std::fs::create_dir_all(&workdir)?;
        let log = self.root.join(format!("{}.log", mate.name));
        let mut cmd = tokio::process::Command::new(&self.teammated);
        cmd.args(["--name", mate.name, "--role", mate.name, "--team", TEAM])
            .arg("--socket")
            .arg(&self.daemon.socket)
            .arg("--state-dir")
            .arg(&self.state)
            .arg("--workdir")
            .arg(&workdir)
            .args(["--idle-timeout", "0"]);
        // Nothing of the caller's own setup may change what is measured.
        for var in [
            "TEAMBOARD_SOCKET",
            "TEAMBOARD_STATE_DIR",
            "TEAMMATE_CARRY_CONTEXT",
            "TEAMMATE_NO_PROMPT_CACHE",
            "TEAMMATE_MODEL",
            "TEAMMATE_BASE_URL",
            "ANTHROPIC_API_KEY",
            "ANTHROPIC_BASE_URL",
            "OPENAI_API_KEY",
            "OPENAI_BASE_URL",
        ] {
            cmd.env_remove(var);
        }
        match (mate.rt.provider(), mate.agent) {
            (Some(provider), _) => {
                cmd.args(["--provider", provider, "--base-url", mate.mock_url])
                    .env("ANTHROPIC_API_KEY", "mock-key")
                    .env("OPENAI_API_KEY", "mock-key");
            }
            (None, Some((cli, program, home))) => {
                let agent = cli.offline(program, home, mate.mock_url).with_context(|| {
                    format!("cannot set up {} in {}", cli.name(), home.display())
                })?;
                cmd.args(&agent.args).envs(agent.env);
            }
            (None, None) => bail!("{} needs its agent's program", mate.rt.name()),
        }
        cmd.args(mate.extra)
            .env("TEAMBOARD_TEAMCTL", &self.teamctl)
            .env("TEAMMATED_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&log)?,
            )
            .kill_on_drop(true);
        crate::bench::die_with_parent(&mut cmd);
        let child = cmd
            .spawn()
            .with_context(|| format!("cannot start {}", self.teammated.display()))?;
        Ok(Mate {
            child,
            workdir,
            log,
            dir: teammate_dir(&self.state, TEAM, mate.name),
            transcript: transcript_path(&self.state, TEAM, mate.name),
        })
    }
}

/// What [`Board::spawn`] starts.
pub struct MateSpec<'a> {
    pub rt: Runtime,
    pub name: &'a str,
    pub mock_url: &'a str,
    /// The agent's CLI, its program and its home, for an agent runtime.
    pub agent: Option<(Cli, &'a Path, &'a Path)>,
    pub extra: &'a [String],
}

/// A running teammate, killed when dropped.
pub struct Mate {
    child: Child,
    pub workdir: PathBuf,
    log: PathBuf,
    /// Its state directory (`agent/sessions.json` is there).
    dir: PathBuf,
    transcript: PathBuf,
}

impl Mate {
    /// `kill -9`, and waits for it to be gone.
    pub async fn kill9(&mut self) -> anyhow::Result<()> {
        self.child.start_kill()?;
        self.child.wait().await?;
        Ok(())
    }

    /// The last lines of its log, for an error.
    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(15)..].join("\n")
    }

    /// Its transcript's entries so far (lines that do not parse are skipped).
    pub fn transcript(&self) -> Vec<TranscriptEntry> {
        std::fs::read_to_string(&self.transcript)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// `agent/sessions.json`'s entry for `task`: (session, starts, resumed).
    pub fn recorded_session(&self, task: TaskId) -> Option<(String, u64, u64)> {
        let text = std::fs::read_to_string(self.dir.join("agent").join("sessions.json")).ok()?;
        let file: Value = serde_json::from_str(&text).ok()?;
        let e = &file["tasks"][task.to_string()];
        Some((
            e["session"].as_str()?.to_string(),
            e["starts"].as_u64()?,
            e["resumed"].as_u64()?,
        ))
    }
}

/// One agent start as the transcript tells it: `agent: RT session ID
/// started|resumed, pid P ...`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionLine {
    pub at_ms: i64,
    pub task: Option<u64>,
    pub id: String,
    pub resumed: bool,
    pub pid: Option<u32>,
}

impl SessionLine {
    pub fn parse(e: &TranscriptEntry) -> Option<SessionLine> {
        let rest = e.text.strip_prefix("agent: ")?;
        let (_, rest) = rest.split_once(" session ")?;
        let mut words = rest.split([' ', ',']).filter(|w| !w.is_empty());
        let id = words.next()?.to_string();
        let resumed = match words.next()? {
            "resumed" => true,
            "started" => false,
            _ => return None,
        };
        let pid = rest
            .split_once(", pid ")
            .and_then(|(_, p)| p.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok());
        Some(SessionLine {
            at_ms: e.at,
            task: e.task,
            id,
            resumed,
            pid,
        })
    }
}

/// Polls `ready` every few milliseconds until it gives a value, for at most
/// `within`.
pub async fn poll<T>(
    what: &str,
    within: Duration,
    mut ready: impl FnMut() -> Option<T>,
) -> anyhow::Result<T> {
    let deadline = Instant::now() + within;
    loop {
        if let Some(v) = ready() {
            return Ok(v);
        }
        if Instant::now() > deadline {
            bail!("no {what} within {within:?}");
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// The processes whose parent is `pid`.
pub fn children_of(pid: u32) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|child| {
            std::fs::read_to_string(format!("/proc/{child}/stat"))
                .ok()
                .and_then(|stat| {
                    // The command name (field 2) may hold spaces; the parent is
                    // the second field after it.
                    let rest = &stat[stat.rfind(')')? + 2..];
                    rest.split_whitespace().nth(1)?.parse::<u32>().ok()
                })
                == Some(pid)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use teamboard_protocol::transcript::EntryKind;

    fn entry(text: &str) -> TranscriptEntry {
        TranscriptEntry {
            at: 7,
            kind: EntryKind::Lifecycle,
            tool: None,
            task: Some(3),
            is_error: false,
            text: text.to_string(),
        }
    }

    #[test]
    fn a_session_line_is_read_as_teammated_writes_it() {
        let line = SessionLine::parse(&entry("agent: claude session 0d1e-22 resumed, pid 4711"))
            .expect("parsed");
        assert_eq!(line.id, "0d1e-22");
        assert!(line.resumed);
        assert_eq!(line.pid, Some(4711));
        let new = SessionLine::parse(&entry(
            "agent: acp session s-9 started, pid 12 (the old one could not be resumed: x)",
        ))
        .expect("parsed");
        assert_eq!(
            (new.id.as_str(), new.resumed, new.pid),
            ("s-9", false, Some(12))
        );
        assert!(
            SessionLine::parse(&entry("agent: stopped (its work is done); session x kept"))
                .is_none()
        );
        assert!(SessionLine::parse(&entry("work: started (claude agent /x)")).is_none());
    }

    #[test]
    fn the_children_of_this_process_are_found() {
        let child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .expect("sleep");
        let found = children_of(std::process::id());
        let mut child = child;
        let _ = child.kill();
        let _ = child.wait();
        assert!(found.contains(&child.id()), "{found:?}");
    }
}
