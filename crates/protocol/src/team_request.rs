//! The team's protocol requests: a shutdown the lead asks of a teammate, and a plan a
//! teammate asks the lead to approve.
//!
//! boardd keeps each one with its state, persists it like a task, and enforces who
//! may open and answer it. The inbox messages that go with a request
//! (`shutdown_request`, `plan_approval_response` ...) only tell their recipient to
//! look; the request itself is the truth, and no client can send those kinds with
//! `send`.

use crate::ids::{RequestId, TaskId};
use serde::{Deserialize, Serialize};

/// What a request asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[derive(strum::Display, strum::IntoStaticStr, strum::EnumString, strum::VariantArray)]
#[strum(serialize_all = "snake_case")]
pub enum RequestKind {
    /// The lead asks a teammate to leave.
    Shutdown,
    /// A teammate asks the lead to approve its plan for the task it holds.
    Plan,
}

/// Where a request is in its life. Only `pending` can change, and only once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[derive(strum::Display, strum::IntoStaticStr, strum::VariantArray)]
#[strum(serialize_all = "snake_case")]
pub enum RequestState {
    /// Waiting for its answer.
    Pending,
    /// Answered yes: the teammate leaves, or the plan may be carried out.
    Approved,
    /// Answered no, with `feedback` saying why.
    Rejected,
    /// The deadline passed without an answer. For a shutdown, boardd stopped the
    /// teammate's processes (`forced`).
    Expired,
    /// Withdrawn before an answer: by the lead, because a newer plan replaced it,
    /// because the claim it was about ended, or because its target left.
    Cancelled,
}

/// One protocol request, as boardd keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TeamRequest {
    pub id: RequestId,
    pub kind: RequestKind,
    /// Who asked: `lead` for a shutdown, the task's owner for a plan.
    pub from: String,
    /// Who must answer: the teammate for a shutdown, `lead` for a plan.
    pub to: String,
    /// A plan's task; `null` for a shutdown. Always written, so that every request
    /// object has the fields listings promise (`id`, `kind`, `from`, `to`, `task`,
    /// `state`).
    #[serde(default)]
    pub task: Option<TaskId>,
    /// A plan's claim epoch: an approval holds for this claim of this task only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub epoch: Option<u64>,
    pub state: RequestState,
    /// A plan's text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<String>,
    /// Why the lead asks for a shutdown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// When boardd ends the request if it is still pending, in ms since the epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline: Option<i64>,
    /// Who settled it: the answering member, `lead`, or `boardd` (expiry, a claim
    /// that ended, a target that left).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answered_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answered_at: Option<i64>,
    /// The answer's words: the lead's feedback on a plan, a teammate's reason for
    /// refusing a shutdown, or why boardd settled it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feedback: Option<String>,
    /// A shutdown that boardd carried out by stopping the teammate's process group
    /// (`force`, or the deadline passed).
    #[serde(default)]
    pub forced: bool,
    pub created_at: i64,
}

impl TeamRequest {
    pub fn is_pending(&self) -> bool {
        self.state == RequestState::Pending
    }
}
