//! What the daemon sends to one connection, in order, and who writes it.
//!
//! Frames normally go into the connection's queue, and its write task puts them on
//! the socket: a slow client then holds up only its own task. Replies made on the
//! actor's thread skip the queue (see `writer::route`): that thread writes them
//! straight to the socket ([`Outbox::reply_direct`]) as long as nothing is queued
//! before them, and queues long lists. Handing them to write tasks would wake the
//! runtime's other thread (tokio gives a second woken task to an idle worker), and
//! on a virtual machine waking a halted vCPU costs more than the write.
//!
//! Order is kept by one rule, checked under the queue's lock: a frame goes
//! straight to the socket only when the queue is empty and the write task holds
//! no frames of its own.

use crate::reply::Reply;
use crate::wire;
use bytes::{Bytes, BytesMut};
use std::collections::VecDeque;
use std::io::ErrorKind;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use teamboard_board::SessionId;
use teamboard_protocol::{ErrorBody, ErrorCode, Event};
use tokio::net::UnixStream;
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

/// One frame on its way to a client.
#[derive(Debug)]
pub enum Frame {
    Reply {
        id: u64,
        result: Result<Reply, ErrorBody>,
    },
    Event(Arc<Event>),
    /// A connection-level error; the connection closes after it.
    Close(ErrorBody),
    /// A reply already encoded: one meant for the socket straight away that
    /// found something queued before it, or the unsent rest of one written in
    /// part.
    Encoded(Bytes),
}

/// The sending side of a connection. Cheap to clone; the write task ends once
/// every clone is dropped and the queue is empty.
#[derive(Debug)]
pub struct Outbox {
    link: Arc<Link>,
}

/// The write task's side: takes frames out of the queue.
#[derive(Debug)]
pub struct Frames {
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
    /// Cancelled to drop the connection: after a `Close`, a write error, or when
    /// even a `Close` finds no room.
    kill: CancellationToken,
    /// Requests read whose answers are not yet all on the socket. Each answer is
    /// counted off as soon as its own last byte is written (see `Written::send`),
    /// so the count never exceeds what the client itself can count: requests sent
    /// and not yet answered by a reply it has read. Counting until then, not until
    /// the answer is made, is what stops a client that sends without reading.
    in_flight: AtomicUsize,
    /// Live [`Outbox`] clones.
    senders: AtomicUsize,
}

#[derive(Debug, Default)]
struct State {
    queue: VecDeque<Frame>,
    /// The write task holds frames taken from the queue that are not all on the
    /// socket yet. While it does, nothing may go to the socket past it.
    writing: bool,
}

impl Outbox {
    /// An outbox writing to `socket`, and the frames its write task must send.
    pub fn new(socket: OwnedWriteHalf, session: SessionId) -> (Outbox, Frames) {
        Self::with_socket(Some(socket), session)
    }

    /// An outbox with no socket: every frame stays in the queue for the test to
    /// read through [`Frames::recv`].
    #[cfg(test)]
    pub fn detached() -> (Outbox, Frames) {
        Self::with_socket(None, 0)
    }

    fn with_socket(socket: Option<OwnedWriteHalf>, session: SessionId) -> (Outbox, Frames) {
        let link = Arc::new(Link {
            session,
            socket,
            state: Mutex::new(State::default()),
            wake: Notify::new(),
            kill: CancellationToken::new(),
            in_flight: AtomicUsize::new(0),
            senders: AtomicUsize::new(1),
        });
        (Outbox { link: link.clone() }, Frames { link })
    }

    /// Cancelled when the connection must close.
    pub fn kill_token(&self) -> CancellationToken {
        self.link.kill.clone()
    }

    /// Counts a request read from the client. False when it already has
    /// [`MAX_IN_FLIGHT`] unanswered; it must still be answered (with `busy`).
    pub fn admit(&self) -> bool {
        self.link.in_flight.fetch_add(1, Ordering::AcqRel) < MAX_IN_FLIGHT
    }

    /// Queues a reply. Dropped only when the connection is gone or the client
    /// has stopped reading far past the in-flight limit.
    pub fn reply(&self, id: u64, result: Result<Reply, ErrorBody>) {
        let state = self.link.lock();
        if !self.link.push(state, Frame::Reply { id, result }) {
            self.link.overflowed();
        }
    }

    /// Writes a reply straight to the socket from this thread when nothing is
    /// queued before it, and queues it otherwise. The socket is never waited for:
    /// what does not fit goes to the write task. A long list is always queued:
    /// encoding it here would hold up the caller (the actor) for every client.
    pub fn reply_direct(&self, id: u64, result: Result<Reply, ErrorBody>) {
        let socket = match &self.link.socket {
            Some(socket) if !result.as_ref().is_ok_and(Reply::is_long) => socket,
            _ => return self.reply(id, result),
        };
        let mut buf = BytesMut::new();
        wire::reply(&mut buf, id, &result);
        let mut frame = buf.freeze();
        let mut state = self.link.lock();
        if state.queue.is_empty() && !state.writing && !self.link.kill.is_cancelled() {
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
                    state.queue.push_back(Frame::Encoded(frame));
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
        if !self.link.push(state, Frame::Encoded(frame)) {
            self.link.overflowed();
        }
    }

    /// Queues an event. A subscriber too far behind is cut off with `busy`.
    pub fn event(&self, event: Arc<Event>) {
        let state = self.link.lock();
        if state.queue.len() < EVENT_BACKLOG {
            self.link.push(state, Frame::Event(event));
            return;
        }
        drop(state);
        self.close(ErrorBody::new(
            ErrorCode::Busy,
            "event subscriber fell too far behind; reconnect and read history with `events --since`",
        ));
    }

    /// Queues a connection-level error, after which the connection closes.
    pub fn close(&self, error: ErrorBody) {
        let state = self.link.lock();
        if !self.link.push(state, Frame::Close(error)) {
            self.link.kill.cancel();
        }
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

    /// A reply found no room. Dropping it would break the promise of one
    /// answer per request, and the in-flight count would never come down again,
    /// so the connection is closed instead. Only a client that sent thousands of
    /// requests without reading gets here.
    fn overflowed(&self) {
        if !self.kill.is_cancelled() {
            tracing::warn!(
                session = self.session,
                queued = MAX_QUEUED,
                "client stopped reading its replies; closing the connection"
            );
            self.kill.cancel();
        }
    }

    /// Appends a frame and wakes the write task if it is idle. False if the frame
    /// was dropped.
    fn push(&self, mut state: MutexGuard<'_, State>, frame: Frame) -> bool {
        if state.queue.len() >= MAX_QUEUED || self.kill.is_cancelled() {
            return false;
        }
        state.queue.push_back(frame);
        let idle = !state.writing;
        drop(state);
        if idle {
            self.wake.notify_one();
        }
        true
    }
}

impl Frames {
    /// Moves everything queued into `batch` (which must be empty), once there is
    /// something. Swapping rather than taking the queue keeps both buffers'
    /// capacity, so a busy connection does not allocate a queue per batch. False
    /// when the connection is killed, or when every [`Outbox`] is gone and the
    /// queue is empty.
    async fn next_batch(&self, batch: &mut VecDeque<Frame>) -> bool {
        let link = &*self.link;
        loop {
            if link.kill.is_cancelled() {
                return false;
            }
            {
                let mut state = link.lock();
                if !state.queue.is_empty() {
                    state.writing = true;
                    std::mem::swap(&mut state.queue, batch);
                    return true;
                }
                state.writing = false;
            }
            if link.senders.load(Ordering::Acquire) == 0 {
                return false;
            }
            // A frame queued after the check above stored a permit, so this
            // returns at once: no frame is left waiting.
            tokio::select! {
                biased;
                _ = link.kill.cancelled() => return false,
                _ = link.wake.notified() => {}
            }
        }
    }

    /// The write task: sends queued frames until the connection closes. Each
    /// batch goes out in one write when the socket takes it. A connection that
    /// ends killed is shut down in both directions (see [`shut_down`]).
    pub async fn write(self) {
        let link = &*self.link;
        let Some(socket) = &link.socket else { return };
        self.write_to(socket).await;
        if link.kill.is_cancelled() {
            shut_down(link.session, socket);
        }
    }

    async fn write_to(&self, socket: &OwnedWriteHalf) {
        let link = &*self.link;
        let mut out = Written::default();
        let mut batch = VecDeque::new();
        while self.next_batch(&mut batch).await {
            out.clear();
            let mut close = false;
            for frame in batch.drain(..) {
                match frame {
                    Frame::Reply { id, result } => {
                        wire::reply(&mut out.buf, id, &result);
                        out.reply_ends();
                    }
                    Frame::Event(event) => wire::event(&mut out.buf, &event),
                    Frame::Encoded(bytes) => {
                        out.buf.extend_from_slice(&bytes);
                        out.reply_ends();
                    }
                    Frame::Close(error) => {
                        wire::error(&mut out.buf, &error);
                        close = true;
                        break;
                    }
                }
            }
            match out.send(link, socket).await {
                Ok(()) => {}
                Err(Stopped::Killed) => return,
                Err(Stopped::Failed(e)) => {
                    tracing::debug!(session = link.session, error = %e, "cannot write to client; closing");
                    link.kill.cancel();
                    return;
                }
            }
            if close {
                link.kill.cancel();
                return;
            }
        }
    }

    /// The next queued frame, for tests that read what boardd would send.
    #[cfg(test)]
    pub async fn recv(&self) -> Option<Frame> {
        loop {
            if let Some(frame) = self.try_recv() {
                return Some(frame);
            }
            if self.link.senders.load(Ordering::Acquire) == 0 {
                return None;
            }
            self.link.wake.notified().await;
        }
    }

    #[cfg(test)]
    pub fn try_recv(&self) -> Option<Frame> {
        self.link.lock().queue.pop_front()
    }
}

/// Encoded frames on their way to the socket, and where each reply among them
/// ends.
#[derive(Debug, Default)]
struct Written {
    buf: BytesMut,
    /// Offsets in `buf` just past each reply, in order.
    reply_ends: VecDeque<usize>,
    /// How much of `buf` is on the socket.
    done: usize,
}

impl Written {
    fn clear(&mut self) {
        self.buf.clear();
        self.reply_ends.clear();
        self.done = 0;
    }

    /// Marks the end of the buffer as the end of a reply.
    fn reply_ends(&mut self) {
        self.reply_ends.push_back(self.buf.len());
    }

    /// Writes the buffer, counting each reply off the in-flight count as soon as
    /// its last byte is on the socket.
    ///
    /// The count follows what the client can see, not the whole buffer: a
    /// buffer larger than the socket takes at once goes out over several writes,
    /// and the client reads, and follows up, the replies at its start while the
    /// rest still waits. The replies a write may complete are counted off before
    /// the call, and those it did not complete are counted back after it: the
    /// client can read a reply, and send its next request, before the write call
    /// has even returned here. So the count may dip below the truth for the
    /// length of one write call, never above it.
    async fn send(&mut self, link: &Link, socket: &OwnedWriteHalf) -> Result<(), Stopped> {
        while self.done < self.buf.len() {
            let replies = self.reply_ends.len();
            link.in_flight.fetch_sub(replies, Ordering::AcqRel);
            let wrote = socket.try_write(&self.buf[self.done..]);
            let n = match wrote {
                Ok(n) => n,
                Err(e) if e.kind() == ErrorKind::WouldBlock => 0,
                Err(e) => return Err(Stopped::Failed(e)),
            };
            self.done += n;
            let before = self.reply_ends.len();
            while self.reply_ends.front().is_some_and(|end| *end <= self.done) {
                self.reply_ends.pop_front();
            }
            let written = before - self.reply_ends.len();
            link.in_flight
                .fetch_add(replies - written, Ordering::AcqRel);
            if n == 0 {
                // A client that does not read must not keep this task, and with
                // it the socket, once the connection is killed.
                tokio::select! {
                    biased;
                    _ = link.kill.cancelled() => return Err(Stopped::Killed),
                    ready = socket.writable() => ready.map_err(Stopped::Failed)?,
                }
            }
        }
        Ok(())
    }
}

/// Why the write task stopped before its frames were out.
enum Stopped {
    /// The connection was killed meanwhile.
    Killed,
    Failed(std::io::Error),
}

/// Shuts a killed connection's socket down in both directions. Closing the
/// descriptor is not enough: every [`Outbox`] clone and the connection's reader
/// hold it, and the client would find a connection that takes no requests and
/// sends nothing, and a `send()` that blocks forever. After the shutdown its
/// reads see the end of the stream and its writes fail, whoever still holds the
/// descriptor; the reader here sees the end of the stream too.
fn shut_down(session: SessionId, socket: &OwnedWriteHalf) {
    let fd = AsRef::<UnixStream>::as_ref(socket).as_raw_fd();
    // SAFETY: `fd` belongs to `socket`, which is open for the whole call;
    // shutdown(2) only changes the state of the connection.
    if unsafe { libc::shutdown(fd, libc::SHUT_RDWR) } != 0 {
        // ENOTCONN: the client was gone already.
        let error = std::io::Error::last_os_error();
        tracing::debug!(session, %error, "cannot shut the socket down");
    }
}

#[cfg(test)]
mod tests;
