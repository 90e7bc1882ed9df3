//! The board tools, typed: the one place that says what a board tool takes (its
//! schema, as each model is offered it) and reads a call's arguments into a value.
//!
//! Three front ends offer a model the board: the board's MCP server (`teamctl
//! mcp`, inside a teammate's agent or in a person's own session), teammated's
//! native model loop, and the lead's model. Each has its own set of tools and its
//! own words for them ([`Front`], [`Front::specs`]), and reads every call through
//! the same readers, so that the same bad call gets the same words from all
//! three:
//!
//! - [`BoardCall`]: the seven tools every member has. The MCP server, the member
//!   socket (`teammated`'s side of it) and the member-side `teamctl` twins read
//!   them with [`BoardCall::parse`];
//! - [`TeammateCall`]: the native loop's, the seven and its own (`claim_task`,
//!   `respond_shutdown`, `list_team`, `broadcast`, `idle`);
//! - [`LeadCall`]: the lead's.
//!
//! A call is read against its front end's schema: a tool the front end does not
//! offer, or an argument its schema does not name, is refused, so a tool and its
//! schema cannot drift apart (a test checks the required ones). Reading is
//! strict where a slip would be silent (an unknown argument, a blank result) and
//! lenient where the meaning is plain (`"#3"` for a task id, one check given as
//! a lone string), since a refusal costs the model a turn.
//!
//! Alternatives that lost:
//! - each front end reading its own arguments, as teamboard first did: the same
//!   slip got three different answers, and a schema could offer an argument
//!   nobody read;
//! - argument structs with `#[derive(Deserialize)]` and `deny_unknown_fields`:
//!   serde's errors speak of Rust types and byte positions, not of what the model
//!   should send, and the leniencies need hand-written deserializers anyway;
//! - schemas generated from those structs (`schemars`): the descriptions are each
//!   front end's manual for its model and differ between them, and the MCP
//!   schemas are trimmed by hand to hold a token budget;
//! - one enum for every front end's tools: each front end would carry arms for
//!   tools it never offers. The seven shared tools are one enum ([`BoardCall`]),
//!   which the native loop's nests; the lead's few shared ones are variants of
//!   its own, since it is offered only four of the seven.

mod args;
mod lead;
mod mcp;
mod teammate;

pub use lead::LeadCall;
pub use teammate::TeammateCall;

use crate::member::MemberCall;
use crate::request::NewTask;
use crate::{TaskId, TaskStatus};
use args::Args;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

/// The tools every member has, in the order `tools/list` gives them.
pub const BOARD_TOOLS: [&str; 7] = [
    "list_tasks",
    "get_task",
    "create_task",
    "send_message",
    "complete_task",
    "fail_task",
    "submit_plan",
];

/// A tool a model may call: its name, what it does, and a JSON schema of its input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
}

/// Who offers a model the board tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Front {
    /// The MCP server inside a teammate's agent: the teammate claims, the agent works.
    McpMember,
    /// The MCP server of a person's own session, which claims tasks itself.
    McpOwn,
    /// teammated's native model loop.
    Teammate,
    /// The lead's model (`teamctl lead`).
    Lead,
}

impl Front {
    /// The board tools this front end offers its model, in the order it lists them.
    pub fn specs(self) -> Vec<ToolSpec> {
        match self {
            Front::McpMember => mcp::specs(false),
            Front::McpOwn => mcp::specs(true),
            Front::Teammate => teammate::specs(),
            Front::Lead => lead::specs(),
        }
    }

    /// Arguments a tool takes though its schema does not offer them: the MCP
    /// tools' `id` is for the `teamctl` twins, which name the task so that a
    /// script cannot end another; `priority` is the lead's to set; the native
    /// `create_task` reads the lead's `checks` and `no_worktree` too.
    fn unlisted(self, tool: &str) -> &'static [&'static str] {
        match (self, tool) {
            (Front::McpMember | Front::McpOwn, "complete_task" | "fail_task" | "submit_plan") => {
                &["id"]
            }
            (Front::McpMember | Front::McpOwn, "create_task") => &["priority"],
            (Front::Teammate, "create_task") => &["checks", "no_worktree"],
            _ => &[],
        }
    }

    /// The argument that carries a message's text: MCP's `send_message` says
    /// `text`, the models' own loops `content`.
    fn message_key(self) -> &'static str {
        match self {
            Front::McpMember | Front::McpOwn => "text",
            Front::Teammate | Front::Lead => "content",
        }
    }
}

/// One call of the seven tools every member has, its arguments read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BoardCall {
    /// The board, optionally only the tasks of one status.
    ListTasks {
        status: Option<TaskStatus>,
    },
    /// One task with its history; `claim` also takes it (a person's own session).
    GetTask {
        id: TaskId,
        claim: bool,
    },
    CreateTask(NewTask),
    SendMessage {
        to: String,
        text: String,
    },
    /// Ends the held task with `result`. `task`, when given, must be the held
    /// one: the `teamctl` twins name it, so that a script cannot end another.
    CompleteTask {
        task: Option<TaskId>,
        result: String,
    },
    FailTask {
        task: Option<TaskId>,
        reason: String,
    },
    SubmitPlan {
        task: Option<TaskId>,
        plan: String,
    },
}

/// A call that cannot be carried out as sent, and what to send instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct BadCall(pub String);

impl BoardCall {
    /// Reads a call as the MCP server takes it (a person's session's tools,
    /// `get_task`'s `claim` included: a teammate refuses that with its reason).
    /// Refuses an unknown tool, an unknown or missing argument, and a value of
    /// the wrong kind, saying what the tool takes.
    pub fn parse(call: &MemberCall) -> Result<BoardCall, BadCall> {
        Args::of(Front::McpOwn, &call.tool, &call.arguments)?.board_call()
    }

    /// The tool's name.
    pub fn tool(&self) -> &'static str {
        match self {
            BoardCall::ListTasks { .. } => "list_tasks",
            BoardCall::GetTask { .. } => "get_task",
            BoardCall::CreateTask(_) => "create_task",
            BoardCall::SendMessage { .. } => "send_message",
            BoardCall::CompleteTask { .. } => "complete_task",
            BoardCall::FailTask { .. } => "fail_task",
            BoardCall::SubmitPlan { .. } => "submit_plan",
        }
    }

    /// The wire call that [`BoardCall::parse`] reads back as this one.
    pub fn to_call(&self) -> MemberCall {
        let with_task = |task: &Option<TaskId>, key: &str, text: &str| {
            let mut m = Map::new();
            if let Some(id) = task {
                m.insert("id".into(), json!(id));
            }
            m.insert(key.into(), json!(text));
            Value::Object(m)
        };
        let arguments = match self {
            BoardCall::ListTasks { status: None } => json!({}),
            BoardCall::ListTasks { status: Some(s) } => json!({"status": s.to_string()}),
            BoardCall::GetTask { id, claim } => json!({"id": id, "claim": claim}),
            BoardCall::CreateTask(t) => json!({
                "subject": t.subject,
                "description": t.description,
                "blocked_by": t.blocked_by,
                "priority": t.priority,
                "role": t.role,
                "require_plan": t.require_plan,
                "checks": t.checks,
                "no_worktree": t.no_worktree,
            }),
            BoardCall::SendMessage { to, text } => json!({"to": to, "text": text}),
            BoardCall::CompleteTask { task, result } => with_task(task, "result", result),
            BoardCall::FailTask { task, reason } => with_task(task, "reason", reason),
            BoardCall::SubmitPlan { task, plan } => with_task(task, "plan", plan),
        };
        MemberCall {
            tool: self.tool().to_string(),
            arguments,
        }
    }
}

impl ToolSpec {
    /// A tool for a model's own loop (the native one's, the lead's): its schema
    /// refuses arguments it does not name, and always says which are required.
    pub fn new(name: &str, description: &str, properties: Value, required: &[&str]) -> ToolSpec {
        ToolSpec {
            name: name.to_string(),
            description: description.to_string(),
            input_schema: json!({
                "type": "object",
                "properties": properties,
                "required": required,
                "additionalProperties": false,
            }),
        }
    }
}

/// The statuses a task can have, as the schemas list them.
const STATUSES: [&str; 5] = ["pending", "in_progress", "completed", "failed", "cancelled"];

#[cfg(test)]
mod tests;
