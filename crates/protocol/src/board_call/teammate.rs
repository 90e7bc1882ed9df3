//! The board tools of teammated's native model loop: the seven every member has,
//! then the loop's own. The descriptions are the model's only manual for them,
//! so they say when to use a tool, what comes back, and the limits it will run
//! into; `docs/tools.md` shows the schemas (teammated's tests keep them in step).

use super::args::Args;
use super::{BadCall, BoardCall, Front, STATUSES, ToolSpec};
use crate::TaskId;
use serde_json::{Value, json};

/// One call of the native loop's board tools, its arguments read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TeammateCall {
    /// One of the seven tools every member has. `get_task` never claims here:
    /// the loop's schema does not offer `claim`, and `claim_task` does that.
    Board(BoardCall),
    ClaimTask {
        id: TaskId,
    },
    /// The answer to the lead's shutdown request; `note` may be empty only
    /// where the teammate can do without it (approving with no task held).
    RespondShutdown {
        approve: bool,
        note: String,
    },
    ListTeam,
    Broadcast {
        text: String,
    },
    /// Ends the work phase after this round.
    Idle,
}

impl TeammateCall {
    /// Reads a call of one of the loop's board tools.
    pub fn read(tool: &str, arguments: &Value) -> Result<TeammateCall, BadCall> {
        let a = Args::of(Front::Teammate, tool, arguments)?;
        Ok(match tool {
            "claim_task" => TeammateCall::ClaimTask { id: a.task("id")? },
            "respond_shutdown" => TeammateCall::RespondShutdown {
                approve: a.yes_no("approve", "true to shut down, false to keep working")?,
                note: a.string(
                    "note",
                    "approving, what you got done and what is left; rejecting, why you should keep working",
                )?,
            },
            "list_team" => TeammateCall::ListTeam,
            "broadcast" => TeammateCall::Broadcast {
                text: a.text("content", "the message")?,
            },
            "idle" => TeammateCall::Idle,
            _ => TeammateCall::Board(a.board_call()?),
        })
    }
}

/// The loop's board tools, in the order its model sees them (after the local
/// tools, which teammated adds).
pub(super) fn specs() -> Vec<ToolSpec> {
    vec![
        ToolSpec::new(
            "list_tasks",
            "List the tasks on your team's board, with their ids, status, owners and \
             subjects. Filter by status to see, for instance, only what is still \
             pending. Use get_task for one task's full description.",
            json!({
                "status": {
                    "type": "string",
                    "enum": STATUSES,
                    "description": "Only tasks with this status. Default: all."
                }
            }),
            &[],
        ),
        ToolSpec::new(
            "get_task",
            "Show one task in full: its subject, description, status, owner and the \
             tasks blocking it, its result or last error, and its history.",
            json!({
                "id": {
                    "type": "integer",
                    "description": "The task's id."
                }
            }),
            &["id"],
        ),
        ToolSpec::new(
            "create_task",
            "Add a task to the board, for yourself or a teammate to claim later. Split \
             large work into tasks that can be done independently, and use blocked_by \
             for order: a task is not handed out until every task it is blocked by has \
             completed. Answers the new task's id.",
            json!({
                "subject": {
                    "type": "string",
                    "description": "A short imperative title, e.g. 'add tests for the config parser'."
                },
                "description": {
                    "type": "string",
                    "description": "What to do and how to tell it is done: files, commands, acceptance criteria."
                },
                "blocked_by": {
                    "type": "array",
                    "items": { "type": "integer" },
                    "description": "Ids of tasks that must complete before this one can start."
                },
                "priority": {
                    "type": "integer",
                    "description": "Higher is handed out first. Default 0."
                },
                "role": {
                    "type": "string",
                    "description": "Only teammates with this role may claim the task. Default: anyone."
                },
                "require_plan": {
                    "type": "boolean",
                    "description": "Whoever claims it must have a plan approved by the lead before changing anything. Default false."
                }
            }),
            &["subject"],
        ),
        ToolSpec::new(
            "claim_task",
            "Claim a pending, unblocked task so that you work on it; it becomes the task \
             you hold. You hold at most one task at a time: complete or fail it first. \
             You rarely need this, because when you go idle the runtime claims the next \
             task for you.",
            json!({
                "id": {
                    "type": "integer",
                    "description": "The id of the task to claim."
                }
            }),
            &["id"],
        ),
        ToolSpec::new(
            "complete_task",
            "Mark the task you hold as completed, with a result that tells the lead and \
             the tasks depending on it what was done: files changed, how it was \
             verified, anything left open. Only call it when the work is really done \
             and checked. In a git worktree, teamboard first commits your changes, brings \
             the branch up to date and runs the checks: a failed check or a conflict comes \
             back as an error, and the task stays yours to fix and complete again.",
            json!({
                "result": {
                    "type": "string",
                    "description": "What was done and how it was verified."
                }
            }),
            &["result"],
        ),
        ToolSpec::new(
            "fail_task",
            "Give up the task you hold, with the reason. The task goes back to the board \
             and is retried (by you or a teammate) until its attempts run out, so say \
             what went wrong and what the next attempt should try.",
            json!({
                "reason": {
                    "type": "string",
                    "description": "Why the task could not be done, and what to try next time."
                }
            }),
            &["reason"],
        ),
        ToolSpec::new(
            "submit_plan",
            "Ask the lead to approve your plan for the task you hold, and wait for the \
             decision. A task that needs a plan keeps bash, write_file and edit_file \
             closed until the lead approves; read_file and glob stay open, so look \
             around first. Answers the decision and the lead's feedback. After a \
             rejection, revise the plan and submit it again. An approval holds for \
             this task and this claim only.",
            json!({
                "plan": {
                    "type": "string",
                    "description": "What you will change and how you will check it: files, steps, commands."
                }
            }),
            &["plan"],
        ),
        ToolSpec::new(
            "respond_shutdown",
            "Answer the lead's shutdown request, when the runtime tells you one is \
             waiting. approve=true: the task you hold is given back with your note \
             (what you got done and what is left, for its next owner) and you stop \
             after this round. approve=false: you keep working, and the note tells \
             the lead why. Without an answer before the deadline, your processes are \
             stopped.",
            json!({
                "approve": {
                    "type": "boolean",
                    "description": "true to shut down, false to keep working."
                },
                "note": {
                    "type": "string",
                    "description": "Approving: what you got done and what is left. Rejecting: why you should keep working."
                }
            }),
            &["approve", "note"],
        ),
        ToolSpec::new(
            "list_team",
            "List your team: each teammate's name, role and status (idle, working, \
             offline, shutdown), the task it holds, and whether it is connected now; \
             you are marked. Use it to find whom to ask or tell something. The lead is \
             not listed: it is always reachable as \"lead\".",
            json!({}),
            &[],
        ),
        ToolSpec::new(
            "send_message",
            "Send a message to one teammate, by name, or to the lead (\"lead\"). Use it to \
             ask a question, hand over information, or report a problem. Every message \
             wakes its reader, so do not send one only to acknowledge or thank. Messages \
             to you arrive between your tool calls, and wake you when you are idle.",
            json!({
                "to": {
                    "type": "string",
                    "description": "A teammate's name, or \"lead\"."
                },
                "content": {
                    "type": "string",
                    "description": "The message."
                }
            }),
            &["to", "content"],
        ),
        ToolSpec::new(
            "broadcast",
            "Send a message to every teammate and the lead. Use it sparingly, for news \
             everyone needs (a shared interface changed, the build is broken); it costs \
             each reader tokens.",
            json!({
                "content": {
                    "type": "string",
                    "description": "The message."
                }
            }),
            &["content"],
        ),
        ToolSpec::new(
            "idle",
            "End your work phase. Use it when you have nothing left to do: your task is \
             completed or failed, and no message needs an answer. The runtime then waits, \
             without spending tokens, until a message arrives for you or a task can be \
             claimed for you, and wakes you with it.",
            json!({}),
            &[],
        ),
    ]
}
