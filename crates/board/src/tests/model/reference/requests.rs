//! Plan and shutdown requests.

use super::*;

impl Model {
    pub(super) fn open(&mut self, kind: Kind, deadline: Option<u64>) -> u64 {
        let id = self.next_request;
        self.next_request += 1;
        let state = RequestState::Pending;
        self.requests.insert(
            id,
            MRequest {
                kind,
                state,
                deadline,
            },
        );
        id
    }

    pub(super) fn pending_shutdown(&self, m: usize) -> Option<u64> {
        self.requests
            .iter()
            .find(|(_, r)| r.kind == Kind::Shutdown { to: m } && r.state == RequestState::Pending)
            .map(|(id, _)| *id)
    }

    /// A pending request of the kind asked.
    pub(super) fn answerable(&self, id: u64, plan: bool) -> Res<MRequest> {
        let r = *self.requests.get(&id).ok_or(ErrorCode::NotFound)?;
        if matches!(r.kind, Kind::Plan { .. }) != plan {
            return Err(ErrorCode::InvalidArgs);
        }
        if r.state != RequestState::Pending {
            return Err(ErrorCode::InvalidState);
        }
        Ok(r)
    }

    pub fn submit_plan(&mut self, m: usize, session: u64, id: TaskId, epoch: u64) -> Res<u64> {
        self.fence(m, session, id, epoch)?;
        if let Some(old) = self.pending_plan(id) {
            self.settle(old, RequestState::Cancelled);
        }
        Ok(self.open(Kind::Plan { task: id, epoch }, None))
    }

    pub fn review_plan(&mut self, lead: bool, id: u64, approve: bool) -> Res {
        if !lead {
            return Err(ErrorCode::PermissionDenied);
        }
        self.answerable(id, true)?;
        let state = if approve {
            RequestState::Approved
        } else {
            RequestState::Rejected
        };
        self.settle(id, state);
        Ok(())
    }

    pub fn cancel_request(&mut self, lead: bool, id: u64) -> Res {
        if !lead {
            return Err(ErrorCode::PermissionDenied);
        }
        let plan = matches!(
            self.requests.get(&id).ok_or(ErrorCode::NotFound)?.kind,
            Kind::Plan { .. }
        );
        self.answerable(id, plan)?;
        self.settle(id, RequestState::Cancelled);
        Ok(())
    }

    /// A shutdown settled by stopping its target: its task goes back,
    /// uncounted (unless it waits for review), and it takes no new work.
    pub(super) fn force_stop(&mut self, m: usize, id: u64, state: RequestState) {
        self.settle(id, state);
        if let Some(held) = self.held(m)
            && !Self::owner_done(&self.tasks[&held])
        {
            self.abandon(held, Why::Uncounted);
        }
        self.members[m].shut = true;
    }

    pub fn request_shutdown(
        &mut self,
        lead: bool,
        to: usize,
        timeout: Option<u64>,
        force: bool,
    ) -> Res<u64> {
        if !lead {
            return Err(ErrorCode::PermissionDenied);
        }
        if self.members[to].session.is_none() {
            return Err(ErrorCode::NotConnected);
        }
        let id = match self.pending_shutdown(to) {
            Some(id) if !force => return Ok(id),
            Some(id) => id,
            None => {
                let deadline = self.now + timeout.unwrap_or(DEFAULT_SHUTDOWN_MS);
                let id = self.open(Kind::Shutdown { to }, (!force).then_some(deadline));
                if !force {
                    return Ok(id);
                }
                id
            }
        };
        self.force_stop(to, id, RequestState::Approved);
        Ok(id)
    }

    pub fn respond_shutdown(&mut self, m: usize, session: u64, id: u64, approve: bool) -> Res {
        let r = self.answerable(id, false)?;
        if r.kind != (Kind::Shutdown { to: m }) || self.members[m].session != Some(session) {
            return Err(ErrorCode::PermissionDenied);
        }
        if approve
            && let Some(held) = self.held(m)
            && !Self::owner_done(&self.tasks[&held])
        {
            return Err(ErrorCode::InvalidState);
        }
        let state = if approve {
            RequestState::Approved
        } else {
            RequestState::Rejected
        };
        self.settle(id, state);
        Ok(())
    }
}
