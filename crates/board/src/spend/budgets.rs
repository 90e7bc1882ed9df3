//! Budgets: the limits a person sets, whether a call fits under them, and
//! what the lead hears when one nears its end (80%) or reaches it (once).

use super::ledger::{BudgetKey, BudgetMarks, Entry, MAX_PERIOD_MS, covers, over};
use crate::error::{BoardError, Result};
use crate::tasks::require_lead;
use crate::{About, Board, Ctx, Now};
use teamboard_protocol::request::{ClearBudgetArgs, SetBudgetArgs};
use teamboard_protocol::spend::{
    Amounts, Budget, BudgetReport, BudgetScope, BudgetState, Limits, fmt_period,
};
use teamboard_protocol::{ErrorCode, EventKind, LEAD, MessageKind, TaskId};

/// What [`Board::fit`] found.
pub(crate) enum Fit {
    Yes,
    /// Not while calls in flight hold what they hold; why, for the roster.
    Wait(String),
    No(BoardError),
}

/// The least any call needs: nothing fits once a limit is reached.
const LEAST: Amounts = Amounts {
    tokens: 1,
    input_tokens: 1,
    usd: teamboard_protocol::spend::MicroUsd::ZERO,
};

/// The share of a limit at which the lead is warned, in percent.
const WARN_AT_PERCENT: u64 = 80;

impl Board {
    /// Sets (or changes) a limit. The amounts not named keep their value.
    pub fn set_budget(&mut self, ctx: Ctx, args: SetBudgetArgs) -> Result<Budget> {
        require_lead(&ctx, "set budgets on")?;
        if args.limits.is_empty() {
            return Err(BoardError::invalid(
                "name at least one limit: --tokens, --input-tokens or --usd",
            ));
        }
        if let Some(per) = args.per_ms
            && (per == 0 || per > MAX_PERIOD_MS)
        {
            return Err(BoardError::invalid(format!(
                "a period runs from 1 ms to {}",
                fmt_period(MAX_PERIOD_MS)
            )));
        }
        self.check_scope(ctx.team, &args.scope)?;
        let key: BudgetKey = (args.scope.clone(), args.per_ms);
        let ledger = &mut self.team_mut(ctx.team).spend;
        let old = ledger.budgets.get(&key).map(|e| e.budget.limits);
        let mut limits = old.unwrap_or_default();
        let new = args.limits;
        limits.tokens = new.tokens.or(limits.tokens);
        limits.input_tokens = new.input_tokens.or(limits.input_tokens);
        limits.usd = new.usd.or(limits.usd);
        let budget = Budget {
            scope: args.scope,
            per_ms: args.per_ms,
            limits,
            set_by: ctx.actor.to_string(),
            set_at: ctx.now.wall_ms,
        };
        // A new amount starts a new story: room is looked for again, and the
        // lead hears of 80% and of the end again.
        ledger.budgets.insert(
            key.clone(),
            Entry {
                budget: budget.clone(),
                marks: BudgetMarks::default(),
                rolls_at: None,
            },
        );
        self.dirty.budgets.insert((ctx.team.to_string(), key));
        let detail = format!("budget: {} set to {}", describe(&budget), amounts(&limits));
        self.emit_as(&ctx, EventKind::BudgetChanged, About::default(), detail);
        self.budget_freed(ctx.team, ctx.now);
        Ok(budget)
    }

    pub fn clear_budget(&mut self, ctx: Ctx, args: ClearBudgetArgs) -> Result<Budget> {
        require_lead(&ctx, "clear budgets on")?;
        let key: BudgetKey = (args.scope, args.per_ms);
        let Some(entry) = self.team_mut(ctx.team).spend.budgets.remove(&key) else {
            return Err(BoardError::new(
                ErrorCode::NotFound,
                format!("there is no {}", describe_key(&key)),
            ));
        };
        self.dirty.budgets.insert((ctx.team.to_string(), key));
        let detail = format!("budget: {} cleared", describe(&entry.budget));
        self.emit_as(&ctx, EventKind::BudgetChanged, About::default(), detail);
        self.budget_freed(ctx.team, ctx.now);
        Ok(entry.budget)
    }

    fn check_scope(&self, team: &str, scope: &BudgetScope) -> Result<()> {
        match scope {
            BudgetScope::Team => Ok(()),
            BudgetScope::Member { name } => {
                teamboard_protocol::names::validate_name(name).map_err(BoardError::invalid)?;
                Ok(())
            }
            BudgetScope::Task { id } => self.task(team, *id).map(|_| ()),
        }
    }

    /// Every limit of the team with where it stands, and the accounts.
    pub fn budget_report(&mut self, team: &str, now: Now) -> BudgetReport {
        let mut budgets = Vec::new();
        let mut report = BudgetReport::default();
        if let Some(t) = self.team(team) {
            let ledger = &t.spend;
            for entry in ledger.budgets.values() {
                let b = &entry.budget;
                budgets.push(BudgetState {
                    budget: b.clone(),
                    spent: ledger.spent(&b.scope, b.per_ms, now.wall_ms),
                    reserved: ledger.reserved(&b.scope),
                    unpriced_tokens: ledger.unpriced(&b.scope, b.per_ms, now.wall_ms),
                    exhausted: self.exhausted(team, entry, now.wall_ms),
                    rolls_at: entry.rolls_at.map(|r| r.1),
                });
            }
            (report.spent, report.unpriced_tokens) = ledger.total();
        }
        report.budgets = budgets;
        let parked = &self.calls;
        report.accounts = self
            .accounts
            .states(now.wall_ms, |name| parked.waiting_on(name));
        report
    }

    /// Why `entry` grants nothing now, if it does not: it refused a call that
    /// still does not fit, or nothing at all fits.
    pub(crate) fn exhausted(&self, team: &str, entry: &Entry, now_ms: i64) -> Option<String> {
        let ledger = &self.team(team)?.spend;
        let b = &entry.budget;
        // What was spent, not what calls in flight hold: those settle soon,
        // most for less than they hold (see `fit`).
        let used = ledger.spent(&b.scope, b.per_ms, now_ms);
        let need = entry.marks.refused.unwrap_or(LEAST);
        over(&b.limits, used, need).map(|(what, limit, used, need)| {
            format!(
                "{} limit of {} reached: {} used, and a call needs {}",
                describe(b),
                amount(what, limit),
                amount(what, used),
                amount(what, need)
            )
        })
    }

    /// Whether a call of `need` by `member` on `task` fits under every budget
    /// that covers it.
    /// - A call bigger than a limit by itself is refused, and the budget is
    ///   not marked: the next, smaller call may fit.
    /// - A call that what was spent leaves no room for is refused; the budget
    ///   is marked exhausted, the lead is told once, and the refusal says
    ///   which limit ran out.
    /// - A call that only the calls in flight leave no room for waits for
    ///   them to settle (they hold their worst case, and most settle for
    ///   less): refusing it would call a budget exhausted that is not.
    pub(crate) fn fit(
        &mut self,
        team: &str,
        member: &str,
        task: Option<TaskId>,
        need: Amounts,
        now: Now,
    ) -> Fit {
        let Some(t) = self.team(team) else {
            return Fit::Yes;
        };
        let ledger = &t.spend;
        let mut refused = None;
        let mut wait = None;
        for (key, entry) in &ledger.budgets {
            let b = &entry.budget;
            if !covers(&b.scope, member, task) {
                continue;
            }
            if let Some((what, limit, _, need_of)) = over(&b.limits, Amounts::default(), need) {
                return Fit::No(BoardError::new(
                    ErrorCode::BudgetExhausted,
                    format!(
                        "the call alone needs up to {}, more than the {} limit of {}: \
                         lower --max-tokens or raise the limit",
                        amount(what, need_of),
                        describe(b),
                        amount(what, limit)
                    ),
                ));
            }
            let spent = ledger.spent(&b.scope, b.per_ms, now.wall_ms);
            if let Some((what, limit, used, need_of)) = over(&b.limits, spent, need) {
                let why = format!(
                    "{} limit of {} reached: {} used, and the call needs up to {}",
                    describe(b),
                    amount(what, limit),
                    amount(what, used),
                    amount(what, need_of)
                );
                let rolls = ledger.rolls_at(entry, need, now.wall_ms);
                refused = Some((key.clone(), why, rolls));
                break;
            }
            let mut held = spent;
            held.add(ledger.reserved(&b.scope));
            if wait.is_none() && over(&b.limits, held, need).is_some() {
                wait = Some(format!(
                    "{} has room only once calls in flight settle",
                    describe(b)
                ));
            }
        }
        let Some((key, why, rolls)) = refused else {
            return wait.map_or(Fit::Yes, Fit::Wait);
        };
        let (tell, marked) = {
            let team_state = self.team_mut(team);
            let Some(entry) = team_state.spend.budgets.get_mut(&key) else {
                return Fit::Yes;
            };
            let before = entry.marks;
            entry.marks.refused = Some(need);
            entry.rolls_at = rolls.map(|at| (mono_at(now, at), at));
            (before.refused.is_none(), before != entry.marks)
        };
        if marked {
            self.dirty.budgets.insert((team.to_string(), key));
        }
        if tell {
            let rolls = rolls
                .map(|at| {
                    let secs = at.saturating_sub(now.wall_ms) / 1000;
                    format!("; the window makes room again in {}", plain_secs(secs))
                })
                .unwrap_or_default();
            let content = format!(
                "budget exhausted: {why}{rolls}. Teammates it covers get no model calls and \
                 no new tasks until it has room: raise it with `teamctl budget set`."
            );
            self.tell_lead(team, now, content);
        }
        Fit::No(BoardError::new(ErrorCode::BudgetExhausted, why))
    }

    /// After usage settled without a reservation ran a budget out (an
    /// agent's, which boardd cannot refuse before it is spent): marks it
    /// exhausted and tells the lead, once, as a refused call does.
    pub(crate) fn note_exhausted(
        &mut self,
        team: &str,
        member: &str,
        task: Option<TaskId>,
        now: Now,
    ) {
        let out: Vec<(BudgetKey, String)> = match self.team(team) {
            Some(t) => t
                .spend
                .budgets
                .iter()
                .filter(|(_, e)| e.marks.refused.is_none())
                .filter(|(_, e)| covers(&e.budget.scope, member, task))
                .filter_map(|(k, e)| Some((k.clone(), self.exhausted(team, e, now.wall_ms)?)))
                .collect(),
            None => return,
        };
        for (key, why) in out {
            let rolls = self.team(team).and_then(|t| {
                let e = t.spend.budgets.get(&key)?;
                t.spend.rolls_at(e, LEAST, now.wall_ms)
            });
            if let Some(e) = self.team_mut(team).spend.budgets.get_mut(&key) {
                e.marks.refused = Some(LEAST);
                e.rolls_at = rolls.map(|at| (mono_at(now, at), at));
            }
            self.dirty.budgets.insert((team.to_string(), key));
            let content = format!(
                "budget exhausted: {why}. Teammates it covers get no model calls and \
                 no new tasks until it has room: raise it with `teamctl budget set`."
            );
            self.tell_lead(team, now, content);
        }
    }

    /// After spending: warns the lead of each budget that passed 80%.
    pub(crate) fn warn_budgets(&mut self, team: &str, now: Now) {
        let mut warn = Vec::new();
        let mut below = Vec::new();
        if let Some(t) = self.team(team) {
            let ledger = &t.spend;
            for (key, entry) in &ledger.budgets {
                let b = &entry.budget;
                let used = ledger.spent(&b.scope, b.per_ms, now.wall_ms);
                let dims = [
                    ("tokens", b.limits.tokens, used.tokens),
                    ("input tokens", b.limits.input_tokens, used.input_tokens),
                    ("usd", b.limits.usd.map(|u| u.0), used.usd.0),
                ];
                let past = |(_, limit, used): &(&str, Option<u64>, u64)| {
                    limit.is_some_and(|l| {
                        used.saturating_mul(100) >= l.saturating_mul(WARN_AT_PERCENT)
                    })
                };
                if entry.marks.warned {
                    // A window that fell back under 80% warns on its next climb.
                    if !dims.iter().any(past) {
                        below.push(key.clone());
                    }
                    continue;
                }
                for (what, limit, used) in dims {
                    let Some(limit) = limit else { continue };
                    if used.saturating_mul(100) >= limit.saturating_mul(WARN_AT_PERCENT) {
                        let pct = used.saturating_mul(100) / limit.max(1);
                        warn.push((
                            key.clone(),
                            format!(
                                "budget warning: {} is at {pct}% of its limit of {} ({} used)",
                                describe(b),
                                amount(what, limit),
                                amount(what, used)
                            ),
                        ));
                        break;
                    }
                }
            }
        }
        for key in below {
            if let Some(e) = self.team_mut(team).spend.budgets.get_mut(&key) {
                e.marks.warned = false;
            }
            self.dirty.budgets.insert((team.to_string(), key));
        }
        for (key, content) in warn {
            if let Some(e) = self.team_mut(team).spend.budgets.get_mut(&key) {
                e.marks.warned = true;
            }
            self.dirty.budgets.insert((team.to_string(), key));
            self.tell_lead(team, now, content);
        }
    }

    /// A limit was raised, cleared or rolled: exhausted budgets are looked at
    /// again, and the team's waiters may now get work.
    pub(crate) fn budget_freed(&mut self, team: &str, now: Now) {
        let keys: Vec<BudgetKey> = self
            .team(team)
            .map(|t| t.spend.budgets.keys().cloned().collect())
            .unwrap_or_default();
        for key in keys {
            let Some(t) = self.team(team) else { continue };
            let Some(entry) = t.spend.budgets.get(&key) else {
                continue;
            };
            let Some(need) = entry.marks.refused else {
                continue;
            };
            let still = self.exhausted(team, entry, now.wall_ms).is_some();
            // Trap: a roll that came while more was spent leaves the budget
            // out; its next roll is worked out again, or the passed one would
            // wake the actor over and over.
            let rolls = still
                .then(|| t.spend.rolls_at(entry, need, now.wall_ms))
                .flatten()
                .filter(|at| *at > now.wall_ms);
            let Some(e) = self.team_mut(team).spend.budgets.get_mut(&key) else {
                continue;
            };
            if still {
                e.rolls_at = rolls.map(|at| (mono_at(now, at), at));
            } else {
                // Below 80% again, the next climb warns again.
                e.marks = BudgetMarks::default();
                e.rolls_at = None;
                self.dirty.budgets.insert((team.to_string(), key));
            }
        }
        self.wake.insert(team.to_string());
        self.clear_budget_waits(team, now);
    }

    /// Why `member` may get no new task now: a budget that covers all its
    /// calls ran out.
    pub(crate) fn budget_hold(&self, team: &str, member: &str, now_ms: i64) -> Option<String> {
        let t = self.team(team)?;
        t.spend
            .budgets
            .values()
            .find_map(|e| match &e.budget.scope {
                BudgetScope::Team => self.exhausted(team, e, now_ms),
                BudgetScope::Member { name } if name == member => self.exhausted(team, e, now_ms),
                _ => None,
            })
    }

    /// Why no one may take task `id` now: its own budget ran out.
    pub(crate) fn task_budget_hold(&self, team: &str, id: TaskId, now_ms: i64) -> Option<String> {
        let t = self.team(team)?;
        t.spend
            .budgets
            .values()
            .filter(|e| e.budget.scope == BudgetScope::Task { id })
            .find_map(|e| self.exhausted(team, e, now_ms))
    }

    /// Sends the lead a message from boardd.
    pub(crate) fn tell_lead(&mut self, team: &str, now: Now, content: String) {
        let ctx = Ctx {
            team,
            actor: "boardd",
            session: 0,
            now,
        };
        self.deliver(ctx, LEAD, MessageKind::Message, content, None);
    }
}

/// The monotonic moment of a wall-clock one.
pub(crate) fn mono_at(now: Now, at_ms: i64) -> std::time::Instant {
    let ahead = u64::try_from(at_ms.saturating_sub(now.wall_ms)).unwrap_or(0);
    now.mono + std::time::Duration::from_millis(ahead)
}

/// `team budget of 30m`, `teammate alice budget`.
fn describe(b: &Budget) -> String {
    describe_key(&(b.scope.clone(), b.per_ms))
}

fn describe_key(key: &BudgetKey) -> String {
    match key.1 {
        Some(per) => format!("{} budget per {}", key.0, fmt_period(per)),
        None => format!("{} budget", key.0),
    }
}

fn amounts(l: &Limits) -> String {
    let mut parts = Vec::new();
    if let Some(t) = l.tokens {
        parts.push(amount("tokens", t));
    }
    if let Some(t) = l.input_tokens {
        parts.push(amount("input tokens", t));
    }
    if let Some(u) = l.usd {
        parts.push(amount("usd", u.0));
    }
    parts.join(" and ")
}

/// `50000 tokens`, `$1.50`.
fn amount(what: &str, n: u64) -> String {
    if what == "usd" {
        teamboard_protocol::spend::MicroUsd(n).to_string()
    } else {
        format!("{n} {what}")
    }
}

fn plain_secs(secs: i64) -> String {
    match secs {
        s if s < 90 => format!("{s}s"),
        s if s < 90 * 60 => format!("{}m", (s + 30) / 60),
        s => format!("{}h", (s + 1800) / 3600),
    }
}

impl Board {
    /// The task `member` would be handed next, unless a budget holds it back:
    /// one that covers all its calls, or the task's own.
    pub(crate) fn next_claimable(
        &self,
        team: &str,
        member: &str,
        role: &str,
        now: Now,
    ) -> Option<TaskId> {
        let t = self.team(team)?;
        if t.spend.budgets.is_empty() {
            return t.best_ready(role);
        }
        if self.budget_hold(team, member, now.wall_ms).is_some() {
            return None;
        }
        t.best_ready_but(role, |id| {
            self.task_budget_hold(team, id, now.wall_ms).is_some()
        })
    }
}
