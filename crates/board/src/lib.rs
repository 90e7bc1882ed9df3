//! The board as a pure state machine: no I/O, no clocks, no threads.
//!
//! `boardd` owns one [`Board`] inside its single writer actor. Every mutating method
//! takes a [`Ctx`] (who is acting, in which team, and the time) and records what it
//! changed; the actor takes those [`Changes`] after each batch, persists them in one
//! transaction, and only then answers. Keeping the rules here, apart from sockets and
//! SQLite, lets the unit tests cover claims, dependencies, epochs, attempts and
//! inboxes exhaustively and fast.

mod changes;
mod checks;
mod claims;
mod edits;
mod error;
mod inbox;
mod landing;
mod liveness;
mod requests;
mod restore;
mod review;
mod roster;
mod spend;
mod tasks;
mod team;
mod teams;
mod transition;
mod waiters;
mod worktrees;

#[cfg(test)]
mod tests;

pub use changes::Changes;
use changes::Dirty;
pub use error::{BoardError, Result};
pub use landing::{
    Blocked, Completion, Conflict, Dropped, GateJob, GateRefusal, LandJob, LandRefusal, Retried,
    commit_message, short,
};
pub use requests::{DEFAULT_SHUTDOWN_TIMEOUT, Stop};
pub use restore::Snapshot;
pub use review::MAX_FEEDBACK_LEN;
pub use spend::{BudgetMarks, MAX_PERIOD_MS, Pricer};
pub use tasks::{MAX_CHECK_LEN, MAX_CHECKS, check_checks};
pub use team::SessionId;
pub use worktrees::OpenJob;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use team::Team;
use teamboard_protocol::{Event, EventKind, Task, TaskId};

/// Rules that are configured, not hard-coded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BoardConfig {
    /// Claims per task before a failed or abandoned attempt marks it `failed`.
    pub max_attempts: u32,
    /// How long a claim lives without a heartbeat.
    pub lease_ttl: Duration,
    /// After a restart, how long an owner has to reconnect before its claim lapses.
    pub restart_grace: Duration,
    /// The largest message content accepted, in bytes.
    pub max_message_len: usize,
}

impl Default for BoardConfig {
    fn default() -> Self {
        BoardConfig {
            max_attempts: 3,
            lease_ttl: Duration::from_secs(30),
            restart_grace: Duration::from_secs(30),
            max_message_len: 256 * 1024,
        }
    }
}

/// The time of an operation: monotonic for leases, wall clock for timestamps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Now {
    pub mono: Instant,
    /// Milliseconds since the Unix epoch.
    pub wall_ms: i64,
}

/// Who acts, where, and when.
#[derive(Debug, Clone, Copy)]
pub struct Ctx<'a> {
    pub team: &'a str,
    /// The session's name: a teammate's name or `lead`.
    pub actor: &'a str,
    pub session: SessionId,
    pub now: Now,
}

/// What an event is about, besides its team: any of a task, a member, a message.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct About<'a> {
    pub task: Option<TaskId>,
    pub member: Option<&'a str>,
    pub message: Option<u64>,
    pub request: Option<u64>,
}

impl<'a> About<'a> {
    pub fn task(task: impl Into<Option<TaskId>>, member: Option<&'a str>) -> Self {
        let task = task.into();
        About {
            task,
            member,
            ..Default::default()
        }
    }

    pub fn member(name: &'a str) -> Self {
        About {
            member: Some(name),
            ..Default::default()
        }
    }

    pub fn with_message(self, id: u64) -> Self {
        About {
            message: Some(id),
            ..self
        }
    }
}

/// A parked `wait_for_work`: the session that sent it and the request's id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Waiting {
    pub session: SessionId,
    pub request: u64,
}

/// What `dispatch` hands to a parked waiter.
pub type Handoff = (Waiting, teamboard_protocol::Work);

/// An event that its session must hear of whether or not it subscribed: the end
/// of a claim it held, made by someone else (the lead's cancel, an expired lease).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    pub session: SessionId,
    pub event: Event,
}

/// The whole board: every team, plus the daemon-wide counters.
#[derive(Debug)]
pub struct Board {
    config: BoardConfig,
    teams: BTreeMap<String, Team>,
    next_message_id: u64,
    next_request_id: u64,
    next_event_seq: u64,
    /// Numbers parked waiters in arrival order.
    next_arrival: u64,
    dirty: Dirty,
    /// Events owed to a session beyond its subscription; see [`Notice`].
    notices: Vec<Notice>,
    /// Processes to stop, decided by shutdown requests; see [`Stop`].
    stops: Vec<Stop>,
    /// Landings dropped because their claim ended: the owner's waiting
    /// `complete_task` is to be answered and its checks interrupted.
    dropped: Vec<Dropped>,
    /// Teams in which a waiter might now be served (a message arrived or a task
    /// became ready). `dispatch` looks only at these.
    wake: std::collections::BTreeSet<String>,
    /// Teams whose members' liveness may have changed; see `liveness`.
    live_check: std::collections::BTreeSet<String>,
    /// Prices model calls; see `spend`.
    pricer: Option<spend::PricerFn>,
    /// Provider accounts' rate limits and blocks.
    accounts: spend::Accounts,
    /// Reservations waiting for an account's capacity.
    calls: spend::Calls,
    /// Each account's latest block, as the store keeps it.
    account_blocks: BTreeMap<String, teamboard_protocol::spend::AccountBlock>,
}

impl Board {
    pub fn new(config: BoardConfig) -> Self {
        Board {
            config,
            teams: BTreeMap::new(),
            next_message_id: 1,
            next_request_id: 1,
            next_event_seq: 1,
            next_arrival: 1,
            dirty: Dirty::default(),
            notices: Vec::new(),
            stops: Vec::new(),
            dropped: Vec::new(),
            wake: Default::default(),
            live_check: Default::default(),
            pricer: None,
            accounts: Default::default(),
            calls: Default::default(),
            account_blocks: BTreeMap::new(),
        }
    }

    pub fn config(&self) -> &BoardConfig {
        &self.config
    }

    /// Everything changed since the last call, for the store to persist.
    pub fn take_changes(&mut self) -> Changes {
        let dirty = std::mem::take(&mut self.dirty);
        let mut out = Changes {
            events: dirty.events,
            next_message_id: self.next_message_id,
            ..Default::default()
        };
        for (team, id) in dirty.requests {
            if let Some(r) = self.teams.get(&team).and_then(|t| t.requests.get(&id)) {
                out.requests.push((team, r.clone()));
            }
        }
        for team in dirty.repos {
            if let Some(r) = self.teams.get(&team).and_then(|t| t.repo.as_ref()) {
                out.repos.push((team, r.clone()));
            }
        }
        for (team, id) in dirty.tasks {
            if let Some(task) = self.teams.get(&team).and_then(|t| t.tasks.get(&id)) {
                out.tasks.push((team, task.clone()));
            }
        }
        for (team, name) in dirty.members {
            if let Some(m) = self.teams.get(&team).and_then(|t| t.members.get(&name)) {
                out.members.push((team, m.member.clone()));
            }
        }
        for (team, id) in dirty.messages_added {
            // A message sent and acknowledged in the same batch is never written.
            if dirty.messages_acked.contains(&id) {
                continue;
            }
            let found = self
                .teams
                .get(&team)
                .and_then(|t| t.inboxes.values().find_map(|inbox| inbox.get(&id)));
            if let Some(msg) = found {
                out.messages_added.push((team, msg.clone()));
            }
        }
        for (team, key) in dirty.budgets {
            let budget = self
                .teams
                .get(&team)
                .and_then(|t| t.spend.budgets.get(&key))
                .map(|e| (e.budget.clone(), e.marks));
            out.budgets.push((team, key.0, key.1, budget));
        }
        for (team, member, id) in dirty.held {
            let held = self
                .teams
                .get(&team)
                .and_then(|t| t.spend.held.get(&(member.clone(), id)))
                .map(|h| h.call.clone());
            out.held.push((team, member, id, held));
        }
        for name in dirty.account_blocks {
            if let Some(b) = self.account_blocks.get(&name) {
                out.account_blocks.push(b.clone());
            }
        }
        out.usage = dirty.usage;
        out.teams = dirty.teams.into_iter().collect();
        out.messages_acked = dirty.messages_acked.into_iter().collect();
        out.tasks_deleted = dirty.tasks_deleted.into_iter().collect();
        out
    }

    /// The notices raised since the last call.
    pub fn take_notices(&mut self) -> Vec<Notice> {
        std::mem::take(&mut self.notices)
    }

    /// Whether anything changed since the last [`Board::take_changes`].
    pub fn has_changes(&self) -> bool {
        !self.dirty.is_empty()
    }

    fn team(&self, name: &str) -> Option<&Team> {
        self.teams.get(name)
    }

    /// A team and one of its tasks; a team that does not exist has no tasks.
    fn team_task(&self, team: &str, id: TaskId) -> Result<(&Team, &Task)> {
        let t = self
            .teams
            .get(team)
            .ok_or_else(|| BoardError::no_task(id, team))?;
        Ok((t, t.task(id, team)?))
    }

    fn team_mut(&mut self, name: &str) -> &mut Team {
        self.teams.entry(name.to_string()).or_default()
    }

    /// Names of all teams that have any task or member.
    pub fn team_names(&self) -> Vec<String> {
        self.teams
            .iter()
            .filter(|(_, t)| !t.tasks.is_empty() || !t.members.is_empty())
            .map(|(n, _)| n.clone())
            .collect()
    }

    fn mark_task(&mut self, team: &str, id: TaskId) {
        self.dirty.tasks.insert((team.to_string(), id));
    }

    fn mark_member(&mut self, team: &str, name: &str) {
        self.dirty
            .members
            .insert((team.to_string(), name.to_string()));
    }

    /// Appends an event to the history.
    fn emit(
        &mut self,
        team: &str,
        actor: &str,
        at: i64,
        kind: EventKind,
        about: About,
        detail: String,
    ) {
        let seq = self.next_event_seq;
        self.next_event_seq += 1;
        // Whatever made an event may have changed a member's state.
        self.recheck_liveness(team);
        self.dirty.events.push(Event {
            seq,
            team: team.to_string(),
            at,
            actor: actor.to_string(),
            kind,
            task: about.task,
            member: about.member.map(str::to_string),
            message: about.message,
            request: about.request,
            detail,
        });
    }

    /// [`Board::emit`] of the session's own change.
    fn emit_as(&mut self, ctx: &Ctx, kind: EventKind, about: About, detail: String) {
        self.emit(ctx.team, ctx.actor, ctx.now.wall_ms, kind, about, detail);
    }

    /// The earliest moment at which [`Board::expire`] has something to do.
    pub fn next_deadline(&self) -> Option<Instant> {
        // A queued task's lease is not enforced (see `landing`), nor one in
        // review (`review`), so its deadline must not wake the actor either.
        let leases = self.teams.values().flat_map(|t| {
            t.leases
                .iter()
                .filter(|(id, _)| !t.lease_waived(**id))
                .map(|(_, l)| l.deadline)
        });
        let waits = self
            .teams
            .values()
            .flat_map(|t| t.waiters.values().filter_map(|w| w.deadline));
        leases
            .chain(waits)
            .chain(self.next_request_deadline())
            .chain(self.next_stall())
            .chain(self.calls.next_wake())
            .chain(self.next_orphan_due())
            .chain(self.teams.values().flat_map(|t| {
                t.spend
                    .budgets
                    .values()
                    .filter_map(|e| e.rolls_at.map(|r| r.0))
            }))
            .min()
    }
}
