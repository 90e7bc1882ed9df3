//! Each op, run on the board and on the model alike.

use super::*;

impl Run {
    /// Runs one op on both sides; answers both answers and, for a fenced op,
    /// what was sent.
    pub(super) fn apply(&mut self, op: &Op) -> (Answer, Answer, Option<Sent>) {
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
                let Some((id, epoch)) = self.job(*job) else {
                    self.idle = true;
                    return (Ok(None), Ok(None), None);
                };
                let r = self
                    .h
                    .board
                    .landed(TEAM, id, epoch, "main".into(), "merged1".into(), now);
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
}
