//! What can go wrong when calling a model.

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
    /// Whether the error is the configuration's fault (no key, a key the provider
    /// refuses, a model it does not know), so retrying later or on another task
    /// cannot help.
    pub fn is_configuration(&self) -> bool {
        match self {
            LlmError::MissingKey { .. } | LlmError::Unusable { .. } => true,
            LlmError::Http { status, .. } => matches!(status, 401 | 403 | 404),
            LlmError::GaveUp { last, .. } => last.is_configuration(),
            _ => false,
        }
    }
}
