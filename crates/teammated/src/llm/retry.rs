//! Which model errors are worth another try, and which of them are the account's
//! rate limit. How long the server asked us to wait is read in [`super::ratelimit`];
//! the policy that turns attempts into waits is [`crate::backoff`].

/// Also here, where it lived first: callers outside the crate name it by this path.
pub use crate::backoff::RetryPolicy;

use super::error::LlmError;
use std::time::Duration;
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

/// Whether an error is the account's rate limit (429), which a caller that
/// schedules calls per account takes back rather than have it retried here
/// (`CompletionRequest::retry_rate_limits`).
///
/// Anthropic's 529 "overloaded" is left out: it is the service's load, not the
/// account's limit, so no account's schedule can wait it out and a retry soon
/// is what helps.
pub fn is_rate_limit(err: &LlmError) -> bool {
    matches!(err, LlmError::Http { status: 429, .. })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn http(status: u16) -> LlmError {
        LlmError::Http {
            provider: "anthropic",
            status,
            url: "http://localhost/v1/messages".into(),
            body: String::new(),
            retry_after: None,
            rate: None,
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
            rate: None,
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
