//! What a provider says about an account's rate limits with one answer.
//!
//! Every answer of OpenAI and Anthropic carries the account's windows in its
//! headers, and a refusal says until when the account must rest. boardd
//! schedules calls per account on what [`read`] makes of them: it holds a
//! teammate's next call until the account has room, instead of the client
//! firing it and retrying the 429 (see `LlmError::rate`).
//!
//! What is read:
//! - OpenAI: `x-ratelimit-{limit,remaining,reset}-{requests,tokens}`, the reset
//!   a Go duration from now (`20ms`, `6m0s`, `1h2m3.5s`);
//! - Anthropic: `anthropic-ratelimit-{requests,tokens,input-tokens,
//!   output-tokens}-{limit,remaining,reset}`, the reset an RFC 3339 moment;
//! - a refusal (429, and Anthropic's 529 overloaded): the moment it may be
//!   called again and the reason, from the body of a Codex usage limit
//!   (`{"error": {"type": "usage_limit_reached", "resets_at": ...,
//!   "resets_in_seconds": ...}}`), else `retry-after-ms` / `retry-after`, else
//!   the reset of a window that is at 0.
//!
//! The formats are parsed by crates: `humantime` reads both the Go durations
//! and RFC 3339 in UTC (one small crate with no dependencies, where `time`
//! for RFC 3339 alone builds five), and `httpdate`, which hyper builds
//! anyway, reads `retry-after` dates.
//!
//! Reading only `retry-after`, as the retry loop did alone, lost: it speaks
//! only once the account is already refused, while the windows let boardd
//! hold calls before the refusal.

use reqwest::header::HeaderMap;
use serde_json::Value;
use std::time::{Duration, UNIX_EPOCH};
use teamboard_protocol::spend::{RateSnapshot, RateWindow};
use teamboard_protocol::text::byte_prefix;

/// A refusal's reason is a word or two from the body; a longer one is cut.
const REASON_MAX: usize = 100;

/// What one answer said about the account's limits, with `now_ms` as the
/// moment it came (ms since the epoch); `None` when it said nothing. `body`
/// is read only for a refusal (429, 529).
pub fn read(status: u16, headers: &HeaderMap, body: &[u8], now_ms: i64) -> Option<RateSnapshot> {
    let requests = Family::openai("requests")
        .window(headers, now_ms)
        .or_else(|| Family::anthropic("requests").window(headers, now_ms));
    // Anthropic sends its input and output token windows beside the combined
    // one; boardd needs the one that runs out first: the fewest tokens left,
    // and of those the one that takes longest to refill.
    let tokens = [
        Family::openai("tokens"),
        Family::anthropic("tokens"),
        Family::anthropic("input-tokens"),
        Family::anthropic("output-tokens"),
    ]
    .iter()
    .filter_map(|family| family.window(headers, now_ms))
    .min_by_key(|w| (w.remaining, std::cmp::Reverse(w.reset_at_ms)));
    let mut snapshot = RateSnapshot {
        requests,
        tokens,
        ..RateSnapshot::default()
    };
    if matches!(status, 429 | 529) {
        let error = serde_json::from_slice::<Value>(body)
            .ok()
            .and_then(|v| v.get("error").cloned())
            .unwrap_or_default();
        // A usage limit's reset is the account's own and may be hours away,
        // where a `retry-after` beside it would be a gateway's generic guess;
        // a window's reset is when it is full again, later than when the next
        // call fits, so it comes last.
        snapshot.blocked_until_ms = usage_limit_reset(&error, now_ms)
            .or_else(|| retry_after(headers, now_ms).map(|wait| after(now_ms, wait)))
            .or_else(|| exhausted_reset(&snapshot));
        let reason = ["code", "type"]
            .iter()
            .filter_map(|field| error[*field].as_str())
            .find(|word| !word.trim().is_empty())
            .map_or_else(|| format!("HTTP {status}"), |word| word.trim().to_string());
        snapshot.blocked_reason = Some(byte_prefix(&reason, REASON_MAX).to_string());
    }
    (!snapshot.is_empty()).then_some(snapshot)
}

/// The names of one window's three headers, and how its reset is written.
struct Family {
    limit: String,
    remaining: String,
    reset: String,
    reset_form: ResetForm,
}

enum ResetForm {
    /// A Go duration from now: `6m0s`.
    After,
    /// An RFC 3339 moment: `2025-01-22T17:12:00Z`.
    At,
}

impl Family {
    fn openai(kind: &str) -> Family {
        Family {
            limit: format!("x-ratelimit-limit-{kind}"),
            remaining: format!("x-ratelimit-remaining-{kind}"),
            reset: format!("x-ratelimit-reset-{kind}"),
            reset_form: ResetForm::After,
        }
    }

    fn anthropic(kind: &str) -> Family {
        Family {
            limit: format!("anthropic-ratelimit-{kind}-limit"),
            remaining: format!("anthropic-ratelimit-{kind}-remaining"),
            reset: format!("anthropic-ratelimit-{kind}-reset"),
            reset_form: ResetForm::At,
        }
    }

    /// The window, when its remaining count and its reset both read: one
    /// without the other tells boardd nothing it can schedule on.
    fn window(&self, headers: &HeaderMap, now_ms: i64) -> Option<RateWindow> {
        let remaining = header(headers, &self.remaining)?.parse().ok()?;
        let reset = header(headers, &self.reset)?;
        let reset_at_ms = match self.reset_form {
            ResetForm::After => after(now_ms, go_duration(reset)?),
            ResetForm::At => rfc3339_ms(reset)?,
        };
        Some(RateWindow {
            limit: header(headers, &self.limit).and_then(|v| v.parse().ok()),
            remaining,
            reset_at_ms,
        })
    }
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty())
}

/// `now_ms` plus `wait`, saturating.
fn after(now_ms: i64, wait: Duration) -> i64 {
    now_ms.saturating_add(i64::try_from(wait.as_millis()).unwrap_or(i64::MAX))
}

/// A Go duration as OpenAI writes its resets (`20ms`, `1s`, `6m0s`,
/// `1h2m3.5s`), or a bare number of seconds, as some compatible servers do.
fn go_duration(s: &str) -> Option<Duration> {
    match parse_non_negative(s) {
        Some(secs) => secs_to_duration(secs),
        None => humantime::parse_duration(s).ok(),
    }
}

/// An RFC 3339 moment in ms since the epoch. Only UTC (`Z`, `+00:00`) is read,
/// which is what Anthropic sends: a window with another offset is left out
/// rather than put at the wrong hour.
fn rfc3339_ms(s: &str) -> Option<i64> {
    let at = humantime::parse_rfc3339(s).ok()?;
    i64::try_from(at.duration_since(UNIX_EPOCH).ok()?.as_millis()).ok()
}

/// A Codex/ChatGPT usage limit's reset: `resets_at` (Unix seconds), else
/// `resets_in_seconds` from now.
fn usage_limit_reset(error: &Value, now_ms: i64) -> Option<i64> {
    if let Some(at) = error["resets_at"].as_i64() {
        return Some(at.saturating_mul(1000));
    }
    let secs = error["resets_in_seconds"].as_f64()?;
    (secs >= 0.0).then(|| after(now_ms, secs_to_duration(secs).unwrap_or_default()))
}

/// When the windows at 0 are all full again: the latest of their resets.
fn exhausted_reset(snapshot: &RateSnapshot) -> Option<i64> {
    [snapshot.requests, snapshot.tokens]
        .into_iter()
        .flatten()
        .filter(|w| w.remaining == 0)
        .map(|w| w.reset_at_ms)
        .max()
}

/// The wait a server asked for, if any.
///
/// `retry-after-ms` (sent by OpenAI, more precise) wins over `retry-after`, which may
/// be seconds (integer or decimal) or an HTTP-date (IMF-fixdate only), counted from
/// `now_ms`. Unparseable or negative values are ignored rather than trusted.
pub fn retry_after(headers: &HeaderMap, now_ms: i64) -> Option<Duration> {
    if let Some(ms) = header(headers, "retry-after-ms").and_then(parse_non_negative) {
        return secs_to_duration(ms / 1000.0);
    }
    let raw = header(headers, "retry-after")?;
    if let Some(secs) = parse_non_negative(raw) {
        return secs_to_duration(secs);
    }
    let at = parse_http_date(raw)?;
    let now = u64::try_from(now_ms / 1000).unwrap_or(0);
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

/// Parses an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`) into Unix seconds. The
/// obsolete RFC 850 and asctime forms that `httpdate` also reads are refused: only
/// the fixdate has a comma after a three-letter weekday.
fn parse_http_date(s: &str) -> Option<u64> {
    if s.get(3..4) != Some(",") {
        return None;
    }
    let at = httpdate::parse_http_date(s).ok()?;
    Some(at.duration_since(UNIX_EPOCH).ok()?.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;
    use serde_json::json;

    /// 2025-01-22T17:12:00Z.
    const NOW: i64 = 1_737_565_920_000;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    fn window(limit: u64, remaining: u64, reset_at_ms: i64) -> Option<RateWindow> {
        Some(RateWindow {
            limit: Some(limit),
            remaining,
            reset_at_ms,
        })
    }

    /// The headers of an OpenAI chat completion, as its API reference lists them.
    const OPENAI: [(&str, &str); 6] = [
        ("x-ratelimit-limit-requests", "5000"),
        ("x-ratelimit-limit-tokens", "800000"),
        ("x-ratelimit-remaining-requests", "4999"),
        ("x-ratelimit-remaining-tokens", "799126"),
        ("x-ratelimit-reset-requests", "12ms"),
        ("x-ratelimit-reset-tokens", "1h2m3.5s"),
    ];

    #[test]
    fn openai_windows_reset_a_go_duration_from_now() {
        let snap = read(200, &headers(&OPENAI), b"", NOW).unwrap();
        assert_eq!(
            snap,
            RateSnapshot {
                requests: window(5000, 4999, NOW + 12),
                tokens: window(800_000, 799_126, NOW + 3_723_500),
                ..RateSnapshot::default()
            }
        );
        for (reset, ms) in [("6m0s", 360_000), ("20ms", 20), ("1s", 1000), ("2", 2000)] {
            let h = headers(&[
                ("x-ratelimit-remaining-tokens", "7"),
                ("x-ratelimit-reset-tokens", reset),
            ]);
            let tokens = read(200, &h, b"", NOW).unwrap().tokens.unwrap();
            assert_eq!(tokens.reset_at_ms, NOW + ms, "{reset}");
            assert_eq!(tokens.limit, None);
        }
        // A window without a reset that reads says nothing to schedule on.
        let h = headers(&[
            ("x-ratelimit-remaining-tokens", "7"),
            ("x-ratelimit-reset-tokens", "soon"),
        ]);
        assert_eq!(read(200, &h, b"", NOW), None);
        assert_eq!(read(200, &headers(&[]), b"", NOW), None);
    }

    /// The headers of an Anthropic message, as its rate-limit docs list them.
    const ANTHROPIC: [(&str, &str); 12] = [
        ("anthropic-ratelimit-requests-limit", "50"),
        ("anthropic-ratelimit-requests-remaining", "49"),
        ("anthropic-ratelimit-requests-reset", "2025-01-22T17:12:01Z"),
        ("anthropic-ratelimit-tokens-limit", "48000"),
        ("anthropic-ratelimit-tokens-remaining", "41000"),
        ("anthropic-ratelimit-tokens-reset", "2025-01-22T17:12:09Z"),
        ("anthropic-ratelimit-input-tokens-limit", "40000"),
        ("anthropic-ratelimit-input-tokens-remaining", "39000"),
        (
            "anthropic-ratelimit-input-tokens-reset",
            "2025-01-22T17:12:02Z",
        ),
        ("anthropic-ratelimit-output-tokens-limit", "8000"),
        ("anthropic-ratelimit-output-tokens-remaining", "2000"),
        (
            "anthropic-ratelimit-output-tokens-reset",
            "2025-01-22T17:12:45.5Z",
        ),
    ];

    #[test]
    fn anthropic_windows_reset_at_a_moment_and_tokens_take_the_tightest() {
        let snap = read(200, &headers(&ANTHROPIC), b"", NOW).unwrap();
        assert_eq!(
            snap,
            RateSnapshot {
                requests: window(50, 49, NOW + 1000),
                tokens: window(8000, 2000, NOW + 45_500),
                ..RateSnapshot::default()
            }
        );
        // Of two windows with as few tokens left, the one that refills later.
        let mut tied = ANTHROPIC.to_vec();
        tied[4].1 = "2000";
        let snap = read(200, &headers(&tied), b"", NOW).unwrap();
        assert_eq!(snap.tokens, window(8000, 2000, NOW + 45_500));
        tied[11].1 = "2025-01-22T17:12:00Z";
        let snap = read(200, &headers(&tied), b"", NOW).unwrap();
        assert_eq!(snap.tokens, window(48_000, 2000, NOW + 9000));
        // Another offset than UTC is left out, not put at the wrong hour.
        let h = headers(&[
            ("anthropic-ratelimit-requests-remaining", "3"),
            (
                "anthropic-ratelimit-requests-reset",
                "2025-01-22T18:12:01+01:00",
            ),
        ]);
        assert_eq!(read(200, &h, b"", NOW), None);
    }

    #[test]
    fn an_anthropic_429_blocks_until_its_retry_after() {
        let mut h = ANTHROPIC.to_vec();
        h[4].1 = "0";
        h.push(("retry-after", "20"));
        let body = json!({"type": "error", "error": {"type": "rate_limit_error",
            "message": "This request would exceed your organization's rate limit of 48,000 input tokens per minute."}});
        let snap = read(429, &headers(&h), body.to_string().as_bytes(), NOW).unwrap();
        assert_eq!(snap.tokens, window(48_000, 0, NOW + 9000));
        assert_eq!(snap.blocked_until_ms, Some(NOW + 20_000));
        assert_eq!(snap.blocked_reason.as_deref(), Some("rate_limit_error"));
        // Without retry-after, until the window at 0 is full again.
        h.pop();
        let snap = read(429, &headers(&h), body.to_string().as_bytes(), NOW).unwrap();
        assert_eq!(snap.blocked_until_ms, Some(NOW + 9000));
        // A 529 is a refusal too, in its own words.
        let overloaded = json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}});
        let snap = read(529, &headers(&[]), overloaded.to_string().as_bytes(), NOW).unwrap();
        assert_eq!(snap.blocked_until_ms, None);
        assert_eq!(snap.blocked_reason.as_deref(), Some("overloaded_error"));
    }

    #[test]
    fn an_openai_429_names_its_code_and_waits_the_longest_exhausted_window() {
        let mut h = OPENAI.to_vec();
        h[2].1 = "0";
        h[3].1 = "0";
        let body = json!({"error": {"message": "Rate limit reached for gpt-4o in organization org-x on tokens per min (TPM): Limit 800000, Used 800000.",
            "type": "tokens", "param": null, "code": "rate_limit_exceeded"}});
        let snap = read(429, &headers(&h), body.to_string().as_bytes(), NOW).unwrap();
        assert_eq!(snap.blocked_until_ms, Some(NOW + 3_723_500));
        assert_eq!(snap.blocked_reason.as_deref(), Some("rate_limit_exceeded"));
        // retry-after-ms beats retry-after.
        h.push(("retry-after", "20"));
        h.push(("retry-after-ms", "1500"));
        let snap = read(429, &headers(&h), body.to_string().as_bytes(), NOW).unwrap();
        assert_eq!(snap.blocked_until_ms, Some(NOW + 1500));
    }

    #[test]
    fn a_codex_usage_limit_blocks_until_it_resets() {
        let body = json!({"error": {"type": "usage_limit_reached",
            "message": "The usage limit has been reached", "plan_type": "plus",
            "resets_at": 1_737_584_000, "resets_in_seconds": 18_080}});
        // resets_at wins over a retry-after beside it.
        let h = headers(&[("retry-after", "60")]);
        let snap = read(429, &h, body.to_string().as_bytes(), NOW).unwrap();
        assert_eq!(
            snap,
            RateSnapshot {
                blocked_until_ms: Some(1_737_584_000_000),
                blocked_reason: Some("usage_limit_reached".into()),
                ..RateSnapshot::default()
            }
        );
        // An older Codex sends only how long is left.
        let body = json!({"error": {"type": "usage_limit_reached", "plan_type": "pro",
            "resets_at": null, "resets_in_seconds": 600}});
        let snap = read(429, &headers(&[]), body.to_string().as_bytes(), NOW).unwrap();
        assert_eq!(snap.blocked_until_ms, Some(NOW + 600_000));
    }

    #[test]
    fn a_bare_429_says_only_its_status() {
        for body in [&b""[..], b"Too Many Requests", br#"{"error": "slow down"}"#] {
            let snap = read(429, &headers(&[]), body, NOW).unwrap();
            assert_eq!(snap.blocked_until_ms, None);
            assert_eq!(snap.blocked_reason.as_deref(), Some("HTTP 429"));
        }
        // Other statuses block nothing, whatever their body says.
        let body = json!({"error": {"type": "usage_limit_reached", "resets_at": 1}});
        assert_eq!(
            read(500, &headers(&[]), body.to_string().as_bytes(), NOW),
            None
        );
    }

    #[test]
    fn retry_after_seconds_decimal_and_millis() {
        let wait = |pairs: &[(&'static str, &str)]| retry_after(&headers(pairs), NOW);
        assert_eq!(wait(&[("retry-after", "7")]), Some(Duration::from_secs(7)));
        assert_eq!(
            wait(&[("retry-after", " 1.5 ")]),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(wait(&[("retry-after", "0")]), Some(Duration::ZERO));
        assert_eq!(
            wait(&[("retry-after", "20"), ("retry-after-ms", "250")]),
            Some(Duration::from_millis(250))
        );
        // A broken retry-after-ms falls back to retry-after.
        assert_eq!(
            wait(&[("retry-after", "2"), ("retry-after-ms", "soon")]),
            Some(Duration::from_secs(2))
        );
        assert_eq!(wait(&[]), None);
        assert_eq!(wait(&[("retry-after", "-3")]), None);
        assert_eq!(wait(&[("retry-after", "NaN")]), None);
        assert_eq!(wait(&[("retry-after", "later")]), None);
        assert_eq!(
            wait(&[("retry-after", "1e300")]),
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
        let past = headers(&[("retry-after", "Sun, 06 Nov 1994 08:49:37 GMT")]);
        assert_eq!(retry_after(&past, NOW), Some(Duration::ZERO));
        // A date in the future is a wait of that long, and a 429's block ends then.
        let later = headers(&[("retry-after", "Wed, 22 Jan 2025 17:14:00 GMT")]);
        assert_eq!(retry_after(&later, NOW), Some(Duration::from_secs(120)));
        let snap = read(429, &later, b"", NOW).unwrap();
        assert_eq!(snap.blocked_until_ms, Some(NOW + 120_000));
    }
}
