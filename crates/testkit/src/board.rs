//! An in-process boardd with real `teammated` processes around it, and the lead
//! watching its events.
//!
//! The daemon runs inside the test (real socket, real SQLite); teammates are the
//! real binary, so that what the tests see is what a user gets: separate processes,
//! signals, exit codes. The test plays the lead through a protocol client
//! subscribed to the team's events.

use crate::clients::lead;
use crate::eventually::PATIENCE;
use crate::git::GitRepo;
use crate::inproc::InProc;
use crate::teammated::{Teammate, Teammated, transcript};
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use teamboard_protocol::request::NewTask;
use teamboard_protocol::{Client, Event, EventKind, Task, TaskId, TaskStatus};

/// How long [`Board::wait_done`] waits for an event before it looks again.
const RECHECK: Duration = Duration::from_millis(500);

pub struct Board {
    pub daemon: InProc,
    /// The lead, subscribed to the team's events.
    pub lead: Client,
    /// Every event seen so far, in order.
    pub seen: Vec<Event>,
    /// Events not yet matched by a `wait_for`, so that waiting for one thing does
    /// not throw away another that happened first.
    unmatched: VecDeque<Event>,
    teammated: Teammated,
}

impl Board {
    /// Starts a daemon with the default configuration; teammates are played by
    /// the binary `teammated`.
    pub async fn start(teammated: impl Into<PathBuf>) -> Board {
        Board::start_with(teammated, |_| {}).await
    }

    /// Starts a daemon after `tune` has adjusted its configuration.
    pub async fn start_with(
        teammated: impl Into<PathBuf>,
        tune: impl FnOnce(&mut boardd::Config),
    ) -> Board {
        let daemon = InProc::start_with(tune).await;
        let lead = lead(&daemon.socket).await;
        lead.subscribe().await.expect("subscribe");
        let teammated = Teammated::new(teammated, &daemon.socket, &daemon.state_dir);
        Board {
            daemon,
            lead,
            seen: Vec::new(),
            unmatched: VecDeque::new(),
            teammated,
        }
    }

    /// The scratch directory: the daemon's files, the teammates' logs and work
    /// directories, and whatever the test puts there.
    pub fn dir(&self) -> &Path {
        self.daemon.dir()
    }

    pub fn state_dir(&self) -> &Path {
        &self.daemon.state_dir
    }

    /// A fresh working directory for a teammate.
    pub fn workdir(&self, name: &str) -> PathBuf {
        let w = self.dir().join(format!("work-{name}"));
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
        let log = self.dir().join(format!("{name}.log"));
        self.teammated.spawn(name, role, &workdir, &log, extra, env)
    }

    /// A new repository in the board's directory, attached to the team with
    /// `main` as the target, so that tasks get worktrees.
    pub async fn attach_repo(&self) -> GitRepo {
        let repo = GitRepo::new(self.dir());
        self.lead
            .set_repo(repo.repo_args())
            .await
            .expect("set_repo");
        repo
    }

    pub async fn add(&self, subject: &str, description: &str, blocked_by: &[TaskId]) -> Task {
        self.add_task(NewTask {
            blocked_by: blocked_by.to_vec(),
            ..described(subject, description)
        })
        .await
    }

    /// Adds a task whose plan the lead must approve before its work starts.
    pub async fn add_needing_a_plan(&self, subject: &str, description: &str) -> Task {
        self.add_task(NewTask {
            require_plan: true,
            ..described(subject, description)
        })
        .await
    }

    async fn add_task(&self, task: NewTask) -> Task {
        self.lead.add_task(task).await.expect("add_task")
    }

    /// Adds a task and waits until `name` claims it (fails if anyone else does).
    pub async fn add_claimed_by(&mut self, name: &str, subject: &str, description: &str) -> Task {
        let task = self.add(subject, description, &[]).await;
        assert_eq!(self.wait_claimed(task.id).await, name, "{task:#?}");
        task
    }

    pub async fn task(&self, id: TaskId) -> Task {
        self.lead.get_task(id).await.expect("get_task").task
    }

    /// The transcript of teammate `name`, as text.
    pub fn transcript(&self, name: &str) -> String {
        transcript(self.state_dir(), name)
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

    /// Waits until `name` reports `status` (a `member_status` event of its
    /// own: not boardd's liveness, which says what boardd knows of it).
    pub async fn wait_status(&mut self, name: &str, status: &str) -> Event {
        let what = format!("{name} to become {status}");
        self.wait_for(&what, |e| {
            e.kind == EventKind::MemberStatus
                && e.member.as_deref() == Some(name)
                && e.actor == name
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
            let done = ids
                .iter()
                .all(|id| tasks.iter().any(|t| t.id == *id && t.status.is_ended()));
            if done {
                return tasks;
            }
            assert!(
                Instant::now() < deadline,
                "tasks {ids:?} not done: {tasks:#?}"
            );
            // Wake on the next event rather than on a timer.
            let _ = tokio::time::timeout(RECHECK, async {
                if let Some(e) = self.lead.next_event().await {
                    self.seen.push(e.clone());
                    self.unmatched.push_back(e);
                }
            })
            .await;
        }
    }

    /// Waits until task `id` goes back to the board (its claim released).
    pub async fn wait_released(&mut self, id: TaskId) -> Event {
        self.wait_for(&format!("#{id} to be released"), |e| {
            e.kind == EventKind::TaskReleased && e.task == Some(id)
        })
        .await
    }

    /// Waits until task `id` has ended, and checks that `by` completed it: a
    /// failure shows the task and `by`'s log.
    pub async fn wait_completed(&mut self, id: TaskId, by: &Teammate) -> Task {
        self.wait_done(&[id]).await;
        let task = self.task(id).await;
        assert_eq!(
            task.status,
            TaskStatus::Completed,
            "{task:#?}\n{}",
            by.log_text()
        );
        task
    }

    /// Waits until message `id` is acknowledged by its recipient (not dropped
    /// by boardd with the session it was for).
    pub async fn wait_acked(&mut self, id: u64) -> Event {
        let needle = format!("acknowledged message {id}");
        self.wait_for(&format!("message {id} to be acknowledged"), |e| {
            e.kind == EventKind::MessageAcked && e.message == Some(id) && e.detail.contains(&needle)
        })
        .await
    }

    /// Stops the daemon gracefully and waits until it has.
    pub async fn stop(self) {
        self.daemon.stop().await;
    }
}

/// A task with a subject and a description.
fn described(subject: &str, description: &str) -> NewTask {
    NewTask {
        description: description.into(),
        ..crate::task(subject)
    }
}
