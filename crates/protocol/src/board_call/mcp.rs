//! The seven board tools as the MCP server offers them.
//!
//! Written by hand and kept short: every agent pays for them in every model
//! call (Claude Code loads them into `tools` when tool search is off), and
//! `teamboard-mcp` holds them to a token budget. A description says what the
//! tool does and what to know to use it well, nothing the schema already says.

use super::{BOARD_TOOLS, STATUSES, ToolSpec};
use serde_json::{Value, json};

/// The tools, in [`BOARD_TOOLS`] order; `own` for a person's own session,
/// which claims tasks itself (else inside a teammate's agent).
pub(super) fn specs(own: bool) -> Vec<ToolSpec> {
    BOARD_TOOLS.iter().map(|name| tool(name, own)).collect()
}

fn tool(name: &str, own: bool) -> ToolSpec {
    let (description, schema) = match name {
        "list_tasks" => (
            "The team's task board: every task with its status, owner and blockers. A pending \
             task is ready (\"ready\": true) when it has no owner and its blockers completed.",
            object(json!({"status": {"type": "string", "enum": STATUSES}}), &[]),
        ),
        "get_task" if own => (
            "One task in full: description, result, last error, plans and history. \
             claim: true takes a ready task for you (one at a time): work in its \
             worktree.path if it has one, then end it with complete_task or fail_task.",
            object(
                json!({"id": {"type": "integer"}, "claim": {"type": "boolean"}}),
                &["id"],
            ),
        ),
        "get_task" => (
            "One task in full: description, result, last error, plans and history.",
            object(json!({"id": {"type": "integer"}}), &["id"]),
        ),
        "create_task" => (
            "Put a new task on the board for the team.",
            object(
                json!({
                    "subject": {"type": "string", "description": "Short title"},
                    "description": {"type": "string", "description": "What to do, with what a teammate needs to know"},
                    "blocked_by": {"type": "array", "items": {"type": "integer"}, "description": "Tasks that must complete first"},
                    "role": {"type": "string", "description": "Only members of this role may take it"},
                    "require_plan": {"type": "boolean", "description": "The lead approves a plan before any change"},
                    "checks": {"type": "array", "items": {"type": "string"}, "description": "Shell commands that must pass in its worktree before it completes; from a teammate, only proposed until the lead accepts them"},
                    "no_worktree": {"type": "boolean", "description": "Only reads: no worktree, no checks"},
                }),
                &["subject"],
            ),
        ),
        "send_message" => (
            "Send a message to a team member by name, or to \"lead\".",
            object(
                json!({"to": {"type": "string"}, "text": {"type": "string"}}),
                &["to", "text"],
            ),
        ),
        "complete_task" => (
            if own {
                "End the task you hold as done. The result is what the lead reads: what \
                 you did, where, and what is left. A task with a worktree is committed, \
                 checked and merged first; if a check fails or the branch conflicts, it \
                 stays yours: fix that and call again."
            } else {
                "End the task you hold as done, then end your turn: your teammate \
                 completes it then. The result is what the lead reads: what you did, \
                 where, and what is left. A task with a worktree is committed, checked \
                 and merged; if a check fails or the branch conflicts, it stays yours and \
                 the refusal comes as your next input: fix that and call again."
            },
            object(json!({"result": {"type": "string"}}), &["result"]),
        ),
        "fail_task" => (
            if own {
                "Give up the task you hold. It goes back to the board for another attempt."
            } else {
                "Give up the task you hold: your teammate stops you and it goes back to \
                 the board for another attempt."
            },
            object(
                json!({"reason": {"type": "string", "description": "Why, and what you found"}}),
                &["reason"],
            ),
        ),
        _ => (
            if own {
                "Ask the lead to approve your plan for the task you hold. Returns the \
                 request at once; the decision comes with a later tool result (and in \
                 get_task's plans). A task that requires a plan cannot complete before \
                 approval."
            } else {
                "Ask the lead to approve your plan for the task you hold. Returns the \
                 request at once; the decision comes to you as a message. A task that \
                 requires a plan may not change anything before approval."
            },
            object(
                json!({"plan": {"type": "string", "description": "What you will do, step by step"}}),
                &["plan"],
            ),
        ),
    };
    ToolSpec {
        name: name.to_string(),
        description: description.to_string(),
        input_schema: schema,
    }
}

/// An MCP input schema: as short as it can be, so no `required` when empty and
/// no `additionalProperties` (the reader refuses what the schema does not name).
fn object(properties: Value, required: &[&str]) -> Value {
    if required.is_empty() {
        json!({"type": "object", "properties": properties})
    } else {
        json!({"type": "object", "properties": properties, "required": required})
    }
}
