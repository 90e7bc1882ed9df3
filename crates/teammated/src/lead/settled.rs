//! Where the board stands for the lead: whether it has settled, and which tasks can
//! never start. A leaf, for the goal's loop (`drive`) and its give-up watch
//! (`unstaffed`) alike.

use teamboard_protocol::{Task, TaskStatus};

/// Whether every task has ended or can never start. A pending task behind a
/// blocker that failed or was cancelled (directly or further up) waits for a
/// `retry_task` that only a person gives: counting it as open would keep
/// `--goal` waiting for ever.
pub(super) fn settled(tasks: &[Task]) -> bool {
    tasks
        .iter()
        .all(|t| t.status.is_ended() || stuck_behind(tasks, t).is_some())
}

/// The failed or cancelled task that keeps pending task `t` from ever
/// starting, if one does.
pub(super) fn stuck_behind<'a>(tasks: &'a [Task], t: &Task) -> Option<&'a Task> {
    let by_id: std::collections::HashMap<u64, &Task> = tasks.iter().map(|t| (t.id, t)).collect();
    let mut todo: Vec<u64> = t.blocked_by.clone();
    let mut seen = std::collections::HashSet::new();
    if t.status != TaskStatus::Pending {
        return None;
    }
    while let Some(id) = todo.pop() {
        if !seen.insert(id) {
            continue;
        }
        let Some(b) = by_id.get(&id) else { continue };
        match b.status {
            TaskStatus::Failed | TaskStatus::Cancelled => return Some(b),
            TaskStatus::Pending => todo.extend(b.blocked_by.iter().copied()),
            _ => {}
        }
    }
    None
}
