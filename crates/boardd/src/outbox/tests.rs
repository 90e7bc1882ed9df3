//! The outbox over a real socket pair: answers written straight from the calling
//! thread, and the order of frames whichever way they go.

use crate::outbox::{Budget, Frames, Outbox};
use crate::reply::{Empty, Reply};
use futures_util::StreamExt;
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::time::Duration;
use teamboard_protocol::codec::response_codec;
use teamboard_protocol::{ErrorBody, ErrorCode};
use tokio::net::UnixStream;
use tokio_util::codec::FramedRead;

type Peer = FramedRead<UnixStream, tokio_util::codec::LengthDelimitedCodec>;

fn pair() -> (Outbox, Frames, Peer) {
    let (ours, theirs) = UnixStream::pair().expect("socketpair");
    let (_read, write) = ours.into_split();
    let (out, frames) = Outbox::new(write, 1, Arc::default());
    (out, frames, FramedRead::new(theirs, response_codec()))
}

/// What the tests charge for each reply: its size does not matter to them.
const SIZE: usize = 100;

fn done() -> Result<Reply, ErrorBody> {
    Ok(Reply::Done(Empty {}))
}

/// A response far larger than a socket's buffer, so that it cannot go out in one
/// write while the peer is not reading.
fn huge() -> Result<Reply, ErrorBody> {
    Err(ErrorBody::new(ErrorCode::Internal, "x".repeat(4 << 20)))
}

/// The id of the next frame the peer reads, within a few seconds.
async fn next_id(peer: &mut Peer) -> u64 {
    let bytes = tokio::time::timeout(Duration::from_secs(10), peer.next())
        .await
        .expect("a frame within 10 s")
        .expect("the stream is open")
        .expect("a well-formed frame");
    let v: serde_json::Value = serde_json::from_slice(&bytes).expect("JSON");
    assert_eq!(v["type"], "response", "{v}");
    v["id"].as_u64().expect("an id")
}

#[tokio::test]
async fn an_answer_with_nothing_before_it_needs_no_write_task() {
    let (out, _frames, mut peer) = pair();
    assert!(out.admit());
    out.reply_direct(1, done(), out.charge(SIZE));
    // No write task was ever started: only the direct write can have sent it.
    assert_eq!(next_id(&mut peer).await, 1);
}

#[tokio::test]
async fn an_answer_never_overtakes_one_queued_before_it() {
    let (out, frames, mut peer) = pair();
    out.reply(1, done(), out.charge(SIZE));
    out.reply_direct(2, done(), out.charge(SIZE));
    tokio::spawn(frames.write());
    assert_eq!(next_id(&mut peer).await, 1);
    assert_eq!(next_id(&mut peer).await, 2);
}

#[tokio::test]
async fn the_rest_of_an_answer_written_in_part_goes_before_anything_after_it() {
    let (out, frames, mut peer) = pair();
    // The peer does not read yet, so the socket takes only part of this one.
    out.reply_direct(1, huge(), out.charge(SIZE));
    out.reply_direct(2, done(), out.charge(SIZE));
    out.reply(3, done(), out.charge(SIZE));
    tokio::spawn(frames.write());
    assert_eq!(next_id(&mut peer).await, 1);
    assert_eq!(next_id(&mut peer).await, 2);
    assert_eq!(next_id(&mut peer).await, 3);
}

#[tokio::test]
async fn an_answer_counts_as_in_flight_until_it_is_on_the_socket() {
    let (out, frames, mut peer) = pair();
    for _ in 0..crate::outbox::MAX_IN_FLIGHT {
        assert!(out.admit());
    }
    // Written at once: no longer in flight.
    out.reply_direct(1, done(), out.charge(SIZE));
    assert!(out.admit(), "a written answer still counted");
    // Stuck behind a full socket: still in flight.
    out.reply_direct(2, huge(), out.charge(SIZE));
    assert!(!out.admit(), "an answer not yet sent was counted off");
    out.reply_direct(3, done(), out.charge(SIZE));
    let writing = tokio::spawn(frames.write());
    for want in 1..=3 {
        assert_eq!(next_id(&mut peer).await, want);
    }
    drop(out);
    tokio::time::timeout(Duration::from_secs(10), writing)
        .await
        .expect("the write task ends once every outbox is gone")
        .expect("no panic");
}

#[tokio::test]
async fn an_answer_stops_counting_once_its_own_bytes_are_out() {
    let (out, frames, mut peer) = pair();
    for _ in 0..crate::outbox::MAX_IN_FLIGHT {
        assert!(out.admit());
    }
    // One batch: a short answer, then one the socket cannot take while the peer
    // does not read.
    out.reply(1, done(), out.charge(SIZE));
    out.reply(2, huge(), out.charge(SIZE));
    tokio::spawn(frames.write());
    assert_eq!(next_id(&mut peer).await, 1);
    // The peer has the first answer; the second is still on its way.
    assert!(out.admit(), "an answer the client has read still counted");
    assert!(!out.admit(), "an answer not yet sent was counted off");
}

#[tokio::test(start_paused = true)]
async fn a_client_that_reads_nothing_of_its_closing_connection_is_dropped_after_the_linger() {
    let (out, frames, mut peer) = pair();
    // The write task blocks on a socket the peer does not read.
    out.reply(1, huge(), out.charge(SIZE));
    let writing = tokio::spawn(frames.write());
    out.close(ErrorBody::new(ErrorCode::Busy, "cut off"));
    let started = tokio::time::Instant::now();
    tokio::time::timeout(2 * super::write::LINGER, writing)
        .await
        .expect("the write task ends though the socket is full")
        .expect("no panic");
    assert!(
        started.elapsed() >= super::write::LINGER,
        "dropped before the linger"
    );
    // `out` still holds the descriptor, yet the peer reads to the end of the
    // stream (the reply was cut off, so the stream ends inside a frame).
    let end = tokio::time::timeout(Duration::from_secs(10), async {
        while let Some(Ok(_)) = peer.next().await {}
    });
    end.await.expect("the stream ends");
    drop(out);
}

#[tokio::test]
async fn a_closing_connection_sends_what_is_queued_then_its_error_then_ends() {
    let (out, frames, mut peer) = pair();
    out.reply(1, done(), out.charge(SIZE));
    out.close(ErrorBody::new(ErrorCode::Busy, "cut off"));
    // Nothing goes after the error frame.
    out.reply(2, done(), out.charge(SIZE));
    assert!(
        out.closing_token().is_cancelled(),
        "requests are still read"
    );
    tokio::spawn(frames.write());
    assert_eq!(next_id(&mut peer).await, 1);
    let error = peer.next().await.expect("a frame").expect("whole");
    let v: serde_json::Value = serde_json::from_slice(&error).expect("JSON");
    assert_eq!(v["type"], "error", "{v}");
    assert_eq!(v["error"]["code"], "busy", "{v}");
    let end = tokio::time::timeout(Duration::from_secs(10), peer.next());
    assert!(end.await.expect("the stream ends").is_none());
    drop(out);
}

#[tokio::test]
async fn what_waits_for_a_connection_counts_against_its_budget_until_it_is_written() {
    use crate::outbox::budget::CONNECTION_BUDGET;
    let (out, frames, mut peer) = pair();
    out.reply(1, huge(), out.charge(CONNECTION_BUDGET));
    assert!(out.over_budget().is_none(), "at the budget is not over it");
    out.reply(2, done(), out.charge(1));
    assert!(out.over_budget().is_some());
    tokio::spawn(frames.write());
    assert_eq!(next_id(&mut peer).await, 1);
    assert_eq!(next_id(&mut peer).await, 2);
    // The write task gives the charges back right after its write call returns.
    tokio::time::timeout(Duration::from_secs(10), async {
        while out.over_budget().is_some() {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    })
    .await
    .expect("the budget is free again once the replies are out");
}

#[test]
fn past_the_total_the_connection_holding_the_most_is_cut_off_and_no_one_is_refused() {
    use crate::outbox::budget::TOTAL_BUDGET;
    let budget = Arc::new(Budget::default());
    let (big, _) = Outbox::detached_in(budget.clone());
    let (small, _) = Outbox::detached_in(budget.clone());
    let (idle, _) = Outbox::detached_in(budget.clone());
    let held = big.charge(TOTAL_BUDGET - SIZE);
    let _little = small.charge(SIZE);
    assert!(!big.link.meter.is_cut(), "at the limit is not past it");
    // The charge that takes the total past the limit is small's; big pays.
    let more = small.charge(SIZE);
    assert!(big.link.meter.is_cut());
    assert!(!small.link.meter.is_cut() && !idle.link.meter.is_cut());
    for out in [&small, &idle] {
        assert!(out.over_budget().is_none(), "refused for what others hold");
    }
    // What big holds is on its way out: until it is, no one else is cut for it.
    let _again = idle.charge(SIZE);
    assert!(!small.link.meter.is_cut() && !idle.link.meter.is_cut());
    drop((held, more));
    assert_eq!(budget.waiting(), 2 * SIZE);
}

#[tokio::test]
async fn a_connection_cut_off_gets_the_answer_it_had_begun_then_why_and_nothing_else() {
    use crate::outbox::budget::TOTAL_BUDGET;
    let budget = Arc::new(Budget::default());
    let (ours, theirs) = UnixStream::pair().expect("socketpair");
    let (_read, write) = ours.into_split();
    let (out, frames) = Outbox::new(write, 1, budget.clone());
    let mut peer = FramedRead::new(theirs, response_codec());
    // Begun on the socket at once; the rest waits in the queue, behind which
    // more answers wait, up to the daemon's limit.
    out.reply_direct(1, huge(), out.charge(SIZE));
    out.reply(2, huge(), out.charge(SIZE));
    out.reply(3, done(), out.charge(TOTAL_BUDGET - 2 * SIZE));
    // The write task takes them all, and waits for the full socket.
    tokio::spawn(frames.write());
    tokio::time::sleep(Duration::from_millis(50)).await;
    let (other, _) = Outbox::detached_in(budget.clone());
    let _charge = other.charge(SIZE);
    assert!(out.link.meter.is_cut());
    assert_eq!(next_id(&mut peer).await, 1);
    let error = peer.next().await.expect("a frame").expect("whole");
    let v: serde_json::Value = serde_json::from_slice(&error).expect("JSON");
    assert_eq!(v["type"], "error", "{v}");
    assert_eq!(v["error"]["code"], "busy", "{v}");
    let message = v["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("held the most of it (256.0 MiB)"),
        "{message}"
    );
    let end = tokio::time::timeout(Duration::from_secs(10), peer.next());
    assert!(end.await.expect("the stream ends").is_none());
    assert!(
        out.closing_token().is_cancelled(),
        "requests are still read"
    );
    assert_eq!(budget.waiting(), SIZE, "only the other connection's");
}

#[tokio::test(start_paused = true)]
async fn a_closing_connection_does_not_wait_forever_for_replies_that_never_come() {
    let (out, frames, mut peer) = pair();
    // A sender that is never dropped, as a leaked clone would be.
    let held = out.clone();
    let writing = tokio::spawn(frames.write());
    tokio::task::yield_now().await;
    out.finish();
    tokio::time::timeout(2 * super::write::LINGER, writing)
        .await
        .expect("the write task ends after the linger")
        .expect("no panic");
    let end = tokio::time::timeout(Duration::from_secs(10), peer.next());
    assert!(end.await.expect("the stream ends").is_none());
    drop(held);
}

/// An error response of about `bytes`.
fn sized(bytes: usize) -> Result<Reply, ErrorBody> {
    Err(ErrorBody::new(ErrorCode::Internal, "x".repeat(bytes)))
}

#[tokio::test]
async fn a_cut_off_while_the_socket_is_full_finishes_the_frame_begun_and_drops_the_rest() {
    use crate::outbox::budget::TOTAL_BUDGET;
    let budget = Arc::new(Budget::default());
    let (ours, theirs) = UnixStream::pair().expect("socketpair");
    // A buffer smaller than one answer.
    let size: libc::c_int = 16 << 10;
    // SAFETY: a valid socket descriptor, and the option's value as an int.
    let rc = unsafe {
        libc::setsockopt(
            ours.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_SNDBUF,
            (&size as *const libc::c_int).cast(),
            size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    assert_eq!(rc, 0, "{}", std::io::Error::last_os_error());
    let (_read, write) = ours.into_split();
    let (out, frames) = Outbox::new(write, 1, budget.clone());
    // One chunk of three answers: the write task blocks with the first begun
    // and the others not.
    for id in 1..=3 {
        out.reply(id, sized(100 << 10), out.charge(SIZE));
    }
    // Up to the daemon's limit, not past it.
    out.reply(4, huge(), out.charge(TOTAL_BUDGET - 3 * SIZE));
    tokio::spawn(frames.write());
    // Blocked once the socket holds something and takes no more.
    let peer_fd = theirs.as_raw_fd();
    let mut before = 0;
    for _ in 0..2000 {
        tokio::time::sleep(Duration::from_millis(5)).await;
        let mut n: libc::c_int = 0;
        // SAFETY: a valid socket descriptor and a pointer to an int.
        assert_eq!(unsafe { libc::ioctl(peer_fd, libc::FIONREAD, &mut n) }, 0);
        if n > 0 && n == before {
            break;
        }
        before = n;
    }
    assert!(before > 0, "nothing was written");
    // Another connection's charge takes the total past the limit, whatever
    // was given back for the frames written.
    let (other, _) = Outbox::detached_in(budget.clone());
    let _charge = other.charge(4 * SIZE);
    assert!(out.link.meter.is_cut());
    let mut peer = FramedRead::new(theirs, response_codec());
    let mut ids = Vec::new();
    let error = loop {
        let frame = tokio::time::timeout(Duration::from_secs(10), peer.next())
            .await
            .expect("a frame within 10 s")
            .expect("the stream is open")
            .expect("a well-formed frame");
        let v: serde_json::Value = serde_json::from_slice(&frame).expect("JSON");
        if v["type"] != "response" {
            break v;
        }
        ids.push(v["id"].as_u64().expect("an id"));
    };
    assert_eq!(ids, [1]);
    assert_eq!(error["error"]["code"], "busy", "{error}");
    let end = tokio::time::timeout(Duration::from_secs(10), peer.next());
    assert!(end.await.expect("the stream ends").is_none());
    assert_eq!(budget.waiting(), 4 * SIZE, "only the other connection's");
}
