//! The reference model: the board's rules for one team, written the plain way
//! (maps, a vector, a clock in milliseconds) with nothing derived kept apart
//! from what it is derived from. Readiness, the merge queue and who holds what
//! are computed from the tasks each time they are asked for, where the board
//! keeps indexes (ready queues, open blocker counts, `queued`, `member.task`)
//! that it must keep in step.

use std::collections::{BTreeMap, BTreeSet};
use teamboard_protocol::{ErrorCode, LandingStage, RequestState, TaskId, TaskStatus};

pub(super) type Res<T = ()> = Result<T, ErrorCode>;

/// The members: name and role. Two share a role, so that roles both match and
/// refuse.
pub(super) const MEMBERS: [(&str, &str); 3] = [("ann", "dev"), ("bob", "dev"), ("cat", "ops")];
pub(super) const ROLES: [&str; 2] = ["dev", "ops"];
pub(super) const MAX_ATTEMPTS: u32 = 2;
pub(super) const TTL_MS: u64 = 10_000;
/// After a restart, how long an owner has to register again.
pub(super) const GRACE_MS: u64 = 5_000;
/// A shutdown request's deadline when the lead names none.
pub(super) const DEFAULT_SHUTDOWN_MS: u64 = 120_000;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct MTask {
    pub status: TaskStatus,
    /// A member's index.
    pub owner: Option<usize>,
    pub epoch: u64,
    pub attempts: u32,
    pub blocked_by: Vec<TaskId>,
    /// A role's index; `None`: anyone.
    pub role: Option<usize>,
    pub priority: i64,
    pub require_plan: bool,
    pub review: bool,
    pub no_worktree: bool,
    /// Reserved by a claim; `true` once the worker opened it (it has a base).
    pub worktree: Option<bool>,
    /// The stage, and whether it passed a review (`review_at`).
    pub landing: Option<(LandingStage, bool)>,
    pub lease: Option<Lease>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Lease {
    pub session: Option<u64>,
    pub deadline: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct MMember {
    pub session: Option<u64>,
    /// The last session it registered with, for ops sent on a dead connection.
    pub last_session: u64,
    /// The one before, for ops sent by an earlier process of the same name.
    pub old_session: u64,
    /// Stopped by a shutdown: takes no new task until it registers again.
    pub shut: bool,
    /// Registered asking that every claim of its needs an approved plan.
    pub require_plan: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Plan { task: TaskId, epoch: u64 },
    Shutdown { to: usize },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct MRequest {
    pub kind: Kind,
    pub state: RequestState,
    /// A pending shutdown's deadline.
    pub deadline: Option<u64>,
}

/// Why a claim ended without completing: what the board's `Abandon` says, as
/// far as it changes the outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Why {
    /// Failed, or released with an error: the owner gave up.
    Failed,
    /// Released without an error: the attempt does not count.
    Released,
    /// The lease ran out or the connection closed: the attempt counts.
    Lost,
    /// Not the task's fault (a stop, a refused landing, a send-back): uncounted.
    Uncounted,
}

#[derive(Debug, Clone)]
pub(super) struct Model {
    pub now: u64,
    pub tasks: BTreeMap<TaskId, MTask>,
    /// Ids are never given twice, a deleted task's included.
    pub next_id: TaskId,
    pub members: Vec<MMember>,
    pub requests: BTreeMap<u64, MRequest>,
    pub next_request: u64,
    pub next_session: u64,
    /// Tasks sent back from review to a connected owner, until the claim ends.
    pub returned: BTreeSet<TaskId>,
    /// Landing jobs the queue holds: task and the claim's epoch.
    pub jobs: BTreeMap<TaskId, u64>,
}

impl Model {
    /// Every member registered once, with sessions 1, 2, 3.
    pub fn new() -> Self {
        let members = (0..MEMBERS.len() as u64)
            .map(|i| MMember {
                session: Some(i + 1),
                last_session: i + 1,
                old_session: i + 1,
                shut: false,
                require_plan: false,
            })
            .collect();
        Model {
            now: 0,
            tasks: BTreeMap::new(),
            next_id: 1,
            members,
            requests: BTreeMap::new(),
            next_request: 1,
            next_session: MEMBERS.len() as u64 + 1,
            returned: BTreeSet::new(),
            jobs: BTreeMap::new(),
        }
    }

    pub fn task(&self, id: TaskId) -> Res<&MTask> {
        self.tasks.get(&id).ok_or(ErrorCode::NotFound)
    }

    fn task_mut(&mut self, id: TaskId) -> &mut MTask {
        self.tasks.get_mut(&id).expect("the model checked the task")
    }

    pub fn ready(&self, t: &MTask) -> bool {
        t.status == TaskStatus::Pending
            && t.owner.is_none()
            && t.landing.is_none()
            && t.blocked_by
                .iter()
                .all(|b| self.tasks[b].status == TaskStatus::Completed)
    }

    /// The in-progress task `m` owns.
    pub fn held(&self, m: usize) -> Option<TaskId> {
        let mut held = self
            .tasks
            .iter()
            .filter(|(_, t)| t.status == TaskStatus::InProgress && t.owner == Some(m))
            .map(|(id, _)| *id);
        let first = held.next();
        assert_eq!(held.next(), None, "the model gave {m} two tasks");
        first
    }

    /// The owner's part is over: its work waits for review, or lands after one.
    pub fn owner_done(t: &MTask) -> bool {
        match t.landing {
            Some((LandingStage::Review, _)) => true,
            Some((LandingStage::Queued | LandingStage::Blocked, reviewed)) => reviewed,
            _ => false,
        }
    }

    /// In the merge queue: boardd lands it, whatever its owner does.
    fn queued(t: &MTask) -> bool {
        t.status == TaskStatus::InProgress
            && matches!(
                t.landing,
                Some((LandingStage::Queued | LandingStage::Blocked, _))
            )
    }

    pub fn lease_waived(&self, id: TaskId) -> bool {
        let t = &self.tasks[&id];
        Self::queued(t) || Self::owner_done(t) || self.returned.contains(&id)
    }

    /// The earliest lease or request deadline: when boardd must wake.
    pub fn next_deadline(&self) -> Option<u64> {
        let leases = self
            .tasks
            .iter()
            .filter(|(id, _)| !self.lease_waived(**id))
            .filter_map(|(_, t)| t.lease.map(|l| l.deadline));
        let requests = self.requests.values().filter_map(|r| r.deadline);
        leases.chain(requests).min()
    }

    fn pending_plan(&self, task: TaskId) -> Option<u64> {
        let id = self.latest_plan(task)?;
        (self.requests[&id].state == RequestState::Pending).then_some(id)
    }

    fn latest_plan(&self, task: TaskId) -> Option<u64> {
        self.requests
            .iter()
            .rev()
            .find(|(_, r)| matches!(r.kind, Kind::Plan { task: t, .. } if t == task))
            .map(|(id, _)| *id)
    }

    fn settle(&mut self, id: u64, state: RequestState) {
        let r = self
            .requests
            .get_mut(&id)
            .expect("a request the model opened");
        assert_eq!(r.state, RequestState::Pending, "settled twice");
        r.state = state;
        r.deadline = None;
    }

    /// The task's status changes: everything a claim's end takes with it.
    fn set_status(&mut self, id: TaskId, status: TaskStatus) {
        let t = self.task_mut(id);
        let was = t.status;
        t.status = status;
        if was == TaskStatus::InProgress && status != TaskStatus::InProgress {
            // A conflict given back to pending waits for a person; any other
            // landing ends with its claim.
            let waits = matches!(t.landing, Some((LandingStage::Conflict, _)))
                && status == TaskStatus::Pending;
            if !waits {
                t.landing = None;
            }
            t.lease = None;
            self.returned.remove(&id);
            if let Some(plan) = self.pending_plan(id) {
                self.settle(plan, RequestState::Cancelled);
            }
        } else if was == TaskStatus::Pending && status != TaskStatus::InProgress {
            t.landing = None;
        }
    }

    fn abandon(&mut self, id: TaskId, why: Why) {
        let t = self.task_mut(id);
        let conflict = matches!(t.landing, Some((LandingStage::Conflict, _)));
        if conflict && !matches!(why, Why::Failed | Why::Released) {
            t.landing = None;
        }
        let counts = !conflict && matches!(why, Why::Failed | Why::Lost);
        if !counts {
            t.attempts = t.attempts.saturating_sub(1);
        }
        let failed = counts && t.attempts >= MAX_ATTEMPTS;
        t.owner = None;
        let status = if failed {
            TaskStatus::Failed
        } else {
            TaskStatus::Pending
        };
        self.set_status(id, status);
    }

    // ---- the lead's task ops ----

    pub fn add(&mut self, new: MTask) -> Res<TaskId> {
        if new.review && new.no_worktree {
            return Err(ErrorCode::InvalidArgs);
        }
        if new.blocked_by.iter().any(|b| !self.tasks.contains_key(b)) {
            return Err(ErrorCode::NotFound);
        }
        let id = self.next_id;
        self.next_id += 1;
        let mut new = new;
        new.blocked_by.sort_unstable();
        new.blocked_by.dedup();
        self.tasks.insert(id, new);
        Ok(id)
    }

    /// Whether `from` waits for `target`, directly or not.
    fn waits_for(&self, from: TaskId, target: TaskId) -> bool {
        let (mut stack, mut seen) = (vec![from], BTreeSet::new());
        while let Some(id) = stack.pop() {
            if id == target {
                return true;
            }
            if seen.insert(id) {
                stack.extend(&self.tasks[&id].blocked_by);
            }
        }
        false
    }

    pub fn depend(&mut self, id: TaskId, on: &[TaskId]) -> Res {
        let t = self.task(id)?;
        if t.status != TaskStatus::Pending {
            return Err(ErrorCode::InvalidState);
        }
        for b in on {
            if !self.tasks.contains_key(b) {
                return Err(ErrorCode::NotFound);
            }
            if self.waits_for(*b, id) {
                return Err(ErrorCode::Cycle);
            }
        }
        let t = self.task_mut(id);
        t.blocked_by.extend(on);
        t.blocked_by.sort_unstable();
        t.blocked_by.dedup();
        Ok(())
    }

    /// The lead changes a pending task no one holds: its priority, or its
    /// role (`Some(None)`: anyone).
    pub fn edit(
        &mut self,
        lead: bool,
        id: TaskId,
        priority: Option<i64>,
        role: Option<Option<usize>>,
    ) -> Res {
        if !lead {
            return Err(ErrorCode::PermissionDenied);
        }
        let t = self.task(id)?;
        if t.status != TaskStatus::Pending || t.owner.is_some() {
            return Err(ErrorCode::InvalidState);
        }
        if priority.is_none() && role.is_none() {
            return Err(ErrorCode::InvalidArgs);
        }
        let t = self.task_mut(id);
        t.priority = priority.unwrap_or(t.priority);
        t.role = role.unwrap_or(t.role);
        Ok(())
    }

    /// The lead removes a pending task that no one ever claimed and nothing
    /// waits for.
    pub fn delete(&mut self, lead: bool, id: TaskId) -> Res {
        if !lead {
            return Err(ErrorCode::PermissionDenied);
        }
        let t = self.task(id)?;
        let free = t.status == TaskStatus::Pending && t.owner.is_none();
        let worked = t.attempts > 0 || t.worktree.is_some();
        let waited_for = self.tasks.values().any(|d| d.blocked_by.contains(&id));
        if !free || worked || waited_for {
            return Err(ErrorCode::InvalidState);
        }
        self.tasks.remove(&id);
        Ok(())
    }

    pub fn cancel(&mut self, lead: bool, id: TaskId) -> Res {
        if !lead {
            return Err(ErrorCode::PermissionDenied);
        }
        let t = self.task(id)?;
        if matches!(t.status, TaskStatus::Completed | TaskStatus::Cancelled) {
            return Err(ErrorCode::InvalidState);
        }
        self.task_mut(id).owner = None;
        self.set_status(id, TaskStatus::Cancelled);
        Ok(())
    }

    pub fn retry(&mut self, lead: bool, id: TaskId) -> Res {
        if !lead {
            return Err(ErrorCode::PermissionDenied);
        }
        let t = self.task(id)?;
        let stage = t.landing.map(|l| l.0);
        match (t.status, stage) {
            (TaskStatus::Pending, Some(LandingStage::Conflict)) => {
                self.task_mut(id).landing = None;
                Ok(())
            }
            // Looked at again: the job the queue holds is run again.
            (TaskStatus::InProgress, Some(LandingStage::Blocked)) => Ok(()),
            // Checked and landed again for the owner that still holds it.
            (TaskStatus::InProgress, Some(LandingStage::Conflict)) => {
                self.gate(id);
                Ok(())
            }
            (TaskStatus::Failed | TaskStatus::Cancelled, _) => {
                let t = self.task_mut(id);
                t.owner = None;
                t.attempts = 0;
                self.set_status(id, TaskStatus::Pending);
                Ok(())
            }
            _ => Err(ErrorCode::InvalidState),
        }
    }

    // ---- the roster ----

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

    // ---- claims ----

    /// The claimant's role, or why it may not claim.
    fn claimant(&self, m: usize, session: u64) -> Res<usize> {
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

    fn grant(&mut self, m: usize, id: TaskId, session: u64) -> (TaskId, u64) {
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
    fn best(&self, role: usize) -> Option<TaskId> {
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

    fn check_plan(&self, id: TaskId, epoch: u64) -> Res {
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
    /// no wait did so first.
    fn gate(&mut self, id: TaskId) {
        self.task_mut(id).landing = Some((LandingStage::Checking, false));
        self.returned.remove(&id);
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

    // ---- requests ----

    fn open(&mut self, kind: Kind, deadline: Option<u64>) -> u64 {
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

    fn pending_shutdown(&self, m: usize) -> Option<u64> {
        self.requests
            .iter()
            .find(|(_, r)| r.kind == Kind::Shutdown { to: m } && r.state == RequestState::Pending)
            .map(|(id, _)| *id)
    }

    /// A pending request of the kind asked.
    fn answerable(&self, id: u64, plan: bool) -> Res<MRequest> {
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
    fn force_stop(&mut self, m: usize, id: u64, state: RequestState) {
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

    // ---- landings: the repo worker's reports and the person's review ----

    fn landing_at(&self, id: TaskId, epoch: u64, stage: LandingStage) -> Res {
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

    fn in_review(&self, lead: bool, id: TaskId) -> Res<&MTask> {
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
