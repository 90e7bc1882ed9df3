//! What the limits say on the wire, in the format of the API that asked: the
//! 429 bodies, `retry-after`, and the rate-limit headers with their times.

use super::whole_seconds;
use crate::MockReply;
use crate::cache::Api;
use serde_json::json;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// What is left of one limit in the current window.
pub(super) struct Left {
    /// `requests` or `tokens`, as both APIs name them.
    pub kind: &'static str,
    pub limit: u64,
    pub remaining: u64,
}

/// The headers of `api` reporting `left`, for a window that ends `reset` from
/// now (`wall` on the system clock). Gemini sends none.
pub(super) fn headers(
    api: Option<Api>,
    left: &[Left],
    reset: Duration,
    wall: SystemTime,
) -> Vec<(String, String)> {
    let (name, reset): (fn(&str, &str) -> String, String) = match api {
        Some(Api::OpenAi | Api::Responses) => (
            |field, kind| format!("x-ratelimit-{field}-{kind}"),
            go_duration(reset),
        ),
        Some(Api::Anthropic) => (
            |field, kind| format!("anthropic-ratelimit-{kind}-{field}"),
            rfc3339(unix_seconds_up(wall + reset)),
        ),
        Some(Api::Gemini) | None => return Vec::new(),
    };
    left.iter()
        .flat_map(|l| {
            [
                (name("limit", l.kind), l.limit.to_string()),
                (name("remaining", l.kind), l.remaining.to_string()),
                (name("reset", l.kind), reset.clone()),
            ]
        })
        .collect()
}

/// The 429 of `api` for the limit `spent` of a `window`, telling the client
/// to wait `wait` (whole seconds).
pub(super) fn rate_limited(
    api: Option<Api>,
    spent: &Left,
    window: Duration,
    wait: Duration,
) -> MockReply {
    let (kind, limit, per) = (spent.kind, spent.limit, go_duration(window));
    let reply = match api {
        Some(Api::OpenAi | Api::Responses) => {
            let message = format!(
                "Rate limit reached on {kind} per {per}: Limit {limit}, Used {limit}, \
                 Requested 1. Please try again in {}.",
                go_duration(wait)
            );
            let error = json!({"message": message, "type": kind, "param": null, "code": "rate_limit_exceeded"});
            MockReply::json(429, json!({ "error": error }))
        }
        Some(Api::Gemini) => {
            MockReply::gemini_error(429, &format!("Quota exceeded: {limit} {kind} per {per}."))
        }
        Some(Api::Anthropic) | None => {
            let message =
                format!("This request would exceed the rate limit of {limit} {kind} per {per}.");
            MockReply::error(429, "rate_limit_error", &message)
        }
    };
    reply.with_header("retry-after", wait.as_secs().to_string())
}

/// Codex's 429 for a usage limit that resets at `reset`, `left` from now.
pub(super) fn usage_limit_reached(reset: SystemTime, left: Duration) -> MockReply {
    let error = json!({
        "type": "usage_limit_reached",
        "message": "The usage limit has been reached",
        "plan_type": "plus",
        "resets_at": unix_seconds_up(reset),
        "eligible_promo": null,
        "resets_in_seconds": whole_seconds(left).as_secs(),
    });
    MockReply::json(429, json!({ "error": error }))
}

/// `t` in seconds since the Unix epoch, rounded up.
fn unix_seconds_up(t: SystemTime) -> u64 {
    whole_seconds(t.duration_since(UNIX_EPOCH).unwrap_or_default()).as_secs()
}

/// `unix` seconds as an RFC 3339 UTC time, by Howard Hinnant's
/// `civil_from_days` (for days since 1970, none before).
fn rfc3339(unix: u64) -> String {
    let (days, secs) = (unix / 86_400, unix % 86_400);
    let z = days + 719_468;
    let (era, doe) = (z / 146_097, z % 146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = era * 400 + yoe + u64::from(month <= 2);
    let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
    format!("{year:04}-{month:02}-{day:02}T{h:02}:{m:02}:{s:02}Z")
}

/// `d` as Go's `Duration.String` writes it (OpenAI's reset headers), to the
/// millisecond, rounded up: `20ms`, `1.5s`, `6m0s`, `1h0m0s`.
fn go_duration(d: Duration) -> String {
    let ms = d.as_nanos().div_ceil(1_000_000);
    if ms < 1000 {
        return if ms == 0 {
            "0s".into()
        } else {
            format!("{ms}ms")
        };
    }
    let (h, m, s, frac) = (ms / 3_600_000, ms / 60_000 % 60, ms / 1000 % 60, ms % 1000);
    let mut secs = s.to_string();
    if frac > 0 {
        secs.push_str(format!(".{frac:03}").trim_end_matches('0'));
    }
    match (h, m) {
        (0, 0) => format!("{secs}s"),
        (0, m) => format!("{m}m{secs}s"),
        (h, m) => format!("{h}h{m}m{secs}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_written_as_each_api_writes_them() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(1_788_543_035), "2026-09-04T17:30:35Z");
        assert_eq!(rfc3339(4_102_444_799), "2099-12-31T23:59:59Z");
        let go = |ms| go_duration(Duration::from_millis(ms));
        assert_eq!(go(0), "0s");
        assert_eq!(go(20), "20ms");
        assert_eq!(go(1000), "1s");
        assert_eq!(go(1500), "1.5s");
        assert_eq!(go(360_000), "6m0s");
        assert_eq!(go(90_250), "1m30.25s");
        assert_eq!(go(3_600_000), "1h0m0s");
        assert_eq!(go_duration(Duration::from_micros(19_001)), "20ms");
        let second = Duration::from_secs(1_788_543_035);
        assert_eq!(unix_seconds_up(UNIX_EPOCH + second), 1_788_543_035);
        let later = second + Duration::from_nanos(1);
        assert_eq!(unix_seconds_up(UNIX_EPOCH + later), 1_788_543_036);
    }
}
