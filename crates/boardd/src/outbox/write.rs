//! The write task: takes the queue's frames in batches, encodes them, and puts
//! them on the socket, counting each reply off the in-flight limit and each
//! frame off the budget as its bytes go out. A connection the budget cuts off
//! has its frames dropped here, but for the one begun on the socket.

use super::{Charge, Frame, Link};
use crate::wire;
use bytes::BytesMut;
use std::collections::VecDeque;
use std::io::ErrorKind;
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;
use teamboard_board::SessionId;
use tokio::net::UnixStream;
use tokio::net::unix::OwnedWriteHalf;

/// How long a closing connection may go without the client taking a byte of
/// what is still queued for it before boardd drops it. Long enough for a client
/// that is busy for a moment to read its last replies and the error frame that
/// says why it is cut off; short enough that one that never reads soon gives back
/// its descriptor and the memory of its queue.
pub const LINGER: Duration = Duration::from_secs(10);

/// How many encoded bytes the write task puts together before it writes them.
/// Frames wait as objects until then: encoding a whole batch at once would hold
/// a second copy of everything queued for a client that does not read. Larger
/// than a socket's buffer, so that one write call still fills it.
const CHUNK: usize = 256 << 10;

/// The write task's side: takes frames out of the queue.
#[derive(Debug)]
pub struct Frames {
    link: Arc<Link>,
}

impl Frames {
    pub(super) fn new(link: Arc<Link>) -> Frames {
        Frames { link }
    }

    /// Moves everything queued into `batch` (which must be empty), once there is
    /// something. Swapping rather than taking the queue keeps both buffers'
    /// capacity, so a busy connection does not allocate a queue per batch. False
    /// when the connection is killed, or when every [`super::Outbox`] is gone and
    /// the queue is empty. `cut`: whether the connection's cut-off was carried out.
    async fn next_batch(
        &self,
        batch: &mut VecDeque<Frame>,
        cut: &mut bool,
    ) -> Result<bool, Stopped> {
        let link = &*self.link;
        loop {
            if link.kill.is_cancelled() {
                return Err(Stopped::Killed);
            }
            if !*cut && link.meter.is_cut() {
                *cut = true;
                if !link.cut_off() {
                    return Err(Stopped::Killed);
                }
            }
            {
                let mut state = link.lock();
                if !state.queue.is_empty() {
                    state.writing = true;
                    std::mem::swap(&mut state.queue, batch);
                    return Ok(true);
                }
                state.writing = false;
            }
            if link.senders.load(Ordering::Acquire) == 0 {
                return Ok(false);
            }
            // A frame queued after the check above stored a permit, so this
            // returns at once: no frame is left waiting. The linger is armed
            // only once the connection is closing (which wakes this task), so
            // that an open connection does not register with its token at
            // every wait.
            let closing = link.closing.is_cancelled();
            tokio::select! {
                biased;
                _ = link.kill.cancelled() => return Err(Stopped::Killed),
                _ = link.wake.notified() => {}
                _ = link.meter.cut(), if !*cut => {}
                _ = linger(link), if closing => return Err(Stopped::Abandoned),
            }
        }
    }

    /// The write task: sends queued frames until the connection ends, then shuts
    /// the socket down in both directions (see [`shut_down`]). Each batch goes
    /// out in one write when the socket takes it.
    pub async fn write(self) {
        let link = &*self.link;
        let Some(socket) = &link.socket else { return };
        let session = link.session;
        match self.write_to(socket).await {
            Ok(()) | Err(Stopped::Killed) => {}
            Err(Stopped::Lingered) => tracing::warn!(
                session,
                linger_s = LINGER.as_secs(),
                "client read nothing of what was queued for it while its connection was closing; dropping it"
            ),
            Err(Stopped::Abandoned) => tracing::debug!(
                session,
                linger_s = LINGER.as_secs(),
                "closing connection waited too long for its last replies; dropping it"
            ),
            Err(Stopped::Failed(e)) => {
                tracing::debug!(session, error = %e, "cannot write to client; closing");
            }
        }
        link.kill.cancel();
        shut_down(session, socket);
    }

    /// Sends batches until every [`super::Outbox`] is gone and the queue is
    /// empty (`Ok`), or the connection must end. Each batch goes out in chunks
    /// of about [`CHUNK`] bytes.
    async fn write_to(&self, socket: &OwnedWriteHalf) -> Result<(), Stopped> {
        let link = &*self.link;
        let mut out = Written::default();
        let mut batch = VecDeque::new();
        let mut cut = false;
        while self.next_batch(&mut batch, &mut cut).await? {
            loop {
                out.clear();
                let mut close = false;
                while let Some(frame) = batch.pop_front() {
                    match frame {
                        Frame::Reply { id, result, charge } => {
                            wire::reply(&mut out.buf, id, &result);
                            out.ends(Some(charge), true);
                        }
                        Frame::Event(event, charge) => {
                            wire::event(&mut out.buf, &event);
                            out.ends(Some(charge), false);
                        }
                        Frame::Encoded(bytes, charge) => {
                            out.buf.extend_from_slice(&bytes);
                            out.ends(Some(charge), true);
                        }
                        Frame::Rest(bytes, charge) => {
                            // First in the queue, so first in the buffer.
                            debug_assert!(out.ends.is_empty());
                            out.buf.extend_from_slice(&bytes);
                            out.ends(Some(charge), true);
                            out.rest = true;
                        }
                        Frame::Close(error) => {
                            wire::error(&mut out.buf, &error);
                            out.ends(None, false);
                            close = true;
                            break;
                        }
                    }
                    if out.buf.len() >= CHUNK {
                        break;
                    }
                }
                if out.buf.is_empty() {
                    break;
                }
                if out.send(link, socket, &mut cut).await? == Sent::Cut {
                    // The rest of the batch goes too, an error frame in it
                    // included: the queue now holds the one that says why.
                    batch.clear();
                    break;
                }
                if close {
                    return Err(Stopped::Killed);
                }
            }
        }
        Ok(())
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

/// Why the write task stopped before its frames were out.
enum Stopped {
    /// The connection was killed, or its error frame is out.
    Killed,
    /// The connection was closing and the client took nothing for [`LINGER`].
    Lingered,
    /// The connection was closing and no frame came for [`LINGER`].
    Abandoned,
    Failed(std::io::Error),
}

/// Resolves once the connection has been closing for [`LINGER`] from now: a
/// wait that outlasts it means the client has taken nothing for that long.
async fn linger(link: &Link) {
    link.closing.cancelled().await;
    tokio::time::sleep(LINGER).await;
}

/// How a buffer went out.
#[derive(Debug, PartialEq, Eq)]
enum Sent {
    All,
    /// The connection was cut off meanwhile: only the frame begun on the
    /// socket was finished.
    Cut,
}

/// Encoded frames on their way to the socket, and where each ends.
#[derive(Debug, Default)]
struct Written {
    buf: BytesMut,
    /// The frames in `buf` not all on the socket yet, in order.
    ends: VecDeque<End>,
    /// Replies among `ends`.
    replies: usize,
    /// How much of `buf` is on the socket.
    done: usize,
    /// Where the first of `ends` begins.
    begun: usize,
    /// The first of `ends` began on the socket before this buffer: it is the
    /// rest of a reply written in part.
    rest: bool,
}

/// Where a frame ends in the buffer, and what its being written gives back.
#[derive(Debug)]
struct End {
    /// The offset just past its last byte.
    at: usize,
    /// Counted in flight until then.
    reply: bool,
    /// Given back once it is written (dropped with the [`End`]).
    _charge: Option<Charge>,
}

impl Written {
    fn clear(&mut self) {
        // A frame far larger than a chunk leaves a buffer of its size behind;
        // it is not kept for a connection that may never need it again.
        if self.buf.capacity() > 4 * CHUNK {
            self.buf = BytesMut::new();
        }
        self.buf.clear();
        self.ends.clear();
        self.replies = 0;
        self.done = 0;
        self.begun = 0;
        self.rest = false;
    }

    /// Drops the frames not begun on the socket, after a cut-off. The one
    /// partly written stays: the client must get all of it for the stream to
    /// stay readable up to the error frame.
    fn trim(&mut self) {
        let keep = match self.ends.front() {
            Some(end) if self.rest || self.begun < self.done => end.at,
            _ => self.done,
        };
        self.buf.truncate(keep);
        // Their charges go back with them.
        self.ends.truncate(usize::from(keep > self.done));
        self.replies = self.ends.iter().filter(|e| e.reply).count();
    }

    /// Marks the end of the buffer as the end of a frame.
    fn ends(&mut self, charge: Option<Charge>, reply: bool) {
        self.replies += usize::from(reply);
        self.ends.push_back(End {
            at: self.buf.len(),
            reply,
            _charge: charge,
        });
    }

    /// Writes the buffer, counting each reply off the in-flight count, and each
    /// frame off the budget, as soon as its last byte is on the socket.
    ///
    /// The count follows what the client can see, not the whole buffer: a
    /// buffer larger than the socket takes at once goes out over several writes,
    /// and the client reads, and follows up, the replies at its start while the
    /// rest still waits. The replies a write may complete are counted off before
    /// the call, and those it did not complete are counted back after it: the
    /// client can read a reply, and send its next request, before the write call
    /// has even returned here. So the count may dip below the truth for the
    /// length of one write call, never above it.
    ///
    /// A cut-off (`cut` not yet carried out) that comes while the socket is
    /// full is carried out here: the frames not begun are dropped at once.
    async fn send(
        &mut self,
        link: &Link,
        socket: &OwnedWriteHalf,
        cut: &mut bool,
    ) -> Result<Sent, Stopped> {
        let mut sent = Sent::All;
        while self.done < self.buf.len() {
            let replies = self.replies;
            link.in_flight.fetch_sub(replies, Ordering::AcqRel);
            let wrote = socket.try_write(&self.buf[self.done..]);
            let n = match wrote {
                Ok(n) => n,
                Err(e) if e.kind() == ErrorKind::WouldBlock => 0,
                Err(e) => return Err(Stopped::Failed(e)),
            };
            self.done += n;
            while let Some(end) = self.ends.front()
                && end.at <= self.done
            {
                self.replies -= usize::from(end.reply);
                self.begun = end.at;
                self.rest = false;
                // Drops its charge.
                self.ends.pop_front();
            }
            link.in_flight.fetch_add(self.replies, Ordering::AcqRel);
            if n == 0 {
                // A client that does not read must not keep this task, and with
                // it the socket, once the connection is killed or has lingered.
                tokio::select! {
                    biased;
                    _ = link.kill.cancelled() => return Err(Stopped::Killed),
                    _ = link.meter.cut(), if !*cut => {
                        *cut = true;
                        if !link.cut_off() {
                            return Err(Stopped::Killed);
                        }
                        self.trim();
                        sent = Sent::Cut;
                    }
                    ready = socket.writable() => ready.map_err(Stopped::Failed)?,
                    _ = linger(link) => return Err(Stopped::Lingered),
                }
            }
        }
        Ok(sent)
    }
}

/// Shuts a connection's socket down in both directions. Closing the descriptor
/// when the last holder drops it is not enough for a connection boardd ends: every [`super::Outbox`] clone and the connection's reader hold
/// it, and the client would find a connection that takes no requests and sends
/// nothing, and a `send()` that blocks forever. After the shutdown its reads see
/// the end of the stream and its writes fail, whoever still holds the
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
