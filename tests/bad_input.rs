//! Malformed, oversized and unexpected input, sent with hand-made frames on a plain
//! socket. Each bad connection gets an error and at most its own connection is
//! closed; the daemon keeps serving everyone else.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "test code: a panic fails the test, and the harness captures what it prints"
)]

use serde_json::json;
use std::time::Duration;
use teamboard_protocol::{ErrorCode, MessageKind, PROTOCOL_VERSION};
use teamboard_testkit::raw::{
    self, connect_hello, expect_closed, expect_error_frame, read, request,
};
use teamboard_testkit::{InProc, code_of, eventually, lead, task, teammate};
use tokio::io::AsyncWriteExt;

/// An observer that stays connected through all the abuse, then must still work.
async fn still_serves(observer: &teamboard_protocol::Client, subject: &str) {
    let t = observer
        .add_task(task(subject))
        .await
        .expect("the observer is still served");
    let listed = observer.list_tasks(None).await.unwrap();
    assert!(listed.iter().any(|x| x.id == t.id));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_frames_close_only_their_connection() {
    let daemon = InProc::start().await;
    let observer = lead(&daemon.socket).await;

    // Not JSON at all, after a good hello.
    let mut s = connect_hello(&daemon.socket, "lead").await;
    raw::send(&mut s, b"{this is not json").await;
    let err = expect_error_frame(&mut s, "bad_frame").await;
    assert!(
        err["error"]["message"]
            .as_str()
            .is_some_and(|m| !m.is_empty()),
        "{err}"
    );
    expect_closed(&mut s).await;

    // JSON, but not a frame: no `type`.
    let mut s = connect_hello(&daemon.socket, "lead").await;
    raw::send_json(&mut s, &json!({"id": 1, "op": "status"})).await;
    expect_error_frame(&mut s, "bad_frame").await;
    expect_closed(&mut s).await;

    // A request without an id cannot be answered: bad frame.
    let mut s = connect_hello(&daemon.socket, "lead").await;
    raw::send_json(&mut s, &json!({"type": "request", "op": "status"})).await;
    expect_error_frame(&mut s, "bad_frame").await;
    expect_closed(&mut s).await;

    // An id that is not an unsigned integer.
    let mut s = connect_hello(&daemon.socket, "lead").await;
    raw::send_json(
        &mut s,
        &json!({"type": "request", "id": "7", "op": "status"}),
    )
    .await;
    expect_error_frame(&mut s, "bad_frame").await;
    expect_closed(&mut s).await;

    // Malformed JSON instead of a hello.
    let mut s = raw::connect(&daemon.socket).await;
    raw::send(&mut s, b"\x00\x01not json").await;
    expect_error_frame(&mut s, "bad_frame").await;
    expect_closed(&mut s).await;

    still_serves(&observer, "after malformed frames").await;
    daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_frames_are_refused_and_close_the_connection() {
    let daemon = InProc::start().await;
    let observer = lead(&daemon.socket).await;
    let too_long = (teamboard_protocol::MAX_FRAME_LEN as u32 + 1).to_be_bytes();

    // After the handshake: announce one byte more than 1 MiB, send nothing more.
    let mut s = connect_hello(&daemon.socket, "lead").await;
    s.write_all(&too_long).await.unwrap();
    expect_error_frame(&mut s, "frame_too_large").await;
    expect_closed(&mut s).await;

    // As the very first frame.
    let mut s = raw::connect(&daemon.socket).await;
    s.write_all(&u32::MAX.to_be_bytes()).await.unwrap();
    expect_error_frame(&mut s, "frame_too_large").await;
    expect_closed(&mut s).await;

    // A frame of exactly 1 MiB is within the limit: it is read, found malformed
    // (it is all spaces), and refused as a bad frame rather than an oversized one.
    let mut s = connect_hello(&daemon.socket, "lead").await;
    raw::send(&mut s, &vec![b' '; teamboard_protocol::MAX_FRAME_LEN]).await;
    expect_error_frame(&mut s, "bad_frame").await;
    expect_closed(&mut s).await;

    // The client library refuses to send an oversized request itself.
    let huge = "x".repeat(teamboard_protocol::MAX_FRAME_LEN + 10);
    let mut new = task("huge");
    new.description = huge;
    assert_eq!(
        code_of(observer.add_task(new).await),
        ErrorCode::FrameTooLarge
    );

    still_serves(&observer, "after oversized frames").await;
    daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handshake_errors() {
    let daemon = InProc::start().await;
    let observer = lead(&daemon.socket).await;

    // Another major version: a reject that says what to do.
    let mut s = raw::connect(&daemon.socket).await;
    raw::send_json(&mut s, &raw::hello("lead", PROTOCOL_VERSION + 98)).await;
    let reject = read(&mut s).await.expect("a reject frame");
    assert_eq!(reject["type"], "reject", "{reject}");
    let reason = reject["reason"].as_str().expect("a reason").to_lowercase();
    assert!(
        reason.contains(&(PROTOCOL_VERSION + 98).to_string()),
        "names the client's version: {reason}"
    );
    assert!(
        reason.contains(&format!("version {PROTOCOL_VERSION}")),
        "names the server's version: {reason}"
    );
    assert!(
        reason.contains("install") || reason.contains("upgrade") || reason.contains("update"),
        "says what to do: {reason}"
    );
    expect_closed(&mut s).await;

    // A request before the hello.
    let mut s = raw::connect(&daemon.socket).await;
    raw::send_json(&mut s, &request(1, "status", json!({}))).await;
    expect_error_frame(&mut s, "handshake_required").await;
    expect_closed(&mut s).await;

    // A name that is not a valid name.
    let mut s = raw::connect(&daemon.socket).await;
    raw::send_json(&mut s, &raw::hello("../etc/passwd", PROTOCOL_VERSION)).await;
    let reject = read(&mut s).await.expect("a reject frame");
    assert_eq!(reject["type"], "reject", "{reject}");
    expect_closed(&mut s).await;

    // A second hello on an open session.
    let mut s = connect_hello(&daemon.socket, "lead").await;
    raw::send_json(&mut s, &raw::hello("lead", PROTOCOL_VERSION)).await;
    expect_error_frame(&mut s, "bad_frame").await;
    expect_closed(&mut s).await;

    still_serves(&observer, "after handshake errors").await;
    daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_errors_keep_the_connection_open() {
    let daemon = InProc::start().await;
    let mut s = connect_hello(&daemon.socket, "lead").await;

    // Unknown op: an error response with the same id, and the connection stays.
    raw::send_json(&mut s, &request(7, "frobnicate", json!({"x": 1}))).await;
    let r = read(&mut s).await.expect("a response");
    assert_eq!(r["type"], "response", "{r}");
    assert_eq!(r["id"], 7, "{r}");
    assert_eq!(r["error"]["code"], "unknown_request", "{r}");
    assert!(r.get("result").is_none_or(|v| v.is_null()), "{r}");

    // The same connection still answers a valid request.
    raw::send_json(&mut s, &request(8, "status", json!({}))).await;
    let r = read(&mut s).await.expect("a response");
    assert_eq!(r["id"], 8, "{r}");
    assert!(r.get("error").is_none_or(|v| v.is_null()), "{r}");
    assert_eq!(r["result"]["protocol"], PROTOCOL_VERSION, "{r}");

    // Arguments of the wrong type, a missing field, and a value the board refuses.
    for (id, op, args) in [
        (9, "get_task", json!({"id": "seven"})),
        (10, "add_task", json!({"priority": 1})),
        (11, "add_task", json!({"subject": "   "})),
        (12, "add_task", json!({"subject": "two\nlines"})),
        (13, "complete_task", json!({"id": -1, "epoch": 1})),
        // An unknown enum value inside the args is bad args, not an unknown op.
        (17, "list_tasks", json!({"status": "bogus"})),
        (
            18,
            "send",
            json!({"to": "lead", "kind": "bogus", "content": "x"}),
        ),
    ] {
        raw::send_json(&mut s, &request(id, op, args.clone())).await;
        let r = read(&mut s).await.expect("a response");
        assert_eq!(r["type"], "response", "{op} {args}: {r}");
        assert_eq!(r["id"], id, "{op} {args}: {r}");
        assert_eq!(r["error"]["code"], "invalid_args", "{op} {args}: {r}");
    }

    // Missing args for an op whose args are all optional count as `{}`.
    raw::send_json(
        &mut s,
        &json!({"type": "request", "id": 14, "op": "list_tasks"}),
    )
    .await;
    let r = read(&mut s).await.expect("a response");
    assert_eq!(r["id"], 14, "{r}");
    assert_eq!(r["result"], json!([]), "{r}");

    // So do `"args": null`.
    raw::send_json(
        &mut s,
        &json!({"type": "request", "id": 19, "op": "list_tasks", "args": null}),
    )
    .await;
    let r = read(&mut s).await.expect("a response");
    assert_eq!(r["id"], 19, "{r}");
    assert_eq!(r["result"], json!([]), "{r}");

    // Unknown fields are ignored, for compatibility with newer clients.
    raw::send_json(
        &mut s,
        &json!({"type": "request", "id": 15, "op": "add_task",
                "args": {"subject": "from the future", "colour": "blue"}, "trace": "abc"}),
    )
    .await;
    let r = read(&mut s).await.expect("a response");
    assert_eq!(r["id"], 15, "{r}");
    assert_eq!(r["result"]["subject"], "from the future", "{r}");

    // Still the same connection, still answering.
    raw::send_json(&mut s, &request(16, "status", json!({}))).await;
    let r = read(&mut s).await.expect("a response");
    assert_eq!(r["id"], 16, "{r}");
    daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn message_to_an_unknown_teammate_is_an_error() {
    let daemon = InProc::start().await;
    let lead = lead(&daemon.socket).await;
    let alice = teammate(&daemon.socket, "alice", "dev").await;

    let err = lead
        .send("alcie", MessageKind::Message, "typo", None)
        .await
        .expect_err("an unknown recipient is refused");
    assert_eq!(err.code(), Some(ErrorCode::UnknownRecipient), "{err}");
    assert!(
        err.to_string().contains("alice"),
        "the error lists who exists: {err}"
    );
    // No silent inbox was created for the typo.
    let status = lead.status().await.unwrap();
    assert_eq!(status.teams[0].unread_messages, 0);

    // The real name works, in both directions.
    let m = lead
        .send("alice", MessageKind::Message, "hi", None)
        .await
        .unwrap();
    assert_eq!(alice.inbox().await.unwrap(), vec![m]);
    alice
        .send("lead", MessageKind::Result, "hello back", None)
        .await
        .unwrap();
    assert_eq!(
        code_of(alice.send("bob", MessageKind::Message, "?", None).await),
        ErrorCode::UnknownRecipient
    );
    daemon.stop().await;
}

/// A small deterministic generator, so that a failure can be replayed.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_does_not_take_the_daemon_down() {
    let daemon = InProc::start().await;
    let observer = lead(&daemon.socket).await;
    let baseline = observer.status().await.unwrap().sessions;
    let mut rng = XorShift(0x5eed_1234_abcd_9876);

    for round in 0..40u64 {
        let len = 1 + (rng.next() % 3000) as usize;
        let garbage = rng.bytes(len);
        // Half of the rounds say hello first, so the garbage hits the request path.
        let mut s = if round % 2 == 0 {
            raw::connect(&daemon.socket).await
        } else {
            connect_hello(&daemon.socket, "lead").await
        };
        // The daemon may close early; a failed write is fine.
        let _ = s.write_all(&garbage).await;
        if round % 4 < 2 {
            // Close from our side: the daemon sees garbage, then EOF mid-frame.
            drop(s);
        } else {
            // Or let the daemon decide: it answers an error and closes, or it is
            // still waiting for the rest of an announced frame.
            let _ = s.shutdown().await;
            match tokio::time::timeout(Duration::from_secs(5), read_any(&mut s)).await {
                Ok(Some(frame)) => assert!(
                    frame["type"] == "error" || frame["type"] == "reject",
                    "round {round}: {frame}"
                ),
                Ok(None) => {}
                Err(_) => panic!("round {round}: boardd neither answered nor closed"),
            }
        }
    }

    // Every garbage session is gone, and the daemon still serves.
    eventually(
        "the garbage sessions to close",
        Duration::from_secs(5),
        || async {
            let n = observer.status().await.unwrap().sessions;
            (n == baseline).then_some(())
        },
    )
    .await;
    still_serves(&observer, "after garbage").await;
    let fresh = lead(&daemon.socket).await;
    fresh.status().await.expect("a new client is served");
    daemon.stop().await;
}

/// Reads one frame if one comes, `None` on end of stream; tolerant of a torn frame.
async fn read_any(s: &mut tokio::net::UnixStream) -> Option<serde_json::Value> {
    use tokio::io::AsyncReadExt;
    let mut len = [0u8; 4];
    s.read_exact(&mut len).await.ok()?;
    let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
    s.read_exact(&mut body).await.ok()?;
    serde_json::from_slice(&body).ok()
}

/// Bytes this end wrote that the peer has not read yet (`SIOCOUTQ`).
fn unread_by_peer(s: &tokio::net::UnixStream) -> usize {
    use std::os::fd::AsRawFd;
    let mut n: libc::c_int = 0;
    // SAFETY: a valid socket descriptor and a pointer to an int, as the ioctl wants.
    let rc = unsafe { libc::ioctl(s.as_raw_fd(), libc::TIOCOUTQ, &mut n) };
    assert_eq!(rc, 0, "SIOCOUTQ: {}", std::io::Error::last_os_error());
    usize::try_from(n).unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn too_many_requests_in_flight_are_answered_busy() {
    // A client that sends far more requests than it reads: big answers fill the
    // socket, boardd's writer stops, and the requests pile up in flight. Past the
    // limit they are answered `busy` at once; every request still gets exactly one
    // answer, and the connection stays usable.
    const LIMIT: u64 = 256;
    const SENT: u64 = 600;
    let daemon = InProc::start().await;
    let lead = lead(&daemon.socket).await;
    for i in 0..40 {
        let mut t = task(format!("filler {i}"));
        t.description = "d".repeat(1000);
        lead.add_task(t).await.unwrap();
    }
    let mut s = connect_hello(&daemon.socket, "flood").await;
    let mut batch = Vec::new();
    for id in 1..=SENT {
        let frame = serde_json::to_vec(&request(id, "list_tasks", json!({}))).unwrap();
        batch.extend_from_slice(&(frame.len() as u32).to_be_bytes());
        batch.extend_from_slice(&frame);
    }
    s.write_all(&batch).await.unwrap();
    // Read nothing until boardd has read every request. Reading earlier lets it
    // write answers (and count them off) as fast as it takes requests in, and
    // whether the limit is ever reached would then be a race.
    eventually(
        "boardd read all the requests",
        Duration::from_secs(10),
        || async { (unread_by_peer(&s) == 0).then_some(()) },
    )
    .await;
    let mut answered = Vec::new();
    let mut busy = Vec::new();
    for _ in 0..SENT {
        let r = read(&mut s).await.expect("an answer for every request");
        let id = r["id"].as_u64().expect("an id");
        match r["error"]["code"].as_str() {
            Some("busy") => busy.push(id),
            None => assert!(r["result"].is_array(), "{r}"),
            Some(other) => panic!("unexpected error {other}: {r}"),
        }
        answered.push(id);
    }
    answered.sort_unstable();
    assert_eq!(answered, (1..=SENT).collect::<Vec<_>>(), "one answer each");
    assert!(!busy.is_empty(), "nothing was refused as busy");
    assert!(
        busy.iter().all(|id| *id > LIMIT),
        "a request within the first {LIMIT} was refused: {busy:?}"
    );
    raw::send_json(&mut s, &request(9999, "status", json!({}))).await;
    let r = read(&mut s).await.expect("status answered");
    assert_eq!(r["id"], 9999, "{r}");
    assert!(r.get("error").is_none_or(|v| v.is_null()), "{r}");
    drop(s);
    still_serves(&lead, "after the flood").await;
    daemon.stop().await;
}

// Under tokio's paused clock: boardd gives a client it cuts off some seconds to
// read before it drops the connection.
#[tokio::test(start_paused = true)]
async fn a_client_that_never_reads_is_cut_off_not_answered_forever() {
    // Far more requests than boardd keeps answers queued for (256 in flight plus
    // an 8,192-frame backlog), and never a read: rather than drop answers, boardd
    // closes the connection, and serves everyone else meanwhile.
    const SENT: u64 = 20_000;
    let daemon = InProc::start_with(|c| c.inline_commits = true).await;
    let lead = lead(&daemon.socket).await;
    let s = connect_hello(&daemon.socket, "deaf").await;
    let (mut read_half, mut write_half) = s.into_split();
    let mut batch = Vec::new();
    for id in 1..=SENT {
        let frame = serde_json::to_vec(&request(id, "status", json!({}))).unwrap();
        batch.extend_from_slice(&(frame.len() as u32).to_be_bytes());
        batch.extend_from_slice(&frame);
    }
    // Once boardd closes, the rest of the batch has nowhere to go.
    let writing = tokio::spawn(async move {
        let _ = write_half.write_all(&batch).await;
        write_half
    });
    eventually(
        "boardd closed the connection",
        Duration::from_secs(30),
        || async {
            let closed = lead.status().await.unwrap().sessions == 1;
            closed.then_some(())
        },
    )
    .await;
    still_serves(&lead, "while a client is cut off").await;
    // What did arrive is whole answers, then the end of the stream.
    let mut answers = 0u64;
    loop {
        use tokio::io::AsyncReadExt;
        let mut len = [0u8; 4];
        if read_half.read_exact(&mut len).await.is_err() {
            break;
        }
        let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
        read_half
            .read_exact(&mut body)
            .await
            .expect("a whole frame");
        let v: serde_json::Value = serde_json::from_slice(&body).expect("JSON");
        assert_eq!(v["type"], "response", "{v}");
        answers += 1;
    }
    assert!(answers < SENT, "all {SENT} answered: nothing was cut off");
    drop(writing.await);
    daemon.stop().await;
}

/// A client that closes with a reply still unread resets the connection
/// (ECONNRESET on boardd's side). That is the client going away, not a malformed
/// frame: boardd ends the session quietly and keeps serving.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_reset_by_the_client_is_not_a_bad_frame() {
    use std::os::fd::AsRawFd;
    let dir = teamboard_testkit::short_tempdir();
    let socket = dir.path().join("s");
    let mut daemon = teamboard_testkit::Daemon::spawn(
        &socket,
        &dir.path().join("state"),
        &[],
        &[("RUST_LOG", "boardd=debug")],
    );
    daemon.wait_ready().await;
    let mut s = connect_hello(&socket, "lead").await;
    raw::send_json(&mut s, &request(1, "status", json!({}))).await;
    // Wait until the reply is there, unread, then close: the kernel turns that into
    // a reset for the peer.
    let fd = s.as_raw_fd();
    eventually("the reply to arrive", Duration::from_secs(10), || async {
        let mut n: libc::c_int = 0;
        // SAFETY: a valid socket descriptor and a pointer to an int, as FIONREAD wants.
        let rc = unsafe { libc::ioctl(fd, libc::FIONREAD, &mut n) };
        (rc == 0 && n > 0).then_some(())
    })
    .await;
    drop(s);
    // Today's log line for it, or the warning it used to get.
    let log = eventually("boardd to see the reset", Duration::from_secs(10), || {
        let log = daemon.log();
        let seen = log.contains("Connection reset by peer");
        async move { seen.then_some(log) }
    })
    .await;
    assert!(
        !log.contains("bad_frame"),
        "a reset logged as bad_frame:\n{log}"
    );
    assert!(!log.contains("WARN"), "a reset is no warning:\n{log}");
    assert!(
        log.contains("connection broken by the client") && log.contains("Connection reset by peer"),
        "{log}"
    );
    let observer = lead(&socket).await;
    still_serves(&observer, "after a reset").await;
}
