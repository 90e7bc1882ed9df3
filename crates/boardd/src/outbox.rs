//! What the daemon sends to one connection, and the channel it goes through.

use crate::reply::Reply;
use std::sync::Arc;
use teamboard_protocol::{ErrorBody, Event};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Requests a connection may have in flight before boardd answers `busy`.
pub const MAX_IN_FLIGHT: usize = 256;

/// Events a subscriber may have queued before it is cut off as too slow.
pub const EVENT_BACKLOG: usize = 8192;

/// One frame on its way to a client.
#[derive(Debug)]
pub enum Outgoing {
    Response {
        id: u64,
        result: Result<Reply, ErrorBody>,
    },
    Event(Arc<Event>),
    /// A connection-level error; the connection closes after it.
    Close(ErrorBody),
}

/// The sending side of a connection's frame queue. Cheap to clone.
///
/// The queue is bounded so that a subscriber that stops reading cannot grow boardd's
/// memory without limit. Room for [`MAX_IN_FLIGHT`] responses is always kept, so a
/// response never has to be dropped: events are refused first.
#[derive(Debug, Clone)]
pub struct Outbox {
    tx: mpsc::Sender<Outgoing>,
    /// Cancelled to drop the connection when even a `Close` frame finds no room.
    kill: CancellationToken,
}

impl Outbox {
    pub fn channel() -> (Outbox, mpsc::Receiver<Outgoing>, CancellationToken) {
        let (tx, rx) = mpsc::channel(MAX_IN_FLIGHT + EVENT_BACKLOG);
        let kill = CancellationToken::new();
        (
            Outbox {
                tx,
                kill: kill.clone(),
            },
            rx,
            kill,
        )
    }

    /// Queues a response. Fails only when the connection is gone.
    pub fn respond(&self, id: u64, result: Result<Reply, ErrorBody>) {
        let _ = self.tx.try_send(Outgoing::Response { id, result });
    }

    /// Queues an event. Returns false when the subscriber is too far behind; the
    /// caller then drops the subscription.
    pub fn event(&self, event: Arc<Event>) -> bool {
        if self.tx.capacity() <= MAX_IN_FLIGHT {
            return false;
        }
        self.tx.try_send(Outgoing::Event(event)).is_ok()
    }

    /// Queues a connection-level error, after which the connection closes.
    pub fn close(&self, error: ErrorBody) {
        if self.tx.try_send(Outgoing::Close(error)).is_err() {
            self.kill.cancel();
        }
    }
}
