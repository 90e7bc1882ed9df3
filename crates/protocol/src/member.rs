//! The member socket: how the board's MCP server (`teamctl mcp`) and the
//! member-side `teamctl` commands act through the teammate that started the agent
//! they run under.
//!
//! A teammate's claim belongs to its own boardd session, so an agent it runs cannot
//! complete its task over a connection of its own: boardd would refuse it as
//! another session (`stale_epoch`). Instead teammated listens on a private Unix
//! socket, named to the agent's processes by [`MEMBER_SOCKET_ENV`], and carries out
//! the board tools with its session and its claim, exactly as it does for its
//! native loop, completion gate included.
//!
//! The wire: newline-delimited JSON, one [`MemberCall`] per line, answered in
//! order with one [`MemberReply`] per line. A line is at most
//! [`MAX_MEMBER_LINE`] bytes. The `value` of a reply is the same JSON that the
//! tool's `teamctl` twin prints with `--json`.

use crate::{ErrorCode, TaskId};
use serde::{Deserialize, Serialize};

/// The environment variable that names the member socket to an agent's processes.
pub const MEMBER_SOCKET_ENV: &str = "TEAMBOARD_MEMBER_SOCKET";

/// The longest line either side sends or accepts.
pub const MAX_MEMBER_LINE: usize = 1024 * 1024;

/// One board tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemberCall {
    /// The tool: `list_tasks`, `get_task`, `create_task`, `send_message`,
    /// `complete_task`, `fail_task` or `submit_plan`.
    pub tool: String,
    /// Its arguments, as the MCP tool's input schema gives them.
    #[serde(default)]
    pub arguments: serde_json::Value,
}

/// The answer to one [`MemberCall`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum MemberReply {
    /// Done: the object the `teamctl` twin prints with `--json`.
    Ok { value: serde_json::Value },
    /// Refused, with boardd's error code when boardd refused, and what to do.
    Error {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        code: Option<ErrorCode>,
        message: String,
    },
}

/// The `value` of the answer to an agent's `complete_task` or `fail_task`: the
/// teammate took the end and carries it out once the agent can no longer change
/// the task. A completion waits for the end of the agent's turn (the completion
/// gate runs then, and a refusal comes back as the agent's next input); a
/// failure stops the agent first. Trap: ended at once, the task could land, or
/// go to its next owner, while the agent still writes to its worktree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EndTaken {
    pub task: TaskId,
    pub end: TaskEnd,
    /// What happens next, in words for the agent.
    pub next: String,
}

/// How an agent ends the task it works on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskEnd {
    Complete,
    Fail,
}

impl MemberReply {
    pub fn error(message: impl Into<String>) -> MemberReply {
        MemberReply::Error {
            code: None,
            message: message.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_say_their_status() {
        let ok = MemberReply::Ok {
            value: serde_json::json!({"id": 1}),
        };
        assert_eq!(
            serde_json::to_value(&ok).unwrap(),
            serde_json::json!({"status": "ok", "value": {"id": 1}})
        );
        let err = MemberReply::Error {
            code: Some(ErrorCode::CheckFailed),
            message: "no".into(),
        };
        let back: MemberReply =
            serde_json::from_str(&serde_json::to_string(&err).unwrap()).unwrap();
        assert_eq!(back, err);
        let taken = EndTaken {
            task: 3,
            end: TaskEnd::Complete,
            next: "end your turn".into(),
        };
        assert_eq!(
            serde_json::to_value(&taken).unwrap(),
            serde_json::json!({"task": 3, "end": "complete", "next": "end your turn"})
        );
    }
}
