//! The bytes of replies and events waiting for the clients: counted per
//! connection and for the whole daemon, so that clients that do not read cannot
//! make boardd hold more than a bounded amount of memory for them.
//!
//! Whoever makes a reply or an event for a connection takes a [`Charge`] for its
//! estimated size (see `approx`) at once, before the frame waits anywhere: the
//! actor for what its handlers decide, the writer thread for what it reads from
//! the store. The frame carries the charge, and the write task drops it once the
//! frame's last byte is on the socket; a frame dropped on the way (the connection
//! ended) gives its charge back too. The actor checks [`Meter::over`] before it
//! executes a request, and the outbox before it queues an event; nothing made is
//! ever dropped for the budget, so a connection overshoots it by at most the
//! replies of the requests it had already let through.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use teamboard_protocol::{ErrorBody, ErrorCode};

/// Bytes of replies and events that may wait for one connection before boardd
/// refuses its requests with `busy` and cuts it off as a subscriber. Several
/// replies of a large board (a `list_tasks` of thousands of tasks is megabytes),
/// far more than a client that reads ever has waiting.
pub const CONNECTION_BUDGET: usize = 32 << 20;

/// Bytes that may wait for all connections together before boardd refuses
/// every request with `busy` and cuts subscribers off. Eight connections at their
/// own limit: what bounds boardd's memory when many clients stop reading.
pub const TOTAL_BUDGET: usize = 256 << 20;

/// The bytes waiting for every connection.
#[derive(Debug, Default)]
pub struct Budget {
    waiting: AtomicUsize,
}

impl Budget {
    /// Bytes waiting for all connections together.
    pub fn waiting(&self) -> usize {
        self.waiting.load(Ordering::Relaxed)
    }
}

/// The bytes waiting for one connection, and the daemon's total.
#[derive(Debug)]
pub(super) struct Meter {
    waiting: AtomicUsize,
    total: Arc<Budget>,
}

impl Meter {
    pub(super) fn new(total: Arc<Budget>) -> Arc<Meter> {
        Arc::new(Meter {
            waiting: AtomicUsize::new(0),
            total,
        })
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
        self.waiting.fetch_add(bytes, Ordering::Relaxed);
        self.total.waiting.fetch_add(bytes, Ordering::Relaxed);
    }

    fn sub(&self, bytes: usize) {
        self.waiting.fetch_sub(bytes, Ordering::Relaxed);
        self.total.waiting.fetch_sub(bytes, Ordering::Relaxed);
    }

    /// Why nothing more should be made for this connection now, if that is so:
    /// its own waiting bytes, or everyone's, are past their budget.
    pub(super) fn over(&self) -> Option<Overdraft> {
        let own = self.waiting.load(Ordering::Relaxed);
        let total = self.total.waiting();
        if own > CONNECTION_BUDGET {
            Some(Overdraft::Connection { own })
        } else if total > TOTAL_BUDGET {
            Some(Overdraft::Total { own, total })
        } else {
            None
        }
    }
}

/// Which budget a connection is past.
#[derive(Debug, Clone, Copy)]
pub enum Overdraft {
    Connection { own: usize },
    Total { own: usize, total: usize },
}

impl Overdraft {
    /// What waits, for a person.
    pub fn describe(self) -> String {
        match self {
            Overdraft::Connection { own } => format!(
                "{} MiB of responses and events wait for this connection (at most {} MiB may)",
                mib(own),
                CONNECTION_BUDGET >> 20
            ),
            Overdraft::Total { own, total } => format!(
                "boardd holds {} MiB of responses and events for clients that have not read them \
                 (at most {} MiB), {} MiB of them for this connection",
                mib(total),
                TOTAL_BUDGET >> 20,
                mib(own)
            ),
        }
    }

    /// The `busy` reply to a request that is not executed.
    pub fn refusal(self) -> ErrorBody {
        let advice = match self {
            Overdraft::Connection { .. } => "read them before sending more requests",
            Overdraft::Total { .. } => "read your responses and retry shortly",
        };
        ErrorBody::new(ErrorCode::Busy, format!("{}; {advice}", self.describe()))
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
    /// with one of the frame itself.
    pub fn resize(&mut self, bytes: usize) {
        self.meter.add(bytes);
        self.meter.sub(self.bytes);
        self.bytes = bytes;
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        self.meter.sub(self.bytes);
    }
}
