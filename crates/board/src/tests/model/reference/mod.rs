//! The reference model: the board's rules for one team, written the plain way
//! (maps, a vector, a clock in milliseconds) with nothing derived kept apart
//! from what it is derived from. Readiness, the merge queue and who holds what
//! are computed from the tasks each time they are asked for, where the board
//! keeps indexes (ready queues, open blocker counts, `queued`, `member.task`)
//! that it must keep in step.

mod claims;
mod landings;
mod requests;
mod roster;
mod tasks;

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
}
