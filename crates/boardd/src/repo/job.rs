//! What the actor asks of the repo workers, and what comes back.

use teamboard_board::{GateJob, GateRefusal, LandJob, LandRefusal, OpenJob, SessionId};
use teamboard_protocol::request::SetRepoArgs;
use teamboard_protocol::{CheckRun, ErrorBody, ErrorCode, Found, Pruned, Repo, WorktreeEntry};

/// The request a job answers: whose, and which.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slot {
    pub session: SessionId,
    pub request: u64,
    pub team: String,
    /// The session's name: who the board change is made by.
    pub actor: String,
}

/// Work for git, off the actor's thread.
#[derive(Debug, Clone)]
pub enum Job {
    /// Check a repository before it is attached (on a thread of its own: the
    /// repository has no worker until it is known).
    SetRepo {
        slot: Slot,
        args: SetRepoArgs,
        /// `<state_dir>/worktrees/<team>`.
        worktrees: String,
    },
    /// Create or reopen a task's worktree.
    Open { slot: Slot, job: OpenJob },
    /// Commit, update, run the checks. No slot: the actor keeps the owner's
    /// request until the task lands or cannot (`handlers::repo_done::Held`),
    /// since the claim may end, or the owner ask again after a reconnect,
    /// while the job runs.
    Gate { job: GateJob },
    /// Land a queued task.
    Land { job: LandJob },
    /// Look at the team's worktrees on disk.
    List {
        slot: Slot,
        repo: Repo,
        entries: Vec<WorktreeEntry>,
    },
    /// Remove the prunable ones.
    Prune {
        slot: Slot,
        repo: Repo,
        entries: Vec<WorktreeEntry>,
        dry_run: bool,
    },
}

impl Job {
    /// The repository whose worker runs the job (`None` for `SetRepo`).
    pub fn repo_path(&self) -> Option<&str> {
        match self {
            Job::SetRepo { .. } => None,
            Job::Open { job, .. } => Some(&job.repo.path),
            Job::Gate { job } => Some(&job.repo.path),
            Job::Land { job } => Some(&job.repo.path),
            Job::List { repo, .. } | Job::Prune { repo, .. } => Some(&repo.path),
        }
    }

    /// The worktree the job works in, if it works in one.
    pub fn worktree(&self) -> Option<&str> {
        match self {
            Job::Open { job, .. } => Some(&job.worktree.path),
            Job::Gate { job } => Some(&job.worktree.path),
            Job::Land { job } => Some(&job.worktree.path),
            Job::SetRepo { .. } | Job::List { .. } | Job::Prune { .. } => None,
        }
    }
}

/// A worktree as `open_worktree` found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Opened {
    /// The target head it was created from, if it was created now; otherwise the
    /// target's head (the board keeps the base it already has).
    pub base: String,
    pub fresh: bool,
    pub found: Found,
}

/// The head that passed, the size of its change, and the runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Passed {
    pub head: String,
    pub diff: teamboard_protocol::DiffStat,
    pub runs: Vec<CheckRun>,
}

/// Where the target was, and where it is now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Landed {
    pub old: String,
    pub new: String,
}

impl Job {
    /// The report of a job that could not run to its end (a bug: git handling
    /// panicked). Its request is answered, and a landing ends as refused, so
    /// that nobody waits for an answer that will not come.
    pub fn failed(self, why: &str) -> Done {
        let message = format!("boardd could not finish this git work: {why}");
        let error = ErrorBody::new(ErrorCode::Internal, message.clone());
        match self {
            Job::SetRepo { slot, .. } => Done::SetRepo {
                slot,
                result: Err(error),
            },
            Job::Open { slot, job } => Done::Opened {
                slot,
                job,
                result: Err(error),
            },
            Job::Gate { job } => Done::Gated {
                job,
                result: Err(GateRefusal::new(ErrorCode::Internal, message)),
            },
            Job::Land { job } => Done::Landed {
                job,
                result: Err(LandRefusal::new(ErrorCode::Internal, message)),
            },
            Job::List { slot, .. } => Done::Listed {
                slot,
                result: Err(error),
            },
            Job::Prune { slot, dry_run, .. } => Done::Pruned {
                slot,
                dry_run,
                result: Err(error),
            },
        }
    }
}

/// A job's result, for the actor to apply to the board.
#[derive(Debug)]
pub enum Done {
    SetRepo {
        slot: Slot,
        result: Result<Repo, ErrorBody>,
    },
    Opened {
        slot: Slot,
        job: OpenJob,
        result: Result<Opened, ErrorBody>,
    },
    Gated {
        job: GateJob,
        result: Result<Passed, GateRefusal>,
    },
    Landed {
        job: LandJob,
        result: Result<Landed, LandRefusal>,
    },
    Listed {
        slot: Slot,
        result: Result<Vec<WorktreeEntry>, ErrorBody>,
    },
    Pruned {
        slot: Slot,
        dry_run: bool,
        result: Result<Pruned, ErrorBody>,
    },
}
