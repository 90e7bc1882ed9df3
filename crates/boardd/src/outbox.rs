//! What the daemon sends to one connection, in order, and who writes it.
//!
//! Frames normally go into the connection's queue, and its write task
//! (`outbox/write.rs`) puts them on the socket: a slow client then holds up only
//! its own task. Replies made on the actor's thread skip the queue (see
//! `writer::route`): that thread writes them straight to the socket
//! ([`Outbox::reply_direct`]) as long as nothing is queued before them, and
//! queues long lists. Handing them to write tasks would wake the runtime's other
//! thread (tokio gives a second woken task to an idle worker), and on a virtual
//! machine waking a halted vCPU costs more than the write.
//!
//! Order is kept by one rule, checked under the queue's lock: a frame goes
//! straight to the socket only when the queue is empty and the write task holds
//! no frames of its own.
//!
//! A connection ends in one of two ways:
//!
//! - **Closing**: boardd reads no more of its requests. It starts when the client
//!   ends its side, or when boardd queues an error frame ([`Outbox::close`]; a
//!   queue that overflows gets a `busy` one). Nothing is queued after an error
//!   frame, and room for it is always there. The write task sends what is
//!   queued, and gives a client that does not read `write::LINGER` before it drops
//!   the connection.
//! - **Killed**: dropped at once (a write error, the error frame written, the
//!   linger run out). The write task stops and shuts the socket down.
//!
//! Every reply and event carries a [`Charge`] on the connection's memory budget
//! (`outbox/budget.rs`), given back once its bytes are out. A connection the
//! budget cuts off for holding the most of what boardd holds for all of them
//! closes too, but its queued frames are dropped at once ([`Link::cut_off`]).

mod budget;
mod write;

pub use budget::{Budget, Charge, Overdraft};
pub use write::{Frames, LINGER};

use crate::approx::ApproxLen;
use crate::reply::Reply;
use crate::wire;
use budget::Meter;
use bytes::{Bytes, BytesMut};
use std::collections::VecDeque;
use std::io::ErrorKind;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use teamboard_board::SessionId;
use teamboard_protocol::{ErrorBody, ErrorCode, Event};
use tokio::net::unix::OwnedWriteHalf;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// Requests a connection may have in flight before boardd answers `busy`.
pub const MAX_IN_FLIGHT: usize = 256;

/// Events a subscriber may have queued before it is cut off as too slow.
pub const EVENT_BACKLOG: usize = 8192;

/// The most frames queued for one connection. Room for [`MAX_IN_FLIGHT`]
/// replies is always kept above the event backlog, so a reply never has to
/// be dropped while the client keeps to the in-flight limit: events are refused
/// first.
const MAX_QUEUED: usize = MAX_IN_FLIGHT + EVENT_BACKLOG;

/// One frame on its way to a client, with its charge on the budget.
#[derive(Debug)]
pub enum Frame {
    Reply {
        id: u64,
        result: Result<Reply, ErrorBody>,
        charge: Charge,
    },
    Event(Arc<Event>, Charge),
    /// A connection-level error; the connection closes after it. Uncharged: its
    /// room is always kept.
    Close(ErrorBody),
    /// A reply already encoded: one meant for the socket straight away that
    /// found something queued before it.
    Encoded(Bytes, Charge),
    /// The unsent rest of a reply written in part. Always first in the queue,
    /// and never dropped before the error frame of a cut-off: the client must
    /// get the whole frame.
    Rest(Bytes, Charge),
}

/// The sending side of a connection. Cheap to clone; the write task ends once
/// every clone is dropped and the queue is empty.
#[derive(Debug)]
pub struct Outbox {
    link: Arc<Link>,
}

/// A connection's sending side, shared by every [`Outbox`] clone and the write
/// task.
#[derive(Debug)]
struct Link {
    /// The session, for the log.
    session: SessionId,
    /// `None` only in tests, which read the queue instead.
    socket: Option<OwnedWriteHalf>,
    state: Mutex<State>,
    /// Wakes the write task when a frame is queued while it is idle.
    wake: Notify,
    /// Cancelled to drop the connection now (see the module doc).
    kill: CancellationToken,
    /// Cancelled once the connection is closing: no more requests are read.
    /// A child of `kill`, so a killed connection is closing too.
    closing: CancellationToken,
    /// Requests read whose replies are not yet all on the socket. Each reply is
    /// counted off as soon as its own last byte is written (see `Written::send`),
    /// so the count never exceeds what the client itself can count: requests sent
    /// and not yet answered by a reply it has read. Counting until then, not until
    /// the reply is made, is what stops a client that sends without reading.
    in_flight: AtomicUsize,
    /// Live [`Outbox`] clones.
    senders: AtomicUsize,
    /// The bytes waiting for this connection.
    meter: Arc<Meter>,
}

#[derive(Debug, Default)]
struct State {
    queue: VecDeque<Frame>,
    /// The write task holds frames taken from the queue that are not all on the
    /// socket yet. While it does, nothing may go to the socket past it.
    writing: bool,
    /// An error frame is queued: nothing may follow it.
    sealed: bool,
}

impl Outbox {
    /// An outbox writing to `socket`, and the frames its write task must send.
    /// What waits for it counts against `budget` too.
    pub fn new(
        socket: OwnedWriteHalf,
        session: SessionId,
        budget: Arc<Budget>,
    ) -> (Outbox, Frames) {
        Self::with_socket(Some(socket), session, budget)
    }

    /// An outbox with no socket: every frame stays in the queue for the test to
    /// read through [`Frames::recv`].
    #[cfg(test)]
    pub fn detached() -> (Outbox, Frames) {
        Self::detached_in(Arc::default())
    }

    /// A detached outbox that counts against `budget`.
    #[cfg(test)]
    pub fn detached_in(budget: Arc<Budget>) -> (Outbox, Frames) {
        Self::with_socket(None, 0, budget)
    }

    fn with_socket(
        socket: Option<OwnedWriteHalf>,
        session: SessionId,
        budget: Arc<Budget>,
    ) -> (Outbox, Frames) {
        let kill = CancellationToken::new();
        let link = Arc::new(Link {
            session,
            socket,
            state: Mutex::new(State::default()),
            wake: Notify::new(),
            closing: kill.child_token(),
            kill,
            in_flight: AtomicUsize::new(0),
            senders: AtomicUsize::new(1),
            meter: Meter::new(budget),
        });
        (Outbox { link: link.clone() }, Frames::new(link))
    }

    /// Cancelled once no more requests are to be read: the connection is closing
    /// or killed.
    pub fn closing_token(&self) -> CancellationToken {
        self.link.closing.clone()
    }

    /// Says that no more requests will be read (the client ended its side, or
    /// boardd stopped): from now on a client that does not read what is still
    /// queued is dropped after `write::LINGER`.
    pub fn finish(&self) {
        self.link.closing.cancel();
        // An idle write task arms its linger when it wakes.
        self.link.wake.notify_one();
    }

    /// Reserves `bytes` on this connection's budget for a frame about to be made
    /// for it; see `outbox/budget.rs`.
    pub fn charge(&self, bytes: usize) -> Charge {
        self.link.meter.charge(bytes)
    }

    /// Whether more waits for this connection than its budget allows: then its
    /// requests are not to be executed. What waits for others never counts.
    pub fn over_budget(&self) -> Option<Overdraft> {
        self.link.meter.over()
    }

    /// Counts a request read from the client. False when it already has
    /// [`MAX_IN_FLIGHT`] unanswered; it must still be answered (with `busy`).
    pub fn admit(&self) -> bool {
        self.link.in_flight.fetch_add(1, Ordering::AcqRel) < MAX_IN_FLIGHT
    }

    /// Queues a reply. Dropped only when the connection is closing and past its
    /// error frame, or gone; a client that stopped reading far past the in-flight
    /// limit is cut off instead (see [`Link::overflowed`]).
    pub fn reply(&self, id: u64, result: Result<Reply, ErrorBody>, charge: Charge) {
        let state = self.link.lock();
        let frame = Frame::Reply { id, result, charge };
        if let Err(state) = self.link.push(state, frame) {
            self.link.overflowed(state);
        }
    }

    /// Charges an error reply made on the connection's own task (a refusal, or
    /// `busy`) and queues it.
    pub fn reply_error(&self, id: u64, error: ErrorBody) {
        let result = Err(error);
        let charge = self.charge(result.approx_len());
        self.reply(id, result, charge);
    }

    /// Writes a reply straight to the socket from this thread when nothing is
    /// queued before it, and queues it otherwise. The socket is never waited for:
    /// what does not fit goes to the write task. A long list is always queued:
    /// encoding it here would hold up the caller (the actor) for every client.
    pub fn reply_direct(&self, id: u64, result: Result<Reply, ErrorBody>, charge: Charge) {
        let socket = match &self.link.socket {
            Some(socket) if !result.as_ref().is_ok_and(Reply::is_long) => socket,
            _ => return self.reply(id, result, charge),
        };
        let mut buf = BytesMut::new();
        wire::reply(&mut buf, id, &result);
        let mut frame = buf.freeze();
        let mut state = self.link.lock();
        if state.queue.is_empty()
            && !state.writing
            && !state.sealed
            && !self.link.kill.is_cancelled()
        {
            // Counted off before the write, for the reason `Written::send` gives.
            self.link.in_flight.fetch_sub(1, Ordering::AcqRel);
            let wrote = socket.try_write(&frame);
            if !matches!(wrote, Ok(n) if n == frame.len()) {
                self.link.in_flight.fetch_add(1, Ordering::AcqRel);
            }
            match wrote {
                Ok(n) if n == frame.len() => return,
                // The rest must follow before any other frame, and the queue is
                // empty, so queueing it keeps the order.
                Ok(n) => {
                    frame = frame.slice(n..);
                    state.queue.push_back(Frame::Rest(frame, charge));
                    drop(state);
                    self.link.wake.notify_one();
                    return;
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                Err(e) => {
                    tracing::debug!(session = self.link.session, error = %e, "cannot write to client; closing");
                    self.link.kill.cancel();
                    return;
                }
            }
        }
        if let Err(state) = self.link.push(state, Frame::Encoded(frame, charge)) {
            self.link.overflowed(state);
        }
    }

    /// Queues an event. A subscriber too far behind (more than [`EVENT_BACKLOG`]
    /// frames, or past the budget) is cut off with `busy` instead.
    pub fn event(&self, event: Arc<Event>, charge: Charge) {
        let state = self.link.lock();
        if state.sealed {
            return;
        }
        let behind = if state.queue.len() >= EVENT_BACKLOG {
            format!("more than {EVENT_BACKLOG} frames wait for it")
        } else if let Some(over) = self.link.meter.over() {
            over.describe()
        } else {
            // Within MAX_QUEUED, so only a killed connection refuses it.
            let _ = self.link.push(state, Frame::Event(event, charge));
            return;
        };
        drop(charge);
        let error = ErrorBody::new(
            ErrorCode::Busy,
            format!(
                "this subscriber fell too far behind ({behind}); boardd closes the connection. \
                 Reconnect, subscribe, and catch up with `events` since the last seq you saw"
            ),
        );
        if self.link.seal(state, error) {
            tracing::warn!(
                session = self.link.session,
                behind,
                "subscriber fell too far behind; sending busy and closing the connection"
            );
        }
    }

    /// Queues a connection-level error, after which the connection closes: boardd
    /// reads no more of its requests and queues nothing after it.
    pub fn close(&self, error: ErrorBody) {
        let state = self.link.lock();
        self.link.seal(state, error);
    }
}

impl Clone for Outbox {
    fn clone(&self) -> Outbox {
        self.link.senders.fetch_add(1, Ordering::AcqRel);
        Outbox {
            link: self.link.clone(),
        }
    }
}

impl Drop for Outbox {
    fn drop(&mut self) {
        if self.link.senders.fetch_sub(1, Ordering::AcqRel) == 1 {
            // The write task may be asleep with nothing queued: let it see that
            // nothing more can come.
            self.link.wake.notify_one();
        }
    }
}

impl Link {
    fn lock(&self) -> MutexGuard<'_, State> {
        // Nothing panics while holding the lock; if something did, the queue is
        // still a valid queue.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A reply found no room. Dropping it silently would break the promise of
    /// one reply per request, so the connection is cut off with an error frame
    /// instead. Only a client that sent thousands of requests without reading
    /// gets here.
    fn overflowed(&self, state: MutexGuard<'_, State>) {
        let error = ErrorBody::new(
            ErrorCode::Busy,
            format!(
                "more than {MAX_QUEUED} responses waited for this connection; boardd closes it. \
                 Read your responses before sending more requests"
            ),
        );
        if self.seal(state, error) {
            tracing::warn!(
                session = self.session,
                queued = MAX_QUEUED,
                "client stopped reading its replies; sending busy and closing the connection"
            );
        }
    }

    /// Appends a frame and wakes the write task if it is idle. Gives the lock
    /// back if the frame was refused: the queue is full, or the connection is
    /// past its error frame or killed.
    fn push<'a>(
        &self,
        mut state: MutexGuard<'a, State>,
        frame: Frame,
    ) -> Result<(), MutexGuard<'a, State>> {
        if state.queue.len() >= MAX_QUEUED || state.sealed || self.kill.is_cancelled() {
            return Err(state);
        }
        state.queue.push_back(frame);
        self.wake_writer(state);
        Ok(())
    }

    /// Queues the error frame that ends the connection, whatever the queue holds
    /// (its room is always kept), and stops the reading of requests. False if the
    /// connection was already closing with an error, or killed.
    fn seal(&self, mut state: MutexGuard<'_, State>, error: ErrorBody) -> bool {
        if state.sealed || self.kill.is_cancelled() {
            return false;
        }
        state.sealed = true;
        state.queue.push_back(Frame::Close(error));
        // Cancelled before the write task is woken, so that it sees it.
        self.closing.cancel();
        self.wake_writer(state);
        true
    }

    /// Cuts the connection off for holding the most of what boardd holds for
    /// all connections (see `outbox/budget.rs`): drops every frame queued, and
    /// an error frame queued before them, in favour of the one that says why;
    /// stops the reading of requests. The write task, which calls this, drops
    /// what it holds itself. False if the connection is killed already.
    fn cut_off(&self) -> bool {
        let error = self.meter.cut_error();
        let mut state = self.lock();
        if self.kill.is_cancelled() {
            return false;
        }
        // Their charges go back with them.
        state.queue.retain(|f| matches!(f, Frame::Rest(..)));
        state.queue.push_back(Frame::Close(error));
        state.sealed = true;
        self.closing.cancel();
        drop(state);
        tracing::warn!(
            session = self.session,
            "connection held the most of what boardd holds for clients that do not read; dropping it and closing the connection"
        );
        true
    }

    fn wake_writer(&self, state: MutexGuard<'_, State>) {
        let idle = !state.writing;
        drop(state);
        if idle {
            self.wake.notify_one();
        }
    }
}

#[cfg(test)]
mod tests;
