//! When and how long to wait before trying a model call again.
use std::time::Duration;

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
