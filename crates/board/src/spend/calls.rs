//! Model calls: a reservation before each, granted when the budgets have room
//! and the account has capacity, and its settlement after.
//!
//! A reservation that must wait for an account parks here, like a
//! `wait_for_work`, and is answered by [`Board::take_calls`] when capacity
//! comes (a call ends, a window resets, a block ends). Parked reservations
//! are served in arrival order per account, so a small call does not starve
//! a big one. Budgets are asked before capacity: a call that could not be
//! paid for is refused at once rather than after a wait.

use super::accounts::Capacity;
use super::budgets::{Fit, mono_at};
use super::ledger::Held;
use crate::error::{BoardError, Result};
use crate::{About, Board, Ctx, Now, SessionId, Waiting};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;
use teamboard_protocol::request::{ReserveArgs, UsageArgs};
use teamboard_protocol::spend::{
    Amounts, HeldCall, MemberWait, Pricing, Reservation, Settled, UsageRecord,
};
use teamboard_protocol::{ErrorCode, EventKind, LEAD, TokenUsage};

/// Prices a model's tokens: boardd's price table (see `teamboard-prices`).
pub type Pricer = dyn Fn(&str, &TokenUsage) -> Pricing + Send + Sync;

/// The most accounts a chain may name.
const MAX_CHAIN: usize = 8;
/// The longest account or model name.
const MAX_NAME: usize = 128;
/// The most tokens one call may reserve, input or output: far beyond any
/// model's context, and small enough that no sum of them overflows.
const MAX_CALL_TOKENS: u64 = 100_000_000;

/// An account or model name boardd keeps: short, and no control characters.
fn printable(s: &str) -> bool {
    s.len() <= MAX_NAME && !s.chars().any(char::is_control)
}

/// Refuses a reservation boardd cannot hold to: every account is shared by
/// the whole daemon, so one client's nonsense must not reach them.
fn check_reserve(args: &ReserveArgs) -> Result<()> {
    if args.chain.is_empty() || args.chain.len() > MAX_CHAIN {
        return Err(BoardError::invalid(format!(
            "a call names from 1 to {MAX_CHAIN} accounts"
        )));
    }
    if args.input > MAX_CALL_TOKENS || args.output > MAX_CALL_TOKENS {
        return Err(BoardError::invalid(format!(
            "a call reserves at most {MAX_CALL_TOKENS} input and output tokens"
        )));
    }
    for a in &args.chain {
        // A model may be unknown (an agent waiting out a login's reset says
        // none); an account is always named.
        if a.name.is_empty() || !printable(&a.name) || !printable(&a.model) {
            return Err(BoardError::invalid(format!(
                "an account name is 1 to {MAX_NAME} bytes of printable text, and a model's \
                 at most {MAX_NAME}"
            )));
        }
        let l = a.limits;
        if l.concurrent == Some(0)
            || l.requests_per_minute == Some(0)
            || l.tokens_per_minute == Some(0)
        {
            return Err(BoardError::invalid(format!(
                "account {}: a rate limit of 0 would hold every call forever; leave it out for none",
                a.name
            )));
        }
    }
    Ok(())
}

/// A reservation that waits for capacity.
#[derive(Debug, Clone)]
pub(crate) struct Parked {
    pub(super) team: String,
    pub(super) member: String,
    pub(super) session: SessionId,
    request: u64,
    pid: Option<u32>,
    args: ReserveArgs,
    since: Instant,
    /// When it may be served, as last worked out; `None`: when a call ends.
    wake: Option<Instant>,
    /// The account it waits on, as last worked out: later reservations on it
    /// do not jump it.
    on: Option<String>,
}

/// Reservations waiting for capacity, by arrival.
#[derive(Debug, Default)]
pub(crate) struct Calls {
    pub(super) parked: BTreeMap<u64, Parked>,
    next: u64,
    /// Answers for parked reservations, for the daemon to send.
    answers: Vec<(Waiting, Result<Reservation>)>,
}

impl Calls {
    pub fn waiting_on(&self, account: &str) -> u32 {
        let n = self
            .parked
            .values()
            .filter(|p| p.args.chain.iter().any(|a| a.name == account))
            .count();
        u32::try_from(n).unwrap_or(u32::MAX)
    }

    pub fn next_wake(&self) -> Option<Instant> {
        self.parked.values().filter_map(|p| p.wake).min()
    }
}

/// What one try at a reservation came to.
enum Step {
    Granted(Reservation),
    Refused(BoardError),
    /// Not yet: when to look again (`None`: when a call ends), and why, for
    /// the member's roster line; the account it waits on.
    Wait(Option<i64>, MemberWait, String),
}

impl Board {
    /// Sets the function that prices calls; until then every call is unpriced.
    pub fn set_pricer(&mut self, pricer: std::sync::Arc<Pricer>) {
        self.pricer = Some(super::PricerFn(pricer));
    }

    fn price(&self, model: &str, tokens: &TokenUsage) -> Pricing {
        match &self.pricer {
            Some(p) => (p.0)(model, tokens),
            None => Pricing::Unpriced {
                reason: format!("boardd has no price table for {model}"),
            },
        }
    }

    /// The member behind the session, or the lead; its process id.
    fn spender(&self, ctx: &Ctx) -> Result<Option<u32>> {
        if ctx.actor == LEAD {
            return Ok(None);
        }
        self.member_of_session(ctx).map(|m| m.pid)
    }

    /// Reserves a call's worst case. `Ok(Some)`: granted now; `Ok(None)`:
    /// parked until the account has capacity, answered by `take_calls`.
    pub fn reserve_call(
        &mut self,
        ctx: Ctx,
        request: u64,
        args: ReserveArgs,
    ) -> Result<Option<Reservation>> {
        let pid = self.spender(&ctx)?;
        check_reserve(&args)?;
        if let Some(id) = args.task {
            self.task(ctx.team, id)?;
        }
        // Asked again (the answer was lost with a connection, and the client
        // repeats the call after it reconnects): the same answer, or the same
        // wait, now owed to this request.
        let key = (ctx.actor.to_string(), args.id);
        if let Some(h) = self.team(ctx.team).and_then(|t| t.spend.held.get(&key)) {
            let account = args.chain.iter().position(|a| a.name == h.call.account);
            return Ok(Some(Reservation {
                id: args.id,
                account: account.unwrap_or(0),
                account_name: h.call.account.clone(),
                pricing: h.call.pricing.clone(),
                waited_ms: 0,
            }));
        }
        if let Some(p) = self
            .calls
            .parked
            .values_mut()
            .find(|p| p.team == ctx.team && p.member == ctx.actor && p.args.id == args.id)
        {
            p.session = ctx.session;
            p.request = request;
            return Ok(None);
        }
        for a in &args.chain {
            self.accounts.configure(&a.name, a.limits);
        }
        let mut parked = Parked {
            team: ctx.team.to_string(),
            member: ctx.actor.to_string(),
            session: ctx.session,
            request,
            pid,
            args,
            since: ctx.now.mono,
            wake: None,
            on: None,
        };
        // Arrival order per account: one that others already wait on is not
        // jumped.
        let queued: BTreeSet<String> = self
            .calls
            .parked
            .values()
            .filter_map(|p| p.on.clone())
            .collect();
        match self.try_grant(&parked, ctx.now, &queued) {
            Step::Granted(r) => Ok(Some(r)),
            Step::Refused(e) => Err(e),
            Step::Wait(at, wait, account) => {
                parked.wake = at.map(|at| mono_at(ctx.now, at));
                parked.on = Some(account).filter(|a| !a.is_empty());
                self.set_wait(ctx.team, ctx.actor, Some(wait));
                let n = self.calls.next;
                self.calls.next += 1;
                self.calls.parked.insert(n, parked);
                Ok(None)
            }
        }
    }

    /// Serves parked reservations that can go now; their answers are taken
    /// with [`Board::take_call_answers`].
    pub fn serve_calls(&mut self, now: Now) {
        // Budgets whose window rolled may have room again.
        let rolled: Vec<String> = self
            .teams
            .iter()
            .filter(|(_, t)| {
                t.spend
                    .budgets
                    .values()
                    .any(|e| e.rolls_at.is_some_and(|(at, _)| at <= now.mono))
            })
            .map(|(n, _)| n.clone())
            .collect();
        for team in rolled {
            self.budget_freed(&team, now);
        }
        if self.calls.parked.is_empty() {
            return;
        }
        let mut blocked: BTreeSet<String> = BTreeSet::new();
        let arrivals: Vec<u64> = self.calls.parked.keys().copied().collect();
        for n in arrivals {
            let Some(p) = self.calls.parked.get(&n).cloned() else {
                continue;
            };
            match self.try_grant(&p, now, &blocked) {
                Step::Wait(at, wait, account) => {
                    let on = Some(account.clone()).filter(|a| !a.is_empty());
                    blocked.insert(account);
                    if let Some(q) = self.calls.parked.get_mut(&n) {
                        q.wake = at.map(|at| mono_at(now, at));
                        q.on = on;
                    }
                    self.set_wait(&p.team, &p.member, Some(wait));
                }
                step => {
                    self.calls.parked.remove(&n);
                    // A budget's refusal keeps the wait it just set; any
                    // other answer ends the wait for capacity.
                    let budget_wait = self
                        .team(&p.team)
                        .and_then(|t| t.members.get(&p.member))
                        .and_then(|m| m.member.waiting.as_ref())
                        .is_some_and(|w| w.reason.starts_with("budget:"));
                    if matches!(step, Step::Granted(_)) || !budget_wait {
                        self.set_wait(&p.team, &p.member, None);
                    }
                    let answer = match step {
                        Step::Granted(mut r) => {
                            r.waited_ms =
                                now.mono.saturating_duration_since(p.since).as_millis() as u64;
                            Ok(r)
                        }
                        Step::Refused(e) => Err(e),
                        Step::Wait(..) => continue,
                    };
                    let waiting = Waiting {
                        session: p.session,
                        request: p.request,
                    };
                    self.calls.answers.push((waiting, answer));
                }
            }
        }
    }

    /// Answers for parked reservations, made by [`Board::serve_calls`] or a
    /// withdrawal.
    pub fn take_call_answers(&mut self) -> Vec<(Waiting, Result<Reservation>)> {
        std::mem::take(&mut self.calls.answers)
    }

    /// One try at a reservation: the chain's first account that is not
    /// blocked, the budgets, then that account's capacity.
    fn try_grant(&mut self, p: &Parked, now: Now, queued: &BTreeSet<String>) -> Step {
        let chain = &p.args.chain;
        let mut pick = None;
        let mut soonest: Option<(i64, String, String)> = None;
        for (i, a) in chain.iter().enumerate() {
            match self.accounts.blocked(&a.name, now.wall_ms) {
                None => {
                    pick = Some(i);
                    break;
                }
                Some((until, why)) => {
                    if soonest.as_ref().is_none_or(|s| until < s.0) {
                        soonest = Some((until, why, a.name.clone()));
                    }
                }
            }
        }
        let Some(i) = pick else {
            let (until, why, name) = soonest.unwrap_or_default();
            let wait = MemberWait {
                reason: format!("rate limit on {name} ({why})"),
                until_ms: Some(until),
            };
            return Step::Wait(Some(until), wait, name);
        };
        let account = &chain[i];
        let tokens = TokenUsage {
            input: p.args.input,
            output: p.args.output,
            ..TokenUsage::default()
        };
        let pricing = if account.subscription {
            Pricing::Subscription
        } else {
            self.price(&account.model, &tokens)
        };
        let usd = match &pricing {
            Pricing::Priced { usd } => *usd,
            _ => Default::default(),
        };
        if let Pricing::Unpriced { reason } = &pricing
            && let Some(why) = self.usd_limit_over(&p.team, &p.member, p.args.task)
        {
            return Step::Refused(BoardError::new(
                ErrorCode::BudgetExhausted,
                format!(
                    "{why} is in dollars, and {reason}: add the model's price, or set the limit in tokens"
                ),
            ));
        }
        let need = Amounts::of(&tokens, usd);
        match self.fit(&p.team, &p.member, p.args.task, need, now) {
            Fit::Yes => {}
            Fit::Wait(why) => {
                let wait = MemberWait {
                    reason: format!("budget: {why}"),
                    until_ms: None,
                };
                // Not an account's wait: it holds no account's queue.
                return Step::Wait(None, wait, String::new());
            }
            Fit::No(e) => {
                self.set_wait(
                    &p.team,
                    &p.member,
                    Some(MemberWait {
                        reason: format!("budget: {}", e.message),
                        until_ms: self.budget_rolls(&p.team, &p.member, p.args.task),
                    }),
                );
                return Step::Refused(e);
            }
        }
        if queued.contains(&account.name) {
            let wait = MemberWait {
                reason: format!("rate limit on {} (calls ahead of it)", account.name),
                until_ms: None,
            };
            return Step::Wait(None, wait, account.name.clone());
        }
        match self
            .accounts
            .capacity(&account.name, tokens.total(), now.wall_ms)
        {
            Capacity::Now => {}
            Capacity::At(at, why) => {
                let wait = MemberWait {
                    reason: format!("rate limit on {} ({why})", account.name),
                    until_ms: Some(at),
                };
                return Step::Wait(Some(at), wait, account.name.clone());
            }
            Capacity::AfterSettle(why) => {
                let wait = MemberWait {
                    reason: format!("rate limit on {} ({why})", account.name),
                    until_ms: None,
                };
                return Step::Wait(None, wait, account.name.clone());
            }
        }
        self.accounts
            .start(&account.name, tokens.total(), now.wall_ms);
        let call = HeldCall {
            member: p.member.clone(),
            id: p.args.id,
            task: p.args.task,
            account: account.name.clone(),
            model: account.model.clone(),
            need,
            pricing: pricing.clone(),
            pid: p.pid,
            at: now.wall_ms,
        };
        let held = Held {
            call,
            session: Some(p.session),
            due: None,
        };
        self.team_mut(&p.team)
            .spend
            .held
            .insert((p.member.clone(), p.args.id), held);
        self.dirty
            .held
            .insert((p.team.clone(), p.member.clone(), p.args.id));
        Step::Granted(Reservation {
            id: p.args.id,
            account: i,
            account_name: account.name.clone(),
            pricing,
            waited_ms: 0,
        })
    }

    /// When the first exhausted window that covers the call rolls.
    fn budget_rolls(
        &self,
        team: &str,
        member: &str,
        task: Option<teamboard_protocol::TaskId>,
    ) -> Option<i64> {
        let t = self.team(team)?;
        t.spend
            .budgets
            .values()
            .filter(|e| super::ledger::covers(&e.budget.scope, member, task))
            .filter_map(|e| e.rolls_at.map(|r| r.1))
            .min()
    }

    /// A dollar limit that covers the call, named, if there is one.
    fn usd_limit_over(
        &self,
        team: &str,
        member: &str,
        task: Option<teamboard_protocol::TaskId>,
    ) -> Option<String> {
        let t = self.team(team)?;
        t.spend.budgets.values().find_map(|e| {
            (e.budget.limits.usd.is_some() && super::ledger::covers(&e.budget.scope, member, task))
                .then(|| format!("the {} limit", e.budget.scope))
        })
    }

    /// Records a call's usage, settles its reservation, and learns what the
    /// provider said of the account.
    pub fn settle_usage(&mut self, ctx: Ctx, args: UsageArgs) -> Result<Settled> {
        self.spender(&ctx)?;
        for s in [&args.account, &args.model].into_iter().flatten() {
            if !printable(s) {
                return Err(BoardError::invalid(format!(
                    "an account or model name is at most {MAX_NAME} bytes of printable text"
                )));
            }
        }
        if let Some(id) = args.task {
            self.task(ctx.team, id)?;
        }
        let mut held = None;
        let mut repeated = false;
        if let Some(id) = args.reservation {
            held = self.end_call(ctx.team, ctx.actor, id);
            if held.is_none() {
                self.withdraw_parked(ctx.team, ctx.actor, id);
                repeated = self
                    .team(ctx.team)
                    .is_some_and(|t| t.spend.was_settled(ctx.actor, id));
            }
        }
        let account = args
            .account
            .clone()
            .or_else(|| held.as_ref().map(|h| h.account.clone()));
        if let (Some(name), Some(snap)) = (&account, &args.rate)
            && let Some(block) = self.accounts.learn(name, snap, ctx.now.wall_ms)
        {
            self.dirty.account_blocks.insert(block.account.clone());
            self.account_blocks.insert(block.account.clone(), block);
        }
        let task = args.task.or(held.as_ref().and_then(|h| h.task));
        let model = held
            .as_ref()
            .map(|h| h.model.clone())
            .or(args.model.clone());
        let pricing = if args.tokens == TokenUsage::default() {
            held.as_ref()
                .map_or(Pricing::Subscription, |h| h.pricing.clone())
        } else if args.subscription
            || matches!(
                held.as_ref().map(|h| &h.pricing),
                Some(Pricing::Subscription)
            )
        {
            Pricing::Subscription
        } else {
            match &model {
                Some(m) => self.price(m, &args.tokens),
                None => Pricing::Unpriced {
                    reason: "the call named no model".to_string(),
                },
            }
        };
        // A repeat of a settlement already made records nothing again.
        if args.tokens != TokenUsage::default() && !repeated {
            let rec = UsageRecord {
                at: ctx.now.wall_ms,
                member: ctx.actor.to_string(),
                task,
                model,
                account,
                tokens: args.tokens,
                pricing: pricing.clone(),
                estimated: args.estimated,
                reservation: args.reservation,
            };
            self.charge(&ctx, rec);
            self.note_exhausted(ctx.team, ctx.actor, task, ctx.now);
        }
        let exhausted = self
            .budget_hold(ctx.team, ctx.actor, ctx.now.wall_ms)
            .or_else(|| task.and_then(|id| self.task_budget_hold(ctx.team, id, ctx.now.wall_ms)));
        Ok(Settled {
            pricing,
            exhausted,
            usd_left: self.usd_left(ctx.team, ctx.actor, task, ctx.now.wall_ms),
        })
    }

    /// Adds a settled call to the ledger, the member and the task, and warns
    /// the lead of a budget past 80%.
    pub(crate) fn charge(&mut self, ctx: &Ctx, rec: UsageRecord) {
        let cost = rec.pricing.cost(rec.tokens.total());
        let team = self.team_mut(ctx.team);
        team.spend.record(&rec);
        if let Some(id) = rec.task
            && let Some(t) = team.tasks.get_mut(&id)
        {
            t.tokens.add(rec.tokens);
            t.cost.add(cost);
        }
        if let Some(m) = team.members.get_mut(&rec.member) {
            m.member.tokens.add(rec.tokens);
            m.member.cost.add(cost);
            m.member.tokens_estimated |= rec.estimated;
            m.member.last_seen = ctx.now.wall_ms;
        }
        if let Some(id) = rec.task {
            self.mark_task(ctx.team, id);
        }
        self.mark_member(ctx.team, &rec.member);
        let detail = usage_line(&rec);
        self.emit(
            ctx.team,
            &rec.member,
            ctx.now.wall_ms,
            EventKind::UsageRecorded,
            About::task(rec.task, Some(&rec.member)),
            detail,
        );
        self.dirty.usage.push((ctx.team.to_string(), rec));
        self.warn_budgets(ctx.team, ctx.now);
    }

    /// Ends a held call; what it held, if it was held.
    pub(super) fn end_call(&mut self, team: &str, member: &str, id: u64) -> Option<HeldCall> {
        let held = self
            .teams
            .get_mut(team)?
            .spend
            .held
            .remove(&(member.to_string(), id))?;
        self.accounts.end(&held.call.account);
        self.dirty
            .held
            .insert((team.to_string(), member.to_string(), id));
        Some(held.call)
    }

    /// A parked reservation its caller stopped waiting for.
    fn withdraw_parked(&mut self, team: &str, member: &str, id: u64) {
        let found = self
            .calls
            .parked
            .iter()
            .find(|(_, p)| p.team == team && p.member == member && p.args.id == id)
            .map(|(n, _)| *n);
        if let Some(n) = found
            && let Some(p) = self.calls.parked.remove(&n)
        {
            self.set_wait(team, member, None);
            let waiting = Waiting {
                session: p.session,
                request: p.request,
            };
            let e = BoardError::state(format!("reservation {id} was withdrawn"));
            self.calls.answers.push((waiting, Err(e)));
        }
    }

    /// Dollars left under the tightest dollar limit that covers the caller.
    fn usd_left(
        &self,
        team: &str,
        member: &str,
        task: Option<teamboard_protocol::TaskId>,
        now_ms: i64,
    ) -> Option<teamboard_protocol::spend::MicroUsd> {
        let ledger = &self.team(team)?.spend;
        ledger
            .budgets
            .values()
            .filter(|e| super::ledger::covers(&e.budget.scope, member, task))
            .filter_map(|e| {
                let limit = e.budget.limits.usd?;
                let mut used = ledger.spent(&e.budget.scope, e.budget.per_ms, now_ms);
                used.add(ledger.reserved(&e.budget.scope));
                Some(limit.saturating_sub(used.usd))
            })
            .min()
    }

    /// Sets (or clears) why a member waits, for the roster.
    pub(super) fn set_wait(&mut self, team: &str, member: &str, wait: Option<MemberWait>) {
        if let Some(m) = self
            .teams
            .get_mut(team)
            .and_then(|t| t.members.get_mut(member))
            && m.member.waiting != wait
        {
            m.member.waiting = wait;
            self.mark_member(team, member);
        }
    }

    /// Clears the budget waits of a team's members whose budgets have room.
    pub(crate) fn clear_budget_waits(&mut self, team: &str, now: Now) {
        let names: Vec<String> = self
            .team(team)
            .map(|t| {
                t.members
                    .iter()
                    .filter(|(_, m)| {
                        m.member
                            .waiting
                            .as_ref()
                            .is_some_and(|w| w.reason.starts_with("budget"))
                    })
                    .map(|(n, _)| n.clone())
                    .collect()
            })
            .unwrap_or_default();
        for name in names {
            if self.budget_hold(team, &name, now.wall_ms).is_none() {
                self.set_wait(team, &name, None);
            }
        }
    }
}

/// `alice used 1200 input + 300 output tokens ($0.0081)`.
fn usage_line(rec: &UsageRecord) -> String {
    let t = &rec.tokens;
    let tokens = if t.cached() > 0 {
        format!(
            "{} input ({} fresh, {} cache read, {} cache write) + {} output tokens",
            t.all_input(),
            t.input,
            t.cache_read,
            t.cache_write,
            t.output
        )
    } else {
        format!("{} input + {} output tokens", t.input, t.output)
    };
    let cost = match &rec.pricing {
        Pricing::Priced { usd } => format!(" ({usd})"),
        Pricing::Subscription => " (subscription)".to_string(),
        Pricing::Unpriced { .. } => " (unpriced)".to_string(),
    };
    let estimated = if rec.estimated { ", estimated" } else { "" };
    format!("{} used {tokens}{cost}{estimated}", rec.member)
}
