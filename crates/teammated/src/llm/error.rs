//! What can go wrong when calling a model.

use teamboard_protocol::spend::RateSnapshot;

/// What can go wrong when calling a model.
#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    #[error("{provider}: no API key; set {var} in the environment or in {file}")]
    MissingKey {
        provider: &'static str,
        var: &'static str,
        file: String,
    },
    #[error("{provider}: HTTP {status} from {url}: {body}")]
    Http {
        provider: &'static str,
        status: u16,
        /// The URL asked, as `shown_url` shows it: no password, no query.
        url: String,
        body: String,
        /// The server's `retry-after`, when it sent one.
        retry_after: Option<std::time::Duration>,
        /// What the answer said about the account's limits (see
        /// [`LlmError::rate`]). Boxed, so that every `Result` that carries an
        /// `LlmError` stays small.
        rate: Option<Box<RateSnapshot>>,
    },
    #[error("{provider}: request failed: {message}")]
    Transport {
        provider: &'static str,
        message: String,
        timeout: bool,
    },
    #[error("{provider}: unexpected answer: {message}")]
    Decode {
        provider: &'static str,
        message: String,
    },
    #[error("{last} (gave up after {attempts} attempts)")]
    GaveUp { attempts: u32, last: Box<LlmError> },
    #[error("scripted model: {0}")]
    Scripted(String),
    /// The server answered, and its answer says the base URL or the key is wrong
    /// (found by the check at start).
    #[error("{provider}: {message}")]
    Unusable {
        provider: &'static str,
        message: String,
    },
}

impl LlmError {
    /// What the provider said about the account's limits with the answer that
    /// failed, the last one when retries ran out: for a 429 or 529, until when
    /// the account must not be called and why.
    pub fn rate(&self) -> Option<&RateSnapshot> {
        match self {
            LlmError::Http { rate, .. } => rate.as_deref(),
            LlmError::GaveUp { last, .. } => last.rate(),
            _ => None,
        }
    }

    /// Whether the error is the configuration's fault (no key, a key the provider
    /// refuses, a model it does not know, a model that refuses what every request
    /// carries), so retrying later or on another task cannot help.
    pub fn is_configuration(&self) -> bool {
        match self {
            LlmError::MissingKey { .. } | LlmError::Unusable { .. } => true,
            LlmError::Http { status, body, .. } => match status {
                401 | 403 | 404 => true,
                400 | 422 => refuses_every_request(body),
                _ => false,
            },
            LlmError::GaveUp { last, .. } => last.is_configuration(),
            _ => false,
        }
    }
}

/// Whether a refused request's body says the model or server does not take a
/// part that every request carries: the output-limit field (after the provider
/// tried the other one) or the tools (ollama: "... does not support tools").
/// Sent again, on this task or another, it would be refused alike.
fn refuses_every_request(body: &str) -> bool {
    refuses_parameter(body, "max_tokens")
        || refuses_parameter(body, "max_completion_tokens")
        || body.to_ascii_lowercase().contains("does not support tools")
}

/// Whether an error body says the request's parameter `name` is one the model or
/// server does not take (OpenAI: "Unsupported parameter: 'max_tokens' is not
/// supported with this model. Use 'max_completion_tokens' instead."; Azure:
/// "Unrecognized request argument supplied: max_completion_tokens"; strict
/// servers: "extra inputs are not permitted"), rather than a value of it that it
/// refuses ("max_tokens is too large").
pub(crate) fn refuses_parameter(body: &str, name: &str) -> bool {
    let body = body.to_ascii_lowercase();
    body.contains(name)
        && [
            "unsupported parameter",
            "not supported",
            "unrecognized",
            "unknown",
            "not permitted",
        ]
        .iter()
        .any(|words| body.contains(words))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn http(status: u16, body: &str) -> LlmError {
        LlmError::Http {
            provider: "openai",
            status,
            url: "http://localhost/v1/chat/completions".into(),
            body: body.into(),
            retry_after: None,
            rate: None,
        }
    }

    #[test]
    fn a_request_refused_for_what_every_request_carries_is_the_setups_fault() {
        let setup = [
            r#"{"error": {"message": "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.", "type": "invalid_request_error", "param": "max_tokens", "code": "unsupported_parameter"}}"#,
            r#"{"error": {"message": "Unrecognized request argument supplied: max_completion_tokens", "type": "invalid_request_error"}}"#,
            r#"{"detail": [{"type": "extra_forbidden", "loc": ["body", "max_completion_tokens"], "msg": "Extra inputs are not permitted"}]}"#,
            r#"{"error": "registry.ollama.ai/library/gemma:2b does not support tools"}"#,
        ];
        for body in setup {
            assert!(http(400, body).is_configuration(), "{body}");
        }
        assert!(http(422, setup[2]).is_configuration());
        let task = [
            r#"{"error": {"message": "max_tokens is too large: 100000. This model supports at most 16384 completion tokens, whereas you provided 100000.", "param": "max_tokens", "code": "invalid_value"}}"#,
            r#"{"error": {"message": "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.", "code": "context_length_exceeded"}}"#,
            "bad request",
        ];
        for body in task {
            assert!(!http(400, body).is_configuration(), "{body}");
        }
        assert!(!http(500, setup[0]).is_configuration(), "a 500 is retried");
    }
}
