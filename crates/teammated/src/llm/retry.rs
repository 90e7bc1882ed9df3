//! Which model errors are worth another try, and how long the server asked us to
//! wait. The policy that turns attempts into waits is [`crate::backoff`].

/// Also here, where it lived first: callers outside the crate name it by this path.
pub use crate::backoff::RetryPolicy;

use super::error::LlmError;
use reqwest::header::HeaderMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use teamboard_protocol::text::byte_prefix_with_ellipsis;

/// A model call that failed and is about to be tried again. Its `Display` is the
/// line for the transcript: `model: HTTP 429 (rate limited): ...; retrying in 40 s
/// (attempt 2 of 6)`.
#[derive(Debug, Clone, Copy)]
pub struct Retrying<'a> {
    pub error: &'a LlmError,
    /// The attempt that comes next, counting from 1.
    pub next_attempt: u32,
    /// Attempts in all.
    pub attempts: u32,
    pub wait: Duration,
}

/// How much of a server's error body the retry line shows; the process log has it all.
const RETRY_BODY_MAX: usize = 160;

impl std::fmt::Display for Retrying<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("model: ")?;
        match self.error {
            LlmError::Http { status, body, .. } => {
                write!(f, "HTTP {status}")?;
                if let Some(name) = status_name(*status) {
                    write!(f, " ({name})")?;
                }
                let body = body.split_whitespace().collect::<Vec<_>>().join(" ");
                if !body.is_empty() {
                    write!(f, ": {}", byte_prefix_with_ellipsis(&body, RETRY_BODY_MAX))?;
                }
            }
            LlmError::Transport { timeout: true, .. } => f.write_str("the request timed out")?,
            LlmError::Transport { message, .. } => write!(f, "{message}")?,
            other => write!(f, "{other}")?,
        }
        write!(
            f,
            "; retrying in {} (attempt {} of {})",
            plain_duration(self.wait),
            self.next_attempt,
            self.attempts
        )
    }
}

/// What the retried statuses mean, in words.
fn status_name(status: u16) -> Option<&'static str> {
    Some(match status {
        408 => "request timeout",
        429 => "rate limited",
        500 => "server error",
        502 => "bad gateway",
        503 => "unavailable",
        504 => "gateway timeout",
        529 => "overloaded",
        _ => return None,
    })
}

/// `250 ms`, `3 s`, `1.5 s`: a wait as a person reads it.
pub(crate) fn plain_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 {
        format!("{ms} ms")
    } else if ms.is_multiple_of(1000) {
        format!("{} s", ms / 1000)
    } else {
        format!("{:.1} s", d.as_secs_f64())
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
        | LlmError::Unusable { .. }
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

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        h
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
        // httpdate checks the weekday, so the test date needs the right one.
        let date = httpdate::fmt_http_date(UNIX_EPOCH + Duration::from_secs(later));
        let got = parse_retry_after(&headers(&[("retry-after", &date)])).unwrap();
        assert!(
            got <= Duration::from_secs(120) && got >= Duration::from_secs(115),
            "{got:?}"
        );
    }

    fn http(status: u16) -> LlmError {
        LlmError::Http {
            provider: "anthropic",
            status,
            url: "http://localhost/v1/messages".into(),
            body: String::new(),
            retry_after: None,
        }
    }

    #[test]
    fn a_retry_reads_as_plain_words() {
        let rate_limited = LlmError::Http {
            provider: "openai",
            status: 429,
            url: "https://api.openai.com/v1/chat/completions".into(),
            body: "{\"error\": {\n  \"message\": \"slow down\"}}".into(),
            retry_after: Some(Duration::from_secs(40)),
        };
        let line = Retrying {
            error: &rate_limited,
            next_attempt: 2,
            attempts: 5,
            wait: Duration::from_secs(40),
        }
        .to_string();
        assert_eq!(
            line,
            r#"model: HTTP 429 (rate limited): {"error": { "message": "slow down"}}; retrying in 40 s (attempt 2 of 5)"#
        );
        let timeout = LlmError::Transport {
            provider: "anthropic",
            message: "timed out".into(),
            timeout: true,
        };
        let line = Retrying {
            error: &timeout,
            next_attempt: 3,
            attempts: 6,
            wait: Duration::from_millis(1500),
        }
        .to_string();
        assert_eq!(
            line,
            "model: the request timed out; retrying in 1.5 s (attempt 3 of 6)"
        );
        assert_eq!(plain_duration(Duration::from_millis(250)), "250 ms");
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
