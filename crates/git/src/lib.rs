//! Drives the `git` command line for boardd: a worktree and a branch per task,
//! bringing a branch up to date with the target, landing it atomically, and
//! running a task's completion checks.
//!
//! Everything here blocks: boardd calls it from plain threads of its own, off
//! its actor, so a slow git or a long check delays nobody else.
//!
//! ## Why the git command line
//! Users already have git, configured the way they want it. Running the real
//! binary honours their configuration, their hooks (a failing pre-commit hook
//! refuses the commit, and its output reaches the teammate; nothing here ever
//! passes `--no-verify`), their credential helpers and signing setup, and gets
//! worktrees exactly as `git worktree` makes them, which libgit2 and gitoxide
//! only partly support. It also costs no C build and no large dependency tree
//! on a two-core machine. Every invocation runs with a fixed environment
//! (`cmd.rs`): English messages, no prompt and no editor, and no inherited
//! `GIT_DIR` pointing it at another repository.
//!
//! ## Why landing is `commit-tree` and `update-ref NEW OLD`
//! Landing moves one ref. A fast-forward moves it to the task branch's head;
//! a merge first writes the merge commit with `git commit-tree` (the task
//! branch already contains the target's head, so its tree is the merge
//! result). Either way nothing is checked out, no index is written, and the
//! target needs no worktree. `git update-ref refs/heads/TARGET NEW OLD` is a
//! compare-and-swap on that single ref: it succeeds only if the target is
//! still at OLD, and a `kill -9` of anyone at any moment leaves the target at
//! its old commit or at its new one, never at a half merge. A lost race is an
//! answer ([`Land::Moved`]), not an error: the caller updates and retries.
//!
//! ## Why a conflict aborts
//! [`Repo::update`] never leaves a worktree half-merged. On a conflict it
//! collects the conflicting paths and runs `rebase --abort` or `merge --abort`,
//! so the task branch and its files are exactly as the teammate left them, and
//! the paths go back to whoever resolves them. A merge or rebase of
//! [`Repo::update`]'s found in progress anyway (boardd killed in the middle)
//! is undone by [`Repo::abort_own_update`], which leaves alone one the
//! worktree's owner started.
//!
//! ## Layout
//! [`version()`] checks the installed git. [`Repo`] is spread over files by what
//! it touches: `repo.rs` (opening, and recognising its worktrees), `refs.rs`
//! (branches and commits), `worktree.rs` (adding and removing worktrees),
//! `state.rs` (what a worktree holds), `commit.rs`, `update.rs`, `land.rs`.
//! [`run_check`] runs a completion check (`check.rs`, with the process group
//! in `group.rs`). [`wait_for_git_in`] waits out the git a killed boardd left
//! running in a worktree (`busy.rs`).

mod busy;
mod check;
mod checkout;
mod cmd;
mod commit;
mod diffstat;
mod error;
mod group;
mod land;
mod names;
mod paths;
mod refs;
mod repo;
mod size;
mod state;
mod tail;
mod update;
mod version;
mod worktree;

pub use busy::wait_for_git_in;
pub use check::{CheckOutcome, CheckResult, CheckSpec, Interrupt, run_check};
pub use diffstat::{DiffStat, parse_numstat};
pub use error::GitError;
pub use repo::Repo;
pub use size::dir_size;
pub use state::{Entry as StatusEntry, parse_status};
pub use tail::TAIL_BYTES;
pub use version::{MIN_VERSION, Version, parse_version, version};

/// A full commit id: 40 hex digits (64 in a SHA-256 repository).
pub type Oid = String;

/// How a task branch is brought up to date and landed (a team setting).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// Rebase onto the target, land as a fast-forward: a linear history.
    Rebase,
    /// Merge the target in, land as a merge commit: the task stays visible as a branch.
    Merge,
}

/// What [`Repo::add_worktree`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Created {
    /// A new branch and a new worktree.
    Fresh,
    /// The branch existed already (and was not reset), with or without its worktree.
    Reused,
}

/// What a worktree holds, from [`Repo::worktree_state`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorktreeState {
    pub head: Oid,
    /// The branch checked out, or being rebased; `None` when detached.
    pub branch: Option<String>,
    /// Paths with uncommitted changes, untracked ones included (an untracked
    /// directory is one entry, "dir/"); a rename is listed by its new path.
    pub changed: Vec<String>,
    /// How many of `changed` are untracked (new files git does not know yet).
    pub untracked: usize,
    pub merging: bool,
    pub rebasing: bool,
}

impl WorktreeState {
    /// The operation under way, `rebase` or `merge`, if one is.
    pub fn in_progress(&self) -> Option<&'static str> {
        let (merging, rebasing) = (self.merging, self.rebasing);
        state::Progress { merging, rebasing }.what()
    }
}

/// What [`Repo::update`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Update {
    /// The target was already contained in the branch.
    UpToDate,
    /// The branch now contains the target; its new head.
    Updated(Oid),
    /// Both sides changed these paths; nothing was changed. `onto` is the
    /// target commit the branch conflicts with.
    Conflict { paths: Vec<String>, onto: Oid },
}

/// What [`Repo::land`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Land {
    /// The target now points at this commit.
    Landed(Oid),
    /// The target is no longer at the expected commit; it is at `now`.
    Moved { now: Oid },
    /// The task branch does not contain the target's head: update it first.
    Behind,
}
