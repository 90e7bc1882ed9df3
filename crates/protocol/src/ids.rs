//! The ids the board hands out. A leaf: every other module may name them, and
//! they name nothing, so that the modules of tasks, requests and worktrees need
//! not import each other to say which task they are about.

/// A task's integer id. Ids are per team, start at 1 and are never reused.
pub type TaskId = u64;

/// A request's id: daemon-wide, starts at 1, never reused.
pub type RequestId = u64;
