//! Git off the actor's thread: one worker thread per repository, and a thread
//! per gate's checks.
//!
//! The actor never waits for git. A handler that needs git returns a [`Job`];
//! the actor hands it to [`Repos::submit`] and goes on serving everyone else.
//! The job's [`Done`] comes back on the channel [`Repos::new`] returns, and the
//! actor applies it to the board like a request of its own.
//!
//! One worker per repository runs its jobs in arrival order: opening
//! worktrees, committing and updating branches, landing, listing and pruning.
//! So nothing that touches one repository's refs or worktree list ever runs
//! twice at once, and landings happen in the order tasks joined the queue.
//! Before its first job in a worktree, a worker waits out any git a killed
//! boardd left running there (`worker.rs`). Checks run on threads of their
//! own, so that one task's test run holds up neither another task's worktree
//! nor the queue.
//!
//! Alternatives that lost:
//! - *One thread for all git work*: a slow `git` in one user's big repository
//!   would delay every other team's claims and landings.
//! - *tokio's blocking pool*: it gives no order per repository, which the merge
//!   queue and worktree creation need.
//! - *Running the checks on the worker*: a ten-minute test suite would stop the
//!   repository's merge queue for ten minutes.

mod gate;
mod inspect;
mod job;
mod land;
mod open;
mod thread;
mod validate;
mod worker;

#[cfg(test)]
mod tests;

pub use job::{Done, Job, Slot};
pub use validate::worktrees_dir;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use teamboard_git::Interrupt;
use teamboard_protocol::{ErrorBody, ErrorCode, TaskId};
use tokio::sync::mpsc;

/// The running checks, by team and task, so that a claim that ends can stop
/// its own; and the claims that ended while their landing was on its way, so
/// that the queue does not land them.
#[derive(Default)]
pub struct Running {
    checks: Mutex<HashMap<(String, TaskId), Check>>,
    /// What checks never see: boardd's state directory, its socket, the key
    /// files (`teamboard_sandbox::private_paths`).
    private: Vec<std::path::PathBuf>,
}

/// A gate's checks as [`Running`] knows them.
enum Check {
    /// Running for the claim with this epoch.
    Running(u64, Interrupt),
    /// The claim with this epoch ended before its checks started, or after
    /// they passed: they are to stop as soon as they start, and its landing
    /// is not to be made.
    Ended(u64),
}

impl Running {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(String, TaskId), Check>> {
        // A panic while holding this lock leaves a map that is still whole.
        self.checks.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The interrupt for the checks of `task`'s claim `epoch`, already set
    /// if that claim ended while the gate was still committing and updating.
    pub(crate) fn start(&self, team: &str, task: TaskId, epoch: u64) -> Interrupt {
        let interrupt = Interrupt::default();
        let key = (team.to_string(), task);
        let mut map = self.lock();
        if matches!(map.get(&key), Some(Check::Ended(e)) if *e == epoch) {
            interrupt.interrupt();
            map.remove(&key);
        } else {
            map.insert(key, Check::Running(epoch, interrupt.clone()));
        }
        interrupt
    }

    /// Whether the claim `epoch` on `task` ended since its gate started: the
    /// board dropped its landing and told the owner so.
    pub(crate) fn ended(&self, team: &str, task: TaskId, epoch: u64) -> bool {
        let key = (team.to_string(), task);
        matches!(self.lock().get(&key), Some(Check::Ended(e)) if *e == epoch)
    }

    pub(crate) fn finish(&self, team: &str, task: TaskId, epoch: u64) {
        let mut map = self.lock();
        let key = (team.to_string(), task);
        if matches!(map.get(&key), Some(Check::Running(e, _)) if *e == epoch) {
            map.remove(&key);
        }
    }

    /// Stops the checks of claim `epoch`, or, if they have not started yet
    /// (the gate is still on the repository's worker), makes them stop as
    /// soon as they start. Trap: without that, a claim that ended during the
    /// commit ran its checks to the end, and its owner waited that long for
    /// its answer. At most one entry per task stays behind, for a gate that
    /// never reached its checks.
    fn interrupt(&self, team: &str, task: TaskId, epoch: u64) {
        let key = (team.to_string(), task);
        let mut map = self.lock();
        match map.get(&key) {
            Some(Check::Running(e, i)) if *e == epoch => i.interrupt(),
            // A newer claim's checks are not this claim's to stop.
            Some(Check::Running(e, _)) if *e > epoch => {}
            _ => {
                map.insert(key, Check::Ended(epoch));
            }
        }
    }

    fn interrupt_all(&self) {
        for check in self.lock().values() {
            if let Check::Running(_, i) = check {
                i.interrupt();
            }
        }
    }
}

/// How often boardd looks again at a landing that waits in `blocked` for the
/// person's checkout to be clean. A look is a `git status` of that checkout,
/// cheap enough every few seconds, and a person who has just committed waits
/// no longer than this. A file watch would answer sooner, but a checkout's
/// changes come from every editor and build in it, and the watch would still
/// need this look to tell whether what changed is in the way.
pub const RECHECK: std::time::Duration = std::time::Duration::from_secs(2);

/// The workers, by repository path.
pub struct Repos {
    workers: HashMap<String, std::sync::mpsc::Sender<Job>>,
    done: mpsc::UnboundedSender<Done>,
    running: Arc<Running>,
    /// The landings submitted and not reported yet, so that a recheck never
    /// runs one twice at once.
    landing: HashSet<(String, TaskId, u64)>,
    /// When to look at the blocked landings again, once one is blocked.
    recheck_at: Option<tokio::time::Instant>,
}

impl Repos {
    /// No workers yet: each starts with its repository's first job. Checks
    /// never see `private` (boardd's state directory, its socket, the keys).
    pub fn new(private: Vec<std::path::PathBuf>) -> (Repos, mpsc::UnboundedReceiver<Done>) {
        let (done, rx) = mpsc::unbounded_channel();
        let repos = Repos {
            workers: HashMap::new(),
            done,
            running: Arc::new(Running {
                private,
                ..Running::default()
            }),
            landing: HashSet::new(),
            recheck_at: None,
        };
        (repos, rx)
    }

    /// Runs `job` on its repository's worker (starting it if need be). A
    /// landing already under way for the same claim is not run twice: the
    /// recheck timer and a person's `retry_task` may both ask for it, and the
    /// one in flight reports for both. Trap: keyed by the claim's epoch too,
    /// or a task claimed and completed again while its dropped landing was
    /// still queued on the worker would never land.
    pub fn submit(&mut self, job: Job) {
        if let Job::Land { job } = &job
            && !self.landing.insert((job.team.clone(), job.task, job.epoch))
        {
            return;
        }
        let Some(path) = job.repo_path().map(str::to_string) else {
            let done = self.done.clone();
            let copy = job.clone();
            let started = thread::start("boardd-repo-check".into(), move || {
                worker::run_one(job, &done)
            });
            if let Err(e) = started {
                tracing::error!(error = %e, "cannot start a thread to check a repository");
                let _ = self
                    .done
                    .send(copy.failed(&format!("no thread could start: {e}")));
            }
            return;
        };
        let job = match self.workers.get(&path) {
            Some(tx) => match tx.send(job) {
                Ok(()) => return,
                // The worker died (a panic in git handling); start a new one.
                Err(std::sync::mpsc::SendError(job)) => job,
            },
            None => job,
        };
        match worker::spawn(&path, self.done.clone(), self.running.clone()) {
            Ok(tx) => {
                if let Err(std::sync::mpsc::SendError(job)) = tx.send(job) {
                    tracing::error!(repo = %path, ?job, "the repository worker stopped at once");
                }
                self.workers.insert(path, tx);
            }
            Err(e) => {
                tracing::error!(repo = %path, error = %e, "cannot start a repository worker");
                let _ = self
                    .done
                    .send(job.failed(&format!("no thread could start: {e}")));
            }
        }
    }

    /// A report came back: a landing it ends is no longer under way.
    pub fn reported(&mut self, done: &Done) {
        if let Done::Landed { job, .. } = done {
            self.landing
                .remove(&(job.team.clone(), job.task, job.epoch));
        }
    }

    /// Runs `job`, a landing boardd looks at again, unless it is under way.
    pub fn recheck(&mut self, job: teamboard_board::LandJob) {
        self.submit(Job::Land { job });
    }

    /// A landing is blocked: look at the blocked ones again in [`RECHECK`].
    pub fn arm_recheck(&mut self) {
        if self.recheck_at.is_none() {
            self.recheck_at = Some(tokio::time::Instant::now() + RECHECK);
        }
    }

    /// When to look again, if a landing is blocked; cleared by the look.
    pub fn recheck_due(&self) -> Option<tokio::time::Instant> {
        self.recheck_at
    }

    pub fn rechecked(&mut self) {
        self.recheck_at = None;
    }

    /// Stops the checks of a landing whose claim ended.
    pub fn interrupt(&self, team: &str, task: TaskId, epoch: u64) {
        self.running.interrupt(team, task, epoch);
    }

    /// boardd is stopping: every running check is stopped (and recorded as
    /// interrupted, never as passed). The workers end when their queues close.
    pub fn shutdown(&mut self) {
        self.running.interrupt_all();
        self.workers.clear();
    }
}

/// A git failure as the client sees it, or what boardd found wrong in the
/// repository: always `git`, an I/O failure in git's work included. Trap:
/// `storage` tells a client that boardd could not persist a change and is
/// stopping, which a failed worktree is not.
pub(crate) fn git_error(e: impl std::fmt::Display) -> ErrorBody {
    ErrorBody::new(ErrorCode::Git, e.to_string())
}
