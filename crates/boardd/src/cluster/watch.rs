//! How a follower learns who decides: `LISTEN` for the announcements, and a
//! re-read of the row that never trusts them alone.
//!
//! One std thread owns a connection (the sync client may not run on a runtime
//! worker) and publishes the row through a `tokio::sync::watch`:
//! - after every (re)connect it re-reads the row: a NOTIFY sent while the
//!   connection was down is lost for good (sqlx#447), so catching up is the only
//!   way to learn of it;
//! - after every NOTIFY (a take or a release) it re-reads at once;
//! - it re-reads when the live lease would run out by the database's clock, since
//!   an expiry announces nothing, and at least every `safety` otherwise.
//!
//! Alternative that lost: polling the row alone. Takeover would wait for the
//! poll interval, and a short interval costs every follower a query per tick.

use super::leadership::{self, CHANNEL, Leader};
use postgres::fallible_iterator::FallibleIterator as _;
use std::time::Duration;
use tokio::sync::watch;

/// Re-read this long after the lease should have run out, so that the database
/// sees it expired.
const EXPIRY_MARGIN: Duration = Duration::from_millis(20);
/// The wait before connecting again after the connection failed.
const RECONNECT_AFTER: Duration = Duration::from_millis(200);
/// The name of the watching connection in `pg_stat_activity`.
pub const PURPOSE: &str = "teamboard-watch";

/// The leader as last read; `None` until the first read.
pub type Leaders = watch::Receiver<Option<Leader>>;

/// Starts watching `url`'s leadership row. The thread ends once every receiver
/// is dropped (noticed within `safety`).
pub fn spawn(url: String, safety: Duration) -> std::io::Result<Leaders> {
    let (tx, rx) = watch::channel(None);
    std::thread::Builder::new()
        .name("leader-watch".into())
        .spawn(move || run(&url, safety, &tx))?;
    Ok(rx)
}

fn run(url: &str, safety: Duration, tx: &watch::Sender<Option<Leader>>) {
    let span = tracing::info_span!("leader-watch");
    let _enter = span.enter();
    while !tx.is_closed() {
        match watch_once(url, safety, tx) {
            Ok(()) => return,
            Err(error) => {
                tracing::warn!(%error, "leadership watch lost its connection; reconnecting");
                std::thread::sleep(RECONNECT_AFTER);
            }
        }
    }
}

/// One connection's life: listens, then re-reads after every wake-up until the
/// connection fails (`Err`) or nobody watches any more (`Ok`).
fn watch_once(
    url: &str,
    safety: Duration,
    tx: &watch::Sender<Option<Leader>>,
) -> Result<(), leadership::LeadershipError> {
    let mut client = leadership::connect(url, PURPOSE)?;
    client.batch_execute(&format!("LISTEN {CHANNEL}"))?;
    loop {
        // Listening before reading: a change after this read is announced.
        let leader = leadership::current(&mut client)?;
        let wait = leader
            .remaining
            .map_or(safety, |left| (left + EXPIRY_MARGIN).min(safety));
        publish(tx, leader);
        if tx.is_closed() {
            return Ok(());
        }
        // One announcement, or the wait, wakes us: either way the row is read
        // again, so several announcements cost one read each at most.
        client.notifications().timeout_iter(wait).next()?;
        if client.is_closed() {
            return Err(leadership::LeadershipError::Closed);
        }
    }
}

/// Publishes `leader` if it differs from the last one in who holds the board or
/// whether the lease is live (its remaining time alone is no news).
fn publish(tx: &watch::Sender<Option<Leader>>, leader: Leader) {
    tx.send_if_modified(|last| {
        let same = last.as_ref().is_some_and(|l| {
            (l.term, &l.node, &l.addr, l.live()) == (leader.term, &leader.node, &leader.addr, leader.live())
        });
        if !same {
            tracing::info!(term = leader.term, node = %leader.node, addr = %leader.addr, live = leader.live(), "leader");
            *last = Some(leader);
        }
        !same
    });
}
