//! Editing and deleting a task no one holds.
//!
//! Both are the lead's, and both take only a `pending` task without an owner:
//! - A claimed task is being worked on from its subject and description; changing
//!   them under the owner would make its result answer a question nobody asked.
//! - An ended task (completed, failed, cancelled) is a record: its result or error
//!   was written for the task as it was. To change a failed or cancelled one, retry
//!   it first; a completed one stays as it is.
//!
//! Deleting refuses a task that anything waits for, naming the dependents, rather
//! than dropping the edges: a dropped edge would let a dependent start without the
//! work it was told to wait for, silently. The lead deletes or re-plans the
//! dependents first, so nothing is lost without being asked for. A task that was
//! ever claimed (attempts, a worktree) is refused too: its history of work and its
//! worktree stay, and cancelling is the way to withdraw it.
//!
//! A deleted task's id is never given again: its `task_deleted` event stays in the
//! history, and a restart counts the ids named there (see `Board::restore`).

use crate::error::{BoardError, Result};
use crate::tasks::{change, check_role, check_subject, fmt_ids, require_lead};
use crate::transition::Note;
use crate::{About, Board, Ctx};
use std::cmp::Reverse;
use teamboard_protocol::request::EditTaskArgs;
use teamboard_protocol::{EventKind, Task, TaskId, TaskStatus};

impl Board {
    /// Changes a pending task's subject, description, priority or role. Fields
    /// left out keep their value; an edit that changes nothing records nothing.
    pub fn edit_task(&mut self, ctx: Ctx, edit: EditTaskArgs) -> Result<Task> {
        require_lead(&ctx, "edit")?;
        let id = edit.id;
        let task = self.task(ctx.team, id)?;
        refuse_unless_free(task, "edited")?;
        let subject = edit.subject.as_deref().map(check_subject).transpose()?;
        if let Some(d) = &edit.description {
            self.check_description(d)?;
        }
        // An empty role lets anyone claim the task.
        let role = edit.role.map(|r| r.trim().to_string());
        let role = match role.as_deref() {
            None => None,
            Some("") => Some(None),
            Some(r) => {
                check_role(r)?;
                Some(Some(r.to_string()))
            }
        };
        if subject.is_none()
            && edit.description.is_none()
            && edit.priority.is_none()
            && role.is_none()
        {
            return Err(BoardError::invalid(
                "name something to change: subject, description, priority or role",
            ));
        }
        let mut what = Vec::new();
        if subject.as_ref().is_some_and(|s| *s != task.subject) {
            what.push("subject".to_string());
        }
        if edit
            .description
            .as_ref()
            .is_some_and(|d| *d != task.description)
        {
            what.push("description".to_string());
        }
        if let Some(p) = edit.priority.filter(|p| *p != task.priority) {
            what.push(format!("priority {} -> {p}", task.priority));
        }
        if let Some(r) = role.as_ref().filter(|r| **r != task.role) {
            let name = |r: &Option<String>| r.clone().unwrap_or_else(|| "any".into());
            what.push(format!("role {} -> {}", name(&task.role), name(r)));
        }
        if what.is_empty() {
            return Ok(task.clone());
        }
        // The ready queue is keyed by role and priority: take the task out under its
        // old key; the transition puts it back under the new one.
        let team = self.team_mut(ctx.team);
        if let Some(set) = team.ready.get_mut(&task_role(team, id)) {
            let priority = team.tasks.get(&id).map_or(0, |t| t.priority);
            set.remove(&(Reverse(priority), id));
        }
        self.transition(change(&ctx, id), |task| {
            if let Some(s) = subject {
                task.subject = s;
            }
            if let Some(d) = edit.description {
                task.description = d;
            }
            if let Some(p) = edit.priority {
                task.priority = p;
            }
            if let Some(r) = role {
                task.role = r;
            }
            Note::new(
                EventKind::TaskEdited,
                format!("edited #{id}: {}", what.join(", ")),
            )
        })
    }

    /// Removes a pending task that nothing waits for and no one ever claimed.
    /// Answers the task as it was.
    pub fn delete_task(&mut self, ctx: Ctx, id: TaskId) -> Result<Task> {
        require_lead(&ctx, "delete")?;
        let (team, task) = self.team_task(ctx.team, id)?;
        refuse_unless_free(task, "deleted")?;
        if task.attempts > 0 || task.worktree.is_some() {
            return Err(BoardError::state(format!(
                "task #{id} was worked on ({} attempt(s)); cancel it instead, which keeps its history and worktree",
                task.attempts
            )));
        }
        let mut waiting: Vec<TaskId> = team.dependents.get(&id).cloned().unwrap_or_default();
        waiting.sort_unstable();
        waiting.dedup();
        if !waiting.is_empty() {
            return Err(BoardError::state(format!(
                "{} {} for #{id}; delete or cancel {} first, or cancel #{id} instead",
                fmt_ids(&waiting),
                if waiting.len() == 1 { "waits" } else { "wait" },
                if waiting.len() == 1 { "it" } else { "them" },
            )));
        }
        let team = self.team_mut(ctx.team);
        let Some(task) = team.tasks.remove(&id) else {
            return Err(BoardError::no_task(id, ctx.team));
        };
        if let Some(set) = team.ready.get_mut(&task.role) {
            set.remove(&(Reverse(task.priority), id));
        }
        team.open_blockers.remove(&id);
        team.dependents.remove(&id);
        for b in &task.blocked_by {
            if let Some(d) = team.dependents.get_mut(b) {
                d.retain(|x| *x != id);
            }
        }
        self.dirty.tasks_deleted.insert((ctx.team.to_string(), id));
        self.emit_as(
            &ctx,
            EventKind::TaskDeleted,
            About::task(id, None),
            format!("deleted #{id} \"{}\"", task.subject),
        );
        Ok(task)
    }
}

fn task_role(team: &crate::team::Team, id: TaskId) -> Option<String> {
    team.tasks.get(&id).and_then(|t| t.role.clone())
}

/// Only a pending task that no one holds may change or go.
fn refuse_unless_free(task: &Task, done: &str) -> Result<()> {
    let id = task.id;
    match (task.status, &task.owner) {
        (TaskStatus::Pending, None) => Ok(()),
        (TaskStatus::Pending | TaskStatus::InProgress, Some(owner)) => Err(BoardError::state(
            format!("task #{id} is held by {owner}; only a task no one holds can be {done}"),
        )),
        (TaskStatus::Failed | TaskStatus::Cancelled, _) => Err(BoardError::state(format!(
            "task #{id} is {}; an ended task stays as it was (retry it to put it back to pending)",
            task.status
        ))),
        (status, _) => Err(BoardError::state(format!(
            "task #{id} is {status}; only a pending task can be {done}"
        ))),
    }
}
