//! When and how long to wait before trying again.
//!
//! Model APIs fail transiently all the time: rate limits (429), overload (Anthropic's
//! 529), gateway hiccups (5xx) and dropped connections. Each is worth another go after
//! a pause that grows with every failure, so that a team of teammates sharing one key
//! backs off instead of hammering the API in lockstep. The jitter spreads their
//! retries apart; a server's `retry-after` is respected as the shortest wait.
//!
//! The policy is a setting (see [`crate::config::ProviderConfig`]); which failures are
//! worth a retry is the model client's business (`llm::retry`).

use std::time::Duration;

/// The longest `retry-after` honoured.
pub const RETRY_AFTER_MAX: Duration = Duration::from_secs(600);

/// Exponential backoff with jitter for transient failures (429, 5xx, 529, timeouts).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in all, the first one included.
    pub max_attempts: u32,
    /// The first backoff; each retry doubles it.
    pub base: Duration,
    /// No single wait is longer than this, `retry-after` included.
    pub cap: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 6,
            base: Duration::from_millis(500),
            cap: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// How long to wait after failed attempt number `attempt` (1 for the first call).
    ///
    /// "Equal jitter": half of `base * 2^(attempt-1)` is always waited and a random
    /// share of the other half is added. Unlike full jitter this never retries almost
    /// at once, which matters for 429s; unlike no jitter it keeps teammates that failed
    /// together from retrying together. The backoff never exceeds `cap`; a server's
    /// `retry-after` is a lower bound that may exceed it, up to [`RETRY_AFTER_MAX`].
    pub fn backoff(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        self.backoff_with(attempt, retry_after, fastrand::u64(..))
    }

    /// [`RetryPolicy::backoff`] with the random draw given, so tests are deterministic.
    fn backoff_with(&self, attempt: u32, retry_after: Option<Duration>, random: u64) -> Duration {
        let exp = self.exponential(attempt).min(self.cap);
        let exp_nanos = u64::try_from(exp.as_nanos()).unwrap_or(u64::MAX);
        let half = exp_nanos / 2;
        // `exp_nanos - half` rather than `half` so odd values are not rounded down.
        let span = exp_nanos - half;
        // Scales the draw onto 0..=span: 0 maps to 0 and u64::MAX to span, without
        // the bias of a modulo.
        let extra = ((u128::from(random) * (u128::from(span) + 1)) >> 64) as u64;
        let jittered = Duration::from_nanos(half + extra);
        // The server's word beats our cap: retrying before it says so only earns
        // another 429. Bounded, so a silly header cannot park the teammate for days.
        let asked = retry_after.unwrap_or_default().min(RETRY_AFTER_MAX);
        jittered.min(self.cap).max(asked)
    }

    /// `base * 2^(attempt-1)`, saturating instead of overflowing on silly attempts.
    fn exponential(&self, attempt: u32) -> Duration {
        let doublings = attempt.saturating_sub(1).min(31);
        self.base.saturating_mul(1u32 << doublings)
    }

    /// Attempts in all, at least one even if the policy says zero.
    pub fn attempts(&self) -> u32 {
        self.max_attempts.max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> RetryPolicy {
        RetryPolicy {
            max_attempts: 6,
            base: Duration::from_millis(100),
            cap: Duration::from_secs(2),
        }
    }

    #[test]
    fn backoff_doubles_with_jitter_between_half_and_full() {
        let p = policy();
        for attempt in 1..=4u32 {
            let full = Duration::from_millis(100 * 2u64.pow(attempt - 1));
            assert_eq!(p.backoff_with(attempt, None, 0), full / 2);
            assert_eq!(p.backoff_with(attempt, None, u64::MAX), full);
            for _ in 0..100 {
                let d = p.backoff(attempt, None);
                assert!(d >= full / 2 && d <= full, "attempt {attempt}: {d:?}");
            }
        }
    }

    #[test]
    fn backoff_never_exceeds_the_cap() {
        let p = policy();
        for attempt in [6, 10, 32, 100, u32::MAX] {
            let d = p.backoff(attempt, None);
            assert!(d <= p.cap, "attempt {attempt}: {d:?}");
            assert!(d >= p.cap / 2, "attempt {attempt}: {d:?}");
        }
        // retry-after beats the cap, within reason.
        assert_eq!(
            p.backoff(1, Some(Duration::from_secs(90))),
            Duration::from_secs(90)
        );
        assert_eq!(
            p.backoff(1, Some(Duration::from_secs(3600))),
            RETRY_AFTER_MAX
        );
    }

    #[test]
    fn retry_after_is_a_lower_bound() {
        let p = policy();
        let d = p.backoff(1, Some(Duration::from_millis(1500)));
        assert_eq!(d, Duration::from_millis(1500));
        // A shorter retry-after than the backoff changes nothing.
        assert_eq!(
            p.backoff_with(2, Some(Duration::ZERO), 0),
            Duration::from_millis(100)
        );
    }

    #[test]
    fn zero_base_and_zero_attempts_are_harmless() {
        let p = RetryPolicy {
            max_attempts: 0,
            base: Duration::ZERO,
            cap: Duration::from_secs(1),
        };
        assert_eq!(p.backoff(3, None), Duration::ZERO);
        assert_eq!(p.attempts(), 1);
        assert_eq!(RetryPolicy::default().attempts(), 6);
    }
}
