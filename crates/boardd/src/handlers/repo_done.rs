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
use teamboard_board::{Board, BoardError, Ctx, Dropped, Now, SessionId};
use teamboard_protocol::{ErrorBody, ErrorCode, OpenedWorktree, TaskId};

/// What the actor is to do after a report.
#[derive(Debug)]
pub enum Effect {
    /// Answer a request.
    Reply(Slot, Result<Reply, ErrorBody>),
    /// Run another job (a queued task's landing).
    Submit(Box<Job>),
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

fn answer<T>(slot: Slot, r: Result<T, BoardError>, f: impl FnOnce(T) -> Reply) -> Vec<Effect> {
    vec![Effect::Reply(slot, r.map(f).map_err(ErrorBody::from))]
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
        Done::SetRepo { slot, result } => match result {
            Ok(repo) => {
                let r = board.set_repo(ctx(&slot, now), repo);
                answer(slot, r, |r| Reply::Repo(Box::new(r)))
            }
            Err(e) => vec![Effect::Reply(slot, Err(e))],
        },
        Done::Opened { slot, job, result } => match result {
            Ok(o) => {
                let r = board.worktree_opened(
                    ctx(&slot, now),
                    job.task,
                    job.epoch,
                    &o.base,
                    o.fresh,
                    &o.found,
                );
                let opened = r.and_then(|task| {
                    let worktree = task.worktree.ok_or_else(|| {
                        BoardError::state(format!("#{} lost its worktree", job.task))
                    })?;
                    Ok(OpenedWorktree {
                        task: job.task,
                        worktree,
                        repo: job.repo.path.clone(),
                        target: job.repo.branch.clone(),
                        fresh: o.fresh,
                        found: o.found,
                    })
                });
                answer(slot, opened, |o| Reply::Opened(Box::new(o)))
            }
            Err(e) => vec![Effect::Reply(slot, Err(e))],
        },
        Done::Gated { job, result } => {
            let key = (job.team.clone(), job.task, job.epoch);
            // A report about a landing that ended meanwhile changes nothing: its
            // owner was answered when it ended (`Held::dropped`).
            let reply = match result {
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
            let slot = held.0.remove(&(job.team.clone(), job.task, job.epoch));
            let reply = match result {
                Ok(l) => board
                    .landed(&job.team, job.task, l.old, l.new, now)
                    .map(|t| Reply::Task(Box::new(t)))
                    .map_err(ErrorBody::from),
                Err(refusal) => {
                    let waits = slot.as_ref().is_some_and(|s| alive(s.session));
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
        } => match result {
            Ok(pruned) => {
                let recorded = if dry_run {
                    Ok(())
                } else {
                    board.worktrees_pruned(ctx(&slot, now), &pruned.removed)
                };
                answer(slot, recorded.map(|()| pruned), |p| {
                    Reply::Pruned(Box::new(p))
                })
            }
            Err(e) => vec![Effect::Reply(slot, Err(e))],
        },
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
