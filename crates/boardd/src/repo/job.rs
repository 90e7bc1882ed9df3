//! What the actor asks of the repo workers, and what comes back.

use teamboard_board::{GateJob, GateRefusal, LandJob, LandRefusal, OpenJob, RecoverJob, SessionId};
use teamboard_protocol::request::SetRepoArgs;
use teamboard_protocol::{CheckRun, ErrorBody, Found, Pruned, Repo, WorktreeEntry};

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
#[derive(Debug)]
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
    /// Commit, update, run the checks.
    Gate { slot: Slot, job: GateJob },
    /// Undo the update a gate interrupted by boardd's restart left in the
    /// worktree. Nobody waits for it: it only has to run before the jobs that
    /// follow it on the worker.
    Recover { job: RecoverJob },
    /// Land a queued task. No slot: the actor keeps the owner's, since the
    /// owner may have gone (or boardd restarted) by the time it lands.
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
    /// The worktree the job works in, if it works in one.
    pub fn worktree(&self) -> Option<&str> {
        match self {
            Job::Open { job, .. } => Some(&job.worktree.path),
            Job::Gate { job, .. } => Some(&job.worktree.path),
            Job::Land { job } => Some(&job.worktree.path),
            Job::Recover { job } => Some(&job.worktree.path),
            Job::SetRepo { .. } | Job::List { .. } | Job::Prune { .. } => None,
        }
    }

    /// The repository whose worker runs the job (`None` for `SetRepo`).
    pub fn repo_path(&self) -> Option<&str> {
        match self {
            Job::SetRepo { .. } => None,
            Job::Open { job, .. } => Some(&job.repo.path),
            Job::Gate { job, .. } => Some(&job.repo.path),
            Job::Land { job } => Some(&job.repo.path),
            Job::Recover { job } => Some(&job.repo.path),
            Job::List { repo, .. } | Job::Prune { repo, .. } => Some(&repo.path),
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

/// The head that passed, and the runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Passed {
    pub head: String,
    pub runs: Vec<CheckRun>,
}

/// Where the target was, and where it is now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Landed {
    pub old: String,
    pub new: String,
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
        slot: Slot,
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
