//! When a `session/load` may be sent to Gemini CLI: never in the UTC minute
//! the session was created in.
//!
//! Gemini names a session's file after the minute it was created in
//! (`chats/session-<YYYY-MM-DDTHH-MM>-<the id's first 8>.jsonl`), and its
//! `session/load` starts a scratch chat under the session's own id before it
//! looks the session up. That chat writes its header and its (empty) history
//! to `session-<this minute>-<the same 8>.jsonl`. In the minute of the
//! session's creation that is the session's own file: the history no longer
//! counts, the load fails with "No previous sessions found for this project."
//! and the session is lost for good. In any later minute the scratch chat gets
//! a file of its own and the load works. The source locations are in
//! `docs/design/runtime-acp.md`.
//!
//! The invariant: a load goes out in a later minute than the one the
//! session's file is named after. That minute is at most the one `session/new`
//! answered in; for a session this process did not open (teammated was
//! restarted), at most the one this start began in. So a load may have to
//! wait for the next minute, at most 60 s; a session opened in this process
//! more than a minute ago is loaded at once.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The name Gemini CLI gives itself in `initialize` (`agentInfo.name`).
pub const GEMINI: &str = "gemini-cli";

/// For each session opened in this process: the latest minute its file can
/// be named after. One small entry per task; kept, since a forgotten session
/// costs a wait on its next load.
static OPENED: Mutex<BTreeMap<String, u64>> = Mutex::new(BTreeMap::new());

/// Minutes since the Unix epoch: what Gemini's file names count in (UTC).
pub fn minute(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).unwrap_or_default().as_secs() / 60
}

/// Records that `session` was opened and that its file is named after
/// `minute` at the latest.
pub fn opened(session: &str, minute: u64) {
    let mut map = OPENED.lock().unwrap_or_else(|e| e.into_inner());
    map.entry(session.to_string())
        .and_modify(|m| *m = (*m).min(minute))
        .or_insert(minute);
}

/// The earliest time a load of `session` may be sent by a start that began at
/// `started`.
pub fn not_before(session: &str, started: SystemTime) -> SystemTime {
    let known = OPENED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(session)
        .copied();
    after(known.unwrap_or_else(|| minute(started)))
}

/// The start of the minute after `minute`.
fn after(minute: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs((minute + 1) * 60)
}

/// Sleeps until the wall clock reads `t` (the minute is the wall clock's, so
/// it is asked again after each sleep).
pub async fn wait_until(t: SystemTime) {
    while let Ok(left) = t.duration_since(SystemTime::now()) {
        if left.is_zero() {
            return;
        }
        tokio::time::sleep(left).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(secs)
    }

    #[test]
    fn a_session_unknown_here_waits_for_the_minute_after_the_start() {
        // 10:00:42 UTC on some day: the load may go at 10:01:00.
        let started = at(600 * 60 + 42);
        assert_eq!(
            not_before("load-time-unknown", started),
            at(601 * 60),
            "the session may have been created in the start's own minute"
        );
    }

    #[test]
    fn a_session_opened_here_waits_only_within_its_own_minute() {
        opened("load-time-known", 600);
        // Created at 10:00: a start at 10:00:59 waits until 10:01, one at
        // 10:07 does not wait at all.
        assert_eq!(
            not_before("load-time-known", at(600 * 60 + 59)),
            at(601 * 60)
        );
        assert!(not_before("load-time-known", at(607 * 60)) <= at(607 * 60));
        // A later open (a load) does not move the file's minute.
        opened("load-time-known", 607);
        assert_eq!(not_before("load-time-known", at(607 * 60)), at(601 * 60));
    }

    #[test]
    fn minutes_count_from_the_epoch_in_utc() {
        assert_eq!(minute(at(59)), 0);
        assert_eq!(minute(at(60)), 1);
        assert_eq!(minute(UNIX_EPOCH - Duration::from_secs(5)), 0);
    }

    #[tokio::test]
    async fn waiting_for_a_past_time_returns_at_once() {
        let before = std::time::Instant::now();
        wait_until(SystemTime::now() - Duration::from_secs(1)).await;
        assert!(before.elapsed() < Duration::from_secs(1));
    }
}
