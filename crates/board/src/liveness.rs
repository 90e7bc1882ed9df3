//! Liveness: what the roster says of each member's process, derived from facts
//! boardd holds, never from what the member says of itself.
//!
//! This module is the one owner of [`Member::liveness`]. The rest of the board
//! records facts (a session registered, was heard from, closed; a claim was
//! granted; a plan request opened; a process exited) and marks the team; once
//! per batch [`Board::settle_liveness`] derives every marked member's state
//! from those facts and, where it changed, emits a `member_status` event
//! (`alice is now stalled (last heard 4s ago)`). Deriving at one point, instead
//! of setting the state wherever a fact changes, keeps the rules in one `match`
//! ([`derive`]) and makes a batch that claims and releases in one go emit
//! nothing, since the state it ends in is the one it began with.
//!
//! **Stalled.** A member is stalled when it is connected but boardd has not
//! heard from it (any request) within twice the beat it declared at
//! registration (`beat_ms`), or when its lease ran out while it was connected.
//! - Why a declared beat, and not the lease alone: an idle teammate parked in
//!   `wait_for_work` holds no lease, so a stopped one would never be overdue.
//!   teammated sends `ping` once per beat for the whole session, whatever it is
//!   doing. Two beats, not one, so that one late beat on a loaded machine is not
//!   called a stall.
//! - Why the member declares it, and boardd does not assume it: a client that
//!   predates `ping` sends nothing while idle; assuming a beat would call every
//!   such client stalled for being old. Without a declared beat only the
//!   lease, which every claimant already keeps, can make a member stalled.
//! - Why not a boardd-sent ping that clients answer: clients do not read frames
//!   they did not ask for on their own schedule (teammated reads pushes in its
//!   heartbeat task only while it holds a claim), so every client would need a
//!   new reader, and old ones would never answer.
//! - Why not `/proc/PID/stat`'s `T` state: it sees `SIGSTOP` only, not a process
//!   hung in a deadlock or a runtime starved of its threads, and only on this
//!   machine. Silence covers all three.
//!
//! The stall is found by time passing: [`Board::next_deadline`] includes each
//! member's moment of silence, so boardd's actor wakes exactly then, and
//! [`Board::expire`] marks it. A request from the member's session clears it.
//!
//! **Dead.** boardd learns that a process is gone from its daemon (see boardd's
//! `procs`), which reports it with [`Board::process_exited`]; the board only
//! keeps the fact, for the process that registered last under the name.

use crate::team::{MemberState, Team};
use crate::{Board, Ctx, Now, SessionId};
use std::time::{Duration, Instant};
use teamboard_protocol::{EventKind, LiveState, Liveness, Member};

/// The facts of one member's process that the state is derived from.
#[derive(Debug, Clone, Default)]
pub(crate) struct Live {
    /// The session that registered last: the process boardd watches.
    pub registered_by: Option<SessionId>,
    /// When its session was last heard from (monotonic).
    pub heard: Option<Instant>,
    /// The same moment in ms since the epoch, for people.
    pub heard_ms: Option<i64>,
    /// The beat it declared; `None` for a client that predates `ping`.
    pub beat: Option<Duration>,
    /// Not heard from in time, or its lease ran out; cleared when heard.
    pub overdue: bool,
    /// It has asked for work, or held a task, since it registered.
    pub started: bool,
    /// Its process is gone.
    pub dead: bool,
    /// How the process ended, when its daemon could read it.
    pub exit: Option<String>,
}

impl Live {
    /// A registration by `session`, heard now.
    pub fn registered(session: SessionId, beat_ms: Option<u64>, now: Now) -> Live {
        Live {
            registered_by: Some(session),
            heard: Some(now.mono),
            heard_ms: Some(now.wall_ms),
            beat: beat_ms.filter(|ms| *ms > 0).map(Duration::from_millis),
            ..Live::default()
        }
    }

    /// When a connected member that is not overdue becomes stalled, unheard.
    fn stall_at(&self, connected: bool) -> Option<Instant> {
        if !connected || self.overdue || self.dead {
            return None;
        }
        self.heard?.checked_add(self.beat? * 2)
    }
}

/// The state a member's facts say it is in.
pub(crate) fn derive(team: &Team, m: &MemberState) -> LiveState {
    let live = &m.live;
    if live.dead {
        return LiveState::Dead;
    }
    if m.session.is_none() {
        return LiveState::Offline;
    }
    if live.overdue {
        return LiveState::Stalled;
    }
    match m.member.task {
        // The person decides what happens next: a plan, or work that waits for
        // review (its owner holds the claim and takes nothing else meanwhile).
        Some(task) if plan_pending(team, task) || team.owner_done(task) => {
            LiveState::AwaitingApproval
        }
        Some(_) => LiveState::Working,
        None if !live.started => LiveState::Starting,
        None => LiveState::Idle,
    }
}

fn plan_pending(team: &Team, task: teamboard_protocol::TaskId) -> bool {
    team.latest_plan
        .get(&task)
        .and_then(|r| team.requests.get(r))
        .is_some_and(|r| r.is_pending())
}

/// The event's words for a new state: `alice is now stalled (last heard 4s ago)`.
fn describe(m: &Member, state: LiveState, now: Now) -> String {
    let name = &m.name;
    let heard = m.liveness.as_ref().and_then(|l| l.last_heartbeat);
    let exit = m.liveness.as_ref().and_then(|l| l.exit.as_deref());
    match (state, heard, exit) {
        (LiveState::Stalled, Some(at), _) => {
            let secs = (now.wall_ms - at).max(0) / 1000;
            format!("{name} is now stalled (last heard {secs}s ago)")
        }
        (LiveState::Dead, _, Some(exit)) => format!("{name} is now dead ({exit})"),
        _ => format!("{name} is now {state}"),
    }
}

impl Board {
    /// Marks a team whose members' states may have changed.
    pub(crate) fn recheck_liveness(&mut self, team: &str) {
        if !self.live_check.contains(team) {
            self.live_check.insert(team.to_string());
        }
    }

    /// Derives the state of every member of the teams marked since the last
    /// call and emits an event for each that changed. boardd calls it once per
    /// batch, before it takes the batch's changes.
    pub fn settle_liveness(&mut self, now: Now) {
        for team in std::mem::take(&mut self.live_check) {
            let names: Vec<String> = match self.teams.get(&team) {
                Some(t) => t.members.keys().cloned().collect(),
                None => continue,
            };
            for name in names {
                self.settle_member(&team, &name, now, false);
            }
        }
        // Settling emits events, which mark the teams again: nothing is left to
        // derive.
        self.live_check.clear();
    }

    /// Derives one member's state; on a change, records it and emits the event
    /// (unless `quiet`: a registration's event is `member_registered`).
    pub(crate) fn settle_member(&mut self, team_name: &str, name: &str, now: Now, quiet: bool) {
        let Some(team) = self.teams.get_mut(team_name) else {
            return;
        };
        let Some(m) = team.members.get(name) else {
            return;
        };
        let state = derive(team, m);
        if m.member.liveness.as_ref().map(|l| l.state) == Some(state) {
            return;
        }
        let Some(m) = team.members.get_mut(name) else {
            return;
        };
        let last_heartbeat =
            m.live
                .heard_ms
                .or(m.member.liveness.as_ref().and_then(|l| l.last_heartbeat));
        m.member.liveness = Some(Liveness {
            state,
            since: now.wall_ms,
            last_heartbeat,
            exit: m.live.exit.clone().filter(|_| state == LiveState::Dead),
        });
        let detail = describe(&m.member, state, now);
        // Like `status`, only what outlives a restart is worth a row write.
        if !state.is_connected() {
            self.mark_member(team_name, name);
        }
        if quiet {
            return;
        }
        self.emit(
            team_name,
            "boardd",
            now.wall_ms,
            EventKind::MemberStatus,
            crate::About::member(name),
            detail,
        );
    }

    /// Notes that the session was heard from: every request passes here. The
    /// member's `last_seen` moves whichever session spoke under its name; its
    /// liveness only for its own session.
    pub fn touch(&mut self, ctx: &Ctx) {
        let Some(m) = self
            .teams
            .get_mut(ctx.team)
            .and_then(|t| t.members.get_mut(ctx.actor))
        else {
            return;
        };
        m.member.last_seen = ctx.now.wall_ms;
        if m.session != Some(ctx.session) {
            return;
        }
        m.live.heard = Some(ctx.now.mono);
        m.live.heard_ms = Some(ctx.now.wall_ms);
        if let Some(l) = m.member.liveness.as_mut() {
            l.last_heartbeat = Some(ctx.now.wall_ms);
        }
        if std::mem::take(&mut m.live.overdue) {
            self.recheck_liveness(ctx.team);
        }
    }

    /// Notes that the member asked for work or was handed a task: it has
    /// started.
    pub(crate) fn mark_started(&mut self, team: &str, name: &str) {
        if let Some(m) = self
            .teams
            .get_mut(team)
            .and_then(|t| t.members.get_mut(name))
            && !std::mem::replace(&mut m.live.started, true)
        {
            self.recheck_liveness(team);
        }
    }

    /// The process that registered `name` on `session` is gone; `exit` says how,
    /// when its daemon could read it. A later registration (a new process) is
    /// not affected.
    pub fn process_exited(
        &mut self,
        team: &str,
        name: &str,
        session: SessionId,
        exit: Option<String>,
    ) {
        let Some(m) = self
            .teams
            .get_mut(team)
            .and_then(|t| t.members.get_mut(name))
        else {
            return;
        };
        if m.live.registered_by != Some(session) {
            return;
        }
        m.live.dead = true;
        m.live.exit = exit;
        self.recheck_liveness(team);
    }

    /// Marks overdue the member whose session held a lease that ran out.
    pub(crate) fn lease_lapsed(&mut self, team: &str, session: SessionId) {
        let Some(t) = self.teams.get_mut(team) else {
            return;
        };
        if let Some(m) = t.members.values_mut().find(|m| m.session == Some(session)) {
            m.live.overdue = true;
            self.recheck_liveness(team);
        }
    }

    /// The earliest moment a connected member becomes stalled, unheard.
    pub(crate) fn next_stall(&self) -> Option<Instant> {
        self.teams
            .values()
            .flat_map(|t| t.members.values())
            .filter_map(|m| m.live.stall_at(m.session.is_some()))
            .min()
    }

    /// Marks overdue every member whose moment of silence has come.
    pub(crate) fn expire_stalls(&mut self, now: Now) {
        let mut due = Vec::new();
        for (name, t) in self.teams.iter_mut() {
            for m in t.members.values_mut() {
                if m.live
                    .stall_at(m.session.is_some())
                    .is_some_and(|d| d <= now.mono)
                {
                    m.live.overdue = true;
                    due.push(name.clone());
                }
            }
        }
        for team in due {
            self.recheck_liveness(&team);
        }
    }
}

/// What a restored member was last known to be: dead stays dead (with its
/// exit); anything else is offline as of the restart, since no session
/// survives one.
pub(crate) fn restored(member: &Member, now: Now) -> (Live, Liveness) {
    match &member.liveness {
        Some(l) if l.state == LiveState::Dead => (
            Live {
                dead: true,
                exit: l.exit.clone(),
                ..Live::default()
            },
            l.clone(),
        ),
        Some(l) if l.state == LiveState::Offline => (Live::default(), l.clone()),
        other => (
            Live::default(),
            Liveness {
                state: LiveState::Offline,
                since: now.wall_ms,
                last_heartbeat: other.as_ref().and_then(|l| l.last_heartbeat),
                exit: None,
            },
        ),
    }
}
