//! Waiting for a condition, with a bound and without fixed sleeps.
//!
//! The async wait is `teamboard-process`'s [`poll`](teamboard_process::poll),
//! whose deadline is wall-clock time also under tokio's paused clock (see there);
//! the polling sleep does advance a paused clock by a few milliseconds per round.

use std::fmt::Display;
use std::future::Future;
use std::time::{Duration, Instant};

/// The longest a test waits for something that should take milliseconds. Generous
/// because CI machines are slow and shared; a passing test never waits this long.
pub const PATIENCE: Duration = Duration::from_secs(30);

/// Polls `check` until it returns `Some`, or panics with `what` once `timeout` has
/// passed. `what` is formatted only then, so it may show state at the time of the
/// failure (a log file, say).
pub async fn eventually<T, F, Fut>(what: impl Display, timeout: Duration, check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    match teamboard_process::poll(timeout, check).await {
        Some(value) => value,
        None => panic!("timed out after {timeout:?} waiting for {what}"),
    }
}

/// A description worked out only when it is shown: what a failed wait says,
/// with the state (a log, the processes left) at the time of the failure.
pub(crate) struct Later<F>(pub F);

impl<F: Fn() -> String> Display for Later<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&(self.0)())
    }
}

/// [`eventually`] for blocking tests: polls `check` on this thread.
pub fn eventually_blocking<T>(
    what: impl Display,
    timeout: Duration,
    mut check: impl FnMut() -> Option<T>,
) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(value) = check() {
            return value;
        }
        if Instant::now() >= deadline {
            panic!("timed out after {timeout:?} waiting for {what}");
        }
        std::thread::sleep(teamboard_process::POLL);
    }
}
