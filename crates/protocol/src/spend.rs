//! Spend on the wire: what model calls cost, the limits a person sets on it,
//! and the provider accounts whose rate limits boardd schedules calls against.
//!
//! boardd keeps the ledger. Before each model call a teammate asks for a
//! [`Reservation`] of the call's worst case (the prompt it is about to send
//! plus its output limit); boardd grants it only if every limit that covers
//! the call still has room for it, counting the other calls in flight, and
//! only once the provider account has capacity. The response's real usage
//! settles it ([`SettleArgs`]). A cap is therefore passed by at most what one
//! call in flight per teammate spends beyond its estimate.
//!
//! Money is counted in whole millionths of a dollar ([`MicroUsd`]) so that the
//! ledger sums exactly, in any order, and survives a JSON round trip.

use crate::ids::TaskId;
use crate::types::TokenUsage;
use serde::{Deserialize, Serialize};
use std::fmt;

/// Millionths of a US dollar.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct MicroUsd(pub u64);

impl MicroUsd {
    pub const ZERO: MicroUsd = MicroUsd(0);

    /// Dollars, rounded to the nearest millionth; `None` for a negative or
    /// not finite amount, or one too large to count.
    pub fn from_usd(usd: f64) -> Option<MicroUsd> {
        let micros = (usd * 1_000_000.0).round();
        (micros.is_finite() && micros >= 0.0 && micros < u64::MAX as f64)
            .then_some(MicroUsd(micros as u64))
    }

    pub fn usd(self) -> f64 {
        self.0 as f64 / 1_000_000.0
    }

    pub fn saturating_add(self, other: MicroUsd) -> MicroUsd {
        MicroUsd(self.0.saturating_add(other.0))
    }

    pub fn saturating_sub(self, other: MicroUsd) -> MicroUsd {
        MicroUsd(self.0.saturating_sub(other.0))
    }
}

/// `$5.11`, `$0.0032`, `$0.000125`: cents at least, and as many more digits
/// as the amount needs, up to the millionth.
impl fmt::Display for MicroUsd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (dollars, micros) = (self.0 / 1_000_000, self.0 % 1_000_000);
        let mut frac = format!("{micros:06}");
        while frac.len() > 2 && frac.ends_with('0') {
            frac.pop();
        }
        write!(f, "${dollars}.{frac}")
    }
}

/// What some model calls cost: the dollars of the priced ones, and the tokens
/// of those that have no price. The two are never mixed: a model without a
/// price is counted in tokens only, and says so.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cost {
    #[serde(default)]
    pub usd: MicroUsd,
    /// Tokens of calls to models without a price.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unpriced_tokens: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Cost {
    pub fn add(&mut self, other: Cost) {
        self.usd = self.usd.saturating_add(other.usd);
        self.unpriced_tokens = self.unpriced_tokens.saturating_add(other.unpriced_tokens);
    }

    pub fn is_zero(&self) -> bool {
        *self == Cost::default()
    }
}

/// How one call was priced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Pricing {
    /// At the model's price per million tokens.
    Priced { usd: MicroUsd },
    /// On a subscription login: the call costs nothing by itself, and only its
    /// tokens and the plan's reset windows count.
    Subscription,
    /// The model has no price; why, in words (`no price for openai/gpt-9`).
    Unpriced { reason: String },
}

impl Pricing {
    /// What it adds to a [`Cost`], for a call of `tokens` tokens.
    pub fn cost(&self, tokens: u64) -> Cost {
        match self {
            Pricing::Priced { usd } => Cost {
                usd: *usd,
                unpriced_tokens: 0,
            },
            Pricing::Subscription => Cost::default(),
            Pricing::Unpriced { .. } => Cost {
                usd: MicroUsd::ZERO,
                unpriced_tokens: tokens,
            },
        }
    }
}

/// What a budget limits: the whole team, one teammate, or one task.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(tag = "scope", rename_all = "snake_case")]
pub enum BudgetScope {
    Team,
    Member { name: String },
    Task { id: TaskId },
}

impl fmt::Display for BudgetScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BudgetScope::Team => f.write_str("team"),
            BudgetScope::Member { name } => write!(f, "teammate {name}"),
            BudgetScope::Task { id } => write!(f, "task #{id}"),
        }
    }
}

/// The amounts of a budget; at least one is set. Tokens count everything the
/// model read (fresh, cached and cache writes) and wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u64>,
    /// Input tokens only (fresh, cache read and cache write).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usd: Option<MicroUsd>,
}

impl Limits {
    pub fn is_empty(&self) -> bool {
        self.tokens.is_none() && self.input_tokens.is_none() && self.usd.is_none()
    }
}

/// A limit the person set. One per scope and period: setting one again
/// changes the amounts it names and keeps the others.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Budget {
    #[serde(flatten)]
    pub scope: BudgetScope,
    /// A rolling window, in milliseconds: only what was spent within the last
    /// `per_ms` counts. `None`: for all time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_ms: Option<u64>,
    pub limits: Limits,
    pub set_by: String,
    pub set_at: i64,
}

/// What has been spent, or is reserved, against a budget.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Amounts {
    #[serde(default)]
    pub tokens: u64,
    #[serde(default)]
    pub input_tokens: u64,
    #[serde(default)]
    pub usd: MicroUsd,
}

impl Amounts {
    pub fn of(tokens: &TokenUsage, usd: MicroUsd) -> Amounts {
        Amounts {
            tokens: tokens.total(),
            input_tokens: tokens.all_input(),
            usd,
        }
    }

    pub fn add(&mut self, other: Amounts) {
        self.tokens = self.tokens.saturating_add(other.tokens);
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.usd = self.usd.saturating_add(other.usd);
    }

    pub fn sub(&mut self, other: Amounts) {
        self.tokens = self.tokens.saturating_sub(other.tokens);
        self.input_tokens = self.input_tokens.saturating_sub(other.input_tokens);
        self.usd = self.usd.saturating_sub(other.usd);
    }
}

/// A budget with where it stands, for `teamctl budget`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BudgetState {
    pub budget: Budget,
    /// Settled within the window (or ever).
    pub spent: Amounts,
    /// Held by calls in flight.
    pub reserved: Amounts,
    /// Tokens counted by calls to models without a price: they count against
    /// the token limits, never the dollar one.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unpriced_tokens: u64,
    /// Why no call it covers is granted now (`team: 50000 tokens used of 50000`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exhausted: Option<String>,
    /// For a window: when enough of what was spent falls out of it for the
    /// refused call to fit, in ms since the epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rolls_at: Option<i64>,
}

/// The rate limits of one provider account, as the person configured them.
/// boardd also learns them from the provider's headers ([`RateSnapshot`]) and
/// holds calls to whichever is tighter.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RateLimits {
    /// Calls in flight at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrent: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests_per_minute: Option<u32>,
    /// Tokens (input and output, by the reservations' worst cases) per minute.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_per_minute: Option<u64>,
}

/// One provider account a teammate may call, in the order of its chain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccountRef {
    /// The account's name, shared by every teammate that uses it: its rate
    /// limits and reset windows are the account's, not the teammate's.
    pub name: String,
    /// The model called through it, priced as `provider/model`
    /// (`anthropic/claude-sonnet-4-5`).
    pub model: String,
    #[serde(default)]
    pub limits: RateLimits,
    /// A subscription login: calls cost nothing by themselves (see
    /// [`Pricing::Subscription`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub subscription: bool,
}

/// One of a provider's rate-limit windows, as its headers told it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RateWindow {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u64>,
    pub remaining: u64,
    /// When the window is full again, in ms since the epoch.
    pub reset_at_ms: i64,
}

/// What a provider said about an account's limits with one answer: its
/// rate-limit headers, and, for a refusal (429, a usage limit), until when
/// the account must not be called.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RateSnapshot {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests: Option<RateWindow>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<RateWindow>,
    /// The account must not be called before this moment (ms since the
    /// epoch): a 429's `retry-after`, a usage limit's `resets_at`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocked_until_ms: Option<i64>,
    /// Why, in the provider's words (`usage_limit_reached`, `rate_limit_error`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocked_reason: Option<String>,
}

impl RateSnapshot {
    pub fn is_empty(&self) -> bool {
        *self == RateSnapshot::default()
    }
}

/// What an account's limits allow now, for `teamctl budget`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccountState {
    pub name: String,
    #[serde(default)]
    pub limits: RateLimits,
    pub in_flight: u32,
    /// Reservations parked until it has capacity.
    pub waiting: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocked_until_ms: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocked_reason: Option<String>,
    /// The provider's windows, as last learned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests: Option<RateWindow>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<RateWindow>,
}

/// `budgets`' answer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BudgetReport {
    pub budgets: Vec<BudgetState>,
    /// Every account boardd has scheduled calls for since it started.
    #[serde(default)]
    pub accounts: Vec<AccountState>,
    /// The team's spend for all time.
    pub spent: Amounts,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unpriced_tokens: u64,
}

/// Why a member is waiting rather than working, for the roster:
/// `waiting: rate limit (resets in 12m)`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemberWait {
    /// `rate limit on work-account`, `budget: team 50000 tokens used of 50000`.
    pub reason: String,
    /// When it ends, if known, in ms since the epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until_ms: Option<i64>,
}

/// A granted reservation: the call may be made, through `account`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reservation {
    pub id: u64,
    /// Which of the chain's accounts to call, by index.
    pub account: usize,
    pub account_name: String,
    pub pricing: Pricing,
    /// How long boardd held it for capacity, in ms.
    #[serde(default)]
    pub waited_ms: u64,
}

/// `settle_usage`'s answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Settled {
    pub pricing: Pricing,
    /// A limit that covers the caller has no room left: an agent's turn stops
    /// here. Why, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exhausted: Option<String>,
    /// Dollars left under the tightest dollar limit that covers the caller,
    /// for an agent that takes a spend cap of its own (Claude Code's
    /// `--max-budget-usd`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usd_left: Option<MicroUsd>,
}

/// One model call's usage in the ledger, as settled: tokens and dollars apart.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UsageRecord {
    /// When it was settled, in ms since the epoch.
    pub at: i64,
    pub member: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskId>,
    /// `provider/model`, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account: Option<String>,
    pub tokens: TokenUsage,
    pub pricing: Pricing,
    /// The counts are estimates: the scripted model's, or the worst case of a
    /// reservation whose caller went away before settling it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub estimated: bool,
    /// The reservation it settled, if it had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reservation: Option<u64>,
}

impl UsageRecord {
    /// What it counts against a budget.
    pub fn amounts(&self) -> Amounts {
        let usd = match self.pricing {
            Pricing::Priced { usd } => usd,
            _ => MicroUsd::ZERO,
        };
        Amounts::of(&self.tokens, usd)
    }
}

/// A granted reservation not settled yet: a call in flight.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeldCall {
    pub member: String,
    pub id: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskId>,
    pub account: String,
    pub model: String,
    /// The worst case it holds against the budgets.
    pub need: Amounts,
    /// How the worst case was priced.
    pub pricing: Pricing,
    /// Its caller's process, as it registered: a process that registers again
    /// under the name with another pid cannot settle it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    pub at: i64,
}

/// A provider account that must not be called before a moment: kept across
/// a restart of boardd, so that a capped account is not called again before
/// its reset.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccountBlock {
    pub account: String,
    pub until_ms: i64,
    pub reason: String,
}

/// A period as a person writes it: `30m`, `1d`, `12h`, `90s`, `1w`.
pub fn parse_period(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let split = s
        .find(|c: char| !c.is_ascii_digit())
        .ok_or_else(|| format!("'{s}' has no unit; write it like 30m, 12h, 1d or 1w"))?;
    let (n, unit) = s.split_at(split);
    let n: u64 = n
        .parse()
        .map_err(|_| format!("'{s}' does not start with a whole number"))?;
    let ms = match unit {
        "s" => 1_000,
        "m" | "min" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        "w" => 7 * 86_400_000,
        _ => return Err(format!("'{unit}' is not a unit; use s, m, h, d or w")),
    };
    match n.checked_mul(ms) {
        Some(0) => Err("a period must be longer than 0".to_string()),
        Some(total) => Ok(total),
        None => Err(format!("'{s}' is too long")),
    }
}

/// A period in the largest unit that divides it: `30m`, `1d`, `90s`.
pub fn fmt_period(ms: u64) -> String {
    for (unit, size) in [
        ("w", 7 * 86_400_000),
        ("d", 86_400_000),
        ("h", 3_600_000),
        ("m", 60_000),
        ("s", 1_000),
    ] {
        if ms >= size && ms.is_multiple_of(size) {
            return format!("{}{unit}", ms / size);
        }
    }
    format!("{ms}ms")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dollars_show_cents_and_the_digits_they_need() {
        assert_eq!(MicroUsd(5_110_000).to_string(), "$5.11");
        assert_eq!(MicroUsd(3_200).to_string(), "$0.0032");
        assert_eq!(MicroUsd(125).to_string(), "$0.000125");
        assert_eq!(MicroUsd(0).to_string(), "$0.00");
        assert_eq!(MicroUsd::from_usd(0.5), Some(MicroUsd(500_000)));
        assert_eq!(MicroUsd::from_usd(-1.0), None);
        assert_eq!(MicroUsd::from_usd(f64::NAN), None);
    }

    #[test]
    fn periods_read_and_print_alike() {
        for (text, ms) in [("30m", 1_800_000), ("1d", 86_400_000), ("90s", 90_000)] {
            assert_eq!(parse_period(text), Ok(ms));
            assert_eq!(fmt_period(ms), text);
        }
        assert!(parse_period("30").is_err());
        assert!(parse_period("0m").is_err());
        assert!(parse_period("3y").is_err());
        assert!(parse_period("m").is_err());
    }

    #[test]
    fn a_budget_reads_flat_on_the_wire() {
        let b = Budget {
            scope: BudgetScope::Member {
                name: "alice".into(),
            },
            per_ms: Some(1_800_000),
            limits: Limits {
                input_tokens: Some(500_000),
                ..Limits::default()
            },
            set_by: "lead".into(),
            set_at: 1,
        };
        let v = serde_json::to_value(&b).unwrap();
        assert_eq!(v["scope"], "member");
        assert_eq!(v["name"], "alice");
        assert_eq!(v["limits"]["input_tokens"], 500_000);
        assert_eq!(serde_json::from_value::<Budget>(v).unwrap(), b);
    }
}
