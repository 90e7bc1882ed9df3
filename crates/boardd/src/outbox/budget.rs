//! The bytes of replies and events waiting for the clients: counted per
//! connection and for the whole daemon, so that clients that do not read cannot
//! make boardd hold more than a bounded amount of memory for them, nor deny
//! service to those that do.
//!
//! Whoever makes a reply or an event for a connection takes a [`Charge`] for its
//! estimated size (see `approx`) at once, before the frame waits anywhere: the
//! actor for what its handlers decide, the writer thread for what it reads from
//! the store. The frame carries the charge, and the write task drops it once the
//! frame's last byte is on the socket; a frame dropped on the way (the connection
//! ended) gives its charge back too.
//!
//! Two limits, each falling on the connection that holds the memory:
//!
//! - **Its own**: the actor checks [`Meter::over`] before it executes a request,
//!   and the outbox before it queues an event. A connection past
//!   [`CONNECTION_BUDGET`] has its requests answered `busy` and, as a
//!   subscriber, is cut off. Nothing made is dropped for it, so a connection
//!   overshoots it by at most the replies of the requests it had already let
//!   through.
//! - **Everyone's**: a charge that takes the total past [`TOTAL_BUDGET`] cuts
//!   off the connections that hold the most, largest first, until what the
//!   others hold is within it ([`Budget::cut_largest`]). A cut connection's
//!   write task drops what waits for it, finishes the frame it had begun and
//!   sends an error frame that says why (`outbox::Link::cut_off`).
//!
//! Alternatives that lost:
//! - *Refusing every request while the total is past its limit*: a few clients
//!   that never read then denied service to everyone else. A teammate's
//!   heartbeats were refused until its lease lapsed, and the clients that held
//!   the memory were never disconnected.
//! - *Refusing only the connections above a fair share of the total*: the
//!   memory stays held by clients that will never read it, and a client that
//!   does read can still be refused while a large answer of its own is on its
//!   way.
//! - *Sending a cut connection what was queued before its error frame*, as for a
//!   slow subscriber: the memory would come back only once the client read it,
//!   or after the linger, and in the meantime the next largest connection would
//!   be cut for memory it does not hold.

use std::cmp::Reverse;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use teamboard_protocol::{ErrorBody, ErrorCode};
use tokio_util::sync::CancellationToken;

/// Bytes of replies and events that may wait for one connection before boardd
/// refuses its requests with `busy` and cuts it off as a subscriber. Several
/// replies of a large board (a `list_tasks` of thousands of tasks is megabytes),
/// far more than a client that reads ever has waiting.
pub const CONNECTION_BUDGET: usize = 32 << 20;

/// Bytes that may wait for all connections together before boardd cuts off the
/// connections that hold the most. Eight connections at their own limit: what
/// bounds boardd's memory when many clients stop reading.
pub const TOTAL_BUDGET: usize = 256 << 20;

/// The bytes waiting for every connection, and each connection's share.
#[derive(Debug, Default)]
pub struct Budget {
    waiting: AtomicUsize,
    meters: Mutex<Meters>,
}

/// The live connections' counts, by key.
#[derive(Debug, Default)]
struct Meters {
    next: u64,
    held: HashMap<u64, Arc<Held>>,
}

/// What one connection holds, as the budget sees it.
#[derive(Debug, Default)]
struct Held {
    bytes: AtomicUsize,
    /// Cancelled when the connection is cut off for holding the most.
    cut: CancellationToken,
    /// What it held then, for the error frame that tells it so.
    at_cut: AtomicUsize,
}

impl Budget {
    /// Bytes waiting for all connections together.
    pub fn waiting(&self) -> usize {
        self.waiting.load(Ordering::Relaxed)
    }

    fn lock(&self) -> MutexGuard<'_, Meters> {
        // Nothing panics while holding the lock; the map stays whole if it did.
        self.meters.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The total is past [`TOTAL_BUDGET`]: cuts off the connections that hold
    /// the most, largest first, until what the others hold is within it. The
    /// bytes of a connection already cut are on their way out and count for no
    /// one: otherwise, until its write task has dropped them, every charge
    /// would cut off the next largest connection for memory it does not hold.
    fn cut_largest(&self) {
        let meters = self.lock();
        let mut live = self.waiting();
        let mut uncut = Vec::with_capacity(meters.held.len());
        for held in meters.held.values() {
            let bytes = held.bytes.load(Ordering::Relaxed);
            if held.cut.is_cancelled() {
                live = live.saturating_sub(bytes);
            } else {
                uncut.push((bytes, held));
            }
        }
        uncut.sort_unstable_by_key(|(bytes, _)| Reverse(*bytes));
        for (bytes, held) in uncut {
            if live <= TOTAL_BUDGET || bytes == 0 {
                break;
            }
            held.at_cut.store(bytes, Ordering::Relaxed);
            held.cut.cancel();
            live = live.saturating_sub(bytes);
            tracing::warn!(
                held_mib = mib(bytes),
                total_mib = mib(self.waiting()),
                "boardd holds too much for clients that do not read; cutting off the connection that holds the most"
            );
        }
    }
}

/// The bytes waiting for one connection, and the daemon's total.
#[derive(Debug)]
pub(super) struct Meter {
    key: u64,
    held: Arc<Held>,
    total: Arc<Budget>,
}

impl Meter {
    pub(super) fn new(total: Arc<Budget>) -> Arc<Meter> {
        let held = Arc::new(Held::default());
        let key = {
            let mut meters = total.lock();
            let key = meters.next;
            meters.next += 1;
            meters.held.insert(key, held.clone());
            key
        };
        Arc::new(Meter { key, held, total })
    }

    /// Reserves `bytes` for a frame on its way to this connection.
    pub(super) fn charge(self: &Arc<Meter>, bytes: usize) -> Charge {
        self.add(bytes);
        Charge {
            meter: self.clone(),
            bytes,
        }
    }

    fn add(&self, bytes: usize) {
        self.held.bytes.fetch_add(bytes, Ordering::Relaxed);
        let total = self.total.waiting.fetch_add(bytes, Ordering::Relaxed) + bytes;
        if total > TOTAL_BUDGET {
            self.total.cut_largest();
        }
    }

    fn sub(&self, bytes: usize) {
        self.held.bytes.fetch_sub(bytes, Ordering::Relaxed);
        self.total.waiting.fetch_sub(bytes, Ordering::Relaxed);
    }

    /// Why nothing more should be made for this connection now, if that is so:
    /// more than [`CONNECTION_BUDGET`] waits for it. What others hold never
    /// counts here.
    pub(super) fn over(&self) -> Option<Overdraft> {
        let own = self.held.bytes.load(Ordering::Relaxed);
        (own > CONNECTION_BUDGET).then_some(Overdraft { own })
    }

    /// Resolves once this connection is cut off for holding the most.
    pub(super) async fn cut(&self) {
        self.held.cut.cancelled().await
    }

    pub(super) fn is_cut(&self) -> bool {
        self.held.cut.is_cancelled()
    }

    /// The error frame of a connection cut off for holding the most.
    pub(super) fn cut_error(&self) -> ErrorBody {
        ErrorBody::new(
            ErrorCode::Busy,
            format!(
                "boardd holds more than {} MiB of responses and events for clients that have not read them, \
                 and this connection held the most of it ({} MiB); boardd drops what waited for it and closes \
                 the connection. Read your responses as they come",
                TOTAL_BUDGET >> 20,
                mib(self.held.at_cut.load(Ordering::Relaxed))
            ),
        )
    }
}

impl Drop for Meter {
    fn drop(&mut self) {
        self.total.lock().held.remove(&self.key);
    }
}

/// A connection past its own budget: how much waits for it.
#[derive(Debug, Clone, Copy)]
pub struct Overdraft {
    own: usize,
}

impl Overdraft {
    /// What waits, for a person.
    pub fn describe(self) -> String {
        format!(
            "{} MiB of responses and events wait for this connection (at most {} MiB may)",
            mib(self.own),
            CONNECTION_BUDGET >> 20
        )
    }

    /// The `busy` reply to a request that is not executed.
    pub fn refusal(self) -> ErrorBody {
        ErrorBody::new(
            ErrorCode::Busy,
            format!(
                "{}; read them before sending more requests",
                self.describe()
            ),
        )
    }
}

/// Mebibytes with one decimal, for a person.
fn mib(bytes: usize) -> String {
    format!("{:.1}", bytes as f64 / f64::from(1 << 20))
}

/// Bytes reserved on a connection's budget (and the daemon's) for one frame,
/// given back when dropped.
#[derive(Debug)]
pub struct Charge {
    meter: Arc<Meter>,
    bytes: usize,
}

impl Charge {
    /// Replaces an estimate made before the frame existed (a read of history)
    /// with one of the frame itself. Only the difference is added or given
    /// back: adding the new size before giving the old one back would count
    /// the frame twice for a moment, and could cut a connection off for it.
    pub fn resize(&mut self, bytes: usize) {
        if bytes > self.bytes {
            self.meter.add(bytes - self.bytes);
        } else {
            self.meter.sub(self.bytes - bytes);
        }
        self.bytes = bytes;
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        self.meter.sub(self.bytes);
    }
}
