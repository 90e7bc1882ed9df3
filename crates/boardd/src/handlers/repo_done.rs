//! Applying what a repository worker reports to the board, and deciding who
//! hears of it.
//!
//! Like a request handler, this returns what is to be done ([`Effect`]s) and
//! leaves the doing to the actor. The one piece of state it keeps across
//! reports is [`Held`]: the owner's `complete_task` while its task waits in the
//! merge queue, which is answered when the task lands or cannot.

use crate::reply::Reply;
use crate::repo::{Done, Job, Slot};
use std::collections::HashMap;
use teamboard_board::{Board, BoardError, Ctx, Dropped, LandRefusal, Now, SessionId};
use teamboard_protocol::{ErrorBody, ErrorCode, OpenedWorktree, TaskId};

/// What the actor is to do after a report.
#[derive(Debug)]
pub enum Effect {
    /// Answer a request.
    Reply(Slot, Result<Reply, ErrorBody>),
    /// Run another job (a queued task's landing).
    Submit(Box<Job>),
    /// A landing waits in `blocked`: look at it again soon.
    Recheck,
}

/// The owners' `complete_task`s waiting for their tasks to land, by team, task
/// and the claim's epoch: a report about an earlier claim's landing never
/// answers a later one's request.
#[derive(Debug, Default)]
pub struct Held(HashMap<(String, TaskId, u64), Slot>);

impl Held {
    /// Holds the owner's `complete_task` until its task's landing ends. A newer
    /// request of the same claim replaces an older one, whose connection is gone
    /// (a client repeats a request only after a reconnect).
    pub fn hold(&mut self, slot: Slot, task: TaskId, epoch: u64) -> Option<Effect> {
        let key = (slot.team.clone(), task, epoch);
        let old = self.0.insert(key, slot)?;
        let error = ErrorBody::new(
            ErrorCode::InvalidState,
            format!("#{task} was completed again by a newer request; that one gets the answer"),
        );
        Some(Effect::Reply(old, Err(error)))
    }

    /// A landing ended with its claim: the owner's waiting request is answered
    /// with why.
    pub fn dropped(&mut self, d: &Dropped) -> Option<Effect> {
        let slot = self.0.remove(&(d.team.clone(), d.task, d.epoch))?;
        let error = ErrorBody::new(ErrorCode::StaleEpoch, d.why.clone());
        Some(Effect::Reply(slot, Err(error)))
    }
}

fn ctx<'a>(slot: &'a Slot, now: Now) -> Ctx<'a> {
    Ctx {
        team: &slot.team,
        actor: &slot.actor,
        session: slot.session,
        now,
    }
}

fn answer<T, E: Into<ErrorBody>>(
    slot: Slot,
    r: Result<T, E>,
    f: impl FnOnce(T) -> Reply,
) -> Vec<Effect> {
    vec![Effect::Reply(slot, r.map(f).map_err(Into::into))]
}

/// Applies `done` to the board. `alive` says whether a session is still open.
pub fn apply(
    board: &mut Board,
    held: &mut Held,
    done: Done,
    alive: &dyn Fn(SessionId) -> bool,
    now: Now,
) -> Vec<Effect> {
    match done {
        Done::SetRepo { slot, result } => {
            let r = result.and_then(|repo| Ok(board.set_repo(ctx(&slot, now), repo)?));
            answer(slot, r, Reply::from)
        }
        Done::Opened { slot, job, result } => {
            let opened = result.and_then(|o| {
                let (task, epoch, at) = (job.task, job.epoch, ctx(&slot, now));
                let task = board.worktree_opened(at, task, epoch, &o.base, o.fresh, &o.found)?;
                let worktree = task
                    .worktree
                    .ok_or_else(|| BoardError::state(format!("#{} lost its worktree", job.task)))?;
                Ok(OpenedWorktree {
                    task: job.task,
                    worktree,
                    repo: job.repo.path.clone(),
                    target: job.repo.branch.clone(),
                    fresh: o.fresh,
                    found: o.found,
                })
            });
            answer(slot, opened, Reply::from)
        }
        Done::Gated { job, result } => {
            let key = (job.team.clone(), job.task, job.epoch);
            // A report about a landing that ended meanwhile changes nothing: its
            // owner was answered when it ended (`Held::dropped`).
            let reply = match result {
                Ok(passed) if board.needs_review(&job.team, job.task) => board
                    .await_review(
                        &job.team,
                        job.task,
                        job.epoch,
                        passed.head,
                        passed.diff,
                        passed.runs,
                        now,
                    )
                    .map(|task| Reply::Task(Box::new(task)))
                    .map_err(|e| stale(job.task, e)),
                Ok(passed) => match board.gate_passed(
                    &job.team,
                    job.task,
                    job.epoch,
                    passed.head,
                    passed.runs,
                    now,
                ) {
                    Ok(land) => return vec![Effect::Submit(Box::new(Job::Land { job: land }))],
                    Err(e) => Err(stale(job.task, e)),
                },
                Err(refusal) => {
                    match board.gate_refused(&job.team, job.task, job.epoch, &refusal, now) {
                        Ok(()) => Err(ErrorBody::new(refusal.code, refusal.message)),
                        Err(e) => Err(stale(job.task, e)),
                    }
                }
            };
            held.0
                .remove(&key)
                .map(|slot| Effect::Reply(slot, reply))
                .into_iter()
                .collect()
        }
        Done::Landed { job, result } => {
            let key = (job.team.clone(), job.task, job.epoch);
            if let Err(LandRefusal {
                blocked: Some(b), ..
            }) = &result
            {
                // Not an answer to the owner, whose request waits on with the
                // task. A person's `merge_task` is answered now, with the task
                // naming what blocks it: the person is who must clean up, and
                // the landing goes on without anyone waiting.
                let mut effects = match board.land_blocked(&job.team, job.task, job.epoch, b, now) {
                    Ok(true) => vec![Effect::Recheck],
                    Ok(false) => Vec::new(),
                    Err(e) => {
                        tracing::warn!(task = job.task, error = %e, "cannot record a blocked landing");
                        Vec::new()
                    }
                };
                let owner = board.task(&job.team, job.task).ok();
                let owner = owner.as_ref().and_then(|t| t.owner.clone());
                let persons = held
                    .0
                    .get(&key)
                    .is_some_and(|s| owner.as_deref() != Some(s.actor.as_str()));
                if persons && let Some(slot) = held.0.remove(&key) {
                    let task = board.task(&job.team, job.task).cloned();
                    let reply = task
                        .map(|t| Reply::Task(Box::new(t)))
                        .map_err(ErrorBody::from);
                    effects.push(Effect::Reply(slot, reply));
                }
                return effects;
            }
            let slot = held.0.remove(&key);
            let reply = match result {
                Ok(l) => board
                    .landed(&job.team, job.task, job.epoch, l.old, l.new, now)
                    .map(Reply::from)
                    .map_err(ErrorBody::from),
                Err(refusal) => {
                    // Only the owner's own request keeps the task with it: a
                    // person's `merge_task` of a reviewed task is answered, and
                    // the idle owner is not handed back a claim it forgot.
                    let owner = board.task(&job.team, job.task).ok();
                    let owner = owner.and_then(|t| t.owner.as_deref());
                    let waits = slot
                        .as_ref()
                        .is_some_and(|s| alive(s.session) && owner == Some(s.actor.as_str()));
                    if let Err(e) =
                        board.land_refused(&job.team, job.task, job.epoch, &refusal, waits, now)
                    {
                        tracing::warn!(task = job.task, error = %e, "cannot record a refused landing");
                    }
                    Err(ErrorBody::new(refusal.code, refusal.message))
                }
            };
            match slot {
                Some(slot) => vec![Effect::Reply(slot, reply)],
                None => {
                    if let Err(e) = reply {
                        tracing::info!(task = job.task, error = %e, "a landing without a waiting owner ended");
                    }
                    Vec::new()
                }
            }
        }
        Done::Listed { slot, result } => {
            vec![Effect::Reply(slot, result.map(Reply::Worktrees))]
        }
        Done::Pruned {
            slot,
            dry_run,
            result,
        } => {
            let recorded = result.and_then(|pruned| {
                if !dry_run {
                    board.worktrees_pruned(ctx(&slot, now), &pruned.removed)?;
                }
                Ok(pruned)
            });
            answer(slot, recorded, Reply::from)
        }
    }
}

/// A report about a landing that ended meanwhile: the owner hears that its
/// claim moved on.
fn stale(task: TaskId, e: BoardError) -> ErrorBody {
    if e.code == ErrorCode::StaleEpoch {
        ErrorBody::new(
            ErrorCode::StaleEpoch,
            format!("the claim on #{task} ended while it was being checked; {e}"),
        )
    } else {
        e.into()
    }
}
