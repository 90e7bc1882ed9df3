//! One team's state: tasks with their dependency index and ready queue, the roster,
//! the inboxes and the parked waiters.

use crate::error::{BoardError, Result};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::Instant;
use teamboard_protocol::{Member, Message, Repo, RequestId, Task, TaskId, TaskStatus, TeamRequest};

/// A session id, assigned by the daemon per connection.
pub type SessionId = u64;

/// The ready queue's ordering key: highest priority first, then lowest id.
pub(crate) type ReadyKey = (Reverse<i64>, TaskId);

/// A live claim's liveness: which session holds it and when its lease ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Lease {
    /// `None` after a restart, until the owner reconnects (or the grace period ends).
    pub session: Option<SessionId>,
    pub deadline: Instant,
}

/// A session parked in `wait_for_work`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Waiter {
    pub session: SessionId,
    /// The `wait_for_work` request to answer.
    pub request: u64,
    pub name: String,
    pub deadline: Option<Instant>,
}

/// A member plus what only the running daemon knows about it.
#[derive(Debug, Clone)]
pub(crate) struct MemberState {
    pub member: Member,
    pub session: Option<SessionId>,
    /// The facts its liveness is derived from (see `liveness`).
    pub live: crate::liveness::Live,
}

#[derive(Debug)]
pub(crate) struct Team {
    pub tasks: BTreeMap<TaskId, Task>,
    pub next_task_id: TaskId,
    /// Reverse edges of `blocked_by`: who waits for a task.
    pub dependents: HashMap<TaskId, Vec<TaskId>>,
    /// How many of a pending task's blockers are not completed yet.
    pub open_blockers: HashMap<TaskId, usize>,
    /// Ready tasks, by the role they require (`None` = anyone).
    pub ready: HashMap<Option<String>, BTreeSet<ReadyKey>>,
    pub leases: HashMap<TaskId, Lease>,
    pub members: BTreeMap<String, MemberState>,
    /// Unacknowledged messages by recipient, then id.
    pub inboxes: HashMap<String, BTreeMap<u64, Message>>,
    /// Parked waiters by arrival number (see `Board::next_arrival`), so that
    /// iteration is first come, first served.
    pub waiters: BTreeMap<u64, Waiter>,
    /// Protocol requests by id, whatever their state: they are the history of
    /// plans and shutdowns, and few.
    pub requests: BTreeMap<RequestId, TeamRequest>,
    /// When each pending request with a deadline runs out.
    pub request_deadlines: HashMap<RequestId, Instant>,
    /// Each task's newest plan request, whatever its state: its claim's decision
    /// when the epochs match.
    pub latest_plan: HashMap<TaskId, RequestId>,
    /// The pending shutdown request to each member that has one.
    pub pending_shutdowns: HashMap<String, RequestId>,
    /// The git repository the team works in, if the lead attached one.
    pub repo: Option<Repo>,
    /// Tasks whose completion passed its checks and waits in the merge queue.
    /// Their leases are not enforced: the work is boardd's to land.
    pub queued: BTreeSet<TaskId>,
    /// Created explicitly (see `teams`): it exists even with nothing in it.
    pub created: bool,
    /// Tasks sent back from review to an owner that is connected, by the
    /// claim's epoch, until the owner's next wait takes them up (see
    /// `review.rs`). Their leases wait too.
    pub returned: BTreeMap<TaskId, u64>,
    /// Budgets, what was spent and the calls in flight (see `spend`).
    pub spend: crate::spend::Ledger,
    /// Claims boardd ended by stopping their holder for a shutdown, with the
    /// holder and the epoch, until the task is claimed again: the holder's
    /// release, on its way when the stop landed, still leaves its note (see
    /// `Board::release`).
    pub stopped: HashMap<TaskId, (String, u64)>,
}

impl Default for Team {
    fn default() -> Self {
        Team {
            tasks: BTreeMap::new(),
            // Ids start at 1 so that 0 never names a task.
            next_task_id: 1,
            dependents: HashMap::new(),
            open_blockers: HashMap::new(),
            ready: HashMap::new(),
            leases: HashMap::new(),
            members: BTreeMap::new(),
            inboxes: HashMap::new(),
            waiters: BTreeMap::new(),
            requests: BTreeMap::new(),
            request_deadlines: HashMap::new(),
            latest_plan: HashMap::new(),
            pending_shutdowns: HashMap::new(),
            repo: None,
            queued: BTreeSet::new(),
            created: false,
            returned: BTreeMap::new(),
            spend: Default::default(),
            stopped: HashMap::new(),
        }
    }
}

impl Team {
    /// Whether `id`'s owner is done with it: its completion waits for a
    /// person's review, or was merged from review and lands without the owner
    /// ([`teamboard_protocol::Landing::owner_done`]).
    pub fn owner_done(&self, id: TaskId) -> bool {
        self.tasks
            .get(&id)
            .and_then(|t| t.landing.as_ref())
            .is_some_and(|l| l.owner_done())
    }

    /// Whether the lease of `id`'s claim is not enforced: boardd lands it
    /// (queued), a person reviews it, or its owner has yet to take it back
    /// from review (`returned`).
    pub fn lease_waived(&self, id: TaskId) -> bool {
        self.queued.contains(&id) || self.owner_done(id) || self.returned.contains_key(&id)
    }

    /// Task `id`, or `not_found` naming the team (`team` is its name).
    pub fn task(&self, id: TaskId, team: &str) -> Result<&Task> {
        self.tasks
            .get(&id)
            .ok_or_else(|| BoardError::no_task(id, team))
    }

    /// Task `id` for changing, or `not_found`.
    pub fn task_mut(&mut self, id: TaskId, team: &str) -> Result<&mut Task> {
        self.tasks
            .get_mut(&id)
            .ok_or_else(|| BoardError::no_task(id, team))
    }

    pub fn is_ready(&self, task: &Task) -> bool {
        task.status == TaskStatus::Pending
            && task.owner.is_none()
            // A pending task keeps a landing only while its conflict waits
            // for a person (`landing::conflict_outlives`).
            && task.landing.is_none()
            && self.open_blockers.get(&task.id).copied().unwrap_or(0) == 0
    }

    /// Puts a task into, or takes it out of, the ready queue to match its state,
    /// and sets its `ready` flag; answers whether it is ready. Every state change
    /// of a task goes through here (see `transition`), which keeps the queue exact.
    pub fn refresh_ready(&mut self, id: TaskId) -> bool {
        let ready = match self.tasks.get(&id) {
            Some(task) => self.is_ready(task),
            None => return false,
        };
        let Some(task) = self.tasks.get_mut(&id) else {
            return false;
        };
        task.ready = ready;
        let key = (Reverse(task.priority), task.id);
        if ready {
            self.ready.entry(task.role.clone()).or_default().insert(key);
        } else if let Some(set) = self.ready.get_mut(&task.role) {
            set.remove(&key);
        }
        ready
    }

    /// The best ready task a claimant of `role` may take.
    pub fn best_ready(&self, role: &str) -> Option<TaskId> {
        let any = self.ready.get(&None).and_then(|s| s.first());
        let own = self
            .ready
            .get(&Some(role.to_string()))
            .and_then(|s| s.first());
        match (any, own) {
            (Some(a), Some(b)) => Some(a.min(b).1),
            (Some(a), None) => Some(a.1),
            (None, Some(b)) => Some(b.1),
            (None, None) => None,
        }
    }

    /// [`Team::best_ready`] among the tasks `skip` leaves.
    pub fn best_ready_but(&self, role: &str, skip: impl Fn(TaskId) -> bool) -> Option<TaskId> {
        let first = |key: Option<String>| {
            self.ready
                .get(&key)
                .and_then(|s| s.iter().find(|k| !skip(k.1)).copied())
        };
        match (first(None), first(Some(role.to_string()))) {
            (Some(a), Some(b)) => Some(a.min(b).1),
            (a, b) => a.or(b).map(|k| k.1),
        }
    }

    pub fn ready_count(&self) -> usize {
        self.ready.values().map(BTreeSet::len).sum()
    }

    /// Blockers of `id` that are not completed, in id order.
    pub fn open_blockers_of(&self, task: &Task) -> Vec<TaskId> {
        task.blocked_by
            .iter()
            .copied()
            .filter(|b| {
                self.tasks
                    .get(b)
                    .is_some_and(|t| t.status != TaskStatus::Completed)
            })
            .collect()
    }

    /// Whether `from` is reachable from `start` along `blocked_by` edges, i.e. whether
    /// `start` (transitively) waits for `from`.
    pub fn waits_for(&self, start: TaskId, target: TaskId) -> bool {
        let mut stack = vec![start];
        let mut seen = BTreeSet::new();
        while let Some(id) = stack.pop() {
            if id == target {
                return true;
            }
            if !seen.insert(id) {
                continue;
            }
            if let Some(t) = self.tasks.get(&id) {
                stack.extend(t.blocked_by.iter().copied());
            }
        }
        false
    }
}
