//! A team's repository, each task's worktree, its checks and its landing: the wire
//! side of `docs/design/worktrees.md`.

use crate::ids::TaskId;
use crate::task_status::TaskStatus;
use serde::{Deserialize, Serialize};

/// How a task's branch is brought up to date with the target and landed on it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[derive(strum::Display, strum::IntoStaticStr)]
#[strum(serialize_all = "snake_case")]
#[cfg_attr(test, derive(strum::VariantArray))]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum MergeStyle {
    /// Rebase the task's commits onto the target, then fast-forward the target:
    /// a straight history.
    #[default]
    #[cfg_attr(
        feature = "cli",
        value(
            help = "Rebase the task's commits onto the target, then fast-forward it: a straight history"
        )
    )]
    Rebase,
    /// Merge the target into the task's branch, then land a merge commit on the
    /// target: the task's commits keep their shape.
    #[cfg_attr(
        feature = "cli",
        value(
            help = "Land a merge commit of the target and the task's branch: its commits keep their shape"
        )
    )]
    Merge,
}

/// The default time one check may run.
pub const DEFAULT_CHECK_TIMEOUT_MS: u64 = 10 * 60 * 1000;

/// The git repository a team works in, and where finished work lands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Repo {
    /// The repository's top level, absolute.
    pub path: String,
    /// The target branch: worktrees start from its head, finished tasks land on it.
    pub branch: String,
    #[serde(default)]
    pub merge: MergeStyle,
    /// Checks every task of the team runs before it may complete, before its own.
    #[serde(default)]
    pub checks: Vec<String>,
    /// How long one check may run before it is stopped and counted as failed.
    pub check_timeout_ms: u64,
    /// Where boardd puts the team's worktrees (one directory per task).
    pub worktrees: String,
    /// Every task's completion waits for a person's review once its checks
    /// pass (`landing: review`), instead of joining the merge queue at once.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub review: bool,
    /// `git --version` when the repository was attached.
    #[serde(default)]
    pub git_version: String,
    pub set_at: i64,
}

/// A task's worktree and branch. Reserved (path and branch named) by the claim
/// that first needs it; created by boardd when the holder opens it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Worktree {
    pub path: String,
    pub branch: String,
    /// The target's head the worktree was created from; `None` until it exists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base: Option<String>,
    /// The target commit that holds the task's work, once it landed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merged: Option<String>,
    /// The target's head just before the task landed: `landed_on..merged` is what
    /// the task changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub landed_on: Option<String>,
    /// The task was cancelled with `discard`: its unmerged work may be pruned.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub discard: bool,
    /// `prune_worktrees` removed the directory and the branch.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pruned: bool,
}

/// How a check run ended. Only `passed` lets a completion through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[derive(strum::Display, strum::IntoStaticStr)]
#[strum(serialize_all = "snake_case")]
#[cfg_attr(test, derive(strum::VariantArray))]
pub enum CheckOutcome {
    Passed,
    Failed,
    /// Stopped at the time limit.
    TimedOut,
    /// Stopped because the claim ended or boardd stopped while it ran.
    Interrupted,
}

/// The last run of one check on a task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckRun {
    pub command: String,
    pub outcome: CheckOutcome,
    /// The exit code, when the check exited (not when a signal ended it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// The end of its output (stdout and stderr together), at most 4 KiB.
    #[serde(default)]
    pub tail: String,
    pub duration_ms: u64,
    /// The commit it ran on.
    #[serde(default)]
    pub commit: String,
    pub at: i64,
}

/// Where a completion of a task with a worktree is, between `complete_task` and
/// the task's `completed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[derive(strum::Display, strum::IntoStaticStr)]
#[strum(serialize_all = "snake_case")]
#[cfg_attr(test, derive(strum::VariantArray))]
pub enum LandingStage {
    /// Committing, bringing the branch up to date, running the checks.
    Checking,
    /// The checks passed; waiting for a person to merge it (`merge_task`) or
    /// send it back (`send_back`). Nothing lands meanwhile.
    Review,
    /// The checks passed (and, with a review, a person merged it); waiting in
    /// the team's merge queue.
    Queued,
    /// The target is checked out in the person's own working tree, which has
    /// changes the landing would touch: it waits, using no attempt, until the
    /// tree is clean (`paths` names what blocks it, `checkout` where).
    Blocked,
    /// The branch conflicts with the target (`paths`, at target commit `onto`):
    /// it waits, using no attempt, for the owner (or a person, in the worktree)
    /// to resolve it and complete again.
    Conflict,
}

/// How big a change is, as `git diff --numstat` counts it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiffStat {
    /// Files changed.
    pub files: u32,
    /// Lines added and removed (a binary file counts none).
    pub added: u64,
    pub removed: u64,
}

/// A completion on its way to the target branch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Landing {
    pub stage: LandingStage,
    /// The result the owner completed with.
    pub result: String,
    /// The task branch's head that passed the checks (set once `queued`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head: Option<String>,
    /// When the owner asked to complete.
    pub since: i64,
    /// When the checks passed and the task joined the merge queue.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queued_at: Option<i64>,
    /// When the checks passed and the task began to wait for review.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review_at: Option<i64>,
    /// The size of the change that passed: `head` against the target it was
    /// brought up to date with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diff: Option<DiffStat>,
    /// `blocked`: the files in the way; `conflict`: the conflicting paths.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<String>,
    /// `blocked`: the working tree where the target is checked out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkout: Option<String>,
    /// `conflict`: the target commit the branch conflicts with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub onto: Option<String>,
}

impl Landing {
    /// The owner's part is over: its work waits for a person's review, or a
    /// person merged it from review and it lands (queued, or blocked on the
    /// person's checkout) without the owner, who idles holding the claim.
    /// Trap: a completion that never waited for review is not done while it
    /// is queued or blocked: its owner waits on its `complete_task`.
    pub fn owner_done(&self) -> bool {
        match self.stage {
            LandingStage::Review => true,
            LandingStage::Queued | LandingStage::Blocked => self.review_at.is_some(),
            LandingStage::Checking | LandingStage::Conflict => false,
        }
    }
}

/// What a new owner finds in a worktree it opens.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Found {
    /// Commits on the task branch since its base.
    pub commits: u32,
    /// Paths with uncommitted changes (at most 100).
    #[serde(default)]
    pub changed: Vec<String>,
    /// More paths changed than `changed` lists.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub more_changed: bool,
    /// A merge or rebase is in progress there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_progress: Option<String>,
}

impl Found {
    /// Nothing of a previous owner's is there.
    pub fn is_empty(&self) -> bool {
        self.commits == 0 && self.changed.is_empty() && self.in_progress.is_none()
    }
}

/// The answer to `open_worktree`: where to work, and what is already there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpenedWorktree {
    pub task: TaskId,
    pub worktree: Worktree,
    /// The repository's top level and target branch.
    pub repo: String,
    pub target: String,
    /// Created by this call (false: it existed and was reused).
    pub fresh: bool,
    pub found: Found,
}

/// What `list_worktrees` says of one worktree, and what `prune_worktrees` would do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[derive(strum::Display, strum::IntoStaticStr)]
#[strum(serialize_all = "snake_case")]
#[cfg_attr(test, derive(strum::VariantArray))]
pub enum WorktreeState {
    /// Reserved by a claim but not created yet.
    Reserved,
    /// Its task is open (pending, in progress, failed): kept.
    Active,
    /// Its work is in the target branch and nothing is uncommitted: prunable.
    Merged,
    /// Its task was cancelled with `discard`: prunable.
    Discarded,
    /// Work that is neither merged nor discarded (for example a task cancelled
    /// without `discard`): kept.
    Unmerged,
    /// The directory is gone (removed by hand); its branch may remain.
    Missing,
}

impl WorktreeState {
    /// `prune_worktrees` removes only these.
    pub fn prunable(self) -> bool {
        matches!(self, WorktreeState::Merged | WorktreeState::Discarded)
    }
}

/// One row of `list_worktrees`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorktreeEntry {
    pub task: TaskId,
    pub subject: String,
    pub status: TaskStatus,
    #[serde(default)]
    pub owner: Option<String>,
    pub worktree: Worktree,
    pub state: WorktreeState,
    /// Paths with uncommitted changes.
    #[serde(default)]
    pub uncommitted: u32,
    /// Commits on the branch, or on what the worktree has checked out (a
    /// detached HEAD), that the target does not have.
    #[serde(default)]
    pub unmerged_commits: u32,
    /// Bytes on disk.
    #[serde(default)]
    pub size: u64,
}

/// The answer to `prune_worktrees`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pruned {
    /// Removed (or, with `dry_run`, would be).
    pub removed: Vec<WorktreeEntry>,
    /// Kept, each with its state saying why.
    pub kept: Vec<WorktreeEntry>,
}
