//! Who sets a task's checks: the lead. A teammate may propose them.
//!
//! boardd runs a task's checks with `sh -c` before its work lands, so a check
//! is a command boardd runs for whoever wrote it. A teammate runs what a model
//! wrote, and a prompt injection in a task could have it create a task whose
//! "check" is any command at all. So checks come from the lead (`add_task` as
//! the lead) and the team's repository (`set_repo`, also the lead's). A
//! teammate's `add_task` keeps its checks as `proposed_checks`, which never
//! run: the lead takes them into the task's checks (`accept_checks`) or drops
//! them (`accept_checks` with `reject`).
//!
//! Alternatives that lost:
//! - refusing a teammate's `add_task` with checks (`permission_denied`): the
//!   teammate that knows how its task is tested has no way to say so, and its
//!   model spends a turn on the refusal;
//! - a tracked request (`TeamRequest`) per proposal, like plans: a proposal
//!   belongs to its task and lives as long as the task's other fields, so it
//!   is a field of the task, shown with it, with no state of its own to keep
//!   in step.

use crate::error::{BoardError, Result};
use crate::tasks::{change, check_checks, require_lead};
use crate::transition::Note;
use crate::{Board, Ctx};
use teamboard_protocol::{EventKind, LEAD, Task, TaskId, TaskStatus};

/// The checks of a new task from `ctx`, split into the task's own and those
/// only proposed: the lead's are the task's; a teammate's are proposed.
pub(crate) fn split(ctx: &Ctx, checks: Vec<String>) -> (Vec<String>, Vec<String>) {
    if ctx.actor == LEAD {
        (checks, Vec::new())
    } else {
        (Vec::new(), checks)
    }
}

impl Board {
    /// The lead's decision on the checks proposed for task `id`: taken into
    /// its checks, after those it has, or (`reject`) dropped.
    pub fn accept_checks(&mut self, ctx: Ctx, id: TaskId, reject: bool) -> Result<Task> {
        require_lead(&ctx, "accept the checks of")?;
        let task = self.task(ctx.team, id)?;
        if task.proposed_checks.is_empty() {
            return Err(BoardError::state(format!(
                "task #{id} has no proposed checks to accept"
            )));
        }
        if task.status == TaskStatus::Completed {
            return Err(BoardError::state(format!(
                "task #{id} is completed; its checks no longer run"
            )));
        }
        let mut checks = task.checks.clone();
        checks.extend(task.proposed_checks.iter().cloned());
        if !reject {
            check_checks(&checks)?;
        }
        self.transition(change(&ctx, id), |task| {
            let proposed = std::mem::take(&mut task.proposed_checks);
            let listed = proposed.join("`, `");
            let detail = if reject {
                format!("dropped the checks proposed for #{id}: `{listed}`")
            } else {
                task.checks = checks;
                format!("accepted the checks proposed for #{id}: `{listed}`")
            };
            Note::new(EventKind::TaskEdited, detail)
        })
    }
}
