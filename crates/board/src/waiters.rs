//! Wait for work: a teammate parks until a message for it or a task it may claim
//! exists. Inbox comes before tasks, and a task is claimed for the waiter in the same
//! step that finds it, so two waiters can never be handed the same task.
//!
//! This is boardd's only registry of parked requests. A waiter is named by its
//! session and request id ([`Waiting`]); the daemon keeps no list of its own and
//! only looks up where the session's answers go.

use crate::SessionId;
use crate::error::{BoardError, Result};
use crate::team::Waiter;
use crate::{Board, Ctx, Handoff, Now, Waiting};
use std::time::Instant;
use teamboard_protocol::{ErrorCode, MemberStatus, Work};

impl Board {
    /// Parks request `request` of the session, or answers at once when there is
    /// work.
    ///
    /// Parking marks the member `idle`: a teammate that waits has nothing to do.
    pub fn park(
        &mut self,
        ctx: Ctx,
        request: u64,
        deadline: Option<Instant>,
    ) -> Result<Option<Work>> {
        let registered = self
            .team(ctx.team)
            .and_then(|t| t.members.get(ctx.actor))
            .is_some_and(|m| m.session == Some(ctx.session));
        if !registered {
            return Err(BoardError::new(
                ErrorCode::NotRegistered,
                format!(
                    "'{}' must register in team '{}' before waiting for work",
                    ctx.actor, ctx.team
                ),
            ));
        }
        let already = self
            .team(ctx.team)
            .is_some_and(|t| t.waiters.values().any(|w| w.session == ctx.session));
        if already {
            // Two parked waits would both be answered with the same messages, and
            // the second could claim a task while the first still looks idle.
            return Err(BoardError::state(format!(
                "'{}' is already waiting on this connection; one wait_for_work at a time",
                ctx.actor
            )));
        }
        self.mark_started(ctx.team, ctx.actor);
        if let Some(work) = self.work_for(ctx.team, ctx.actor, ctx.session, ctx.now) {
            return Ok(Some(work));
        }
        // A waiter that still holds a task is waiting for messages about it, not
        // idle; unless that task waits for a person's review.
        let member = self.team(ctx.team).and_then(|t| {
            let m = t.members.get(ctx.actor)?;
            let busy = m.member.task.is_some_and(|id| !t.owner_done(id));
            Some((m.member.status, busy))
        });
        if let Some((MemberStatus::Working, false)) = member {
            self.change_status(ctx.team, ctx.actor, ctx.actor, MemberStatus::Idle, ctx.now);
        }
        let arrival = self.next_arrival;
        self.next_arrival += 1;
        self.team_mut(ctx.team).waiters.insert(
            arrival,
            Waiter {
                session: ctx.session,
                request,
                name: ctx.actor.to_string(),
                deadline,
            },
        );
        Ok(None)
    }

    /// Work for one would-be waiter right now: its messages, or else a fresh claim.
    fn work_for(&mut self, team: &str, name: &str, session: SessionId, now: Now) -> Option<Work> {
        let t = self.team(team)?;
        if t.inboxes.get(name).is_some_and(|i| !i.is_empty()) {
            let messages = self.inbox(team, name);
            return Some(Work::Messages { messages });
        }
        let member = t.members.get(name)?;
        if member.member.status != MemberStatus::Shutdown
            && let Some(claim) = self.take_returned(team, name, now)
        {
            // Its own task, sent back from review: the claim it kept.
            return Some(Work::Task { claim });
        }
        let t = self.team(team)?;
        let member = t.members.get(name)?;
        if member.member.task.is_some() || member.member.status == MemberStatus::Shutdown {
            // One in-progress task at a time, and none for a teammate on its way
            // out: only messages can wake it.
            return None;
        }
        let role = member.member.role.clone();
        let id = self.next_claimable(team, name, &role, now)?;
        let claim = self.grant(team, id, name, session, now).ok()?;
        Some(Work::Task { claim })
    }

    /// Serves parked waiters in teams where something arrived since the last call,
    /// first come first served. Returns the waiters to answer, with their work.
    pub fn dispatch(&mut self, now: Now) -> Vec<Handoff> {
        let mut out = Vec::new();
        let teams = std::mem::take(&mut self.wake);
        for team in teams {
            let waiting: Vec<(u64, Waiter)> = match self.team(&team) {
                Some(t) => t.waiters.iter().map(|(k, w)| (*k, w.clone())).collect(),
                None => continue,
            };
            for (arrival, w) in waiting {
                if let Some(work) = self.work_for(&team, &w.name, w.session, now) {
                    self.team_mut(&team).waiters.remove(&arrival);
                    out.push((w.waiting(), work));
                }
            }
        }
        out
    }

    /// Removes waiters whose timeout passed; the caller answers them `timeout`.
    pub(crate) fn expire_waiters(&mut self, now: Now) -> Vec<Waiting> {
        let mut out = Vec::new();
        for team in self.teams.values_mut() {
            team.waiters.retain(|_, w| {
                let expired = w.deadline.is_some_and(|d| d <= now.mono);
                if expired {
                    out.push(w.waiting());
                }
                !expired
            });
        }
        out
    }

    /// Drops the session's waiter, if it has one (its request was abandoned).
    pub fn unpark(&mut self, session: SessionId) {
        for team in self.teams.values_mut() {
            team.waiters.retain(|_, w| w.session != session);
        }
    }

    /// Removes every waiter, for a daemon that is stopping: it answers them all.
    pub fn drain_waiters(&mut self) -> Vec<Waiting> {
        let mut out = Vec::new();
        for team in self.teams.values_mut() {
            out.extend(
                std::mem::take(&mut team.waiters)
                    .values()
                    .map(Waiter::waiting),
            );
        }
        out
    }
}

impl Waiter {
    fn waiting(&self) -> Waiting {
        Waiting {
            session: self.session,
            request: self.request,
        }
    }
}
