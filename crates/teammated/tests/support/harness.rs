//! A boardd in-process and real `teammated` processes around it.
//!
//! The daemon runs inside the test (real socket, real SQLite); teammates are the real
//! binary, so that what the tests see is what a user gets: separate processes,
//! signals, exit codes. The test itself plays the lead through a protocol client
//! subscribed to the team's events.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};
use teamboard_protocol::request::NewTask;
use teamboard_protocol::{Client, Event, EventKind, Task, TaskId, TaskStatus};

pub const TEAMMATED: &str = env!("CARGO_BIN_EXE_teammated");

/// The longest any test waits for something that should take milliseconds. Generous
/// because CI machines are slow and shared; a pass never waits this long.
pub const PATIENCE: Duration = Duration::from_secs(30);

pub struct Board {
    running: Option<boardd::Running>,
    pub socket: PathBuf,
    pub state: PathBuf,
    pub dir: tempfile::TempDir,
    pub lead: Client,
    /// Every event seen so far, in order.
    pub seen: Vec<Event>,
    /// Events not yet matched by a `wait_for`, so that waiting for one thing does
    /// not throw away another that happened first.
    unmatched: std::collections::VecDeque<Event>,
}

impl Board {
    pub async fn start() -> Board {
        Board::start_with(|_| {}).await
    }

    pub async fn start_with(tune: impl FnOnce(&mut boardd::Config)) -> Board {
        let dir = tempfile::Builder::new()
            .prefix("tm")
            .tempdir_in("/tmp")
            .expect("temp dir");
        let socket = dir.path().join("s");
        let state = dir.path().join("state");
        let mut config = boardd::Config::new(socket.clone(), state.clone());
        tune(&mut config);
        let running = boardd::start(config).await.expect("boardd starts");
        let lead = Client::connect(&socket, "test", "lead", "default")
            .await
            .expect("lead connects");
        lead.subscribe().await.expect("subscribe");
        Board {
            running: Some(running),
            socket,
            state,
            dir,
            lead,
            seen: Vec::new(),
            unmatched: Default::default(),
        }
    }

    /// A fresh working directory for a teammate.
    pub fn workdir(&self, name: &str) -> PathBuf {
        let w = self.dir.path().join(format!("work-{name}"));
        std::fs::create_dir_all(&w).expect("workdir");
        w
    }

    /// Starts `teammated --name NAME --role ROLE` against this board, with `extra`
    /// flags. Its stderr goes to `<dir>/NAME.log`, shown if a test fails.
    pub fn spawn(&self, name: &str, role: &str, extra: &[&str]) -> Teammate {
        self.spawn_with_env(name, role, extra, &[])
    }

    /// Like [`Board::spawn`], with extra environment variables (API keys).
    pub fn spawn_with_env(
        &self,
        name: &str,
        role: &str,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> Teammate {
        let workdir = self.workdir(name);
        let log = self.dir.path().join(format!("{name}.log"));
        let file = std::fs::File::create(&log).expect("log file");
        let mut cmd = tokio::process::Command::new(TEAMMATED);
        cmd.args(["--name", name, "--role", role])
            .arg("--socket")
            .arg(&self.socket)
            .arg("--state-dir")
            .arg(&self.state)
            .arg("--workdir")
            .arg(&workdir)
            .args(extra)
            .env("TEAMMATED_LOG", "debug")
            .env_remove("TEAMBOARD_SOCKET")
            .env_remove("ANTHROPIC_API_KEY")
            .env_remove("OPENAI_API_KEY")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(file)
            .kill_on_drop(true);
        let child = cmd.spawn().expect("teammated starts");
        Teammate {
            name: name.to_string(),
            child,
            log,
            workdir,
        }
    }

    pub async fn add(&self, subject: &str, description: &str, blocked_by: &[TaskId]) -> Task {
        self.lead
            .add_task(NewTask {
                subject: subject.into(),
                description: description.into(),
                blocked_by: blocked_by.to_vec(),
                ..NewTask::default()
            })
            .await
            .expect("add_task")
    }

    /// Waits for the next event (after those already seen) that matches `pred`.
    pub async fn wait_for(&mut self, what: &str, pred: impl Fn(&Event) -> bool) -> Event {
        if let Some(i) = self.unmatched.iter().position(&pred) {
            return self.unmatched.remove(i).expect("index is in range");
        }
        let deadline = Instant::now() + PATIENCE;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let event = tokio::time::timeout(left, self.lead.next_event())
                .await
                .unwrap_or_else(|_| panic!("timed out waiting for {what}; seen: {:#?}", self.seen))
                .expect("event stream open");
            self.seen.push(event.clone());
            if pred(&event) {
                return event;
            }
            self.unmatched.push_back(event);
        }
    }

    /// Waits until `name` reports `status` (a `member_status` event).
    pub async fn wait_status(&mut self, name: &str, status: &str) -> Event {
        let what = format!("{name} to become {status}");
        self.wait_for(&what, |e| {
            e.kind == EventKind::MemberStatus
                && e.member.as_deref() == Some(name)
                && e.detail.contains(status)
        })
        .await
    }

    /// Waits until `name` has gone idle: its `idle_notification` to the lead.
    pub async fn wait_idle(&mut self, name: &str) -> Event {
        let what = format!("{name} to go idle");
        let needle = format!("{name} → lead: idle_notification");
        self.wait_for(&what, |e| {
            e.kind == EventKind::MessageSent && e.detail.contains(&needle)
        })
        .await
    }

    /// Waits until task `id` is claimed; returns the claimant's name.
    pub async fn wait_claimed(&mut self, id: TaskId) -> String {
        let e = self
            .wait_for(&format!("#{id} to be claimed"), |e| {
                e.kind == EventKind::TaskClaimed && e.task == Some(id)
            })
            .await;
        e.actor
    }

    /// Waits until every task in `ids` has reached a terminal state.
    pub async fn wait_done(&mut self, ids: &[TaskId]) -> Vec<Task> {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let tasks = self.lead.list_tasks(None).await.expect("list");
            let done = ids.iter().all(|id| {
                tasks.iter().any(|t| {
                    t.id == *id
                        && matches!(
                            t.status,
                            TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled
                        )
                })
            });
            if done {
                return tasks;
            }
            assert!(
                Instant::now() < deadline,
                "tasks {ids:?} not done: {tasks:#?}"
            );
            // Wake on the next event rather than on a timer.
            let _ = tokio::time::timeout(Duration::from_millis(500), async {
                if let Some(e) = self.lead.next_event().await {
                    self.seen.push(e.clone());
                    self.unmatched.push_back(e);
                }
            })
            .await;
        }
    }

    pub async fn task(&self, id: TaskId) -> Task {
        self.lead.get_task(id).await.expect("get_task").task
    }

    pub async fn stop(mut self) {
        if let Some(r) = self.running.take() {
            r.shutdown().await;
        }
    }
}

pub struct Teammate {
    pub name: String,
    pub child: tokio::process::Child,
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

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    pub fn pid(&self) -> u32 {
        self.child.id().expect("running")
    }

    /// `kill -9`.
    pub fn kill9(&self) {
        // SAFETY: kill(2) with a pid we own; no memory is involved.
        unsafe {
            libc::kill(self.pid() as i32, libc::SIGKILL);
        }
    }
}

/// The transcript of a teammate as text, for failure messages.
pub fn transcript(state: &Path, name: &str) -> String {
    std::fs::read_to_string(teamboard_protocol::transcript::transcript_path(
        state, "default", name,
    ))
    .unwrap_or_default()
}
