//! How the board reads to a model, for the teammate's tools and the lead's: one line
//! per task, a task id argument, a refusal from boardd.

use crate::tools::ToolOutput;
use crate::tools::str_arg;
use serde_json::Value;
use teamboard_protocol::request::NewTask;
use teamboard_protocol::{ClientError, Task};

pub(crate) fn id_arg(input: &Value) -> Result<u64, ToolOutput> {
    input
        .get("id")
        .and_then(|v| {
            v.as_u64().or_else(|| {
                v.as_str()
                    .and_then(|s| s.trim_start_matches('#').parse().ok())
            })
        })
        .ok_or_else(|| ToolOutput::error(format!("missing or invalid task id 'id'; got {input}")))
}

pub(crate) fn refused(e: ClientError) -> ToolOutput {
    ToolOutput::error(format!("boardd refused: {e}"))
}

pub(crate) fn task_line(t: &Task) -> String {
    let mut s = format!("#{} [{}] {}", t.id, t.status.as_str(), t.subject);
    if let Some(owner) = &t.owner {
        s.push_str(&format!(" (owner {owner})"));
    }
    if !t.blocked_by.is_empty() {
        let ids: Vec<String> = t.blocked_by.iter().map(|b| format!("#{b}")).collect();
        s.push_str(&format!(" blocked by {}", ids.join(", ")));
    }
    if let Some(role) = &t.role {
        s.push_str(&format!(" role {role}"));
    }
    s
}

/// A list of task ids, as `blocked_by` or `on` give them; absent is empty.
pub(crate) fn ids_arg(input: &Value, field: &str) -> Result<Vec<u64>, ToolOutput> {
    match input.get(field) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(ids)) => ids
            .iter()
            .map(Value::as_u64)
            .collect::<Option<Vec<u64>>>()
            .ok_or_else(|| ToolOutput::error(format!("{field} must be a list of task ids"))),
        Some(other) => Err(ToolOutput::error(format!(
            "{field} must be a list of task ids, not {other}"
        ))),
    }
}

/// The task `create_task` describes.
pub(crate) fn new_task_arg(input: &Value) -> Result<NewTask, ToolOutput> {
    let subject = str_arg(input, "subject")?.to_string();
    Ok(NewTask {
        subject,
        description: input
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        blocked_by: ids_arg(input, "blocked_by")?,
        priority: input.get("priority").and_then(Value::as_i64).unwrap_or(0),
        role: input
            .get("role")
            .and_then(Value::as_str)
            .map(str::to_string),
        require_plan: input
            .get("require_plan")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        checks: Vec::new(),
        no_worktree: input
            .get("no_worktree")
            .and_then(Value::as_bool)
            .unwrap_or(false),
    })
}
