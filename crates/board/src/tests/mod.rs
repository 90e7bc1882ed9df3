//! Unit tests of the board core. Everything is deterministic: time is a fixed
//! `Instant` plus offsets, never a sleep.

mod cancel_retry;
mod changes;
mod checks;
mod claims;
mod dag;
mod edits;
mod ids;
mod inbox;
mod invariants;
mod landing;
mod landing_waits;
mod leases;
mod liveness;
mod model;
mod requests;
mod restore;
mod review;
mod roster;
mod spend;
mod transition;
mod waiters;
mod wakes;

use crate::{Board, BoardConfig, Changes, Ctx, Now, Result, SessionId, Snapshot};
use std::collections::BTreeMap;
use std::fmt::Debug;
use std::time::{Duration, Instant};
use teamboard_protocol::request::NewTask;
use teamboard_protocol::{Claim, ErrorCode, Event, LEAD, Member, Message, Task, TaskId};

/// The team most tests use.
pub(super) const TEAM: &str = "alpha";
/// The lead's session id; teammates get 1, 2, 3...
pub(super) const LEAD_SESSION: SessionId = 1_000_000;
/// Wall-clock milliseconds at offset zero.
pub(super) const WALL0: i64 = 1_700_000_000_000;

pub(super) fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

pub(super) fn ms(m: u64) -> Duration {
    Duration::from_millis(m)
}

/// A registered teammate: its team, name and session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Mate {
    pub team: &'static str,
    pub name: &'static str,
    pub session: SessionId,
}

/// The error code of a result that must be an error.
#[track_caller]
pub(super) fn code<T: Debug>(r: Result<T>) -> ErrorCode {
    r.expect_err("the operation should have been refused").code
}

pub(super) fn new_task(subject: &str) -> NewTask {
    NewTask {
        subject: subject.to_string(),
        ..Default::default()
    }
}

/// A board with a clock.
pub(super) struct H {
    pub board: Board,
    pub base: Instant,
    /// The current offset from `base`.
    pub t: Duration,
    next_session: SessionId,
}

impl H {
    pub fn new() -> Self {
        Self::with(BoardConfig::default())
    }

    pub fn with(config: BoardConfig) -> Self {
        H {
            board: Board::new(config),
            base: Instant::now(),
            t: Duration::ZERO,
            next_session: 1,
        }
    }

    /// A board with the default config changed by `f`.
    pub fn cfg(f: impl FnOnce(&mut BoardConfig)) -> Self {
        let mut config = BoardConfig::default();
        f(&mut config);
        Self::with(config)
    }

    /// Time at an offset from the base.
    pub fn at(&self, offset: Duration) -> Now {
        Now {
            mono: self.base + offset,
            wall_ms: WALL0 + offset.as_millis() as i64,
        }
    }

    pub fn now(&self) -> Now {
        self.at(self.t)
    }

    pub fn advance(&mut self, d: Duration) -> Now {
        self.t += d;
        self.now()
    }

    pub fn lead(&self) -> Ctx<'static> {
        self.lead_in(TEAM)
    }

    pub fn lead_in(&self, team: &'static str) -> Ctx<'static> {
        Ctx {
            team,
            actor: LEAD,
            session: LEAD_SESSION,
            now: self.now(),
        }
    }

    pub fn ctx(&self, m: Mate) -> Ctx<'static> {
        Ctx {
            team: m.team,
            actor: m.name,
            session: m.session,
            now: self.now(),
        }
    }

    pub fn new_session(&mut self) -> SessionId {
        let s = self.next_session;
        self.next_session += 1;
        s
    }

    /// A teammate that is not registered (yet).
    pub fn stranger(&mut self, team: &'static str, name: &'static str) -> Mate {
        Mate {
            team,
            name,
            session: self.new_session(),
        }
    }

    pub fn join(&mut self, name: &'static str, role: &str) -> Mate {
        self.join_in(TEAM, name, role)
    }

    pub fn join_in(&mut self, team: &'static str, name: &'static str, role: &str) -> Mate {
        let m = self.stranger(team, name);
        self.register(m, role);
        m
    }

    pub fn register(&mut self, m: Mate, role: &str) -> Member {
        let ctx = self.ctx(m);
        self.board.register(ctx, role, Some(4242)).unwrap()
    }

    pub fn add_task(&mut self, new: NewTask) -> Task {
        let ctx = self.lead();
        self.board.add_task(ctx, new).unwrap()
    }

    pub fn add(&mut self, subject: &str) -> TaskId {
        self.add_task(new_task(subject)).id
    }

    pub fn add_prio(&mut self, subject: &str, priority: i64) -> TaskId {
        self.add_task(NewTask {
            priority,
            ..new_task(subject)
        })
        .id
    }

    pub fn add_role(&mut self, subject: &str, role: &str) -> TaskId {
        self.add_task(NewTask {
            role: Some(role.to_string()),
            ..new_task(subject)
        })
        .id
    }

    pub fn blocked(&mut self, subject: &str, on: &[TaskId]) -> TaskId {
        self.add_task(NewTask {
            blocked_by: on.to_vec(),
            ..new_task(subject)
        })
        .id
    }

    pub fn task(&self, id: TaskId) -> Task {
        self.board.task(TEAM, id).unwrap().clone()
    }

    pub fn ready(&self, id: TaskId) -> bool {
        self.board.is_ready(TEAM, id)
    }

    pub fn member(&self, m: Mate) -> Member {
        self.board
            .members(m.team)
            .into_iter()
            .find(|x| x.name == m.name)
            .unwrap_or_else(|| panic!("{} is not on the roster of {}", m.name, m.team))
    }

    pub fn claim_next(&mut self, m: Mate) -> Option<Claim> {
        let ctx = self.ctx(m);
        self.board.claim_next(ctx).unwrap()
    }

    pub fn claim(&mut self, m: Mate, id: TaskId) -> Claim {
        let ctx = self.ctx(m);
        self.board.claim_task(ctx, id).unwrap()
    }

    pub fn complete(&mut self, m: Mate, id: TaskId, epoch: u64) -> Task {
        let ctx = self.ctx(m);
        self.board
            .complete_task(ctx, id, epoch, format!("done #{id}"))
            .unwrap()
    }

    pub fn fail(&mut self, m: Mate, id: TaskId, epoch: u64, error: &str) -> Task {
        let ctx = self.ctx(m);
        self.board
            .fail_task(ctx, id, epoch, error.to_string())
            .unwrap()
    }

    pub fn release(&mut self, m: Mate, id: TaskId, epoch: u64, error: Option<&str>) -> Task {
        let ctx = self.ctx(m);
        self.board
            .release_task(ctx, id, epoch, error.map(str::to_string), None)
            .unwrap()
    }

    /// Claims the next task and completes it, answering its id.
    pub fn run_next(&mut self, m: Mate) -> Option<TaskId> {
        let claim = self.claim_next(m)?;
        self.complete(m, claim.task.id, claim.epoch);
        Some(claim.task.id)
    }

    pub fn send(&mut self, from: Ctx<'static>, to: &str, content: &str) -> Message {
        self.board
            .send(
                from,
                to,
                teamboard_protocol::MessageKind::Message,
                content.to_string(),
                None,
            )
            .unwrap()
    }

    pub fn cancel(&mut self, id: TaskId) -> Task {
        let ctx = self.lead();
        self.board.cancel_task(ctx, id).unwrap()
    }

    pub fn retry(&mut self, id: TaskId) -> Task {
        let ctx = self.lead();
        self.board.retry_task(ctx, id).unwrap()
    }

    /// Runs expiry; answers the request ids of the waiters that timed out.
    pub fn expire(&mut self) -> Vec<u64> {
        let now = self.now();
        self.board.expire(now).iter().map(|w| w.request).collect()
    }

    /// Parks `m` with request id `request`.
    pub fn park(&mut self, m: Mate, request: u64) -> Option<teamboard_protocol::Work> {
        let ctx = self.ctx(m);
        self.board.park(ctx, request, None).unwrap()
    }

    /// Serves waiters; answers each one served by its request id.
    pub fn dispatch(&mut self) -> Vec<(u64, teamboard_protocol::Work)> {
        let now = self.now();
        requests(self.board.dispatch(now))
    }

    pub fn events(&mut self) -> Vec<Event> {
        self.board.take_changes().events
    }
}

/// Handoffs by the request id of the waiter served.
pub(super) fn requests(handoffs: Vec<crate::Handoff>) -> Vec<(u64, teamboard_protocol::Work)> {
    handoffs
        .into_iter()
        .map(|(w, work)| (w.request, work))
        .collect()
}

/// What a store would hold after applying every batch: the rows, keyed as the store
/// keys them.
#[derive(Debug, Default)]
pub(super) struct Store {
    pub tasks: BTreeMap<(String, TaskId), Task>,
    pub members: BTreeMap<(String, String), Member>,
    pub messages: BTreeMap<u64, (String, Message)>,
    pub next_message_id: u64,
    pub requests: BTreeMap<u64, (String, teamboard_protocol::TeamRequest)>,
    pub repos: BTreeMap<String, teamboard_protocol::Repo>,
    pub teams: std::collections::BTreeSet<String>,
    pub events: Vec<Event>,
    pub budgets:
        BTreeMap<(String, String), (teamboard_protocol::spend::Budget, crate::spend::BudgetMarks)>,
    pub usage: Vec<(String, teamboard_protocol::spend::UsageRecord)>,
    pub held: BTreeMap<(String, String, u64), teamboard_protocol::spend::HeldCall>,
    pub blocks: BTreeMap<String, teamboard_protocol::spend::AccountBlock>,
}

impl Store {
    pub fn apply(&mut self, c: Changes) {
        for (team, task) in c.tasks {
            self.tasks.insert((team, task.id), task);
        }
        for key in c.tasks_deleted {
            self.tasks.remove(&key);
        }
        for (team, m) in c.members {
            self.members.insert((team, m.name.clone()), m);
        }
        for (team, msg) in c.messages_added {
            self.messages.insert(msg.id, (team, msg));
        }
        for id in c.messages_acked {
            self.messages.remove(&id);
        }
        self.next_message_id = c.next_message_id;
        for (team, r) in c.requests {
            self.requests.insert(r.id, (team, r));
        }
        for (team, r) in c.repos {
            self.repos.insert(team, r);
        }
        self.teams.extend(c.teams);
        self.events.extend(c.events);
        for (team, scope, per, budget) in c.budgets {
            let key = (team.clone(), format!("{scope:?}/{per:?}"));
            match budget {
                Some(b) => self.budgets.insert(key, b),
                None => self.budgets.remove(&key),
            };
        }
        self.usage.extend(c.usage);
        for (team, member, id, call) in c.held {
            match call {
                Some(call) => self.held.insert((team, member, id), call),
                None => self.held.remove(&(team, member, id)),
            };
        }
        for b in c.account_blocks {
            self.blocks.insert(b.account.clone(), b);
        }
    }

    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            tasks: self
                .tasks
                .iter()
                .map(|((team, _), t)| (team.clone(), t.clone()))
                .collect(),
            members: self
                .members
                .iter()
                .map(|((team, _), m)| (team.clone(), m.clone()))
                .collect(),
            messages: self.messages.values().cloned().collect(),
            next_message_id: self.next_message_id,
            next_event_seq: self.events.last().map_or(1, |e| e.seq + 1),
            requests: self.requests.values().cloned().collect(),
            repos: self
                .repos
                .iter()
                .map(|(t, r)| (t.clone(), r.clone()))
                .collect(),
            teams: self.teams.iter().cloned().collect(),
            // As the store's query: the highest task id each team's events name.
            last_task_ids: self
                .events
                .iter()
                .filter_map(|e| Some((e.team.clone(), e.task?)))
                .fold(BTreeMap::new(), |mut m, (team, id)| {
                    let last: &mut TaskId = m.entry(team).or_default();
                    *last = (*last).max(id);
                    m
                })
                .into_iter()
                .collect(),
            budgets: self
                .budgets
                .iter()
                .map(|((team, _), (b, marks))| (team.clone(), b.clone(), *marks))
                .collect(),
            usage: self.usage.clone(),
            held: self
                .held
                .iter()
                .map(|((team, _, _), c)| (team.clone(), c.clone()))
                .collect(),
            account_blocks: self.blocks.values().cloned().collect(),
        }
    }
}
