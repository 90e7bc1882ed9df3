//! A property-based state-machine test of [`Board`] against a reference model.
//!
//! proptest draws sequences of operations on one team: the lead adds tasks
//! (with blockers, roles, priorities, a required plan, a review), adds
//! dependencies, edits priorities and roles, deletes, cancels and retries;
//! three teammates claim (by id, the next ready one, and through
//! `wait_for_work`), heartbeat, complete, fail and release, sometimes with a
//! stale epoch, another member's claim or a dead session; time moves on
//! within and past the lease and the shutdown deadlines; teammates disconnect
//! and register again; boardd restarts on what it stored, batch by batch
//! (`Board::restore`); plans and shutdowns are requested and answered, by
//! whoever may and whoever may not; and the repo worker reports gates and
//! landings, with a person merging or sending back work in review. A `Drive`
//! op takes a member's work one step along its usual path, so that the deep
//! states (review, the queue, a conflict, a task sent back and taken up
//! again) come often enough to matter, and `coverage.rs` fails the run if any
//! of them never came. Each op runs on the board and on the model in
//! `reference.rs`, and after each one:
//! - the answers agree: the value (task, epoch, request) or the error code;
//! - the states agree: every task's status, owner, epoch, attempts,
//!   blockers, landing stage, worktree and readiness; every member's held
//!   task, connection and shutdown; every request's state; and the next
//!   moment boardd must wake (so leases agree to the millisecond);
//! - the invariants hold on the board alone, whatever the model says (see
//!   `invariants.rs`): one owner per task and one task per owner; epochs only
//!   grow, and only by a claim; a stale epoch or session is never accepted;
//!   a task is never ready while a blocker is unfinished; no task is lost and
//!   no id is given twice; a completed task stays as it was; a failed or
//!   cancelled one moves only by the lead (or a landing that already
//!   happened); a settled request stays settled.
//!
//! Alternatives that lost:
//! - `proptest-state-machine`: its preconditions keep invalid ops out of the
//!   sequences, and the invalid ops (stale epochs, wrong members, requests
//!   already answered) are half of what is worth checking here. Plain
//!   proptest draws a `Vec<Op>` and shrinks it just as well, and the ops
//!   resolve their targets against the model when they run.
//! - Checking only the invariants, as `tests/invariants.rs` does with its
//!   seeded walk: it proves the board consistent with itself, not right. A
//!   board that granted a blocked task, or failed a task one attempt early,
//!   would pass.
//! - The model sharing the board's indexes: it would agree with the board's
//!   bugs. The model recomputes readiness, the queue and holds from the tasks.
//!
//! Not modelled: messages and inboxes (a wait acknowledges its inbox first,
//! and one that would park is withdrawn at once), liveness and spending;
//! each has its own tests, and `tests/invariants.rs` walks parked waits at
//! random.
//!
//! A failure prints the shrunk sequence and the step whose answer or state
//! differed; proptest keeps its seed in `proptest-regressions/` to run first
//! next time. `PROPTEST_CASES` runs more sequences locally (fewer may miss
//! the coverage this run requires).

mod coverage;
mod invariants;
mod ops;
mod reference;

use super::landing::repo;
use super::{H, Mate, Store, TEAM};
use crate::{Blocked, Conflict, GateRefusal, LandRefusal};
use coverage::Coverage;
use ops::{Fenced, Op, Target};
use proptest::prelude::*;
use proptest::test_runner::{RngAlgorithm, TestRunner};
use reference::{MAX_ATTEMPTS, MEMBERS, MTask, Model, ROLES, Res};
use std::cell::RefCell;
use teamboard_protocol::request::{EditTaskArgs, NewTask, RegisterArgs, ShutdownArgs};
use teamboard_protocol::{
    DiffStat, ErrorCode, Found, LandingStage, MemberStatus, RequestState, TaskId, TaskStatus, Work,
};

/// What an op answered: a task and epoch, a request id, a flag; or nothing.
type Answer = Result<Option<(u64, u64)>, ErrorCode>;

/// The observable state both sides are compared on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct View {
    pub tasks: Vec<TaskView>,
    pub members: Vec<MemberView>,
    pub requests: Vec<(u64, RequestState)>,
    /// When boardd must next wake, in ms of the test's clock.
    pub deadline: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct TaskView {
    pub id: TaskId,
    pub status: TaskStatus,
    pub owner: Option<String>,
    pub epoch: u64,
    pub attempts: u32,
    pub blocked_by: Vec<TaskId>,
    pub landing: Option<LandingStage>,
    /// The landing's owner is done (its lease is not enforced).
    pub owner_done: bool,
    /// Reserved, and whether opened.
    pub worktree: Option<bool>,
    pub ready: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct MemberView {
    pub name: String,
    pub task: Option<TaskId>,
    pub connected: bool,
    pub shut: bool,
}

/// A fenced op as it was sent, for the stale-epoch invariant.
#[derive(Debug, Clone, Copy)]
pub(super) struct Sent {
    /// The member that sent it; `None`: the repo worker's report on a gate.
    pub who: Option<usize>,
    pub task: TaskId,
    pub epoch: u64,
    /// The session was the member's live one.
    pub live: bool,
}

/// A gate report on `task` with `epoch`, for the stale-epoch invariant.
fn report(task: TaskId, epoch: u64) -> Option<Sent> {
    let (who, live) = (None, true);
    Some(Sent {
        who,
        task,
        epoch,
        live,
    })
}

/// Resolves a drawn number: mostly one of `preferred` (what the op is about:
/// the ready tasks for a claim, the pending plans for a review), else any id
/// from 1 to one past the last, which does not exist.
fn pick(n: u8, preferred: &[u64], count: u64) -> u64 {
    if n < 240 && !preferred.is_empty() {
        preferred[n as usize % preferred.len()]
    } else {
        u64::from(n) % (count + 1) + 1
    }
}

fn answer<T>(r: crate::Result<T>, f: impl FnOnce(T) -> Option<(u64, u64)>) -> Answer {
    r.map(f).map_err(|e| e.code)
}

fn model_answer<T>(r: Res<T>, f: impl FnOnce(T) -> Option<(u64, u64)>) -> Answer {
    r.map(f)
}

fn none<T>(_: T) -> Option<(u64, u64)> {
    None
}

struct Run {
    h: H,
    model: Model,
    /// Every claim granted: member, task, epoch.
    claims: Vec<(usize, TaskId, u64)>,
    /// The highest task id the board ever showed.
    highest: TaskId,
    /// What boardd stored, batch by batch, for a restart.
    store: Store,
    /// The last op found nothing to act on (the queue held no job).
    idle: bool,
    coverage: Coverage,
}

impl Run {
    fn new() -> Self {
        let mut h = H::cfg(|c| {
            c.max_attempts = MAX_ATTEMPTS;
            c.lease_ttl = std::time::Duration::from_millis(reference::TTL_MS);
            c.restart_grace = std::time::Duration::from_millis(reference::GRACE_MS);
        });
        let ctx = h.lead();
        h.board.set_repo(ctx, repo()).expect("a repository");
        for (name, role) in MEMBERS {
            let m = h.stranger(TEAM, name);
            h.register(m, role);
        }
        Run {
            h,
            model: Model::new(),
            claims: Vec::new(),
            highest: 0,
            store: Store::default(),
            idle: false,
            coverage: Coverage::default(),
        }
    }

    fn mate(&self, m: usize, old: bool) -> Mate {
        Mate {
            team: TEAM,
            name: MEMBERS[m].0,
            session: self.model.session(m, old),
        }
    }

    /// The lead, or the teammate `by` posing as one.
    fn lead_or(&self, by: Option<u8>) -> crate::Ctx<'static> {
        match by {
            None => self.h.lead(),
            Some(m) => self.h.ctx(self.mate(m as usize, false)),
        }
    }

    /// The first member from `who` on for whom `f` holds, or else `who`:
    /// ops go where they can do something, and are refused when none can.
    fn rotate(&self, who: u8, f: impl Fn(usize) -> bool) -> usize {
        let who = usize::from(who);
        (0..MEMBERS.len())
            .map(|i| (who + i) % MEMBERS.len())
            .find(|m| f(*m))
            .unwrap_or(who)
    }

    /// Connected, not stopped and holding nothing: free to claim.
    fn free(&self, m: usize) -> bool {
        let mm = &self.model.members[m];
        mm.session.is_some() && !mm.shut && self.model.held(m).is_none()
    }

    fn ids(&self, f: impl Fn(&MTask) -> bool) -> Vec<u64> {
        let tasks = self.model.tasks.iter();
        tasks.filter(|(_, t)| f(t)).map(|(id, _)| *id).collect()
    }

    /// The highest id given so far.
    fn task_count(&self) -> u64 {
        self.model.next_id - 1
    }

    fn requests(&self, plan: Option<bool>) -> Vec<u64> {
        let pending = self.model.requests.iter();
        pending
            .filter(|(_, r)| r.state == RequestState::Pending)
            .filter(|(_, r)| {
                plan.is_none_or(|p| matches!(r.kind, reference::Kind::Plan { .. }) == p)
            })
            .map(|(id, _)| *id)
            .collect()
    }

    fn epoch_of(&self, id: TaskId) -> u64 {
        self.model.tasks.get(&id).map_or(0, |t| t.epoch)
    }

    /// Runs one op on both sides; answers both answers and, for a fenced op,
    /// what was sent.
    fn apply(&mut self, op: &Op) -> (Answer, Answer, Option<Sent>) {
        let n = self.task_count();
        let now = self.h.now();
        let all = self.ids(|_| true);
        match op {
            Op::Add {
                blockers,
                role,
                priority,
                plan,
                no_worktree,
                review,
            } => {
                let blocked_by: Vec<u64> = blockers.iter().map(|b| pick(*b, &all, n)).collect();
                let role = (*role > 0).then(|| usize::from(*role) - 1);
                let new = NewTask {
                    subject: format!("t{}", n + 1),
                    blocked_by: blocked_by.clone(),
                    priority: *priority,
                    role: role.map(|r| ROLES[r].to_string()),
                    require_plan: *plan,
                    no_worktree: *no_worktree,
                    review: *review,
                    ..Default::default()
                };
                let got = answer(self.h.board.add_task(self.h.lead(), new), |t| {
                    Some((t.id, t.epoch))
                });
                let want = self.model.add(MTask {
                    status: TaskStatus::Pending,
                    owner: None,
                    epoch: 0,
                    attempts: 0,
                    blocked_by,
                    role,
                    priority: *priority,
                    require_plan: *plan,
                    review: *review,
                    no_worktree: *no_worktree,
                    worktree: None,
                    landing: None,
                    lease: None,
                });
                (got, model_answer(want, |id| Some((id, 0))), None)
            }
            Op::Depend { task, on } => {
                let id = pick(*task, &self.ids(|t| t.status == TaskStatus::Pending), n);
                let on: Vec<u64> = on.iter().map(|b| pick(*b, &all, n)).collect();
                let got = answer(self.h.board.add_dependency(self.h.lead(), id, &on), none);
                (got, model_answer(self.model.depend(id, &on), none), None)
            }
            Op::Claim { who, task } => {
                let m = self.rotate(*who, |m| self.free(m));
                let id = pick(*task, &self.ids(|t| self.model.ready(t)), n);
                let ctx = self.h.ctx(self.mate(m, false));
                let got = answer(self.h.board.claim_task(ctx, id), |c| {
                    Some((c.task.id, c.epoch))
                });
                let session = self.model.session(m, false);
                let want = model_answer(self.model.claim(m, session, id), Some);
                self.granted(m, &want);
                (got, want, None)
            }
            Op::ClaimNext { who } => {
                let m = self.rotate(*who, |m| self.free(m));
                let ctx = self.h.ctx(self.mate(m, false));
                let got = answer(self.h.board.claim_next(ctx), |c| {
                    c.map(|c| (c.task.id, c.epoch))
                });
                let session = self.model.session(m, false);
                let want = self.model.claim_next(m, session);
                self.granted(m, &want);
                (got, want, None)
            }
            Op::Wait { who } => {
                // Mostly an owner whose task came back from review, if any.
                let returned = |m| {
                    let held = self.model.held(m);
                    held.is_some_and(|id| self.model.returned.contains(&id))
                };
                let m = match *who {
                    0 | 1 => self.rotate(*who, returned),
                    _ => self.rotate(*who, |m| self.model.members[m].session.is_some()),
                };
                let mate = self.mate(m, false);
                let ctx = self.h.ctx(mate);
                let inbox: Vec<u64> = self
                    .h
                    .board
                    .inbox(TEAM, mate.name)
                    .iter()
                    .map(|m| m.id)
                    .collect();
                self.h.board.ack(ctx, &inbox);
                let got = match self.h.board.park(ctx, 1, None) {
                    Ok(Some(Work::Task { claim })) => Ok(Some((claim.task.id, claim.epoch))),
                    Ok(Some(other)) => {
                        panic!("the inbox was acknowledged, yet the wait got {other:?}")
                    }
                    Ok(None) => {
                        self.h.board.unpark(mate.session);
                        Ok(None)
                    }
                    Err(e) => Err(e.code),
                };
                let want = self.model.wait(m, mate.session);
                self.granted(m, &want);
                (got, want, None)
            }
            Op::Fenced {
                op,
                who,
                target,
                skew,
                old_session,
            } => {
                let who = self.rotate(*who, |m| self.model.held(m).is_some());
                self.fenced(*op, who, *target, *skew, *old_session)
            }
            Op::Edit {
                task,
                priority,
                role,
                by,
            } => {
                let id = pick(*task, &self.ids(|t| t.status == TaskStatus::Pending), n);
                let role = role.map(|r| usize::from(r).checked_sub(1));
                let edit = EditTaskArgs {
                    id,
                    subject: None,
                    description: None,
                    priority: *priority,
                    role: role.map(|r| r.map_or("", |r| ROLES[r]).to_string()),
                };
                let got = answer(self.h.board.edit_task(self.lead_or(*by), edit), none);
                let want = self.model.edit(by.is_none(), id, *priority, role);
                (got, unit(want), None)
            }
            Op::Delete { task, by } => {
                let id = pick(*task, &self.ids(|t| t.status == TaskStatus::Pending), n);
                let got = answer(self.h.board.delete_task(self.lead_or(*by), id), |t| {
                    Some((t.id, 0))
                });
                let want = self.model.delete(by.is_none(), id);
                (got, model_answer(want, |()| Some((id, 0))), None)
            }
            Op::Cancel { task, by } => {
                let id = pick(*task, &all, n);
                let got = answer(self.h.board.cancel_task(self.lead_or(*by), id), none);
                (got, unit(self.model.cancel(by.is_none(), id)), None)
            }
            Op::Retry { task, by } => {
                let id = pick(*task, &all, n);
                let got = answer(self.h.board.retry_task_with(self.lead_or(*by), id), none);
                (got, unit(self.model.retry(by.is_none(), id)), None)
            }
            Op::Advance { ms } => {
                self.h.advance(std::time::Duration::from_millis(*ms));
                let now = self.h.now();
                let timed_out = self.h.board.expire(now);
                assert!(timed_out.is_empty(), "no one waits, so no wait times out");
                self.model.advance(self.model.now + ms);
                (Ok(None), Ok(None), None)
            }
            Op::Disconnect { who } => {
                let m = self.rotate(*who, |m| self.model.members[m].session.is_some());
                self.h.board.disconnect(self.model.session(m, false), now);
                self.model.disconnect(m);
                (Ok(None), Ok(None), None)
            }
            Op::Restart => {
                let config = *self.h.board.config();
                let snap = self.store.snapshot();
                self.h.board = crate::Board::restore(config, snap, now);
                self.model.restart();
                (Ok(None), Ok(None), None)
            }
            Op::Register { who, plan } => {
                let m = self.rotate(*who, |m| self.model.members[m].session.is_none());
                let session = self.h.new_session();
                assert_eq!(
                    session, self.model.next_session,
                    "sessions are numbered alike"
                );
                let mate = Mate {
                    team: TEAM,
                    name: MEMBERS[m].0,
                    session,
                };
                let ctx = self.h.ctx(mate);
                let args = RegisterArgs {
                    role: MEMBERS[m].1.to_string(),
                    require_plan: *plan,
                    ..RegisterArgs::default()
                };
                let got = answer(self.h.board.register_with(ctx, &args), none);
                (got, unit(self.model.register(m, *plan)), None)
            }
            Op::ReviewPlan { req, approve, by } => {
                let id = pick(
                    *req,
                    &self.requests(Some(true)),
                    self.model.next_request - 1,
                );
                let feedback = (!approve).then(|| "change it".to_string());
                let ctx = self.lead_or(*by);
                let got = answer(self.h.board.review_plan(ctx, id, *approve, feedback), none);
                let want = self.model.review_plan(by.is_none(), id, *approve);
                (got, unit(want), None)
            }
            Op::CancelRequest { req } => {
                let id = pick(*req, &self.requests(None), self.model.next_request - 1);
                let got = answer(self.h.board.cancel_request(self.h.lead(), id), none);
                (got, unit(self.model.cancel_request(true, id)), None)
            }
            Op::RequestShutdown {
                to,
                timeout,
                force,
                by,
            } => {
                let to = usize::from(*to);
                let args = ShutdownArgs {
                    to: MEMBERS[to].0.to_string(),
                    reason: None,
                    timeout_ms: *timeout,
                    force: *force,
                };
                let ctx = self.lead_or(*by);
                let got = answer(self.h.board.request_shutdown(ctx, args), |r| {
                    Some((r.id, 0))
                });
                let want = self
                    .model
                    .request_shutdown(by.is_none(), to, *timeout, *force);
                (got, model_answer(want, |id| Some((id, 0))), None)
            }
            Op::RespondShutdown {
                who,
                req,
                approve,
                old_session,
            } => {
                let id = pick(
                    *req,
                    &self.requests(Some(false)),
                    self.model.next_request - 1,
                );
                // Mostly its addressee answers; `who` is someone else.
                let to = match self.model.requests.get(&id).map(|r| r.kind) {
                    Some(reference::Kind::Shutdown { to }) => to,
                    _ => usize::from(who.unwrap_or(0)),
                };
                let m = match who {
                    Some(who) => usize::from(*who),
                    None => to,
                };
                let reason = (!approve).then(|| "busy".to_string());
                let ctx = self.h.ctx(self.mate(m, *old_session));
                let got = answer(
                    self.h.board.respond_shutdown(ctx, id, *approve, reason),
                    none,
                );
                let session = self.model.session(m, *old_session);
                let want = self.model.respond_shutdown(m, session, id, *approve);
                (got, unit(want), None)
            }
            Op::GatePass { task, stale } => {
                let checking = self.ids(|t| stage(t) == Some(LandingStage::Checking));
                let id = pick(*task, &checking, n);
                let epoch = self.epoch_of(id).saturating_sub(u64::from(*stale));
                let got = if self.h.board.needs_review(TEAM, id) {
                    let diff = DiffStat::default();
                    let r = self.h.board.await_review(
                        TEAM,
                        id,
                        epoch,
                        "head1".into(),
                        diff,
                        vec![],
                        now,
                    );
                    answer(r, none)
                } else {
                    let r = self
                        .h
                        .board
                        .gate_passed(TEAM, id, epoch, "head1".into(), vec![], now);
                    answer(r, none)
                };
                (
                    got,
                    unit(self.model.gate_passed(id, epoch)),
                    report(id, epoch),
                )
            }
            Op::GateRefuse {
                task,
                conflict,
                stale,
            } => {
                let checking = self.ids(|t| stage(t) == Some(LandingStage::Checking));
                let id = pick(*task, &checking, n);
                let epoch = self.epoch_of(id).saturating_sub(u64::from(*stale));
                let refusal = if *conflict {
                    GateRefusal::conflict("conflicts", conflict_with())
                } else {
                    GateRefusal::new(ErrorCode::CheckFailed, "make lint failed")
                };
                let got = answer(
                    self.h.board.gate_refused(TEAM, id, epoch, &refusal, now),
                    none,
                );
                let want = self.model.gate_refused(id, epoch, *conflict);
                (got, unit(want), report(id, epoch))
            }
            Op::Landed { job } => {
                let Some((id, _)) = self.job(*job) else {
                    self.idle = true;
                    return (Ok(None), Ok(None), None);
                };
                let r = self
                    .h
                    .board
                    .landed(TEAM, id, "main".into(), "merged1".into(), now);
                (answer(r, none), unit(self.model.landed(id)), None)
            }
            Op::LandRefused {
                job,
                conflict,
                owner_waits,
            } => {
                let Some((id, epoch)) = self.job(*job) else {
                    self.idle = true;
                    return (Ok(None), Ok(None), None);
                };
                let refusal = if *conflict {
                    LandRefusal::conflict("conflicts", conflict_with())
                } else {
                    LandRefusal::new(ErrorCode::Git, "push refused")
                };
                let r = self
                    .h
                    .board
                    .land_refused(TEAM, id, epoch, &refusal, *owner_waits, now);
                let want = self.model.land_refused(id, epoch, *conflict, *owner_waits);
                (answer(r, none), unit(want), None)
            }
            Op::LandBlocked { job } => {
                let Some((id, epoch)) = self.job(*job) else {
                    self.idle = true;
                    return (Ok(None), Ok(None), None);
                };
                let blocked = Blocked {
                    checkout: "/src/app".into(),
                    paths: vec!["README".into()],
                };
                let r = self.h.board.land_blocked(TEAM, id, epoch, &blocked, now);
                let flag = |b: bool| Some((u64::from(b), 0));
                let want = model_answer(self.model.land_blocked(id, epoch), flag);
                (answer(r, flag), want, None)
            }
            Op::Merge { task, by } => {
                let id = pick(
                    *task,
                    &self.ids(|t| stage(t) == Some(LandingStage::Review)),
                    n,
                );
                let got = answer(self.h.board.merge_task(self.lead_or(*by), id), |j| {
                    Some((j.task, j.epoch))
                });
                let want = self.model.merge(by.is_none(), id);
                let want = model_answer(want, |()| Some((id, self.epoch_of(id))));
                (got, want, None)
            }
            // `step` resolves drives first; the same here, for any other caller.
            Op::Drive { who, choice } => self.apply(&self.drive(*who, *choice)),
            Op::SendBack { task, by } => {
                let id = pick(
                    *task,
                    &self.ids(|t| stage(t) == Some(LandingStage::Review)),
                    n,
                );
                let ctx = self.lead_or(*by);
                let got = answer(self.h.board.send_back(ctx, id, "fix the tests"), none);
                (got, unit(self.model.send_back(by.is_none(), id)), None)
            }
        }
    }

    /// A job the merge queue holds, if any.
    fn job(&self, n: u8) -> Option<(TaskId, u64)> {
        let jobs: Vec<(TaskId, u64)> = self.model.jobs.iter().map(|(t, e)| (*t, *e)).collect();
        (!jobs.is_empty()).then(|| jobs[n as usize % jobs.len()])
    }

    fn granted(&mut self, m: usize, claim: &Answer) {
        if let Ok(Some((task, epoch))) = claim {
            self.claims.push((m, *task, *epoch));
        }
    }

    fn fenced(
        &mut self,
        op: Fenced,
        who: usize,
        target: Target,
        skew: i8,
        old: bool,
    ) -> (Answer, Answer, Option<Sent>) {
        let n = self.task_count();
        let past = |i: u8| {
            let claims = &self.claims;
            match claims.len() {
                0 => (who, 1, 0),
                len => claims[i as usize % len],
            }
        };
        let (who, id, epoch) = match target {
            Target::Held => match self.model.held(who) {
                Some(id) => (who, id, self.epoch_of(id)),
                None => past(0),
            },
            Target::Past(i) => past(i),
            Target::Task(i) => {
                let id = pick(i, &self.ids(|_| true), n);
                (who, id, self.epoch_of(id))
            }
        };
        let epoch = epoch.saturating_add_signed(i64::from(skew));
        let session = self.model.session(who, old);
        let live = self.model.members[who].session == Some(session);
        let ctx = self.h.ctx(self.mate(who, old));
        let b = &mut self.h.board;
        let m = &mut self.model;
        let (got, want) = match op {
            Fenced::Heartbeat => (
                answer(b.heartbeat(ctx, id, epoch), none),
                unit(m.heartbeat(who, session, id, epoch)),
            ),
            Fenced::Complete => (
                answer(b.begin_complete(ctx, id, epoch, "done".into()), none),
                unit(m.complete(who, session, id, epoch)),
            ),
            Fenced::Fail => (
                answer(b.fail_task(ctx, id, epoch, "broke".into()), none),
                unit(m.fail(who, session, id, epoch)),
            ),
            Fenced::Release { error } => (
                answer(
                    b.release_task(ctx, id, epoch, error.then(|| "stuck".into()), None),
                    none,
                ),
                unit(m.release(who, session, id, epoch, error)),
            ),
            Fenced::SubmitPlan => {
                let got = answer(b.submit_plan(ctx, id, epoch, "the plan".into()), |r| {
                    Some((r.id, 0))
                });
                let want = model_answer(m.submit_plan(who, session, id, epoch), |r| Some((r, 0)));
                (got, want)
            }
            Fenced::OpenWorktree => (
                answer(
                    b.worktree_opened(ctx, id, epoch, "base0", true, &Found::default()),
                    none,
                ),
                unit(m.open_worktree(who, session, id, epoch)),
            ),
        };
        let sent = Sent {
            who: Some(who),
            task: id,
            epoch,
            live,
        };
        (got, want, Some(sent))
    }

    /// What boardd's actor does at the end of every batch: settle liveness,
    /// serve waiters (there are none), and take what the batch produced.
    fn end_batch(&mut self) {
        let now = self.h.now();
        self.h.board.settle_liveness(now);
        assert!(self.h.board.dispatch(now).is_empty(), "no one waits");
        self.store.apply(self.h.board.take_changes());
        self.h.board.take_notices();
        self.h.board.take_stops();
        self.h.board.take_dropped();
    }

    fn board_view(&self) -> View {
        let b = &self.h.board;
        let tasks = b
            .tasks(TEAM, None)
            .into_iter()
            .map(|t| TaskView {
                id: t.id,
                status: t.status,
                owner: t.owner.clone(),
                epoch: t.epoch,
                attempts: t.attempts,
                blocked_by: t.blocked_by.clone(),
                landing: t.landing.as_ref().map(|l| l.stage),
                owner_done: t.landing.as_ref().is_some_and(|l| l.owner_done()),
                worktree: t.worktree.as_ref().map(|w| w.base.is_some()),
                ready: b.is_ready(TEAM, t.id),
            })
            .collect();
        let members = b
            .members(TEAM)
            .into_iter()
            .map(|m| MemberView {
                task: m.task,
                connected: m.connected,
                shut: m.status == MemberStatus::Shutdown,
                name: m.name,
            })
            .collect();
        let requests = b
            .requests(TEAM, None, None, None)
            .into_iter()
            .map(|r| (r.id, r.state))
            .collect();
        let deadline = b
            .next_deadline()
            .map(|d| d.duration_since(self.h.base).as_millis() as u64);
        View {
            tasks,
            members,
            requests,
            deadline,
        }
    }

    fn model_view(&self) -> View {
        let m = &self.model;
        let name = |i: usize| MEMBERS[i].0.to_string();
        let tasks = m
            .tasks
            .iter()
            .map(|(id, t)| TaskView {
                id: *id,
                status: t.status,
                owner: t.owner.map(name),
                epoch: t.epoch,
                attempts: t.attempts,
                blocked_by: t.blocked_by.clone(),
                landing: stage(t),
                owner_done: Model::owner_done(t),
                worktree: t.worktree,
                ready: m.ready(t),
            })
            .collect();
        let members = (0..MEMBERS.len())
            .map(|i| MemberView {
                name: name(i),
                task: m.held(i),
                connected: m.members[i].session.is_some(),
                shut: m.members[i].shut,
            })
            .collect();
        let requests = m.requests.iter().map(|(id, r)| (*id, r.state)).collect();
        View {
            tasks,
            members,
            requests,
            deadline: m.next_deadline(),
        }
    }

    /// Runs one op and checks it; answers the board's state after it.
    /// The op a `Drive` stands for: the next step of the work of the first
    /// member from `who` on that holds a task, or a claim.
    fn drive(&self, who: u8, choice: u8) -> Op {
        let m = self.rotate(who, |m| self.model.held(m).is_some());
        let who = m as u8;
        let Some(id) = self.model.held(m) else {
            return Op::ClaimNext { who };
        };
        let t = &self.model.tasks[&id];
        let fenced = |op| Op::Fenced {
            op,
            who,
            target: Target::Held,
            skew: 0,
            old_session: false,
        };
        // The position of `id` among the tasks an op picks from.
        let at = |f: &dyn Fn(&MTask) -> bool| {
            let ids = self.ids(f);
            ids.iter().position(|x| *x == id).unwrap_or(0) as u8
        };
        let pending_plan = self.requests(Some(true)).iter().position(|r| {
            matches!(self.model.requests[r].kind, reference::Kind::Plan { task, .. } if task == id)
        });
        if self.model.returned.contains(&id) {
            return Op::Wait { who };
        }
        match t.landing.map(|l| l.0) {
            _ if t.worktree == Some(false) => fenced(Fenced::OpenWorktree),
            None if self.model.needs_plan(id) => match pending_plan {
                Some(req) => Op::ReviewPlan {
                    req: req as u8,
                    approve: !choice.is_multiple_of(4),
                    by: None,
                },
                None if choice.is_multiple_of(2) => fenced(Fenced::SubmitPlan),
                None => fenced(Fenced::Complete),
            },
            None | Some(LandingStage::Conflict) => fenced(Fenced::Complete),
            Some(LandingStage::Checking) => Op::GatePass {
                task: at(&|t| stage(t) == Some(LandingStage::Checking)),
                stale: false,
            },
            Some(LandingStage::Review) => {
                let task = at(&|t| stage(t) == Some(LandingStage::Review));
                if choice.is_multiple_of(2) {
                    Op::Merge { task, by: None }
                } else {
                    Op::SendBack { task, by: None }
                }
            }
            Some(LandingStage::Queued | LandingStage::Blocked) => {
                let job = self.model.jobs.keys().position(|j| *j == id).unwrap_or(0) as u8;
                match choice % 4 {
                    0 => Op::LandBlocked { job },
                    1 => Op::LandRefused {
                        job,
                        conflict: choice % 8 == 1,
                        owner_waits: true,
                    },
                    _ => Op::Landed { job },
                }
            }
        }
    }

    fn step(&mut self, i: usize, op: &Op, before: &View) -> View {
        let driven;
        let op = match op {
            Op::Drive { who, choice } => {
                driven = self.drive(*who, *choice);
                &driven
            }
            op => op,
        };
        self.idle = false;
        let (got, want, sent) = self.apply(op);
        self.end_batch();
        assert_eq!(got, want, "step {i}: the answer to {op:?}");
        let after = self.board_view();
        invariants::check(before, &after, op, &got, sent, self.highest);
        self.highest = (after.tasks.iter().map(|t| t.id)).fold(self.highest, u64::max);
        assert_eq!(after, self.model_view(), "step {i}: the state after {op:?}");
        let acted = !self.idle;
        self.coverage.record(op, &got, acted, before, &after);
        after
    }

    /// Runs a sequence; answers what it reached.
    fn run(ops: &[Op]) -> Coverage {
        let mut run = Run::new();
        let mut view = run.board_view();
        for (i, op) in ops.iter().enumerate() {
            view = run.step(i, op, &view);
        }
        run.coverage
    }
}

fn stage(t: &MTask) -> Option<LandingStage> {
    t.landing.map(|l| l.0)
}

fn conflict_with() -> Conflict {
    Conflict {
        paths: vec!["src/lib.rs".into()],
        onto: "onto1".into(),
    }
}

/// A model answer of `()`.
fn unit(r: Res) -> Answer {
    r.map(|()| None)
}

/// How many sequences run: `PROPTEST_CASES` asks for more (or fewer) locally.
fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(10_000)
}

/// The runner by hand rather than `proptest!`, to gather what the cases
/// reached across the whole run.
#[test]
fn the_board_agrees_with_its_model() {
    let config = ProptestConfig {
        cases: cases(),
        max_shrink_iters: 20_000,
        // ChaCha, the default, unoptimized in a test build, took most of the
        // time; the draws need no cryptographic strength.
        rng_algorithm: RngAlgorithm::XorShift,
        // Where `proptest!` would look for and keep failures.
        source_file: Some(file!()),
        ..ProptestConfig::default()
    };
    let reached = RefCell::new(Coverage::default());
    let mut runner = TestRunner::new(config);
    let result = runner.run(&ops::sequence(1..48), |ops| {
        let run = Run::run(&ops);
        reached.borrow_mut().merge(run);
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    let missing = reached.borrow().missing();
    assert!(missing.is_empty(), "no sequence reached {missing:?}");
}
