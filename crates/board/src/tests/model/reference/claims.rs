//! Claims, the fence, completion and expiry.

use super::*;

impl Model {
    /// The claimant's role, or why it may not claim.
    pub(super) fn claimant(&self, m: usize, session: u64) -> Res<usize> {
        let mm = &self.members[m];
        if mm.session != Some(session) {
            return Err(ErrorCode::NotRegistered);
        }
        if mm.shut {
            return Err(ErrorCode::InvalidState);
        }
        if self.held(m).is_some() {
            return Err(ErrorCode::AlreadyHoldsTask);
        }
        Ok(ROLES
            .iter()
            .position(|r| *r == MEMBERS[m].1)
            .expect("a known role"))
    }

    pub(super) fn grant(&mut self, m: usize, id: TaskId, session: u64) -> (TaskId, u64) {
        let deadline = self.now + TTL_MS;
        let t = self.task_mut(id);
        t.owner = Some(m);
        t.attempts += 1;
        t.epoch += 1;
        if t.worktree.is_none() && !t.no_worktree {
            t.worktree = Some(false);
        }
        t.lease = Some(Lease {
            session: Some(session),
            deadline,
        });
        let epoch = t.epoch;
        self.set_status(id, TaskStatus::InProgress);
        (id, epoch)
    }

    pub fn claim(&mut self, m: usize, session: u64, id: TaskId) -> Res<(TaskId, u64)> {
        let role = self.claimant(m, session)?;
        let t = self.task(id)?;
        if t.role.is_some_and(|r| r != role) {
            return Err(ErrorCode::RoleMismatch);
        }
        if !self.ready(t) {
            return Err(ErrorCode::Conflict);
        }
        Ok(self.grant(m, id, session))
    }

    pub fn claim_next(&mut self, m: usize, session: u64) -> Res<Option<(TaskId, u64)>> {
        let role = self.claimant(m, session)?;
        Ok(self.best(role).map(|id| self.grant(m, id, session)))
    }

    /// The ready task a claimant of `role` gets: highest priority, then
    /// lowest id.
    pub(super) fn best(&self, role: usize) -> Option<TaskId> {
        self.tasks
            .iter()
            .filter(|(_, t)| self.ready(t) && t.role.is_none_or(|r| r == role))
            .min_by_key(|(id, t)| (-t.priority, **id))
            .map(|(id, _)| *id)
    }

    /// `wait_for_work` with an empty inbox: the task sent back to the member
    /// from review, or else a fresh claim, or else nothing (it would park).
    pub fn wait(&mut self, m: usize, session: u64) -> Res<Option<(TaskId, u64)>> {
        if self.members[m].session != Some(session) {
            return Err(ErrorCode::NotRegistered);
        }
        let shut = self.members[m].shut;
        if let Some(id) = self.held(m) {
            // A wait takes a returned task up once, and only as it was sent
            // back (no landing begun since).
            if !shut && self.returned.remove(&id) && self.tasks[&id].landing.is_none() {
                let deadline = self.now + TTL_MS;
                let t = self.task_mut(id);
                if let Some(l) = t.lease.as_mut() {
                    l.deadline = deadline;
                }
                return Ok(Some((id, t.epoch)));
            }
            return Ok(None);
        }
        if shut {
            return Ok(None);
        }
        let role = self.claimant(m, session)?;
        Ok(self.best(role).map(|id| self.grant(m, id, session)))
    }

    /// Only the current holder, on its session, with the current epoch.
    pub fn fence(&self, m: usize, session: u64, id: TaskId, epoch: u64) -> Res<&MTask> {
        let t = self.task(id)?;
        let current = t.status == TaskStatus::InProgress
            && t.owner == Some(m)
            && t.epoch == epoch
            && t.lease.is_some_and(|l| l.session == Some(session));
        if current {
            Ok(t)
        } else {
            Err(ErrorCode::StaleEpoch)
        }
    }

    pub fn heartbeat(&mut self, m: usize, session: u64, id: TaskId, epoch: u64) -> Res {
        self.fence(m, session, id, epoch)?;
        let deadline = self.now + TTL_MS;
        if let Some(l) = self.task_mut(id).lease.as_mut() {
            l.deadline = deadline;
        }
        Ok(())
    }

    pub(super) fn check_plan(&self, id: TaskId, epoch: u64) -> Res {
        let decision = self
            .latest_plan(id)
            .map(|r| self.requests[&r])
            .filter(|r| matches!(r.kind, Kind::Plan { epoch: e, .. } if e == epoch));
        match decision.map(|r| r.state) {
            Some(RequestState::Approved) => Ok(()),
            Some(RequestState::Pending | RequestState::Rejected) => Err(ErrorCode::PlanRequired),
            _ if self.needs_plan(id) => Err(ErrorCode::PlanRequired),
            _ => Ok(()),
        }
    }

    /// The task asks for a plan, or its owner registered asking for one.
    pub fn needs_plan(&self, id: TaskId) -> bool {
        let t = &self.tasks[&id];
        t.require_plan || t.owner.is_some_and(|m| self.members[m].require_plan)
    }

    /// `complete_task` as boardd runs it: at once without a worktree, else
    /// through the gate.
    pub fn complete(&mut self, m: usize, session: u64, id: TaskId, epoch: u64) -> Res {
        let t = self.fence(m, session, id, epoch)?;
        let (worktree, landing) = (t.worktree, t.landing);
        self.check_plan(id, epoch)?;
        let Some(opened) = worktree else {
            self.set_status(id, TaskStatus::Completed);
            return Ok(());
        };
        match landing {
            // Asked again while landing or in review: answered later, or now.
            Some((stage, _)) if stage != LandingStage::Conflict => Ok(()),
            _ if !opened => Err(ErrorCode::InvalidState),
            _ => {
                self.gate(id);
                Ok(())
            }
        }
    }

    /// The gate starts. A task sent back from review is taken up by it, if
    /// no wait did so first, and its lease runs from now, as a wait's would.
    pub(super) fn gate(&mut self, id: TaskId) {
        let deadline = self.now + TTL_MS;
        let taken_up = self.returned.remove(&id);
        let t = self.task_mut(id);
        t.landing = Some((LandingStage::Checking, false));
        if taken_up && let Some(l) = t.lease.as_mut() {
            l.deadline = deadline;
        }
    }

    pub fn fail(&mut self, m: usize, session: u64, id: TaskId, epoch: u64) -> Res {
        self.fence(m, session, id, epoch)?;
        self.abandon(id, Why::Failed);
        Ok(())
    }

    pub fn release(&mut self, m: usize, session: u64, id: TaskId, epoch: u64, err: bool) -> Res {
        self.fence(m, session, id, epoch)?;
        self.abandon(id, if err { Why::Failed } else { Why::Released });
        Ok(())
    }

    /// The worker opened the worktree: its base is recorded even when the
    /// claim is gone, so that the directory is not left behind unknown.
    pub fn open_worktree(&mut self, m: usize, session: u64, id: TaskId, epoch: u64) -> Res {
        let fenced = self.fence(m, session, id, epoch).map(|_| ());
        if let Ok(t) = self.task(id)
            && t.worktree.is_some()
        {
            self.task_mut(id).worktree = Some(true);
        }
        fenced
    }

    /// Time passes to `now`; boardd's `expire` runs.
    pub fn advance(&mut self, now: u64) {
        self.now = now;
        let lapsed: Vec<TaskId> = self
            .tasks
            .iter()
            .filter(|(id, t)| {
                t.lease.is_some_and(|l| l.deadline <= now) && !self.lease_waived(**id)
            })
            .map(|(id, _)| *id)
            .collect();
        for id in lapsed {
            self.abandon(id, Why::Lost);
        }
        let due: Vec<u64> = self
            .requests
            .iter()
            .filter(|(_, r)| r.deadline.is_some_and(|d| d <= now))
            .map(|(id, _)| *id)
            .collect();
        for id in due {
            let Kind::Shutdown { to } = self.requests[&id].kind else {
                continue;
            };
            if self.members[to].session.is_some() {
                self.force_stop(to, id, RequestState::Expired);
            } else {
                self.settle(id, RequestState::Expired);
            }
        }
    }
}
