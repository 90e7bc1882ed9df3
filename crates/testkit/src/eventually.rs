//! Waiting for a condition, with a bound and without fixed sleeps.
//!
//! Trap: the deadline is wall-clock time (`std::time::Instant`), also under tokio's
//! paused clock. A virtual deadline would pass at once while the test waits on a
//! real process or socket, because the paused runtime jumps its clock whenever it
//! is idle. The polling sleep, though, does advance a paused clock by a few
//! milliseconds per round.

use std::fmt::Display;
use std::future::Future;
use std::time::{Duration, Instant};

/// The longest a test waits for something that should take milliseconds. Generous
/// because CI machines are slow and shared; a passing test never waits this long.
pub const PATIENCE: Duration = Duration::from_secs(30);

/// How long to wait between two checks.
const POLL: Duration = Duration::from_millis(5);

/// Polls `check` until it returns `Some`, or panics with `what` once `timeout` has
/// passed. `what` is formatted only then, so it may show state at the time of the
/// failure (a log file, say).
pub async fn eventually<T, F, Fut>(what: impl Display, timeout: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        if Instant::now() >= deadline {
            panic!("timed out after {timeout:?} waiting for {what}");
        }
        tokio::time::sleep(POLL).await;
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
        std::thread::sleep(POLL);
    }
}
