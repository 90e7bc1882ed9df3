//! Creating tasks and editing the dependency graph; cancel and retry.

use crate::error::{BoardError, Result};
use crate::transition::{Change, Note};
use crate::{Board, Ctx, Retried};
use teamboard_protocol::request::NewTask;
use teamboard_protocol::{
    ErrorCode, EventKind, LEAD, LandingStage, Task, TaskId, TaskStatus, TeamSummary,
    names::validate_name,
};

/// The longest subject accepted, in bytes. Subjects are one line on a terminal.
pub const MAX_SUBJECT_LEN: usize = 1024;

impl Board {
    /// Creates a task. Its blockers must exist; a new task cannot close a cycle
    /// because nothing depends on it yet.
    pub fn add_task(&mut self, ctx: Ctx, new: NewTask) -> Result<Task> {
        let subject = check_subject(&new.subject)?;
        self.check_description(&new.description)?;
        if let Some(role) = &new.role {
            check_role(role)?;
        }
        check_checks(&new.checks)?;
        if new.review && new.no_worktree {
            return Err(BoardError::invalid(
                "a task with no_worktree completes at once, with nothing to review; drop one of them",
            ));
        }
        let (checks, proposed_checks) = crate::checks::split(&ctx, new.checks);
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
            blocked_by,
            priority: new.priority,
            role: new.role,
            attempts: 0,
            result: None,
            last_error: None,
            epoch: 0,
            tokens: Default::default(),
            cost: Default::default(),
            created_at: ctx.now.wall_ms,
            updated_at: ctx.now.wall_ms,
            ready: false,
            require_plan: new.require_plan,
            handoff: None,
            no_worktree: new.no_worktree,
            worktree: None,
            checks,
            proposed_checks,
            check_runs: Vec::new(),
            landing: None,
            review: new.review,
        };
        let open = team.open_blockers_of(&task).len();
        for b in &task.blocked_by {
            team.dependents.entry(*b).or_default().push(id);
        }
        team.open_blockers.insert(id, open);
        team.tasks.insert(id, task);
        self.transition(change(&ctx, id), |task| {
            let detail = if task.blocked_by.is_empty() {
                format!("created #{id} \"{}\"", task.subject)
            } else {
                format!(
                    "created #{id} \"{}\" blocked by {}",
                    task.subject,
                    fmt_ids(&task.blocked_by)
                )
            };
            let detail = match task.proposed_checks.len() {
                0 => detail,
                n => format!("{detail}, with {n} check(s) proposed for the lead to accept"),
            };
            Note::new(EventKind::TaskCreated, detail)
        })
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
                task.status
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
        if added.is_empty() {
            // Every edge is there already: nothing changes, nothing is recorded.
            return Ok(task.clone());
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
        self.transition(change(&ctx, id), |task| {
            task.blocked_by.extend(added.iter().copied());
            task.blocked_by.sort_unstable();
            Note::new(
                EventKind::DependencyAdded,
                format!("#{id} now waits for {}", fmt_ids(&added)),
            )
        })
    }

    /// Withdraws a task. A claim on it ends: its owner's next complete, fail or
    /// heartbeat is refused as stale, and its session is told at once.
    pub fn cancel_task(&mut self, ctx: Ctx, id: TaskId) -> Result<Task> {
        self.cancel_task_with(ctx, id, false)
    }

    /// [`Board::cancel_task`]; with `discard`, the task's unmerged work in its
    /// worktree may be pruned.
    pub fn cancel_task_with(&mut self, ctx: Ctx, id: TaskId, discard: bool) -> Result<Task> {
        require_lead(&ctx, "cancel")?;
        let task = self.task(ctx.team, id)?;
        let status = task.status;
        let undiscarded = task.worktree.as_ref().is_some_and(|w| !w.discard);
        if status == TaskStatus::Cancelled && discard && undiscarded {
            // Cancelled earlier with its work kept; the lead now lets it go.
            return self.transition(change(&ctx, id), |task| {
                if let Some(w) = task.worktree.as_mut() {
                    w.discard = true;
                }
                Note::new(
                    EventKind::TaskCancelled,
                    format!("#{id} stays cancelled; its worktree may be pruned"),
                )
            });
        }
        if matches!(status, TaskStatus::Completed | TaskStatus::Cancelled) {
            return Err(BoardError::state(format!(
                "task #{id} is already {}",
                status
            )));
        }
        self.transition(change(&ctx, id), |task| {
            if task.status == TaskStatus::InProgress {
                task.owner = None;
            }
            task.status = TaskStatus::Cancelled;
            let mut detail = format!("cancelled #{id} (was {status})");
            if let Some(w) = task.worktree.as_mut().filter(|_| discard) {
                w.discard = true;
                detail.push_str("; its worktree may be pruned");
            }
            Note::new(EventKind::TaskCancelled, detail)
        })
    }

    /// Puts a failed or cancelled task back to pending with its attempts reset.
    pub fn retry_task(&mut self, ctx: Ctx, id: TaskId) -> Result<Task> {
        self.retry_task_with(ctx, id).map(|(task, _)| task)
    }

    /// [`Board::retry_task`], which also tries a waiting landing again: a
    /// `blocked` one is looked at again, a `conflict` one that a person
    /// resolved is checked and landed (its owner still holds it) or made
    /// ready for the next owner (none does). The caller runs the job.
    pub fn retry_task_with(&mut self, ctx: Ctx, id: TaskId) -> Result<(Task, Option<Retried>)> {
        require_lead(&ctx, "retry")?;
        let task = self.task(ctx.team, id)?;
        let status = task.status;
        let stage = task.landing.as_ref().map(|l| l.stage);
        if status == TaskStatus::Pending && stage == Some(LandingStage::Conflict) {
            let task = self.transition(change(&ctx, id), |task| {
                task.landing = None;
                Note::new(
                    EventKind::TaskRetried,
                    format!("retried #{id} (its landing conflict was left to a person); ready for the next owner"),
                )
            })?;
            return Ok((task, None));
        }
        if status == TaskStatus::InProgress
            && let Some(job) = self.retry_landing(&ctx, id)?
        {
            return Ok((self.task(ctx.team, id)?.clone(), Some(job)));
        }
        if !matches!(status, TaskStatus::Failed | TaskStatus::Cancelled) {
            return Err(BoardError::state(format!(
                "task #{id} is {}; only failed or cancelled tasks can be retried",
                status
            )));
        }
        let task = self.transition(change(&ctx, id), |task| {
            task.status = TaskStatus::Pending;
            task.owner = None;
            task.attempts = 0;
            // Its work is wanted again: no longer for prune to take.
            if let Some(w) = task.worktree.as_mut() {
                w.discard = false;
            }
            Note::new(
                EventKind::TaskRetried,
                format!("retried #{id} (was {status})"),
            )
        })?;
        Ok((task, None))
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

/// A subject as stored: trimmed, one line, not empty, within the limit.
pub(crate) fn check_subject(subject: &str) -> Result<String> {
    let subject = subject.trim();
    if subject.is_empty() {
        return Err(BoardError::invalid("a task needs a subject"));
    }
    if subject.len() > MAX_SUBJECT_LEN || subject.contains('\n') {
        return Err(BoardError::invalid(format!(
            "a subject is one line of at most {MAX_SUBJECT_LEN} bytes; put details in the description"
        )));
    }
    Ok(subject.to_string())
}

pub(crate) fn check_role(role: &str) -> Result<()> {
    validate_name(role).map_err(|e| BoardError::invalid(format!("role: {e}")))
}

impl Board {
    /// A description fits in a message: it is what the claimant reads.
    pub(crate) fn check_description(&self, description: &str) -> Result<()> {
        if description.len() > self.config.max_message_len {
            return Err(BoardError::invalid(format!(
                "the description is {} bytes; the limit is {}",
                description.len(),
                self.config.max_message_len
            )));
        }
        Ok(())
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

/// The most checks a task may carry, and the longest one, in bytes.
pub const MAX_CHECKS: usize = 32;
pub const MAX_CHECK_LEN: usize = 4096;

/// Refuses checks that are empty, too long or too many.
pub fn check_checks(checks: &[String]) -> Result<()> {
    if checks.len() > MAX_CHECKS {
        return Err(BoardError::invalid(format!(
            "a task has at most {MAX_CHECKS} checks"
        )));
    }
    for c in checks {
        if c.trim().is_empty() {
            return Err(BoardError::invalid(
                "a check is a shell command; this one is empty",
            ));
        }
        if c.len() > MAX_CHECK_LEN || c.contains('\0') {
            return Err(BoardError::invalid(format!(
                "a check is one shell command of at most {MAX_CHECK_LEN} bytes; put a long one in a script"
            )));
        }
    }
    Ok(())
}

pub(crate) fn fmt_ids(ids: &[TaskId]) -> String {
    ids.iter()
        .map(|i| format!("#{i}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A change made by a request.
pub(crate) fn change<'a>(ctx: &Ctx<'a>, id: TaskId) -> Change<'a> {
    Change {
        team: ctx.team,
        id,
        actor: ctx.actor,
        session: Some(ctx.session),
        now: ctx.now,
    }
}
