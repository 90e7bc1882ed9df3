//! One team's ledger: the budgets the person set, what was spent, and what
//! calls in flight hold. Pure bookkeeping: the rules of granting and telling
//! are in `calls` and `budgets`.

use crate::SessionId;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::time::Instant;
use teamboard_protocol::TaskId;
use teamboard_protocol::spend::{Amounts, Budget, BudgetScope, HeldCall, UsageRecord};

/// A budget's identity: its scope and its period.
pub(crate) type BudgetKey = (BudgetScope, Option<u64>);

/// How long a settled reservation is remembered: far longer than a client
/// takes to reconnect and repeat a call.
const SETTLED_KEPT_MS: i64 = 3_600_000;

/// The longest period a budget may have. What was spent is kept in memory
/// for this long, so that a window set later still sees what it covers.
pub const MAX_PERIOD_MS: u64 = 31 * 86_400_000;

/// What a budget has come to: the call it had no room for, and what the lead
/// has heard of it. Stored with the budget, so that a restart of boardd
/// neither hands out work an exhausted budget has no room for nor tells the
/// lead again.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BudgetMarks {
    /// The worst case of a call that it had no room for: while that still
    /// does not fit, the budget is exhausted. The lead was told when it was
    /// set.
    pub refused: Option<Amounts>,
    /// The lead has heard that it passed 80%.
    pub warned: bool,
}

/// A budget and what the board knows of it beyond its settings.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    pub budget: Budget,
    pub marks: BudgetMarks,
    /// For a window that ran out: when enough falls out of it for the refused
    /// call to fit.
    pub rolls_at: Option<(Instant, i64)>,
}

/// A call in flight, and the session that may settle it (`None` after a
/// restart, until its process registers again).
#[derive(Debug, Clone)]
pub(crate) struct Held {
    pub call: HeldCall,
    pub session: Option<SessionId>,
    /// Without a session: when it is charged at its worst case, if no
    /// process of its member has come back to settle it.
    pub due: Option<Instant>,
}

/// Spend within the kept period, as budgets count it.
#[derive(Debug, Clone)]
struct Spent {
    at: i64,
    member: String,
    task: Option<TaskId>,
    amounts: Amounts,
    /// Tokens of a call to a model without a price.
    unpriced: u64,
}

#[derive(Debug, Default)]
pub(crate) struct Ledger {
    pub budgets: BTreeMap<BudgetKey, Entry>,
    pub held: BTreeMap<(String, u64), Held>,
    /// Settled spend within [`MAX_PERIOD_MS`], oldest first.
    recent: VecDeque<Spent>,
    /// All time.
    total: Amounts,
    unpriced_tokens: u64,
    by_member: HashMap<String, Amounts>,
    by_task: HashMap<TaskId, Amounts>,
    /// Reservations settled within the last [`SETTLED_KEPT_MS`]: a settlement
    /// repeated after its answer was lost (the client repeats a call once it
    /// has reconnected) is not charged twice.
    settled: HashMap<(String, u64), i64>,
    /// Tokens on models without a price, all time, by member and by task.
    unpriced_by_member: HashMap<String, u64>,
    unpriced_by_task: HashMap<TaskId, u64>,
}

/// Whether `scope` covers a call by `member` on `task`.
pub(crate) fn covers(scope: &BudgetScope, member: &str, task: Option<TaskId>) -> bool {
    match scope {
        BudgetScope::Team => true,
        BudgetScope::Member { name } => name == member,
        BudgetScope::Task { id } => task == Some(*id),
    }
}

impl Ledger {
    /// Adds a settled call.
    pub fn record(&mut self, rec: &UsageRecord) {
        let amounts = rec.amounts();
        self.total.add(amounts);
        let unpriced = rec.pricing.cost(rec.tokens.total()).unpriced_tokens;
        if unpriced > 0 {
            self.unpriced_tokens = self.unpriced_tokens.saturating_add(unpriced);
            *self
                .unpriced_by_member
                .entry(rec.member.clone())
                .or_default() += unpriced;
            if let Some(id) = rec.task {
                *self.unpriced_by_task.entry(id).or_default() += unpriced;
            }
        }
        self.by_member
            .entry(rec.member.clone())
            .or_default()
            .add(amounts);
        if let Some(id) = rec.task {
            self.by_task.entry(id).or_default().add(amounts);
        }
        self.recent.push_back(Spent {
            at: rec.at,
            member: rec.member.clone(),
            task: rec.task,
            amounts,
            unpriced,
        });
        if let Some(id) = rec.reservation {
            self.settled.insert((rec.member.clone(), id), rec.at);
            if self.settled.len() > 1024 {
                let keep = rec.at.saturating_sub(SETTLED_KEPT_MS);
                self.settled.retain(|_, at| *at > keep);
            }
        }
        let horizon = rec.at.saturating_sub(MAX_PERIOD_MS as i64);
        while self.recent.front().is_some_and(|s| s.at <= horizon) {
            self.recent.pop_front();
        }
    }

    /// Whether `member`'s reservation `id` was settled already.
    pub fn was_settled(&self, member: &str, id: u64) -> bool {
        self.settled.contains_key(&(member.to_string(), id))
    }

    pub fn total(&self) -> (Amounts, u64) {
        (self.total, self.unpriced_tokens)
    }

    /// What `scope` spent within the last `per` ms before `now_ms`, or ever.
    pub fn spent(&self, scope: &BudgetScope, per: Option<u64>, now_ms: i64) -> Amounts {
        let Some(per) = per else {
            return match scope {
                BudgetScope::Team => self.total,
                BudgetScope::Member { name } => {
                    self.by_member.get(name).copied().unwrap_or_default()
                }
                BudgetScope::Task { id } => self.by_task.get(id).copied().unwrap_or_default(),
            };
        };
        let since = now_ms.saturating_sub(per as i64);
        let mut out = Amounts::default();
        for s in self.recent.iter().rev().take_while(|s| s.at > since) {
            if covers(scope, &s.member, s.task) {
                out.add(s.amounts);
            }
        }
        out
    }

    /// Tokens `scope` spent on models without a price, within the last `per`
    /// ms before `now_ms`, or ever.
    pub fn unpriced(&self, scope: &BudgetScope, per: Option<u64>, now_ms: i64) -> u64 {
        let Some(per) = per else {
            return match scope {
                BudgetScope::Team => self.unpriced_tokens,
                BudgetScope::Member { name } => {
                    self.unpriced_by_member.get(name).copied().unwrap_or(0)
                }
                BudgetScope::Task { id } => self.unpriced_by_task.get(id).copied().unwrap_or(0),
            };
        };
        let since = now_ms.saturating_sub(per as i64);
        self.recent
            .iter()
            .rev()
            .take_while(|s| s.at > since)
            .filter(|s| covers(scope, &s.member, s.task))
            .map(|s| s.unpriced)
            .sum()
    }

    /// What calls in flight under `scope` hold.
    pub fn reserved(&self, scope: &BudgetScope) -> Amounts {
        let mut out = Amounts::default();
        for h in self.held.values() {
            if covers(scope, &h.call.member, h.call.task) {
                out.add(h.call.need);
            }
        }
        out
    }

    /// For a window: the moment (ms since the epoch) by which enough of what
    /// `scope` spent falls out of it for `used + need` to fit under `limit`;
    /// `None` when waiting cannot make it fit.
    pub fn rolls_at(&self, entry: &Entry, need: Amounts, now_ms: i64) -> Option<i64> {
        let per = entry.budget.per_ms? as i64;
        let scope = &entry.budget.scope;
        let since = now_ms.saturating_sub(per);
        let mut used = self.spent(scope, Some(per as u64), now_ms);
        used.add(self.reserved(scope));
        let limits = entry.budget.limits;
        for s in self.recent.iter().filter(|s| s.at > since) {
            if over(&limits, used, need).is_none() {
                break;
            }
            if covers(scope, &s.member, s.task) {
                used.sub(s.amounts);
                if over(&limits, used, need).is_none() {
                    return Some(s.at + per);
                }
            }
        }
        None
    }
}

/// The first of `limits` that `used + need` passes: (its name, the limit,
/// the amount used, the amount needed).
pub(crate) fn over(
    limits: &teamboard_protocol::spend::Limits,
    used: Amounts,
    need: Amounts,
) -> Option<(&'static str, u64, u64, u64)> {
    let dims = [
        ("tokens", limits.tokens, used.tokens, need.tokens),
        (
            "input tokens",
            limits.input_tokens,
            used.input_tokens,
            need.input_tokens,
        ),
        ("usd", limits.usd.map(|u| u.0), used.usd.0, need.usd.0),
    ];
    dims.into_iter().find_map(|(name, limit, used, need)| {
        let limit = limit?;
        (used.saturating_add(need) > limit).then_some((name, limit, used, need))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use teamboard_protocol::TokenUsage;
    use teamboard_protocol::spend::{Limits, MicroUsd, Pricing};

    fn rec(at: i64, member: &str, task: Option<TaskId>, tokens: u64) -> UsageRecord {
        UsageRecord {
            at,
            member: member.into(),
            task,
            model: None,
            account: None,
            tokens: TokenUsage {
                input: tokens,
                ..TokenUsage::default()
            },
            pricing: Pricing::Priced {
                usd: MicroUsd(tokens),
            },
            estimated: false,
            reservation: None,
        }
    }

    #[test]
    fn spend_counts_by_scope_and_window() {
        let mut l = Ledger::default();
        l.record(&rec(1_000, "alice", Some(1), 10));
        l.record(&rec(2_000, "bob", Some(2), 20));
        l.record(&rec(3_000, "alice", None, 40));
        let alice = BudgetScope::Member {
            name: "alice".into(),
        };
        assert_eq!(l.spent(&BudgetScope::Team, None, 3_000).tokens, 70);
        assert_eq!(l.spent(&alice, None, 3_000).tokens, 50);
        assert_eq!(
            l.spent(&BudgetScope::Task { id: 2 }, None, 3_000).tokens,
            20
        );
        // The last 1.5 s before 3.0 s: the calls at 2.0 and 3.0.
        assert_eq!(l.spent(&BudgetScope::Team, Some(1_500), 3_000).tokens, 60);
        assert_eq!(l.spent(&alice, Some(1_500), 3_000).tokens, 40);
        assert_eq!(l.spent(&BudgetScope::Team, None, 3_000).usd, MicroUsd(70));
    }

    #[test]
    fn a_window_rolls_when_enough_falls_out_of_it() {
        let mut l = Ledger::default();
        l.record(&rec(1_000, "alice", None, 30));
        l.record(&rec(2_000, "alice", None, 30));
        let entry = Entry {
            budget: Budget {
                scope: BudgetScope::Team,
                per_ms: Some(10_000),
                limits: Limits {
                    tokens: Some(70),
                    ..Limits::default()
                },
                set_by: "lead".into(),
                set_at: 0,
            },
            marks: BudgetMarks::default(),
            rolls_at: None,
        };
        let need = Amounts {
            tokens: 20,
            ..Amounts::default()
        };
        // 60 used + 20 needed > 70: fits once the first 30 leaves the window.
        assert_eq!(l.rolls_at(&entry, need, 3_000), Some(11_000));
        let huge = Amounts {
            tokens: 100,
            ..Amounts::default()
        };
        assert_eq!(l.rolls_at(&entry, huge, 3_000), None);
    }
}
