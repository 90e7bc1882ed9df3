//! A repository's worker thread: its jobs, one at a time, in order.

use super::job::{Done, Job};
use super::{Running, gate, inspect, land, open, validate};
use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use teamboard_board::LandRefusal;
use teamboard_protocol::{ErrorCode, now_ms};
use tokio::sync::mpsc;

/// How long the worker waits for the git a killed boardd left running in a
/// worktree before it works there anyway. Such a git finishes in well under
/// a second; the bound is for a teammate's own long git in its worktree.
const ORPHAN_WAIT: Duration = Duration::from_secs(10);

/// The worktrees this boardd has already waited for, so that only the first
/// job in each pays for looking at the processes.
#[derive(Default)]
struct Settled(HashSet<String>);

impl Settled {
    /// Before this boardd's first git in `wt`: waits until no git of a killed
    /// predecessor still works there (`teamboard_git::wait_for_git_in`).
    fn settle(&mut self, wt: &str) {
        if self.0.contains(wt) {
            return;
        }
        match teamboard_git::wait_for_git_in(Path::new(wt), ORPHAN_WAIT) {
            Some(waited) if waited.is_zero() => {}
            Some(waited) => tracing::info!(
                worktree = wt,
                ms = waited.as_millis() as u64,
                "waited for a git that was still running in the worktree"
            ),
            None => tracing::warn!(
                worktree = wt,
                "a git still runs in the worktree; working there anyway"
            ),
        }
        self.0.insert(wt.to_string());
    }
}

/// Starts the worker of the repository at `path`.
pub fn spawn(
    path: &str,
    done: mpsc::UnboundedSender<Done>,
    running: Arc<Running>,
) -> std::io::Result<std::sync::mpsc::Sender<Job>> {
    let (tx, rx) = std::sync::mpsc::channel::<Job>();
    let name = format!("boardd-git {path}");
    let path = path.to_string();
    super::thread::start(name, move || {
        let span = tracing::info_span!("repo", repo = %path);
        let _enter = span.enter();
        let mut settled = Settled::default();
        // Ends when the actor drops the sender (boardd stops).
        while let Ok(job) = rx.recv() {
            if let Some(wt) = job.worktree() {
                settled.settle(wt);
            }
            guarded(job, &done, &running);
        }
        tracing::debug!("repository worker stopped");
    })?;
    Ok(tx)
}

/// A job that needs no worker of its own (checking a repository before it is
/// attached).
pub fn run_one(job: Job, done: &mpsc::UnboundedSender<Done>) {
    guarded(job, done, &Arc::new(Running::default()));
}

/// Runs a job; if handling it panics (a bug), its request still gets an
/// answer and the worker goes on with the next job.
fn guarded(job: Job, done: &mpsc::UnboundedSender<Done>, running: &Arc<Running>) {
    let copy = job.clone();
    let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(job, done, running)));
    if let Err(panic) = ran {
        let why = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic".to_string());
        tracing::error!(job = ?copy, %why, "a repository job panicked");
        let _ = done.send(copy.failed(&why));
    }
}

fn run(job: Job, done: &mpsc::UnboundedSender<Done>, running: &Arc<Running>) {
    let answer = match job {
        Job::SetRepo {
            slot,
            args,
            worktrees,
        } => {
            let _span = tracing::info_span!("set_repo", path = %args.path).entered();
            let result = validate::validate(&args, &worktrees, now_ms());
            Done::SetRepo { slot, result }
        }
        Job::Open { slot, job } => {
            let _span = tracing::info_span!("open", task = job.task).entered();
            let result = open::open(&job);
            Done::Opened { slot, job, result }
        }
        Job::Gate { job } => {
            let _span = tracing::info_span!("gate", task = job.task).entered();
            match gate::prepare(&job) {
                // The checks run on a thread of their own and answer from there.
                Ok(passed) => {
                    return gate::spawn_checks(job, passed, done.clone(), running.clone());
                }
                Err(refusal) => Done::Gated {
                    job,
                    result: Err(refusal),
                },
            }
        }
        Job::Land { job } => {
            let _span = tracing::info_span!("land", task = job.task).entered();
            // Trap: the board drops a queued landing whose claim ends (the
            // lead cancels, the owner is stopped) and tells the owner so, but
            // its job may already wait here; landing it then would complete
            // a cancelled task.
            let result = if running.ended(&job.team, job.task, job.epoch) {
                let why = format!(
                    "the claim on #{} ended while it waited in the merge queue; nothing landed",
                    job.task
                );
                Err(LandRefusal::new(ErrorCode::StaleEpoch, why))
            } else {
                land::land(&job)
            };
            Done::Landed { job, result }
        }
        Job::List {
            slot,
            repo,
            entries,
        } => Done::Listed {
            slot,
            result: inspect::list(&repo, entries),
        },
        Job::Prune {
            slot,
            repo,
            entries,
            dry_run,
        } => Done::Pruned {
            slot,
            dry_run,
            result: inspect::prune(&repo, entries, dry_run),
        },
    };
    // The actor is gone only while boardd stops; the answer has no one to go to.
    let _ = done.send(answer);
}
