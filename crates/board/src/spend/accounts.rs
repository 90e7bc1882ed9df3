//! Provider accounts: when each may be called again.
//!
//! An account's limits belong to the account, not to a teammate, so boardd
//! holds them for every teammate that uses it. Three kinds of fact decide
//! whether a call may start now:
//! - the limits the person configured (calls at once, requests and tokens
//!   per minute), counted over a one-minute log of the calls granted;
//! - the windows the provider announces in its headers (`remaining`, `reset`),
//!   counted down by every call granted since, and refilled to the window's
//!   limit once its reset passes, until the next answer says more. An answer
//!   can only lower what is left of a window boardd counts: calls granted
//!   after the one it answers are in flight, and the provider counted them
//!   already or will, so a `remaining` higher than boardd's count is stale;
//! - until an account's first call ends, it gets one call at a time: nothing
//!   is known of its limits yet, and a burst of teammates into an unknown
//!   window is a burst of 429s;
//! - a block: a 429 or a usage limit with a reset time. Nothing is granted on
//!   a blocked account before the block ends.
//!
//! Alternatives that lost:
//! - each teammate keeping its own limiter: teammates are separate processes
//!   sharing one account, so each would spend the whole allowance alone;
//! - retrying 429s with backoff (what the providers' SDKs do): the retries are
//!   themselves calls against the limit, and a usage cap with a reset hours
//!   away is hit again every few seconds;
//! - a token bucket refilled at the announced rate: providers announce windows
//!   (a count left and a reset time), and a bucket smooths what the window
//!   allows in bursts, so it would leave capacity unused.
//!
//! Times are wall-clock ms: the providers' resets are wall-clock, and a block
//! is kept across a restart of boardd.

use std::collections::{BTreeMap, VecDeque};
use teamboard_protocol::spend::{AccountBlock, AccountState, RateLimits, RateSnapshot, RateWindow};

const MINUTE_MS: i64 = 60_000;
/// The longest block an answer can put on an account.
const MAX_BLOCK_MS: i64 = 7 * 86_400_000;

/// When an account can take a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Capacity {
    Now,
    /// Not before this moment (ms since the epoch); why, in words.
    At(i64, String),
    /// When a call in flight ends (its answer may also say more).
    AfterSettle(String),
}

/// A provider window as boardd counts it down.
#[derive(Debug, Clone, Copy)]
struct Learned {
    limit: Option<u64>,
    /// What is left of the window, as last heard less what was granted since.
    remaining: u64,
    /// When the window refills; `None` once it did, until an answer says
    /// when the next one ends.
    reset_at: Option<i64>,
}

impl Learned {
    fn from(w: RateWindow) -> Learned {
        Learned {
            limit: w.limit,
            remaining: w.remaining,
            reset_at: Some(w.reset_at_ms),
        }
    }

    /// Takes an answer's word on the window (see the module doc: it can
    /// only lower the count).
    fn heard(&mut self, w: RateWindow) {
        self.limit = w.limit.or(self.limit);
        self.remaining = self.remaining.min(w.remaining);
        self.reset_at = Some(w.reset_at_ms);
    }

    /// Brings the window up to `now`: a reset that passed refills it.
    fn roll(&mut self, now: i64) {
        if self.reset_at.is_some_and(|r| r <= now) {
            self.reset_at = None;
            self.remaining = self.limit.unwrap_or(u64::MAX);
        }
    }

    fn capacity(&self, need: u64, what: &str) -> Capacity {
        if self.remaining >= need.max(1) {
            return Capacity::Now;
        }
        match self.reset_at {
            Some(at) => Capacity::At(at, format!("the provider's {what} window is spent")),
            None => Capacity::AfterSettle(format!("the provider's {what} window is spent")),
        }
    }

    fn take(&mut self, n: u64) {
        self.remaining = self.remaining.saturating_sub(n);
    }
}

#[derive(Debug, Clone, Default)]
struct Account {
    limits: RateLimits,
    in_flight: u32,
    /// Calls granted within the last minute: when, and their tokens.
    starts: VecDeque<(i64, u64)>,
    requests: Option<Learned>,
    tokens: Option<Learned>,
    block: Option<(i64, String)>,
    /// A call on it has ended: its answer said what it says of the limits.
    heard: bool,
}

impl Account {
    fn roll(&mut self, now: i64) {
        while self
            .starts
            .front()
            .is_some_and(|(at, _)| *at <= now - MINUTE_MS)
        {
            self.starts.pop_front();
        }
        if self.block.as_ref().is_some_and(|(until, _)| *until <= now) {
            self.block = None;
        }
        for w in [&mut self.requests, &mut self.tokens].into_iter().flatten() {
            w.roll(now);
        }
    }

    fn capacity(&self, tokens: u64, now: i64) -> Capacity {
        if let Some((until, why)) = &self.block
            && *until > now
        {
            return Capacity::At(*until, why.clone());
        }
        if !self.heard && self.in_flight >= 1 {
            return Capacity::AfterSettle("its first call, to learn its limits".to_string());
        }
        if let Some(max) = self.limits.concurrent
            && self.in_flight >= max
        {
            return Capacity::AfterSettle(format!("{max} calls at once"));
        }
        if let Some(rpm) = self.limits.requests_per_minute
            && self.starts.len() >= rpm as usize
            && let Some((first, _)) = self.starts.front()
        {
            return Capacity::At(first + MINUTE_MS, format!("{rpm} requests per minute"));
        }
        if let Some(tpm) = self.limits.tokens_per_minute {
            let used = self
                .starts
                .iter()
                .fold(0u64, |a, (_, t)| a.saturating_add(*t));
            if used > 0 && used.saturating_add(tokens) > tpm {
                // The moment enough of the minute's calls fall out of it.
                let mut left = used;
                for (at, t) in &self.starts {
                    left = left.saturating_sub(*t);
                    if left == 0 || left.saturating_add(tokens) <= tpm {
                        return Capacity::At(at + MINUTE_MS, format!("{tpm} tokens per minute"));
                    }
                }
            }
        }
        // A window spent with no reset known waits for an answer to say
        // more; with no call in flight none will come, so one call goes and
        // the provider decides.
        let settles = self.in_flight > 0;
        if let Some(w) = &self.requests {
            match w.capacity(1, "request") {
                Capacity::AfterSettle(_) if !settles => {}
                c @ (Capacity::At(..) | Capacity::AfterSettle(_)) => return c,
                Capacity::Now => {}
            }
        }
        if let Some(w) = &self.tokens
            && let c @ (Capacity::At(..) | Capacity::AfterSettle(_)) = w.capacity(tokens, "token")
            && (settles || matches!(c, Capacity::At(..)))
        {
            // A call bigger than the whole window would wait forever: it is
            // let through once the window is full, and the provider decides.
            if w.limit.is_none_or(|l| tokens <= l) || w.remaining < w.limit.unwrap_or(0) {
                return c;
            }
        }
        Capacity::Now
    }
}

/// Every account boardd has scheduled calls for.
#[derive(Debug, Default)]
pub(crate) struct Accounts {
    map: BTreeMap<String, Account>,
}

impl Accounts {
    /// Restores the blocks kept across a restart.
    pub fn restore(&mut self, blocks: Vec<AccountBlock>) {
        for b in blocks {
            self.map.entry(b.account).or_default().block = Some((b.until_ms, b.reason));
        }
    }

    /// Takes the limits a teammate configured for the account: the latest
    /// word wins, as a person who changes them restarts teammates one by one.
    pub fn configure(&mut self, name: &str, limits: RateLimits) {
        let a = self.map.entry(name.to_string()).or_default();
        if limits != RateLimits::default() {
            a.limits = limits;
        }
    }

    /// When the account ends its block, if it has one.
    pub fn blocked(&mut self, name: &str, now: i64) -> Option<(i64, String)> {
        let a = self.map.get_mut(name)?;
        a.roll(now);
        a.block.clone()
    }

    pub fn capacity(&mut self, name: &str, tokens: u64, now: i64) -> Capacity {
        let a = self.map.entry(name.to_string()).or_default();
        a.roll(now);
        a.capacity(tokens, now)
    }

    /// A call starts on the account.
    pub fn start(&mut self, name: &str, tokens: u64, now: i64) {
        let a = self.map.entry(name.to_string()).or_default();
        a.in_flight += 1;
        a.starts.push_back((now, tokens));
        if let Some(w) = &mut a.requests {
            w.take(1);
        }
        if let Some(w) = &mut a.tokens {
            w.take(tokens);
        }
    }

    /// Marks the account as one whose limits its answers have told.
    pub fn heard(&mut self, name: &str) {
        self.map.entry(name.to_string()).or_default().heard = true;
    }

    /// A call on the account ended.
    pub fn end(&mut self, name: &str) {
        if let Some(a) = self.map.get_mut(name) {
            a.in_flight = a.in_flight.saturating_sub(1);
            a.heard = true;
        }
    }

    /// Learns what an answer said of the account. A new block is returned,
    /// to be kept across a restart.
    pub fn learn(&mut self, name: &str, snap: &RateSnapshot, now: i64) -> Option<AccountBlock> {
        let a = self.map.entry(name.to_string()).or_default();
        a.roll(now);
        for (learned, w) in [
            (&mut a.requests, snap.requests),
            (&mut a.tokens, snap.tokens),
        ] {
            let Some(w) = w else { continue };
            match learned {
                Some(l) => l.heard(w),
                None => *learned = Some(Learned::from(w)),
            }
        }
        // A reset further than a week away is a misread, or a forged one:
        // no provider's usage window is that long, and nothing lifts a block
        // but its end.
        let until = snap
            .blocked_until_ms
            .filter(|u| *u > now)?
            .min(now.saturating_add(MAX_BLOCK_MS));
        let reason = snap
            .blocked_reason
            .clone()
            .unwrap_or_else(|| "rate limited".to_string());
        // A later block wins; an earlier one says nothing new.
        if a.block.as_ref().is_some_and(|(u, _)| *u >= until) {
            return None;
        }
        a.block = Some((until, reason.clone()));
        Some(AccountBlock {
            account: name.to_string(),
            until_ms: until,
            reason,
        })
    }

    pub fn states(&mut self, now: i64, waiting: impl Fn(&str) -> u32) -> Vec<AccountState> {
        self.map
            .iter_mut()
            .map(|(name, a)| {
                a.roll(now);
                let window = |l: &Option<Learned>| {
                    l.and_then(|l| {
                        Some(RateWindow {
                            limit: l.limit,
                            remaining: l.remaining,
                            reset_at_ms: l.reset_at?,
                        })
                    })
                };
                AccountState {
                    name: name.clone(),
                    limits: a.limits,
                    in_flight: a.in_flight,
                    waiting: waiting(name),
                    blocked_until_ms: a.block.as_ref().map(|b| b.0),
                    blocked_reason: a.block.as_ref().map(|b| b.1.clone()),
                    requests: window(&a.requests),
                    tokens: window(&a.tokens),
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configured_limits_hold_calls() {
        let mut a = Accounts::default();
        a.configure(
            "acct",
            RateLimits {
                concurrent: Some(1),
                requests_per_minute: Some(2),
                ..RateLimits::default()
            },
        );
        assert_eq!(a.capacity("acct", 10, 0), Capacity::Now);
        a.start("acct", 10, 0);
        assert!(matches!(
            a.capacity("acct", 10, 1),
            Capacity::AfterSettle(_)
        ));
        a.end("acct");
        a.start("acct", 10, 5);
        a.end("acct");
        // Two in the minute: the third waits for the first to leave it.
        assert!(matches!(a.capacity("acct", 10, 6), Capacity::At(60_000, _)));
        assert_eq!(a.capacity("acct", 10, 60_000), Capacity::Now);
    }

    #[test]
    fn a_learned_window_counts_down_and_refills_at_its_reset() {
        let mut a = Accounts::default();
        let snap = RateSnapshot {
            requests: Some(RateWindow {
                limit: Some(2),
                remaining: 1,
                reset_at_ms: 1_000,
            }),
            ..RateSnapshot::default()
        };
        a.learn("acct", &snap, 0);
        assert_eq!(a.capacity("acct", 5, 10), Capacity::Now);
        a.start("acct", 5, 10);
        a.end("acct");
        assert!(matches!(a.capacity("acct", 5, 20), Capacity::At(1_000, _)));
        // After the reset the window holds its limit again, unannounced.
        assert_eq!(a.capacity("acct", 5, 1_000), Capacity::Now);
        a.start("acct", 5, 1_000);
        a.start("acct", 5, 1_001);
        assert!(matches!(
            a.capacity("acct", 5, 1_002),
            Capacity::AfterSettle(_)
        ));
    }

    #[test]
    fn an_answer_only_lowers_what_is_left_of_a_window() {
        let mut a = Accounts::default();
        let window = |remaining| RateSnapshot {
            requests: Some(RateWindow {
                limit: Some(8),
                remaining,
                reset_at_ms: 1_000,
            }),
            ..RateSnapshot::default()
        };
        a.learn("acct", &window(8), 0);
        for _ in 0..8 {
            a.start("acct", 1, 1);
        }
        // The first call's answer counted only itself: 7 left, it says, but
        // seven more are on their way.
        a.end("acct");
        a.learn("acct", &window(7), 2);
        assert!(matches!(a.capacity("acct", 1, 3), Capacity::At(1_000, _)));
    }

    #[test]
    fn a_spent_window_with_nothing_in_flight_lets_one_call_go() {
        let mut a = Accounts::default();
        let snap = RateSnapshot {
            tokens: Some(RateWindow {
                limit: Some(30),
                remaining: 30,
                reset_at_ms: 1_000,
            }),
            ..RateSnapshot::default()
        };
        a.learn("acct", &snap, 0);
        a.start("acct", 20, 1_000);
        a.end("acct");
        // 10 left, unknown reset, and no answer coming: the provider decides.
        assert_eq!(a.capacity("acct", 20, 1_001), Capacity::Now);
    }

    #[test]
    fn a_block_lasts_a_week_at_most() {
        let mut a = Accounts::default();
        let snap = RateSnapshot {
            blocked_until_ms: Some(i64::MAX),
            ..RateSnapshot::default()
        };
        let kept = a.learn("acct", &snap, 0).expect("kept");
        assert_eq!(kept.until_ms, MAX_BLOCK_MS);
    }

    #[test]
    fn an_unknown_account_gets_one_call_until_one_ends() {
        let mut a = Accounts::default();
        a.start("acct", 1, 0);
        assert!(matches!(a.capacity("acct", 1, 0), Capacity::AfterSettle(_)));
        a.end("acct");
        a.start("acct", 1, 1);
        assert_eq!(a.capacity("acct", 1, 1), Capacity::Now);
    }

    #[test]
    fn a_block_holds_every_call_until_it_ends() {
        let mut a = Accounts::default();
        let snap = RateSnapshot {
            blocked_until_ms: Some(5_000),
            blocked_reason: Some("usage_limit_reached".into()),
            ..RateSnapshot::default()
        };
        let kept = a.learn("acct", &snap, 0).expect("a new block is kept");
        assert_eq!(kept.until_ms, 5_000);
        assert!(matches!(
            a.capacity("acct", 1, 4_999),
            Capacity::At(5_000, _)
        ));
        assert_eq!(a.blocked("acct", 4_999).map(|b| b.0), Some(5_000));
        assert_eq!(a.capacity("acct", 1, 5_000), Capacity::Now);
        assert_eq!(a.blocked("acct", 5_000), None);
        // A block already past says nothing.
        assert!(a.learn("acct", &snap, 6_000).is_none());
    }
}
