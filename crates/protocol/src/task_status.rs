//! Where a task is in its life. A leaf next to the ids: a task, a worktree's entry
//! and a board call all say it, and it says nothing of them.

use serde::{Deserialize, Serialize};

/// Where a task is in its life. The same snake_case name on the wire (serde) and
/// on screen (strum); `in-progress` is read too, for people who type dashes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[derive(strum::Display, strum::IntoStaticStr, strum::EnumString, strum::VariantNames)]
#[strum(serialize_all = "snake_case")]
#[cfg_attr(test, derive(strum::VariantArray))]
pub enum TaskStatus {
    /// Waiting to be claimed. Ready when it has no owner and every blocker is completed.
    Pending,
    /// Claimed by its `owner`, who works on it.
    #[strum(to_string = "in_progress", serialize = "in-progress")]
    InProgress,
    /// Done, with a `result`. Terminal.
    Completed,
    /// Gave up after the last attempt, with `last_error`. The lead may retry it.
    Failed,
    /// Withdrawn by the lead. The lead may retry it.
    Cancelled,
}

impl TaskStatus {
    /// Nothing more happens to the task unless the lead retries it: completed,
    /// failed or cancelled.
    pub fn is_ended(self) -> bool {
        matches!(
            self,
            TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled
        )
    }
}
