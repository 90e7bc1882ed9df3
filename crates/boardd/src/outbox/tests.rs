//! The outbox over a real socket pair: answers written straight from the calling
//! thread, and the order of frames whichever way they go.

use crate::outbox::{Budget, Frames, Outbox, Overdraft};
use crate::reply::{Empty, Reply};
use futures_util::StreamExt;
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
    assert!(matches!(
        out.over_budget(),
        Some(Overdraft::Connection { .. })
    ));
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
fn connections_share_the_daemons_budget_and_charges_come_back_when_dropped() {
    use crate::outbox::budget::TOTAL_BUDGET;
    let budget = Arc::new(Budget::default());
    let (a, _) = Outbox::detached_in(budget.clone());
    let (b, _) = Outbox::detached_in(budget.clone());
    let big = a.charge(TOTAL_BUDGET + 1);
    assert!(matches!(b.over_budget(), Some(Overdraft::Total { .. })));
    drop(big);
    assert!(b.over_budget().is_none());
    assert_eq!(budget.waiting(), 0);
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
