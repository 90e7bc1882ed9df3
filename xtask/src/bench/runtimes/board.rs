//! The board of a `bench-runtimes` run: a real boardd, the lead's subscribed
//! session, and real teammated processes started with each runtime.

use super::Agent;
use super::runtime::Runtime;
use crate::bench::harness::Bins;
use crate::bench::harness::board::{Lead, Mate as Spec, Scratch, stop};
use anyhow::{Context, bail};
use serde_json::Value;
use std::path::PathBuf;
use std::time::Duration;
use teamboard_process::Boardd;
use teamboard_protocol::TaskId;
use teamboard_protocol::request::NewTask;
use teamboard_protocol::transcript::{TranscriptEntry, teammate_dir, transcript_path};
use tokio::process::Child;

pub const TEAM: &str = "bench-runtimes";

/// boardd and the lead, for one run.
pub struct Board {
    boardd: Boardd,
    pub lead: Lead,
    teammated: PathBuf,
    teamctl: PathBuf,
    /// Teammates' work directories and agents' homes go under here.
    pub root: PathBuf,
}

impl Board {
    /// Starts boardd with its state in `scratch`. Attempts are unbounded for
    /// the bench's purposes: the wakes give a task back on purpose.
    pub async fn start(bins: &Bins, scratch: &Scratch) -> anyhow::Result<Board> {
        let root = scratch.path().to_path_buf();
        let boardd = scratch
            .boardd(
                &bins.get("boardd"),
                &root.join("state"),
                &["--max-attempts", "1000"],
            )
            .await?;
        let lead = Lead::open(&boardd.socket, TEAM).await?;
        Ok(Board {
            boardd,
            lead,
            teammated: bins.get("teammated"),
            teamctl: bins.get("teamctl"),
            root,
        })
    }

    pub async fn stop(self) -> anyhow::Result<()> {
        stop(self.boardd).await
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
            .client
            .add_task(NewTask {
                subject: subject.to_string(),
                description: description.to_string(),
                role: Some(role.to_string()),
                ..NewTask::default()
            })
            .await?;
        Ok(task.id)
    }

    /// Starts teammate `name` (its role is its name) with runtime `rt`: the
    /// native loop against `mock_url`, or `agent` set up offline in its home.
    /// The agent's extra arguments, then `more`, go last. Its log is at info
    /// level: the bench reads its transcript, and a failure shows the log's end.
    pub fn spawn(
        &self,
        rt: Runtime,
        name: &str,
        mock_url: &str,
        agent: Option<&Agent>,
        more: &[&str],
    ) -> anyhow::Result<Mate> {
        let workdir = self.root.join("work").join(name);
        let log = self.root.join(format!("{name}.log"));
        let mut spec = Spec::new(name, name, TEAM, &workdir, &log);
        spec.level = "info";
        spec = match (rt.provider(), agent) {
            (Some(provider), _) => spec.on_mock(provider, mock_url),
            (None, Some(a)) => {
                let (cli, home) = (a.cli, &a.home);
                let offline = cli.offline(&a.program, home, mock_url);
                let offline = offline.with_context(|| {
                    format!("cannot set up {} in {}", cli.name(), home.display())
                })?;
                let env = offline.env.into_iter().map(|(k, v)| (k.into(), v.into()));
                spec.env.extend(env);
                spec.flags(offline.args).flags(&a.extra)
            }
            (None, None) => bail!("{} needs its agent's program", rt.name()),
        };
        spec.env
            .push(("TEAMBOARD_TEAMCTL".into(), self.teamctl.clone().into()));
        let child = spec.flags(more).spawn(&self.teammated, &self.boardd)?;
        let state = &self.boardd.state_dir;
        let (dir, transcript) = (
            teammate_dir(state, TEAM, name),
            transcript_path(state, TEAM, name),
        );
        Ok(Mate {
            child,
            workdir,
            log,
            dir,
            transcript,
        })
    }
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

    /// `e`, with the end of its log.
    pub fn failed(&self, e: anyhow::Error) -> anyhow::Error {
        let tail = teamboard_process::tail(&self.log, 15);
        anyhow::anyhow!("{e:#}; the teammate's log ends:\n{tail}")
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
    teamboard_process::poll(within, || std::future::ready(ready()))
        .await
        .with_context(|| format!("no {what} within {within:?}"))
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
}
