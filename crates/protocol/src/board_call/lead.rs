//! The lead's tools: the board and the team, as its model sees them.
//! `docs/lead.md` shows the same schemas (teammated's tests keep them in step).

use super::args::Args;
use super::{BadCall, BoardCall, Front, STATUSES, ToolSpec};
use crate::request::ShutdownArgs;
use crate::{RequestId, TaskId};
use serde_json::{Value, json};

/// One call of the lead's tools, its arguments read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeadCall {
    /// `list_tasks`, `get_task`, `create_task` or `send_message`: the lead is
    /// offered these four of the seven tools every member has.
    Board(BoardCall),
    /// A task, and the tasks it is to wait for (at least one).
    AddDependency(TaskId, Vec<TaskId>),
    CancelTask(TaskId),
    /// A name and a role, trimmed; the lead checks them against what `teamctl
    /// spawn` takes.
    SpawnTeammate {
        name: String,
        role: String,
    },
    ListTeam,
    Broadcast(String),
    RequestShutdown(ShutdownArgs),
    ReviewPlan {
        request: RequestId,
        approve: bool,
        feedback: Option<String>,
    },
    /// The checks a teammate proposed for task `id`: taken (or, `reject`,
    /// dropped).
    AcceptChecks {
        id: TaskId,
        reject: bool,
    },
}

impl LeadCall {
    /// Reads a call of one of the lead's tools.
    pub fn read(tool: &str, arguments: &Value) -> Result<LeadCall, BadCall> {
        let a = Args::of(Front::Lead, tool, arguments)?;
        Ok(match tool {
            "add_dependency" => {
                let (id, on) = (a.task("id")?, a.ids("on")?);
                if on.is_empty() {
                    return Err(a.missing("on", "the tasks it waits for, at least one"));
                }
                LeadCall::AddDependency(id, on)
            }
            "cancel_task" => LeadCall::CancelTask(a.task("id")?),
            "spawn_teammate" => LeadCall::SpawnTeammate {
                name: a.text("name", "the teammate's name")?.trim().to_string(),
                role: (a.text("role", "what it does, e.g. dev or tester")?)
                    .trim()
                    .to_string(),
            },
            "list_team" => LeadCall::ListTeam,
            "broadcast" => LeadCall::Broadcast(a.text("content", "the message")?),
            "request_shutdown" => LeadCall::RequestShutdown(ShutdownArgs {
                to: a.text("to", "the teammate's name")?,
                reason: a.opt_string("reason")?,
                timeout_ms: None,
                force: a.flag("force")?,
            }),
            "review_plan" => LeadCall::ReviewPlan {
                request: a
                    .request_id("request", "a plan request's id, like r3")?
                    .ok_or_else(|| a.missing("request", "the plan request's id"))?,
                approve: a.yes_no("approve", "true to approve, false to reject")?,
                feedback: a.opt_string("feedback")?,
            },
            "accept_checks" => LeadCall::AcceptChecks {
                id: a.task("id")?,
                reject: a.flag("reject")?,
            },
            _ => LeadCall::Board(a.board_call()?),
        })
    }
}

/// Every tool the lead offers its model: tasks first, then the team.
pub(super) fn specs() -> Vec<ToolSpec> {
    vec![
        ToolSpec::new(
            "create_task",
            "Put a task on the board. Teammates claim ready tasks on their own: a task \
             is ready when every task in blocked_by is completed. Returns `created task \
             #ID: SUBJECT`; use the id in later blocked_by lists. Write the description \
             as the whole brief: the teammate sees nothing else.",
            json!({
                "subject": {"type": "string", "description": "A short title."},
                "description": {"type": "string", "description": "What to do and what done means."},
                "blocked_by": {"type": "array", "items": {"type": "integer"}, "description": "Ids of tasks that must complete first."},
                "role": {"type": "string", "description": "Only teammates of this role may claim it."},
                "priority": {"type": "integer", "description": "Higher is claimed first. Default 0."},
                "require_plan": {"type": "boolean", "description": "Whoever claims it must get a plan approved (you review it) before changing anything."},
                "checks": {"type": "array", "items": {"type": "string"}, "description": "Shell commands that must pass before the task may complete, e.g. [\"cargo test\"]. They gate a task that has a worktree (its team has a git repository): boardd runs them there, after the team's own checks, before the work lands on the target branch."},
                "no_worktree": {"type": "boolean", "description": "Work in the team's directory instead of a git worktree of its own, e.g. for a task that only reads. Default false."}
            }),
            &["subject"],
        ),
        ToolSpec::new(
            "add_dependency",
            "Make a task wait for others. A dependency that would make a cycle is refused.",
            json!({
                "id": {"type": "integer", "description": "The task that waits."},
                "on": {"type": "array", "items": {"type": "integer"}, "description": "The tasks it waits for."}
            }),
            &["id", "on"],
        ),
        ToolSpec::new(
            "list_tasks",
            "The board, one line per task: id, status, subject, owner, blockers, role. \
             You do not need it to wait for work: events come to you.",
            json!({
                "status": {"type": "string", "enum": STATUSES, "description": "Only tasks of this status."}
            }),
            &[],
        ),
        ToolSpec::new(
            "get_task",
            "One task in full: description, result or last error, plans and history.",
            json!({"id": {"type": "integer"}}),
            &["id"],
        ),
        ToolSpec::new(
            "cancel_task",
            "Withdraw a task that is not finished. Its owner stops working on it.",
            json!({"id": {"type": "integer"}}),
            &["id"],
        ),
        ToolSpec::new(
            "spawn_teammate",
            "Start a teammate: a process that joins the team under NAME and claims ready \
             tasks of its role (and tasks without a role) on its own. Returns once it is \
             connected.",
            json!({
                "name": {"type": "string", "description": "Letters, digits, '-' and '_'; not 'lead'."},
                "role": {"type": "string", "description": "What it does, e.g. dev or tester; tasks with a role go only to teammates of that role."}
            }),
            &["name", "role"],
        ),
        ToolSpec::new(
            "list_team",
            "The roster: each teammate's role, status, task, tokens and whether it is connected.",
            json!({}),
            &[],
        ),
        ToolSpec::new(
            "send_message",
            "Send a message to one teammate. It reaches the teammate's context at once; a \
             parked teammate wakes for it, so do not message idle teammates without need.",
            json!({
                "to": {"type": "string"},
                "content": {"type": "string"}
            }),
            &["to", "content"],
        ),
        ToolSpec::new(
            "broadcast",
            "Send a message to every teammate. It wakes them all; use it rarely.",
            json!({"content": {"type": "string"}}),
            &["content"],
        ),
        ToolSpec::new(
            "request_shutdown",
            "Ask a teammate to leave. An idle one approves and exits; a working one \
             answers at its next step (it may refuse with a reason). The answer comes to \
             you as an event. force stops its processes at once.",
            json!({
                "to": {"type": "string"},
                "reason": {"type": "string"},
                "force": {"type": "boolean"}
            }),
            &["to"],
        ),
        ToolSpec::new(
            "review_plan",
            "Decide a plan a teammate submitted (the events show `[Plan request rID ...]`). \
             Approve it, or reject it with feedback that says what to change; a rejection \
             needs feedback.",
            json!({
                "request": {"type": "integer", "description": "The plan request's id: 3 for r3."},
                "approve": {"type": "boolean"},
                "feedback": {"type": "string"}
            }),
            &["request", "approve"],
        ),
        ToolSpec::new(
            "accept_checks",
            "Decide the checks a teammate proposed for a task it created (the events say \
             `check(s) proposed for the lead to accept`; get_task shows them). boardd runs \
             checks as shell commands, so they never run until you accept them; read them \
             first. reject drops them.",
            json!({
                "id": {"type": "integer", "description": "The task."},
                "reject": {"type": "boolean", "description": "Drop the proposed checks instead. Default false."}
            }),
            &["id"],
        ),
    ]
}
