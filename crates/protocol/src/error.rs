//! Errors as they travel on the wire.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A machine-readable error class. Clients branch on this, people read the message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[derive(strum::Display, strum::IntoStaticStr)]
#[strum(serialize_all = "snake_case")]
#[cfg_attr(test, derive(strum::VariantArray))]
pub enum ErrorCode {
    /// The frame was not valid JSON of a known shape. The connection is closed.
    BadFrame,
    /// The frame was longer than the server accepts. The connection is closed.
    FrameTooLarge,
    /// The client's protocol major version differs from the server's.
    UnsupportedVersion,
    /// The first frame was not a `hello`.
    HandshakeRequired,
    /// The request's `op` is not one this server knows. The connection stays open.
    UnknownRequest,
    /// The request's `args` do not fit the op, or a value is out of range.
    InvalidArgs,
    /// The named task, team or message does not exist.
    NotFound,
    /// A message was addressed to a name that is not on the team's roster.
    UnknownRecipient,
    /// Adding the dependency would create a cycle.
    Cycle,
    /// The task is not in a state that allows this (e.g. claiming a completed task).
    InvalidState,
    /// The task is owned by someone else, or not ready.
    Conflict,
    /// The claim's epoch is not the task's current one: the claim was lost.
    StaleEpoch,
    /// The session has not registered as a teammate, so it cannot claim.
    NotRegistered,
    /// Another live session is already registered under this name.
    AlreadyConnected,
    /// The claimant already holds an in-progress task.
    AlreadyHoldsTask,
    /// The task's role does not match the claimant's role.
    RoleMismatch,
    /// Only the lead may do this (cancel, retry).
    PermissionDenied,
    /// boardd could not persist the change. Nothing was acknowledged.
    Storage,
    /// boardd is shutting down.
    ShuttingDown,
    /// The client sent too many requests without reading the answers.
    Busy,
    /// The request needs a member that is connected now, and it is not.
    NotConnected,
    /// The task needs an approved plan for this claim first (`submit_plan`, then
    /// the lead's `review_plan`).
    PlanRequired,
    /// A completion's checks did not pass. The message names the check, its exit
    /// code and the end of its output; the task stays with its owner.
    CheckFailed,
    /// The task's branch conflicts with the target branch. The message names the
    /// paths; the task stays with its owner and the worktree is kept.
    MergeConflict,
    /// git failed or is unusable (missing, too old, not a repository). The message
    /// says what git said.
    Git,
    /// A spend limit has no room for the call: the message names the limit,
    /// what is spent and what the call needed.
    BudgetExhausted,
    /// Anything else: a bug. The message says what happened.
    Internal,
    /// A code this version does not know, from a newer boardd. Treat it as a
    /// generic failure and show the message.
    #[serde(other)]
    Unknown,
}

/// An error as sent in a response or a connection-level `error` frame.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub struct ErrorBody {
    /// The error class.
    pub code: ErrorCode,
    /// One line for a person: what went wrong and, where possible, what to do.
    pub message: String,
}

impl ErrorBody {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ErrorBody {
            code,
            message: message.into(),
        }
    }
}

impl fmt::Display for ErrorBody {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.message, self.code)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_code_from_a_newer_daemon_is_read_as_unknown() {
        let body: ErrorBody =
            serde_json::from_str(r#"{"code":"frobnicated","message":"m"}"#).expect("parses");
        assert_eq!(body.code, ErrorCode::Unknown);
        let body: ErrorBody =
            serde_json::from_str(r#"{"code":"not_connected","message":"m"}"#).expect("parses");
        assert_eq!(body.code, ErrorCode::NotConnected);
    }
}
