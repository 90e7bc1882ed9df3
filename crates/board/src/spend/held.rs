//! Calls in flight whose caller went away: a closed session, or a restart of
//! boardd. Each waits the restart grace for its own process to come back and
//! settle it (a client repeats its calls once it has reconnected), and is
//! charged at its worst case after that, since it may have been made and
//! billed. Restoring the ledger after a restart lives here too: it is where
//! calls in flight come back without a session.

use super::budgets::mono_at;
use super::ledger::Held;
use crate::{Board, Ctx, Now, SessionId};
use std::time::Instant;
use teamboard_protocol::TokenUsage;
use teamboard_protocol::spend::{HeldCall, UsageRecord};

impl Board {
    /// A session closed: its parked reservations go, and the calls it had in
    /// flight wait, for the restart grace, for its process to reconnect and
    /// settle them (a client repeats its calls once it has reconnected); then
    /// they are charged at their worst case, since they may have been made
    /// and billed.
    pub(crate) fn calls_closed(&mut self, session: SessionId, now: Now) {
        let gone: Vec<u64> = self
            .calls
            .parked
            .iter()
            .filter(|(_, p)| p.session == session)
            .map(|(n, _)| *n)
            .collect();
        for n in gone {
            if let Some(p) = self.calls.parked.remove(&n) {
                self.set_wait(&p.team, &p.member, None);
            }
        }
        let due = now.mono + self.config.restart_grace;
        for t in self.teams.values_mut() {
            for h in t.spend.held.values_mut() {
                if h.session == Some(session) {
                    h.session = None;
                    h.due = Some(due);
                }
            }
        }
    }

    /// The earliest moment a call in flight without a session is charged.
    pub(crate) fn next_orphan_due(&self) -> Option<Instant> {
        self.teams
            .values()
            .flat_map(|t| t.spend.held.values().filter_map(|h| h.due))
            .min()
    }

    /// Charges the calls in flight whose process did not come back in time.
    pub(crate) fn charge_due_orphans(&mut self, now: Now) {
        let mut due = Vec::new();
        for (name, t) in &self.teams {
            for (key, h) in &t.spend.held {
                if h.due.is_some_and(|d| d <= now.mono) {
                    due.push((name.clone(), key.clone()));
                }
            }
        }
        for (team, (member, id)) in due {
            self.charge_orphan(&team, &member, id, now);
        }
    }

    /// A member registered: calls its earlier process had in flight are
    /// settled by this one if it is the same process (boardd restarted under
    /// it), and charged at their worst case otherwise.
    pub(crate) fn calls_registered(&mut self, ctx: &Ctx, pid: Option<u32>) {
        let mut orphans = Vec::new();
        if let Some(t) = self.teams.get_mut(ctx.team) {
            for (key, h) in t.spend.held.iter_mut() {
                if key.0 != ctx.actor || h.session == Some(ctx.session) {
                    continue;
                }
                if h.session.is_none() && pid.is_some() && h.call.pid == pid {
                    h.session = Some(ctx.session);
                    h.due = None;
                } else {
                    orphans.push(key.1);
                }
            }
        }
        for id in orphans {
            self.charge_orphan(ctx.team, ctx.actor, id, ctx.now);
        }
    }

    fn charge_orphan(&mut self, team: &str, member: &str, id: u64, now: Now) {
        let Some(call) = self.end_call(team, member, id) else {
            return;
        };
        let input = call.need.input_tokens;
        let rec = UsageRecord {
            at: now.wall_ms,
            member: call.member.clone(),
            task: call.task,
            model: Some(call.model.clone()),
            account: Some(call.account.clone()),
            tokens: TokenUsage {
                input,
                output: call.need.tokens.saturating_sub(input),
                ..TokenUsage::default()
            },
            pricing: call.pricing.clone(),
            estimated: true,
            reservation: Some(call.id),
        };
        let ctx = Ctx {
            team,
            actor: "boardd",
            session: 0,
            now,
        };
        self.charge(&ctx, rec);
    }

    /// Puts back the budgets, the ledger, the calls in flight and the
    /// accounts' blocks after a restart. A call in flight waits for its
    /// process to register again (see [`Board::calls_registered`]). A window
    /// that ran out is looked at again when it rolls, as before the restart.
    pub(crate) fn restore_spend(
        &mut self,
        budgets: Vec<(
            String,
            teamboard_protocol::spend::Budget,
            super::BudgetMarks,
        )>,
        usage: Vec<(String, UsageRecord)>,
        held: Vec<(String, HeldCall)>,
        blocks: Vec<teamboard_protocol::spend::AccountBlock>,
        now: Now,
    ) {
        for (team, budget, marks) in budgets {
            let key = (budget.scope.clone(), budget.per_ms);
            let entry = super::ledger::Entry {
                budget,
                marks,
                rolls_at: None,
            };
            self.team_mut(&team).spend.budgets.insert(key, entry);
        }
        for (team, rec) in usage {
            self.team_mut(&team).spend.record(&rec);
        }
        // Its process has the restart grace to come back and settle it, as
        // an owner has to reclaim its task.
        let due = now.mono + self.config.restart_grace;
        for (team, call) in held {
            let key = (call.member.clone(), call.id);
            self.accounts
                .start(&call.account, call.need.tokens, call.at);
            // Known before the restart: its first call is not awaited again.
            self.accounts.heard(&call.account);
            let held = Held {
                call,
                session: None,
                due: Some(due),
            };
            self.team_mut(&team).spend.held.insert(key, held);
        }
        for t in self.teams.values_mut() {
            let ledger = &t.spend;
            let rolls: Vec<_> = (ledger.budgets.iter())
                .filter_map(|(key, e)| {
                    let at = ledger.rolls_at(e, e.marks.refused?, now.wall_ms)?;
                    Some((key.clone(), (mono_at(now, at), at)))
                })
                .collect();
            for (key, at) in rolls {
                t.spend
                    .budgets
                    .entry(key)
                    .and_modify(|e| e.rolls_at = Some(at));
            }
        }
        for b in &blocks {
            self.account_blocks.insert(b.account.clone(), b.clone());
        }
        self.accounts.restore(blocks);
    }
}
