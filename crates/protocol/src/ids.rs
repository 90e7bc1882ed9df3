//! The ids the board hands out. A leaf: every other module may name them, and
//! they name nothing, so that the modules of tasks, requests and worktrees need
//! not import each other to say which task they are about.

/// A task's integer id. Ids are per team, start at 1 and are never reused.
pub type TaskId = u64;

/// A request's id: daemon-wide, starts at 1, never reused.
pub type RequestId = u64;

/// How a request's id is written wherever a person or a model reads it: `r7`.
/// Tasks are `#7`, and both often share a line (`r4  plan  alice -> lead  #3`), so
/// the letter keeps them apart.
pub fn request_tag(id: RequestId) -> String {
    format!("r{id}")
}
