//! How the board reads to a model, for the teammate's tools and the lead's: one line
//! per task, one task in full, a refusal from boardd.

use crate::tools::ToolOutput;
use teamboard_protocol::{ClientError, Task, TaskDetail};

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

/// `list_tasks`' answer: a line per task.
pub(crate) fn task_lines(tasks: &[Task]) -> String {
    if tasks.is_empty() {
        return "no tasks".to_string();
    }
    tasks.iter().map(task_line).collect::<Vec<_>>().join("\n")
}

/// `get_task`'s answer: the task in full, its plan requests too with `plans`.
pub(crate) fn task_text(detail: &TaskDetail, plans: bool) -> String {
    let t = &detail.task;
    let mut s = task_line(t);
    if !t.description.is_empty() {
        s.push_str(&format!("\n\n{}", t.description));
    }
    if let Some(r) = &t.result {
        s.push_str(&format!("\n\nresult: {r}"));
    }
    if let Some(e) = &t.last_error {
        s.push_str(&format!("\n\nlast error: {e}"));
    }
    if !t.proposed_checks.is_empty() {
        s.push_str(&format!(
            "\n\nproposed checks (not run until the lead accepts them): `{}`",
            t.proposed_checks.join("`, `")
        ));
    }
    for p in detail.plans.iter().filter(|_| plans) {
        s.push_str(&format!(
            "\n\nplan request r{} by {} ({}): {}",
            p.id,
            p.from,
            p.state,
            p.plan.as_deref().unwrap_or_default()
        ));
        if let Some(f) = &p.feedback {
            s.push_str(&format!("\nfeedback: {f}"));
        }
    }
    s.push_str("\n\nhistory:");
    for e in &detail.history {
        s.push_str(&format!("\n- {} {}: {}", e.actor, e.kind, e.detail));
    }
    s
}
