//! When and how long to wait before trying a model call again.
//!
//! Model APIs fail transiently all the time: rate limits (429), overload (Anthropic's
//! 529), gateway hiccups (5xx) and dropped connections. Each is worth another go after
//! a pause that grows with every failure, so that a team of teammates sharing one key
//! backs off instead of hammering the API in lockstep. The jitter spreads their
//! retries apart; a server's `retry-after` is respected as the shortest wait.
use super::LlmError;
use reqwest::header::HeaderMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

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
        self.backoff_with(attempt, retry_after, next_random())
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

/// Whether an error may go away if the same request is sent again.
///
/// 408 (request timeout), 429 (rate limited), every 5xx (including Anthropic's 529
/// "overloaded") and transport failures (timeouts, refused or reset connections) are
/// transient. Other 4xx mean the request itself is wrong, the key is bad or the
/// account is out of credit: sending it again only burns quota.
pub fn is_retryable(err: &LlmError) -> bool {
    match err {
        LlmError::Http { status, .. } => matches!(status, 408 | 429 | 500..=599),
        LlmError::Transport { .. } => true,
        LlmError::MissingKey { .. }
        | LlmError::Decode { .. }
        | LlmError::GaveUp { .. }
        | LlmError::Scripted(_) => false,
    }
}

/// The wait a server asked for, if any.
///
/// `retry-after-ms` (sent by OpenAI, more precise) wins over `retry-after`, which may
/// be seconds (integer or decimal) or an HTTP-date (IMF-fixdate only). Unparseable or
/// negative values are ignored rather than trusted.
pub fn parse_retry_after(headers: &HeaderMap) -> Option<Duration> {
    let value = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(ms) = value("retry-after-ms").and_then(parse_non_negative) {
        return secs_to_duration(ms / 1000.0);
    }
    let raw = value("retry-after")?;
    if let Some(secs) = parse_non_negative(raw) {
        return secs_to_duration(secs);
    }
    let at = parse_http_date(raw)?;
    let now = SystemTime::now().duration_since(UNIX_EPOCH).ok()?.as_secs();
    Some(Duration::from_secs(at.saturating_sub(now)))
}

fn parse_non_negative(s: &str) -> Option<f64> {
    let v: f64 = s.parse().ok()?;
    (v.is_finite() && v >= 0.0).then_some(v)
}

fn secs_to_duration(secs: f64) -> Option<Duration> {
    // A day is far beyond any cap; clamping keeps absurd values from failing the
    // conversion, and the policy's cap shortens the wait anyway.
    Duration::try_from_secs_f64(secs.min(86_400.0)).ok()
}

/// Parses an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`) into Unix seconds.
fn parse_http_date(s: &str) -> Option<u64> {
    let parts: Vec<&str> = s.split_whitespace().collect();
    let [_weekday, day, month, year, time, "GMT"] = parts.as_slice() else {
        return None;
    };
    let day: u64 = day.parse().ok()?;
    let month = 1 + [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ]
    .iter()
    .position(|m| m.eq_ignore_ascii_case(month))? as u64;
    let year: u64 = year.parse().ok()?;
    let mut hms = time.split(':').map(|p| p.parse::<u64>().ok());
    let (h, m, sec) = (hms.next()??, hms.next()??, hms.next()??);
    if hms.next().is_some()
        || !(1..=31).contains(&day)
        || year < 1970
        || h > 23
        || m > 59
        || sec > 60
    {
        return None;
    }
    Some(days_from_civil(year, month, day) * 86_400 + h * 3600 + m * 60 + sec)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm),
/// for years from 1970 on.
fn days_from_civil(year: u64, month: u64, day: u64) -> u64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y / 400;
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// A xorshift64 draw. Jitter needs spread, not quality, so a whole `rand` dependency
/// would be waste. The state is seeded from the clock and the pid so that teammates
/// started in the same instant still draw differently. Concurrent callers may race on
/// the state; that only makes the numbers more mixed.
fn next_random() -> u64 {
    static STATE: AtomicU64 = AtomicU64::new(0);
    let mut x = STATE.load(Ordering::Relaxed);
    if x == 0 {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0x9E37_79B9_7F4A_7C15);
        x = (nanos ^ (u64::from(std::process::id()) << 32)) | 1;
    }
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    STATE.store(x, Ordering::Relaxed);
    x
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    fn policy() -> RetryPolicy {
        RetryPolicy {
            max_attempts: 6,
            base: Duration::from_millis(100),
            cap: Duration::from_secs(2),
        }
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        h
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

    #[test]
    fn retry_after_seconds_decimal_and_millis() {
        assert_eq!(
            parse_retry_after(&headers(&[("retry-after", "7")])),
            Some(Duration::from_secs(7))
        );
        assert_eq!(
            parse_retry_after(&headers(&[("retry-after", " 1.5 ")])),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(
            parse_retry_after(&headers(&[("retry-after", "0")])),
            Some(Duration::ZERO)
        );
        assert_eq!(
            parse_retry_after(&headers(&[
                ("retry-after", "20"),
                ("retry-after-ms", "250")
            ])),
            Some(Duration::from_millis(250))
        );
        // A broken retry-after-ms falls back to retry-after.
        assert_eq!(
            parse_retry_after(&headers(&[
                ("retry-after", "2"),
                ("retry-after-ms", "soon")
            ])),
            Some(Duration::from_secs(2))
        );
        assert_eq!(parse_retry_after(&headers(&[])), None);
        assert_eq!(parse_retry_after(&headers(&[("retry-after", "-3")])), None);
        assert_eq!(parse_retry_after(&headers(&[("retry-after", "NaN")])), None);
        assert_eq!(
            parse_retry_after(&headers(&[("retry-after", "later")])),
            None
        );
        assert_eq!(
            parse_retry_after(&headers(&[("retry-after", "1e300")])),
            Some(Duration::from_secs(86_400))
        );
    }

    #[test]
    fn retry_after_http_dates() {
        assert_eq!(
            parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT"),
            Some(784_111_777)
        );
        assert_eq!(parse_http_date("Thu, 01 Jan 1970 00:00:00 GMT"), Some(0));
        assert_eq!(
            parse_http_date("Tue, 29 Feb 2028 12:00:00 GMT"),
            Some(1_835_438_400)
        );
        assert_eq!(parse_http_date("Sunday, 06-Nov-94 08:49:37 GMT"), None);
        assert_eq!(parse_http_date("Sun, 06 Nov 1994 25:49:37 GMT"), None);
        // A date in the past means "now".
        assert_eq!(
            parse_retry_after(&headers(&[(
                "retry-after",
                "Sun, 06 Nov 1994 08:49:37 GMT"
            )])),
            Some(Duration::ZERO)
        );
        // A date in the future is a wait of about that long.
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let later = now + 120;
        let days = later / 86_400;
        let date = format_fixdate(days, later % 86_400);
        let got = parse_retry_after(&headers(&[("retry-after", &date)])).unwrap();
        assert!(
            got <= Duration::from_secs(120) && got >= Duration::from_secs(115),
            "{got:?}"
        );
    }

    /// The inverse of `days_from_civil`, only to build test dates.
    fn format_fixdate(days: u64, secs: u64) -> String {
        let z = days + 719_468;
        let era = z / 146_097;
        let doe = z - era * 146_097;
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let d = doy - (153 * mp + 2) / 5 + 1;
        let m = if mp < 10 { mp + 3 } else { mp - 9 };
        let y = yoe + era * 400 + u64::from(m <= 2);
        let months = [
            "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
        ];
        format!(
            "Mon, {d:02} {} {y} {:02}:{:02}:{:02} GMT",
            months[(m - 1) as usize],
            secs / 3600,
            secs / 60 % 60,
            secs % 60
        )
    }

    fn http(status: u16) -> LlmError {
        LlmError::Http {
            provider: "anthropic",
            status,
            body: String::new(),
            retry_after: None,
        }
    }

    #[test]
    fn transient_errors_are_retryable_and_others_are_not() {
        for status in [408, 429, 500, 502, 503, 504, 529, 599] {
            assert!(is_retryable(&http(status)), "{status}");
        }
        for status in [400, 401, 403, 404, 409, 413, 422, 600] {
            assert!(!is_retryable(&http(status)), "{status}");
        }
        for timeout in [true, false] {
            assert!(is_retryable(&LlmError::Transport {
                provider: "openai",
                message: "connection refused".into(),
                timeout,
            }));
        }
        assert!(!is_retryable(&LlmError::Decode {
            provider: "openai",
            message: "no choices".into(),
        }));
        assert!(!is_retryable(&LlmError::MissingKey {
            provider: "openai",
            var: "OPENAI_API_KEY",
            file: "keys.env".into(),
        }));
        assert!(!is_retryable(&LlmError::GaveUp {
            attempts: 3,
            last: Box::new(http(429)),
        }));
    }
}
