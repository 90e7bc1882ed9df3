//! Where the board tools are carried out: the seam between the MCP server and
//! the board.

use std::time::Duration;
use teamboard_protocol::board_call::BoardCall;
use teamboard_protocol::member::{MemberCall, MemberReply};

/// Who the server acts for, which decides the tools' descriptions: only a
/// person's own session claims tasks itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Inside a teammate's agent: the teammate claims, the agent works.
    Member,
    /// A person's own session, registered on the board by the server.
    Own,
}

/// The answer to one tool call.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// The value the `teamctl` twin prints with `--json`, or the refusal.
    pub reply: MemberReply,
    /// Text to show after the value: messages that arrived for the member.
    pub notes: Vec<String>,
}

impl From<MemberReply> for Answer {
    fn from(reply: MemberReply) -> Answer {
        Answer {
            reply,
            notes: Vec::new(),
        }
    }
}

/// Carries out board tool calls.
pub trait Board {
    fn mode(&self) -> Mode;

    /// Carries out one call of one of the seven tools. Never fails: a call that
    /// cannot be carried out is answered with a [`MemberReply::Error`] that says
    /// what to do.
    fn call(&mut self, call: MemberCall) -> impl Future<Output = Answer>;
}

/// A board lent to [`crate::serve`], for a caller that needs it back even when
/// serving is cut short (a signal).
impl<B: Board> Board for &mut B {
    fn mode(&self) -> Mode {
        (**self).mode()
    }

    fn call(&mut self, call: MemberCall) -> impl Future<Output = Answer> {
        (**self).call(call)
    }
}

/// Whether `teamctl mcp --timeout` bounds the wait for `call`'s answer: the
/// calls whose `teamctl` twins it bounds too. Not the ones that act on the
/// held task (taking it with `get_task {claim: true}`, `complete_task`,
/// `fail_task`, `submit_plan`): one cut short would leave the server unsure
/// whether it still holds the task, and `complete_task` waits for the task's
/// checks. Their twins (`teamctl task complete|fail|submit-plan`) wait too.
pub fn bounded(call: &BoardCall) -> bool {
    match call {
        BoardCall::ListTasks { .. } | BoardCall::CreateTask(_) | BoardCall::SendMessage { .. } => {
            true
        }
        BoardCall::GetTask { claim, .. } => !claim,
        BoardCall::CompleteTask { .. }
        | BoardCall::FailTask { .. }
        | BoardCall::SubmitPlan { .. } => false,
    }
}

/// The answer to a bounded call that `who` left unanswered for `limit`.
pub(crate) fn no_answer(who: &str, limit: Duration) -> MemberReply {
    MemberReply::error(format!(
        "{who} did not answer within {} s (teamctl mcp --timeout); the call may still have \
         been carried out, so look (list_tasks, get_task) before you repeat it",
        limit.as_secs_f64()
    ))
}

/// Runs `step` within `limit` (`None`: no limit); `None` when it ran out.
pub(crate) async fn within<T>(limit: Option<Duration>, step: impl Future<Output = T>) -> Option<T> {
    match limit {
        Some(limit) => tokio::time::timeout(limit, step).await.ok(),
        None => Some(step.await),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parsed(tool: &str, arguments: serde_json::Value) -> BoardCall {
        BoardCall::parse(&MemberCall {
            tool: tool.into(),
            arguments,
        })
        .expect("a call")
    }

    #[test]
    fn the_calls_on_the_held_task_wait_for_their_answer() {
        assert!(bounded(&parsed("list_tasks", json!({}))));
        assert!(bounded(&parsed("get_task", json!({"id": 3}))));
        assert!(bounded(&parsed("create_task", json!({"subject": "x"}))));
        assert!(bounded(&parsed(
            "send_message",
            json!({"to": "lead", "text": "hi"})
        )));
        assert!(!bounded(&parsed(
            "get_task",
            json!({"id": 3, "claim": true})
        )));
        assert!(!bounded(&parsed(
            "complete_task",
            json!({"result": "done"})
        )));
        assert!(!bounded(&parsed("fail_task", json!({"reason": "no"}))));
        assert!(!bounded(&parsed("submit_plan", json!({"plan": "p"}))));
    }
}
