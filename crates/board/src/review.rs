//! Review before merge: a completion whose checks pass waits in
//! `landing: review` until a person merges it or sends it back.
//!
//! A task waits for review when the team's repository asks for it
//! (`Repo.review`) or the task itself does (`Task.review`). The gate runs as
//! for any completion; when it passes, [`Board::await_review`] stops there
//! instead of queueing the task: the branch head that passed is recorded with
//! the size of its change, and nothing lands. [`Board::merge_task`] moves it
//! on to the merge queue, where it lands like any other completion;
//! [`Board::send_back`] gives it back to its owner with the person's feedback.
//!
//! What the owner does meanwhile is the one real decision here. Its
//! `complete_task` is answered at once with the task in `landing: review`,
//! and the owner keeps the claim without working on it:
//! - the claim outlives the owner's lease and connection, like a queued
//!   task's, since a person may read for hours and the work is committed at
//!   the head that passed: a dead owner loses nothing, and `merge_task` needs
//!   no owner at all;
//! - the owner goes idle. It takes no other task meanwhile (a teammate holds
//!   one task at a time), so that the feedback finds it free and with the
//!   task's context;
//! - `send_back` to an owner that is connected keeps the claim (same epoch)
//!   and hands the task back through the owner's next `wait_for_work`, as a
//!   `task` with the feedback as its handoff note: the owner's runtime takes
//!   it up like any claim, and its next `complete_task` runs the gate, and
//!   the review, again. To an owner that is gone, `send_back` gives the task
//!   back to pending, uncounted, with the feedback as its handoff note, for
//!   whoever claims it next.
//!
//! Alternatives that lost:
//! - *Holding the owner's `complete_task` until the review ends*, as the merge
//!   queue does: a request open for hours, lost with any reconnect, and a
//!   teammate that can do nothing else, not even answer a message.
//! - *Ending the claim at once, the task pending but not ready*: the owner
//!   could take other work, but the feedback would then go to whoever is
//!   free, without the context of the work, and a task nobody holds would need
//!   a state of its own that every claim path would have to respect.

use crate::claims::Abandon;
use crate::error::{BoardError, Result};
use crate::landing::{LandJob, commit_message, short};
use crate::tasks::require_lead;
use crate::transition::Change;
use crate::{About, Board, Ctx, Now};
use teamboard_protocol::{CheckRun, DiffStat, EventKind, LandingStage, Task, TaskId, TaskStatus};

/// The longest feedback accepted, in bytes: it becomes the task's handoff note.
pub const MAX_FEEDBACK_LEN: usize = 64 * 1024;

impl Board {
    /// Whether a completion of `id` whose checks pass waits for a person.
    pub fn needs_review(&self, team: &str, id: TaskId) -> bool {
        let Some(t) = self.team(team) else {
            return false;
        };
        t.repo.as_ref().is_some_and(|r| r.review) || t.tasks.get(&id).is_some_and(|t| t.review)
    }

    /// The gate passed and the task waits for review: nothing lands until a
    /// person merges it. Answers the task, for its owner's waiting
    /// `complete_task`.
    #[allow(
        clippy::too_many_arguments,
        reason = "the gate's report, field by field, as gate_passed takes it"
    )]
    pub fn await_review(
        &mut self,
        team: &str,
        id: TaskId,
        epoch: u64,
        head: String,
        diff: DiffStat,
        runs: Vec<CheckRun>,
        now: Now,
    ) -> Result<Task> {
        self.landing_at(team, id, epoch, LandingStage::Checking)?;
        let passed = runs.len();
        let task = self.team_mut(team).task_mut(id, team)?;
        task.check_runs = runs;
        let Some(landing) = task.landing.as_mut() else {
            return Err(BoardError::state(format!("#{id} is not landing")));
        };
        landing.stage = LandingStage::Review;
        landing.head = Some(head.clone());
        landing.review_at = Some(now.wall_ms);
        landing.diff = Some(diff);
        task.updated_at = now.wall_ms;
        let owner = task.owner.clone().unwrap_or_default();
        let task = task.clone();
        self.mark_task(team, id);
        self.emit(
            team,
            "boardd",
            now.wall_ms,
            EventKind::ReviewRequested,
            About::task(id, Some(&owner)),
            format!(
                "#{id} passed {passed} check(s) at {}; waits for review ({} file(s), +{} -{})",
                short(&head),
                diff.files,
                diff.added,
                diff.removed
            ),
        );
        Ok(task)
    }

    /// The task `id` of a review op: it exists and waits for review.
    fn waiting_review(&self, ctx: &Ctx, id: TaskId, what: &str) -> Result<&Task> {
        require_lead(ctx, what)?;
        let task = self.task(ctx.team, id)?;
        let stage = task.landing.as_ref().map(|l| l.stage);
        let why: String = match stage {
            Some(LandingStage::Review) => return Ok(task),
            Some(LandingStage::Checking) => "its completion is still running its checks".into(),
            Some(LandingStage::Queued) => "its completion is already in the merge queue".into(),
            Some(LandingStage::Blocked) => {
                "it was merged and waits for the checkout of the target to be clean".into()
            }
            Some(LandingStage::Conflict) => {
                "its branch conflicts with the target and waits for a resolution".into()
            }
            None if task.status == TaskStatus::InProgress => {
                "it is in progress and its owner has not completed it".into()
            }
            None => format!("it is {}", task.status),
        };
        Err(BoardError::state(format!(
            "#{id} is not waiting for review: {why}"
        )))
    }

    /// A person approves the change: the task joins the merge queue and lands
    /// like any passed completion. Answers the job to run.
    pub fn merge_task(&mut self, ctx: Ctx, id: TaskId) -> Result<LandJob> {
        let task = self.waiting_review(&ctx, id, "merge")?;
        let (Some(landing), Some(worktree)) = (task.landing.clone(), task.worktree.clone()) else {
            return Err(BoardError::state(format!("#{id} has no worktree to land")));
        };
        let Some(head) = landing.head.clone() else {
            return Err(BoardError::state(format!(
                "#{id} has no head that passed its checks"
            )));
        };
        let repo = self
            .repo(ctx.team)
            .cloned()
            .ok_or_else(|| BoardError::state(format!("team '{}' has no repository", ctx.team)))?;
        let job = LandJob {
            team: ctx.team.to_string(),
            task: id,
            epoch: task.epoch,
            repo,
            worktree,
            head: head.clone(),
            message: commit_message(&task.subject, &landing.result),
        };
        let owner = task.owner.clone().unwrap_or_default();
        let t = self.team_mut(ctx.team);
        t.queued.insert(id);
        let task = t.task_mut(id, ctx.team)?;
        if let Some(l) = task.landing.as_mut() {
            l.stage = LandingStage::Queued;
            l.queued_at = Some(ctx.now.wall_ms);
        }
        task.updated_at = ctx.now.wall_ms;
        self.mark_task(ctx.team, id);
        let detail = format!(
            "{} merged #{id} at {} after review; queued to land",
            ctx.actor,
            short(&head)
        );
        self.emit_as(
            &ctx,
            EventKind::MergeQueued,
            About::task(id, Some(&owner)),
            detail,
        );
        Ok(job)
    }

    /// A person returns the change to its owner with `feedback`. The owner
    /// keeps the claim and the worktree if it is connected, and takes the task
    /// up again at its next wait; otherwise the task goes back to pending,
    /// uncounted, for the next owner. Either way `feedback` is the task's
    /// handoff note and in its history.
    pub fn send_back(&mut self, ctx: Ctx, id: TaskId, feedback: &str) -> Result<Task> {
        let feedback = feedback.trim();
        if feedback.is_empty() {
            return Err(BoardError::invalid(
                "feedback is empty: say what the owner should change",
            ));
        }
        if feedback.len() > MAX_FEEDBACK_LEN {
            return Err(BoardError::invalid(format!(
                "the feedback is {} bytes; the limit is {MAX_FEEDBACK_LEN}",
                feedback.len()
            )));
        }
        let task = self.waiting_review(&ctx, id, "send back")?;
        let (epoch, owner) = (task.epoch, task.owner.clone().unwrap_or_default());
        let t = self.team_mut(ctx.team);
        // An owner on its way out (an approved shutdown) takes no task back.
        let connected = t
            .members
            .get(&owner)
            .filter(|m| m.member.status != teamboard_protocol::MemberStatus::Shutdown)
            .and_then(|m| m.session);
        let task = t.task_mut(id, ctx.team)?;
        task.landing = None;
        task.handoff = Some(format!("Sent back by review ({}): {feedback}", ctx.actor));
        task.updated_at = ctx.now.wall_ms;
        self.mark_task(ctx.team, id);
        let detail = format!("{} sent #{id} back to {owner}: {feedback}", ctx.actor);
        self.emit_as(
            &ctx,
            EventKind::SentBack,
            About::task(id, Some(&owner)),
            detail,
        );
        let Some(session) = connected else {
            let at = Change {
                team: ctx.team,
                id,
                actor: ctx.actor,
                session: Some(ctx.session),
                now: ctx.now,
            };
            let why = format!("sent back by review: {feedback}");
            return self.abandon(at, Abandon::SentBack, Some(why));
        };
        let ttl = self.config.lease_ttl;
        let t = self.team_mut(ctx.team);
        t.returned.insert(id, epoch);
        if let Some(lease) = t.leases.get_mut(&id) {
            lease.session = Some(session);
            lease.deadline = ctx.now.mono + ttl;
        }
        // The owner's parked wait takes it up in this batch's dispatch.
        self.wake.insert(ctx.team.to_string());
        Ok(self.task(ctx.team, id)?.clone())
    }

    /// A task sent back to `name` that it has yet to take up again, as the
    /// claim to hand it: its lease runs from now.
    pub(crate) fn take_returned(
        &mut self,
        team: &str,
        name: &str,
        now: Now,
    ) -> Option<teamboard_protocol::Claim> {
        let ttl = self.config.lease_ttl;
        let t = self.teams.get_mut(team)?;
        let id = t.members.get(name)?.member.task?;
        let epoch = t.returned.remove(&id)?;
        let task = t.tasks.get(&id)?;
        let current = task.status == TaskStatus::InProgress
            && task.epoch == epoch
            && task.owner.as_deref() == Some(name)
            && task.landing.is_none();
        if !current {
            return None;
        }
        let task = task.clone();
        if let Some(lease) = t.leases.get_mut(&id) {
            lease.deadline = now.mono + ttl;
        }
        Some(teamboard_protocol::Claim { task, epoch })
    }
}
