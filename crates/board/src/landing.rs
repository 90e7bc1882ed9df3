//! Completing a task that has a worktree: the gate (commit, update, checks) and
//! the merge queue, as board state.
//!
//! `begin_complete` turns the owner's `complete_task` into a gate job and marks
//! the task `landing: checking`. The repo worker reports back: `gate_passed`
//! queues the task (`landing: queued`), `gate_refused` hands it back to the owner
//! with the evidence. The queue reports `landed` (the task completes),
//! `land_blocked` (the person's checkout is in the way: `landing: blocked`, to be
//! looked at again) or `land_refused`. A conflict, at the gate or in the queue,
//! keeps the landing at `landing: conflict` and uses no attempt
//! ([`conflict_outlives`] says what becomes of it when the claim ends). A claim that ends while its task lands drops the landing
//! ([`Dropped`]), so that the actor can answer the owner's waiting request and
//! interrupt its checks. `docs/design/worktrees.md` tells the whole story.

use crate::claims::Abandon;
use crate::error::{BoardError, Result};
use crate::transition::{Change, Note};
use crate::{About, Board, Ctx, Now};
use teamboard_protocol::{
    CheckRun, ErrorCode, EventKind, Landing, LandingStage, Repo, Task, TaskId, TaskStatus, Worktree,
};

/// What `complete_task` turned into.
#[allow(
    clippy::large_enum_variant,
    reason = "one per completion; boxing the job would only add noise"
)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Completion {
    /// The task has no worktree and completed at once.
    Done(Task),
    /// The task lands through its gate and the merge queue; answer later.
    Gate(GateJob),
    /// The holder asked again (after a reconnect, say) while its task was
    /// already landing: answer this request when that landing ends.
    Landing,
    /// The holder asked again while its completion waits for review: answer
    /// now, with the task (see `review.rs`).
    Review(Task),
}

/// Commit the worktree, bring its branch up to date, run the checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GateJob {
    pub team: String,
    pub task: TaskId,
    pub epoch: u64,
    pub repo: Repo,
    pub worktree: Worktree,
    /// The team's checks, then the task's.
    pub checks: Vec<String>,
    /// The commit message: the task's subject, a blank line, the result.
    pub message: String,
    /// Who the commit is by: the owner.
    pub author: String,
    /// The owner's sandbox, which the checks run in; `None` when the owner
    /// registered none (an older teammated): the default one then.
    pub sandbox: Option<teamboard_protocol::Sandbox>,
}

/// Land a task whose checks passed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LandJob {
    pub team: String,
    pub task: TaskId,
    pub epoch: u64,
    pub repo: Repo,
    pub worktree: Worktree,
    /// The branch head that passed the checks.
    pub head: String,
    /// For a merge commit.
    pub message: String,
}

/// Why a gate refused a completion, with the evidence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GateRefusal {
    /// `check_failed`, `merge_conflict` or `git`.
    pub code: ErrorCode,
    /// For the owner and the history: the check, its exit code and the tail of
    /// its output, or the conflicting paths, or what git said.
    pub message: String,
    /// The checks that ran, the failing one last.
    pub runs: Vec<CheckRun>,
    /// A conflict with the target: the landing waits in `conflict`.
    pub conflict: Option<Conflict>,
}

/// Why the queue could not land a task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LandRefusal {
    pub code: ErrorCode,
    pub message: String,
    /// A conflict with the target: the landing waits in `conflict`. Boxed,
    /// like `blocked`: most refusals have neither.
    pub conflict: Option<Box<Conflict>>,
    /// Not a refusal: the person's checkout of the target is in the way, and
    /// the landing waits in `blocked` (`message` says why).
    pub blocked: Option<Box<Blocked>>,
}

/// The branch conflicts with the target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    pub paths: Vec<String>,
    /// The target commit it conflicts with.
    pub onto: String,
}

/// The target is checked out in a working tree whose changes are in the way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blocked {
    pub checkout: String,
    pub paths: Vec<String>,
}

impl GateRefusal {
    /// A refusal before any check ran.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        let message = message.into();
        GateRefusal {
            code,
            message,
            runs: Vec::new(),
            conflict: None,
        }
    }

    /// A conflict with the target, which the landing waits on.
    pub fn conflict(message: impl Into<String>, conflict: Conflict) -> Self {
        GateRefusal {
            conflict: Some(conflict),
            ..GateRefusal::new(ErrorCode::MergeConflict, message)
        }
    }
}

impl LandRefusal {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        let message = message.into();
        LandRefusal {
            code,
            message,
            conflict: None,
            blocked: None,
        }
    }

    /// A conflict with the target, which the landing waits on.
    pub fn conflict(message: impl Into<String>, conflict: Conflict) -> Self {
        LandRefusal {
            conflict: Some(Box::new(conflict)),
            ..LandRefusal::new(ErrorCode::MergeConflict, message)
        }
    }

    /// The person's checkout is in the way: the landing waits.
    pub fn blocked(message: impl Into<String>, blocked: Blocked) -> Self {
        LandRefusal {
            blocked: Some(Box::new(blocked)),
            ..LandRefusal::new(ErrorCode::Git, message)
        }
    }
}

/// A landing that ended with its claim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dropped {
    pub team: String,
    pub task: TaskId,
    pub epoch: u64,
    /// Why, for the owner.
    pub why: String,
}

/// The longest history detail a refusal writes; the full evidence is in the
/// task's `check_runs` and in the owner's answer.
const DETAIL_MAX: usize = 2048;

impl Board {
    /// The owner asks to complete. Without a worktree the task completes now;
    /// with one, it starts landing and the caller runs the returned gate.
    pub fn begin_complete(
        &mut self,
        ctx: Ctx,
        id: TaskId,
        epoch: u64,
        result: String,
    ) -> Result<Completion> {
        self.check_fence(&ctx, id, epoch)?;
        let task = self.task(ctx.team, id)?;
        if task.worktree.is_none() || self.repo(ctx.team).is_none() {
            return self
                .complete_task(ctx, id, epoch, result)
                .map(Completion::Done);
        }
        self.check_plan(ctx.team, id, epoch)?;
        // A conflict waits for this: the owner resolved it and completes again.
        if let Some(l) = task
            .landing
            .as_ref()
            .filter(|l| l.stage != LandingStage::Conflict)
        {
            // The fence passed, so this is the holder of the same claim.
            if l.stage == LandingStage::Review {
                return Ok(Completion::Review(task.clone()));
            }
            return Ok(Completion::Landing);
        }
        self.gate_for(ctx, id, epoch, result).map(Completion::Gate)
    }

    /// Starts the gate of `id`'s landing for its holder `ctx.actor`, whose
    /// fence and plan were checked.
    fn gate_for(&mut self, ctx: Ctx, id: TaskId, epoch: u64, result: String) -> Result<GateJob> {
        let task = self.task(ctx.team, id)?;
        let (Some(worktree), Some(repo)) = (task.worktree.clone(), self.repo(ctx.team).cloned())
        else {
            return Err(BoardError::state(format!("#{id} has no worktree to land")));
        };
        if result.len() > self.config.max_message_len {
            return Err(BoardError::invalid(format!(
                "the result is {} bytes; the limit is {}",
                result.len(),
                self.config.max_message_len
            )));
        }
        if worktree.base.is_none() {
            return Err(BoardError::state(format!(
                "the worktree of #{id} was never opened, so there is nothing to land; open it with open_worktree and work there"
            )));
        }
        let mut checks = repo.checks.clone();
        checks.extend(task.checks.iter().cloned());
        let message = commit_message(&task.subject, &result);
        let sandbox = self
            .team(ctx.team)
            .and_then(|t| t.members.get(ctx.actor))
            .and_then(|m| m.member.sandbox);
        let job = GateJob {
            team: ctx.team.to_string(),
            task: id,
            epoch,
            repo,
            worktree,
            checks,
            message,
            author: ctx.actor.to_string(),
            sandbox,
        };
        let ttl = self.config.lease_ttl;
        let team = self.team_mut(ctx.team);
        // A task sent back from review that its owner completes again before
        // a wait took it up: the owner took it up itself. Left marked, its
        // lease would stay waived through the checks and after them. As in
        // `take_returned`, the lease runs from now: the deadline set at the
        // send-back may have passed while the owner worked, lease waived.
        if team.returned.remove(&id).is_some()
            && let Some(lease) = team.leases.get_mut(&id)
        {
            lease.deadline = ctx.now.mono + ttl;
        }
        let task = team.task_mut(id, ctx.team)?;
        task.landing = Some(Landing {
            stage: LandingStage::Checking,
            result,
            head: None,
            since: ctx.now.wall_ms,
            queued_at: None,
            review_at: None,
            diff: None,
            paths: Vec::new(),
            checkout: None,
            onto: None,
        });
        task.updated_at = ctx.now.wall_ms;
        self.mark_task(ctx.team, id);
        Ok(job)
    }

    /// Refuses a second completion while one is on its way.
    pub(crate) fn check_not_landing(&self, team: &str, id: TaskId) -> Result<()> {
        match self.task(team, id)?.landing.as_ref().map(|l| l.stage) {
            None => Ok(()),
            Some(LandingStage::Checking) => Err(BoardError::state(format!(
                "#{id} is already completing: its checks are running; wait for the answer"
            ))),
            Some(LandingStage::Queued) => Err(BoardError::state(format!(
                "#{id} is already completing: it passed its checks and waits in the merge queue"
            ))),
            Some(LandingStage::Review) => Err(BoardError::state(format!(
                "#{id} is already completing: it passed its checks and waits for review"
            ))),
            Some(LandingStage::Blocked) => Err(BoardError::state(format!(
                "#{id} is already completing: it passed its checks and waits for the checkout of the target to be clean"
            ))),
            // Completing again is how a conflict ends; `begin_complete` takes it.
            Some(LandingStage::Conflict) => Ok(()),
        }
    }

    /// The landing of `id` with `epoch` at `stage`, or why the worker's report
    /// is stale (the claim ended meanwhile, and the landing with it).
    pub(crate) fn landing_at(
        &self,
        team: &str,
        id: TaskId,
        epoch: u64,
        stage: LandingStage,
    ) -> Result<&Landing> {
        let task = self.task(team, id)?;
        match &task.landing {
            Some(l)
                if l.stage == stage
                    && task.epoch == epoch
                    && task.status == TaskStatus::InProgress =>
            {
                Ok(l)
            }
            _ => Err(BoardError::new(
                ErrorCode::StaleEpoch,
                format!("#{id} is no longer landing with epoch {epoch}"),
            )),
        }
    }

    /// The gate passed: the task joins the merge queue. Answers the job to run.
    pub fn gate_passed(
        &mut self,
        team: &str,
        id: TaskId,
        epoch: u64,
        head: String,
        runs: Vec<CheckRun>,
        now: Now,
    ) -> Result<LandJob> {
        self.landing_at(team, id, epoch, LandingStage::Checking)?;
        let repo = self
            .repo(team)
            .cloned()
            .ok_or_else(|| BoardError::state(format!("team '{team}' has no repository")))?;
        let passed = runs.len();
        let t = self.team_mut(team);
        t.queued.insert(id);
        let task = t.task_mut(id, team)?;
        task.check_runs = runs;
        let Some(landing) = task.landing.as_mut() else {
            return Err(BoardError::state(format!("#{id} is not landing")));
        };
        landing.stage = LandingStage::Queued;
        landing.head = Some(head.clone());
        landing.queued_at = Some(now.wall_ms);
        task.updated_at = now.wall_ms;
        let job = LandJob {
            team: team.to_string(),
            task: id,
            epoch,
            repo,
            worktree: task.worktree.clone().unwrap_or_else(|| Worktree {
                path: String::new(),
                branch: String::new(),
                base: None,
                merged: None,
                landed_on: None,
                discard: false,
                pruned: false,
            }),
            head: head.clone(),
            message: commit_message(&task.subject, &landing.result),
        };
        let owner = task.owner.clone().unwrap_or_default();
        self.mark_task(team, id);
        self.emit(
            team,
            "boardd",
            now.wall_ms,
            EventKind::MergeQueued,
            About::task(id, Some(&owner)),
            format!(
                "#{id} passed {passed} check(s) at {}; queued to land",
                short(&head)
            ),
        );
        Ok(job)
    }

    /// The gate refused: the task stays with its owner, the evidence goes into
    /// its check runs and history.
    pub fn gate_refused(
        &mut self,
        team: &str,
        id: TaskId,
        epoch: u64,
        refusal: &GateRefusal,
        now: Now,
    ) -> Result<()> {
        self.landing_at(team, id, epoch, LandingStage::Checking)?;
        let task = self.team_mut(team).task_mut(id, team)?;
        if !refusal.runs.is_empty() {
            task.check_runs = refusal.runs.clone();
        }
        match &refusal.conflict {
            Some(c) => set_conflict(task, c),
            None => task.landing = None,
        }
        task.updated_at = now.wall_ms;
        let owner = task.owner.clone().unwrap_or_default();
        self.mark_task(team, id);
        let detail = teamboard_protocol::text::fit_bytes_with_mark(&refusal.message, DETAIL_MAX);
        self.emit_refusal(team, id, &owner, refusal.code, detail, now);
        Ok(())
    }

    /// The queue landed the task's work of claim `epoch`: it completes,
    /// whatever became of that claim meanwhile, because its work is on the
    /// target now.
    ///
    /// Trap: the task may have been cancelled, retried and claimed again while
    /// the job ran. The landing is then not the new holder's act: the history
    /// names boardd, and the holder's session is told (a [`Notice`]) that its
    /// claim ended, instead of being taken for the one that asked.
    pub fn landed(
        &mut self,
        team: &str,
        id: TaskId,
        epoch: u64,
        landed_on: String,
        merged: String,
        now: Now,
    ) -> Result<Task> {
        let t = self
            .team(team)
            .ok_or_else(|| BoardError::no_task(id, team))?;
        let task = t.task(id, team)?;
        if task.status == TaskStatus::Completed {
            return Ok(task.clone());
        }
        let branch = t
            .repo
            .as_ref()
            .map(|r| r.branch.clone())
            .unwrap_or_default();
        // The claim that landed is the live one: its holder gets its answer and
        // no notice, since it is waiting for this.
        let own = task.epoch == epoch && task.status == TaskStatus::InProgress;
        let holder = t.leases.get(&id).and_then(|l| l.session).filter(|_| own);
        let owner = match &task.owner {
            Some(owner) if own => owner.clone(),
            _ => "boardd".to_string(),
        };
        let current = task.owner.clone();
        let was = task.status;
        self.team_mut(team).queued.remove(&id);
        let at = Change {
            team,
            id,
            actor: &owner,
            session: holder,
            now,
        };
        self.transition(at, |task| {
            let result = task
                .landing
                .take()
                .map(|l| l.result)
                .unwrap_or_else(|| "landed by the merge queue".to_string());
            task.status = TaskStatus::Completed;
            task.result = Some(result);
            task.handoff = None;
            if let Some(w) = task.worktree.as_mut() {
                w.merged = Some(merged.clone());
                w.landed_on = Some(landed_on.clone());
            }
            let merged = short(&merged);
            if !own {
                let now_with = current
                    .as_deref()
                    .map(|c| format!(" by {c}"))
                    .unwrap_or_default();
                return Note::new(
                    EventKind::TaskCompleted,
                    format!(
                        "#{id} completed: the merge queue landed an earlier claim's work on \
                         {branch} as {merged} (it was {was}{now_with} meanwhile)"
                    ),
                )
                .about(current.clone().unwrap_or_default());
            }
            let note = if was == TaskStatus::InProgress {
                String::new()
            } else {
                format!(" (it was {was} meanwhile)")
            };
            Note::new(
                EventKind::TaskCompleted,
                format!("{owner} completed #{id}: landed on {branch} as {merged}{note}"),
            )
            .about(owner.clone())
        })
    }

    /// The queue could not land the task. If its owner waits for the answer
    /// (`owner_waits`), the task stays with it; otherwise it goes back to
    /// pending, uncounted, with the reason as its handoff note. The worktree
    /// is kept either way.
    pub fn land_refused(
        &mut self,
        team: &str,
        id: TaskId,
        epoch: u64,
        refusal: &LandRefusal,
        owner_waits: bool,
        now: Now,
    ) -> Result<()> {
        let ttl = self.config.lease_ttl;
        let t = self.team_mut(team);
        let task = t.task_mut(id, team)?;
        // Trap: a report about an earlier claim's landing (it ended while
        // queued, and the task was claimed and completed again since) would
        // otherwise end the new claim's landing, and the new claim with it.
        if task.epoch != epoch || task.status != TaskStatus::InProgress || task.landing.is_none() {
            return Ok(());
        }
        t.queued.remove(&id);
        let holder = t.leases.get(&id).and_then(|l| l.session);
        let task = t.task_mut(id, team)?;
        let waits = owner_waits && holder.is_some();
        match &refusal.conflict {
            // The owner resolves it and completes again; no attempt is used.
            Some(c) if waits => set_conflict(task, c),
            _ => task.landing = None,
        }
        task.updated_at = now.wall_ms;
        let owner = task.owner.clone().unwrap_or_default();
        let detail = teamboard_protocol::text::fit_bytes_with_mark(&refusal.message, DETAIL_MAX);
        self.mark_task(team, id);
        self.emit_refusal(team, id, &owner, refusal.code, detail.clone(), now);
        if waits {
            if let Some(lease) = self.team_mut(team).leases.get_mut(&id) {
                lease.deadline = now.mono + ttl;
            }
            return Ok(());
        }
        let at = Change {
            team,
            id,
            actor: "boardd",
            session: holder,
            now,
        };
        self.abandon(at, Abandon::LandRefused, Some(detail))?;
        Ok(())
    }

    /// The history's record of a refused completion: `merge_conflict` for a
    /// conflict, `checks_failed` for anything else.
    fn emit_refusal(
        &mut self,
        team: &str,
        id: TaskId,
        owner: &str,
        code: ErrorCode,
        detail: String,
        now: Now,
    ) {
        let kind = if code == ErrorCode::MergeConflict {
            EventKind::MergeConflict
        } else {
            EventKind::ChecksFailed
        };
        let about = About::task(id, Some(owner));
        self.emit(team, "boardd", now.wall_ms, kind, about, detail);
    }

    /// Landings dropped since the last call.
    pub fn take_dropped(&mut self) -> Vec<Dropped> {
        std::mem::take(&mut self.dropped)
    }

    /// The tasks waiting in merge queues, in the order they joined them: what a
    /// restarted boardd lands first.
    pub fn queued_jobs(&self) -> Vec<LandJob> {
        let mut jobs: Vec<(i64, LandJob)> = Vec::new();
        for (team, t) in &self.teams {
            for id in &t.queued {
                let Some(job) = self.land_job(team, *id) else {
                    continue;
                };
                let since = t.tasks.get(id).and_then(|task| task.landing.as_ref());
                let at = since.map(|l| l.queued_at.unwrap_or(l.since)).unwrap_or(0);
                jobs.push((at, job));
            }
        }
        jobs.sort_by(|a, b| (a.0, &a.1.team, a.1.task).cmp(&(b.0, &b.1.team, b.1.task)));
        jobs.into_iter().map(|(_, j)| j).collect()
    }

    /// The landings waiting in `blocked`, to try again (boardd rechecks them).
    pub fn blocked_jobs(&self) -> Vec<LandJob> {
        self.queued_jobs()
            .into_iter()
            .filter(|j| self.stage(&j.team, j.task) == Some(LandingStage::Blocked))
            .collect()
    }

    /// The stage of `id`'s landing, if it is landing.
    pub fn stage(&self, team: &str, id: TaskId) -> Option<LandingStage> {
        let task = self.team(team)?.tasks.get(&id)?;
        task.landing.as_ref().map(|l| l.stage)
    }

    /// The job that lands `id`, whose checks passed (`queued` or `blocked`).
    fn land_job(&self, team: &str, id: TaskId) -> Option<LandJob> {
        let t = self.team(team)?;
        let repo = t.repo.as_ref()?;
        let task = t.tasks.get(&id)?;
        let (landing, worktree) = (task.landing.as_ref()?, task.worktree.as_ref()?);
        Some(LandJob {
            team: team.to_string(),
            task: id,
            epoch: task.epoch,
            repo: repo.clone(),
            worktree: worktree.clone(),
            head: landing.head.clone()?,
            message: commit_message(&task.subject, &landing.result),
        })
    }

    /// The queue found the person's checkout of the target in the way: the
    /// landing waits in `blocked`, using no attempt, and the owner's request
    /// stays unanswered. Answers whether boardd is to look again (the landing
    /// is still this claim's).
    pub fn land_blocked(
        &mut self,
        team: &str,
        id: TaskId,
        epoch: u64,
        blocked: &Blocked,
        now: Now,
    ) -> Result<bool> {
        let t = self.team_mut(team);
        let task = t.task_mut(id, team)?;
        let live = task.epoch == epoch && task.status == TaskStatus::InProgress;
        let Some(l) = task.landing.as_mut().filter(|_| live) else {
            return Ok(false);
        };
        if !matches!(l.stage, LandingStage::Queued | LandingStage::Blocked) {
            return Ok(false);
        }
        let news = l.stage != LandingStage::Blocked
            || l.paths != blocked.paths
            || l.checkout.as_deref() != Some(blocked.checkout.as_str());
        if !news {
            return Ok(true);
        }
        l.stage = LandingStage::Blocked;
        l.paths = blocked.paths.clone();
        l.checkout = Some(blocked.checkout.clone());
        task.updated_at = now.wall_ms;
        let owner = task.owner.clone();
        self.mark_task(team, id);
        self.emit(
            team,
            "boardd",
            now.wall_ms,
            EventKind::LandingBlocked,
            About::task(id, owner.as_deref()),
            format!(
                "#{id} waits to land: {} has changes in the way ({}); it lands once they are committed or undone, or on `teamctl task retry {id}`",
                blocked.checkout,
                blocked.paths.join(", ")
            ),
        );
        Ok(true)
    }

    /// A person asks to try a waiting landing again (`retry_task`): a blocked
    /// one is looked at again now (the answer, for the caller to run); a
    /// conflict whose owner still holds the task is checked and landed again,
    /// as the owner's completion would be. `None`: nothing to run.
    pub(crate) fn retry_landing(&mut self, ctx: &Ctx, id: TaskId) -> Result<Option<Retried>> {
        let task = self.task(ctx.team, id)?;
        match task.landing.as_ref().map(|l| l.stage) {
            Some(LandingStage::Blocked) => Ok(self.land_job(ctx.team, id).map(Retried::Land)),
            Some(LandingStage::Conflict) if task.status == TaskStatus::InProgress => {
                let (epoch, owner) = (task.epoch, task.owner.clone().unwrap_or_default());
                let result = task
                    .landing
                    .as_ref()
                    .map(|l| l.result.clone())
                    .unwrap_or_default();
                let owner_ctx = Ctx {
                    actor: &owner,
                    ..*ctx
                };
                let job = self.gate_for(owner_ctx, id, epoch, result)?;
                Ok(Some(Retried::Gate(job)))
            }
            _ => Ok(None),
        }
    }

    /// After a restart: checks that were running died with the old daemon, so
    /// those landings end (the owner completes again); queued ones rejoin the
    /// queue, and those waiting for review go on waiting.
    pub(crate) fn restore_landings(&mut self, now: Now) {
        let mut interrupted = Vec::new();
        for (name, t) in self.teams.iter_mut() {
            for task in t.tasks.values_mut() {
                let Some(l) = &task.landing else { continue };
                let live = task.status == TaskStatus::InProgress;
                match l.stage {
                    LandingStage::Queued | LandingStage::Blocked if live => {
                        t.queued.insert(task.id);
                    }
                    // Nothing runs for a review: it waits for its person
                    // whatever became of boardd.
                    LandingStage::Review if live => {}
                    // It waits for a resolution, with its owner or without one.
                    LandingStage::Conflict => {}
                    _ => {
                        task.landing = None;
                        interrupted.push((name.clone(), task.id, task.owner.clone()));
                    }
                }
            }
        }
        for (team, id, owner) in interrupted {
            self.mark_task(&team, id);
            self.emit(
                &team,
                "boardd",
                now.wall_ms,
                EventKind::ChecksFailed,
                About::task(id, owner.as_deref()),
                format!("boardd restarted while the checks of #{id} ran; complete it again"),
            );
        }
    }

    /// Called by `transition` when a task leaves `in_progress` with a landing
    /// still on it: the landing ends with the claim.
    pub(crate) fn drop_landing(&mut self, team: &str, id: TaskId, epoch: u64, why: String) {
        if let Some(t) = self.teams.get_mut(team) {
            t.queued.remove(&id);
        }
        self.dropped.push(Dropped {
            team: team.to_string(),
            task: id,
            epoch,
            why,
        });
    }
}

/// What a person's retry of a waiting landing runs.
#[allow(
    clippy::large_enum_variant,
    reason = "one per retry; boxing would only add noise"
)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Retried {
    Land(LandJob),
    Gate(GateJob),
}

/// The landing waits in `conflict`, keeping the owner's result.
fn set_conflict(task: &mut Task, c: &Conflict) {
    if let Some(l) = task.landing.as_mut() {
        l.stage = LandingStage::Conflict;
        l.paths = c.paths.clone();
        l.onto = Some(c.onto.clone());
        l.head = None;
        l.queued_at = None;
        l.checkout = None;
    }
}

/// The claim on a task whose landing waits in `conflict` ends (`why`): the
/// conflict is no attempt's failure, so the attempt does not count, and the
/// next owner is told of it in the handoff note. An owner that gave the task
/// up could not resolve it, and another claim would meet the same conflict:
/// the task waits, pending but not ready, for a person (`teamctl task retry`).
/// An owner that is gone (its lease, its connection, a stop) leaves it ready
/// for the next owner. Answers whether the task was in conflict.
pub(crate) fn conflict_outlives(task: &mut Task, why: Abandon) -> bool {
    let Some(l) = task
        .landing
        .as_ref()
        .filter(|l| l.stage == LandingStage::Conflict)
    else {
        return false;
    };
    task.handoff = Some(conflict_note(task.id, l, task.worktree.as_ref()));
    if !matches!(
        why,
        Abandon::Failed | Abandon::ReleasedWithError | Abandon::Released | Abandon::ReleasedAside
    ) {
        task.landing = None;
    }
    true
}

/// The handoff note of a task whose landing met a conflict.
fn conflict_note(id: TaskId, l: &Landing, wt: Option<&Worktree>) -> String {
    let onto = l.onto.as_deref().map(short).unwrap_or("?");
    let (path, branch) = wt
        .map(|w| (w.path.as_str(), w.branch.as_str()))
        .unwrap_or(("?", "?"));
    format!(
        "#{id} conflicts with the target at {onto} in {}. Resolve it in the worktree {path} (branch {branch}): rebase or merge onto the target, fix the files, commit, then complete again",
        l.paths.join(", ")
    )
}

/// A task's commit message: its subject, then the owner's result.
pub fn commit_message(subject: &str, result: &str) -> String {
    let result = result.trim();
    if result.is_empty() {
        subject.to_string()
    } else {
        format!("{subject}\n\n{result}")
    }
}

/// A commit id as people read it.
pub fn short(oid: &str) -> &str {
    oid.get(..10).unwrap_or(oid)
}
