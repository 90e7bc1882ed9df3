//! How the board reads to a model, for the teammate's tools and the lead's: one line
//! per task, a refusal from boardd.

use crate::tools::ToolOutput;
use teamboard_protocol::{ClientError, Task};

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
