//! Creating tasks and editing the dependency graph; cancel and retry.

use crate::About;
use crate::error::{BoardError, Result};
use crate::{Board, Ctx};
use teamboard_protocol::request::NewTask;
use teamboard_protocol::{
    ErrorCode, EventKind, LEAD, Task, TaskId, TaskStatus, TeamSummary, names::validate_name,
};

/// The longest subject accepted, in bytes. Subjects are one line on a terminal.
pub const MAX_SUBJECT_LEN: usize = 1024;

impl Board {
    /// Creates a task. Its blockers must exist; a new task cannot close a cycle
    /// because nothing depends on it yet.
    pub fn add_task(&mut self, ctx: Ctx, new: NewTask) -> Result<Task> {
        let subject = new.subject.trim().to_string();
        if subject.is_empty() {
            return Err(BoardError::invalid("a task needs a subject"));
        }
        if subject.len() > MAX_SUBJECT_LEN || subject.contains('\n') {
            return Err(BoardError::invalid(format!(
                "a subject is one line of at most {MAX_SUBJECT_LEN} bytes; put details in the description"
            )));
        }
        if new.description.len() > self.config.max_message_len {
            return Err(BoardError::invalid(format!(
                "the description is {} bytes; the limit is {}",
                new.description.len(),
                self.config.max_message_len
            )));
        }
        if let Some(role) = &new.role {
            validate_name(role).map_err(|e| BoardError::invalid(format!("role: {e}")))?;
        }
        let mut blocked_by = new.blocked_by.clone();
        blocked_by.sort_unstable();
        blocked_by.dedup();
        let team = self.team_mut(ctx.team);
        if let Some(missing) = blocked_by.iter().find(|b| !team.tasks.contains_key(b)) {
            return Err(BoardError::new(
                ErrorCode::NotFound,
                format!("blocker #{missing} does not exist in team '{}'", ctx.team),
            ));
        }
        let id = team.next_task_id;
        team.next_task_id += 1;
        let task = Task {
            id,
            subject,
            description: new.description,
            status: TaskStatus::Pending,
            owner: None,
            blocked_by: blocked_by.clone(),
            priority: new.priority,
            role: new.role,
            attempts: 0,
            result: None,
            last_error: None,
            epoch: 0,
            tokens: Default::default(),
            created_at: ctx.now.wall_ms,
            updated_at: ctx.now.wall_ms,
        };
        let open = team.open_blockers_of(&task).len();
        for b in &blocked_by {
            team.dependents.entry(*b).or_default().push(id);
        }
        team.open_blockers.insert(id, open);
        team.tasks.insert(id, task.clone());
        team.refresh_ready(id);
        if open == 0 {
            self.wake.insert(ctx.team.to_string());
        }
        self.mark_task(ctx.team, id);
        let detail = if blocked_by.is_empty() {
            format!("created #{id} \"{}\"", task.subject)
        } else {
            format!(
                "created #{id} \"{}\" blocked by {}",
                task.subject,
                fmt_ids(&blocked_by)
            )
        };
        self.emit(
            ctx.team,
            ctx.actor,
            ctx.now.wall_ms,
            EventKind::TaskCreated,
            About::task(id),
            detail,
        );
        Ok(task)
    }

    /// Makes `id` wait for each of `on`. Refuses edges that would close a cycle, and
    /// edges onto a task that is already claimed or finished.
    pub fn add_dependency(&mut self, ctx: Ctx, id: TaskId, on: &[TaskId]) -> Result<Task> {
        if on.is_empty() {
            return Err(BoardError::invalid("name at least one task to depend on"));
        }
        let (team, task) = self.team_task(ctx.team, id)?;
        if task.status != TaskStatus::Pending {
            return Err(BoardError::state(format!(
                "task #{id} is {}; only a pending task can get new dependencies",
                task.status.as_str()
            )));
        }
        let mut added = Vec::new();
        for &b in on {
            if !team.tasks.contains_key(&b) {
                return Err(BoardError::no_task(b, ctx.team));
            }
            if b == id || team.waits_for(b, id) {
                return Err(BoardError::new(
                    ErrorCode::Cycle,
                    format!(
                        "#{id} cannot wait for #{b}: #{b} already waits for #{id}, which would make a cycle"
                    ),
                ));
            }
            if !task.blocked_by.contains(&b) && !added.contains(&b) {
                added.push(b);
            }
        }
        let team = self.team_mut(ctx.team);
        let mut newly_open = 0;
        for &b in &added {
            if team
                .tasks
                .get(&b)
                .is_some_and(|t| t.status != TaskStatus::Completed)
            {
                newly_open += 1;
            }
            team.dependents.entry(b).or_default().push(id);
        }
        *team.open_blockers.entry(id).or_insert(0) += newly_open;
        let task = match team.tasks.get_mut(&id) {
            Some(t) => t,
            None => return Err(BoardError::no_task(id, ctx.team)),
        };
        task.blocked_by.extend(added.iter().copied());
        task.blocked_by.sort_unstable();
        task.updated_at = ctx.now.wall_ms;
        let task = task.clone();
        team.refresh_ready(id);
        self.mark_task(ctx.team, id);
        if !added.is_empty() {
            self.emit(
                ctx.team,
                ctx.actor,
                ctx.now.wall_ms,
                EventKind::DependencyAdded,
                About::task(id),
                format!("#{id} now waits for {}", fmt_ids(&added)),
            );
        }
        Ok(task)
    }

    /// Withdraws a task. A claim on it ends: its owner's next complete, fail or
    /// heartbeat is refused as stale.
    pub fn cancel_task(&mut self, ctx: Ctx, id: TaskId) -> Result<Task> {
        require_lead(&ctx, "cancel")?;
        let status = self.task(ctx.team, id)?.status;
        if matches!(status, TaskStatus::Completed | TaskStatus::Cancelled) {
            return Err(BoardError::state(format!(
                "task #{id} is already {}",
                status.as_str()
            )));
        }
        self.end_claim(ctx.team, id, ctx.now);
        let team = self.team_mut(ctx.team);
        let task = team.task_mut(id, ctx.team)?;
        task.status = TaskStatus::Cancelled;
        task.updated_at = ctx.now.wall_ms;
        let task = task.clone();
        team.refresh_ready(id);
        if status == TaskStatus::InProgress {
            // The owner is free again: a parked owner may now take another task.
            self.wake.insert(ctx.team.to_string());
        }
        self.mark_task(ctx.team, id);
        self.emit(
            ctx.team,
            ctx.actor,
            ctx.now.wall_ms,
            EventKind::TaskCancelled,
            About::task(id),
            format!("cancelled #{id} (was {})", status.as_str()),
        );
        Ok(task)
    }

    /// Puts a failed or cancelled task back to pending with its attempts reset.
    pub fn retry_task(&mut self, ctx: Ctx, id: TaskId) -> Result<Task> {
        require_lead(&ctx, "retry")?;
        let status = self.task(ctx.team, id)?.status;
        if !matches!(status, TaskStatus::Failed | TaskStatus::Cancelled) {
            return Err(BoardError::state(format!(
                "task #{id} is {}; only failed or cancelled tasks can be retried",
                status.as_str()
            )));
        }
        let team = self.team_mut(ctx.team);
        let task = team.task_mut(id, ctx.team)?;
        task.status = TaskStatus::Pending;
        task.owner = None;
        task.attempts = 0;
        task.updated_at = ctx.now.wall_ms;
        let task = task.clone();
        team.refresh_ready(id);
        if team.is_ready(&task) {
            self.wake.insert(ctx.team.to_string());
        }
        self.mark_task(ctx.team, id);
        self.emit(
            ctx.team,
            ctx.actor,
            ctx.now.wall_ms,
            EventKind::TaskRetried,
            About::task(id),
            format!("retried #{id} (was {})", status.as_str()),
        );
        Ok(task)
    }

    /// One task.
    pub fn task(&self, team: &str, id: TaskId) -> Result<&Task> {
        Ok(self.team_task(team, id)?.1)
    }

    /// A team's tasks by id, optionally of one status.
    pub fn tasks(&self, team: &str, status: Option<TaskStatus>) -> Vec<Task> {
        self.team(team)
            .map(|t| {
                t.tasks
                    .values()
                    .filter(|task| status.is_none_or(|s| task.status == s))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Whether a task is ready to be claimed now.
    pub fn is_ready(&self, team: &str, id: TaskId) -> bool {
        self.team(team)
            .and_then(|t| t.tasks.get(&id).map(|task| t.is_ready(task)))
            .unwrap_or(false)
    }

    /// Counts for `status`.
    pub fn summary(&self, team: &str) -> TeamSummary {
        let mut s = TeamSummary {
            name: team.to_string(),
            ..Default::default()
        };
        let Some(t) = self.team(team) else {
            return s;
        };
        for task in t.tasks.values() {
            match task.status {
                TaskStatus::Pending => s.pending += 1,
                TaskStatus::InProgress => s.in_progress += 1,
                TaskStatus::Completed => s.completed += 1,
                TaskStatus::Failed => s.failed += 1,
                TaskStatus::Cancelled => s.cancelled += 1,
            }
        }
        s.ready = t.ready_count() as u64;
        s.members = t.members.len() as u64;
        s.connected = t.members.values().filter(|m| m.session.is_some()).count() as u64;
        s.unread_messages = t.inboxes.values().map(|i| i.len() as u64).sum();
        s
    }
}

pub(crate) fn require_lead(ctx: &Ctx, what: &str) -> Result<()> {
    if ctx.actor == LEAD {
        Ok(())
    } else {
        Err(BoardError::new(
            ErrorCode::PermissionDenied,
            format!(
                "only the lead may {what} tasks; '{}' is a teammate",
                ctx.actor
            ),
        ))
    }
}

pub(crate) fn fmt_ids(ids: &[TaskId]) -> String {
    ids.iter()
        .map(|i| format!("#{i}"))
        .collect::<Vec<_>>()
        .join(", ")
}
