//! Registrations, disconnects and restarts.

use super::*;

impl Model {
    /// The session `m` acts on: its live one, or else the last it had.
    pub fn session(&self, m: usize, old: bool) -> u64 {
        let mm = &self.members[m];
        if old {
            mm.old_session
        } else {
            mm.session.unwrap_or(mm.last_session)
        }
    }

    pub fn register(&mut self, m: usize, require_plan: bool) -> Res {
        let session = self.next_session;
        self.next_session += 1;
        if self.members[m].session.is_some() {
            return Err(ErrorCode::AlreadyConnected);
        }
        let deadline = self.now + TTL_MS;
        for t in self.tasks.values_mut() {
            if let Some(l) = t.lease.as_mut().filter(|_| t.owner == Some(m))
                && l.session.is_none()
            {
                *l = Lease {
                    session: Some(session),
                    deadline,
                };
            }
        }
        let mm = &mut self.members[m];
        mm.old_session = mm.last_session;
        mm.last_session = session;
        mm.session = Some(session);
        mm.shut = false;
        mm.require_plan = require_plan;
        Ok(())
    }

    pub fn disconnect(&mut self, m: usize) {
        let Some(session) = self.members[m].session.take() else {
            return;
        };
        let held: Vec<TaskId> = self
            .tasks
            .iter()
            .filter(|(_, t)| t.lease.is_some_and(|l| l.session == Some(session)))
            .map(|(id, _)| *id)
            .collect();
        for id in held {
            if self.lease_waived(id) {
                if let Some(l) = self.task_mut(id).lease.as_mut() {
                    l.session = None;
                }
            } else {
                self.abandon(id, Why::Lost);
            }
        }
        if let Some(id) = self.pending_shutdown(m) {
            self.settle(id, RequestState::Cancelled);
        }
    }

    /// boardd restarts on what it stored: every session ended with it, and so
    /// did the shutdown requests meant for them; claims wait for their owners
    /// through the grace period; checks that ran were killed, and the queue
    /// starts again from what is queued.
    pub fn restart(&mut self) {
        for mm in &mut self.members {
            mm.session = None;
        }
        self.returned.clear();
        let deadline = self.now + GRACE_MS;
        for t in self.tasks.values_mut() {
            if t.status == TaskStatus::InProgress {
                t.lease = Some(Lease {
                    session: None,
                    deadline,
                });
                if matches!(t.landing, Some((LandingStage::Checking, _))) {
                    t.landing = None;
                }
            }
        }
        for r in self.requests.values_mut() {
            if matches!(r.kind, Kind::Shutdown { .. }) && r.state == RequestState::Pending {
                r.state = RequestState::Cancelled;
                r.deadline = None;
            }
        }
        let queued = self.tasks.iter().filter(|(_, t)| Self::queued(t));
        self.jobs = queued.map(|(id, t)| (*id, t.epoch)).collect();
    }
}
