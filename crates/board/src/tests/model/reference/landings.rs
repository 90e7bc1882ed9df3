//! The repo worker's reports, and a person's review.

use super::*;

impl Model {
    pub(super) fn landing_at(&self, id: TaskId, epoch: u64, stage: LandingStage) -> Res {
        let t = self.task(id)?;
        match t.landing {
            Some((s, _))
                if s == stage && t.epoch == epoch && t.status == TaskStatus::InProgress =>
            {
                Ok(())
            }
            _ => Err(ErrorCode::StaleEpoch),
        }
    }

    /// The gate passed: the task queues to land, or waits for review.
    pub fn gate_passed(&mut self, id: TaskId, epoch: u64) -> Res {
        self.landing_at(id, epoch, LandingStage::Checking)?;
        let t = self.task_mut(id);
        if t.review {
            t.landing = Some((LandingStage::Review, true));
        } else {
            t.landing = Some((LandingStage::Queued, false));
            self.jobs.insert(id, epoch);
        }
        Ok(())
    }

    pub fn gate_refused(&mut self, id: TaskId, epoch: u64, conflict: bool) -> Res {
        self.landing_at(id, epoch, LandingStage::Checking)?;
        self.task_mut(id).landing = conflict.then_some((LandingStage::Conflict, false));
        Ok(())
    }

    /// The queue landed the job: the task completes, whatever became of its
    /// claim meanwhile, since its work is on the target.
    pub fn landed(&mut self, id: TaskId) -> Res {
        self.jobs.remove(&id);
        if self.task(id)?.status == TaskStatus::Completed {
            return Ok(());
        }
        self.task_mut(id).landing = None;
        self.set_status(id, TaskStatus::Completed);
        Ok(())
    }

    pub fn land_refused(&mut self, id: TaskId, epoch: u64, conflict: bool, waits: bool) -> Res {
        self.jobs.remove(&id);
        let t = self.task(id)?;
        if t.epoch != epoch || t.status != TaskStatus::InProgress || t.landing.is_none() {
            return Ok(());
        }
        let waits = waits && t.lease.is_some_and(|l| l.session.is_some());
        let deadline = self.now + TTL_MS;
        let t = self.task_mut(id);
        t.landing = (conflict && waits).then_some((LandingStage::Conflict, false));
        if waits {
            if let Some(l) = t.lease.as_mut() {
                l.deadline = deadline;
            }
        } else {
            self.abandon(id, Why::Uncounted);
        }
        Ok(())
    }

    pub fn land_blocked(&mut self, id: TaskId, epoch: u64) -> Res<bool> {
        let t = self.task_mut(id);
        let live = t.epoch == epoch && t.status == TaskStatus::InProgress;
        match t.landing.as_mut() {
            Some((stage @ (LandingStage::Queued | LandingStage::Blocked), _)) if live => {
                *stage = LandingStage::Blocked;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    pub(super) fn in_review(&self, lead: bool, id: TaskId) -> Res<&MTask> {
        if !lead {
            return Err(ErrorCode::PermissionDenied);
        }
        let t = self.task(id)?;
        match t.landing {
            Some((LandingStage::Review, _)) => Ok(t),
            _ => Err(ErrorCode::InvalidState),
        }
    }

    pub fn merge(&mut self, lead: bool, id: TaskId) -> Res {
        let epoch = self.in_review(lead, id)?.epoch;
        self.task_mut(id).landing = Some((LandingStage::Queued, true));
        self.jobs.insert(id, epoch);
        Ok(())
    }

    pub fn send_back(&mut self, lead: bool, id: TaskId) -> Res {
        let owner = self
            .in_review(lead, id)?
            .owner
            .expect("a task in review has an owner");
        let mm = &self.members[owner];
        let session = mm.session.filter(|_| !mm.shut);
        let deadline = self.now + TTL_MS;
        let t = self.task_mut(id);
        t.landing = None;
        match session {
            None => self.abandon(id, Why::Uncounted),
            Some(s) => {
                t.lease = Some(Lease {
                    session: Some(s),
                    deadline,
                });
                self.returned.insert(id);
            }
        }
        Ok(())
    }
}
