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
    let mut s = format!("#{} [{}] {}", t.id, t.status, t.subject);
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
        checks: checks_arg(input)?,
        no_worktree: input
            .get("no_worktree")
            .and_then(Value::as_bool)
            .unwrap_or(false),
    })
}

/// `checks`: a list of shell commands; absent is none. A lone string is taken as
/// one command, since models send that now and then and it can mean nothing else.
fn checks_arg(input: &Value) -> Result<Vec<String>, ToolOutput> {
    let bad = |v: &Value| {
        ToolOutput::error(format!(
            "checks must be a list of shell commands, e.g. [\"cargo test\"]; got {v}"
        ))
    };
    match input.get("checks") {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::String(one)) => Ok(vec![one.clone()]),
        Some(Value::Array(list)) => list
            .iter()
            .map(|c| c.as_str().map(str::to_string).ok_or_else(|| bad(c)))
            .collect(),
        Some(other) => Err(bad(other)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_new_task_carries_its_checks_and_worktree_choice() {
        let t = new_task_arg(&json!({
            "subject": "tests",
            "checks": ["sh backend/test.sh", "cargo test"],
            "no_worktree": true,
        }))
        .expect("a task");
        assert_eq!(t.checks, ["sh backend/test.sh", "cargo test"]);
        assert!(t.no_worktree);

        let bare = new_task_arg(&json!({"subject": "s"})).expect("a task");
        assert!(bare.checks.is_empty() && !bare.no_worktree);
        let one = new_task_arg(&json!({"subject": "s", "checks": "make test"})).expect("a task");
        assert_eq!(one.checks, ["make test"]);
    }

    #[test]
    fn checks_that_are_not_commands_are_refused_with_what_came() {
        for bad in [json!([1]), json!({"cmd": "x"}), json!(["ok", null])] {
            let err = new_task_arg(&json!({"subject": "s", "checks": bad})).expect_err("refused");
            assert!(err.is_error, "{bad}");
            assert!(
                err.content
                    .contains("checks must be a list of shell commands"),
                "{}",
                err.content
            );
        }
    }
}
