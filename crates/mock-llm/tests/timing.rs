//! When model calls arrive (`received_at`, `wait_for_calls`), and how soon they
//! are answered.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "test code: a panic fails the test, and the harness captures what it prints"
)]

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;
use std::time::{Duration, Instant};
use teamboard_mock_llm::{MockLlm, MockReply};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use wire::exchange;

mod wire;

/// Sends one request on a fresh connection and reads the whole answer.
async fn http(mock: &MockLlm, method: &str, path: &str, body: &str) -> String {
    exchange(mock, method, path, &["anthropic-version: 2023-06-01"], body).await
}

/// Whether `fut` is still pending when polled once.
async fn pending(fut: Pin<&mut (impl Future<Output = ()> + ?Sized)>) -> bool {
    let mut fut = fut;
    std::future::poll_fn(|cx| Poll::Ready(fut.as_mut().poll(cx).is_pending())).await
}

#[tokio::test]
async fn wait_for_calls_wakes_on_a_model_call_and_stamps_its_arrival() {
    let mock = MockLlm::start(vec![MockReply::anthropic_text("hi")]);
    let waiting = mock.wait_for_calls(1);
    tokio::pin!(waiting);
    assert!(pending(waiting.as_mut()).await, "no call has arrived yet");

    // The model list is not a model call.
    let models = http(&mock, "GET", "/v1/models", "").await;
    assert!(models.starts_with("HTTP/1.1 200"), "{models}");
    assert!(
        pending(waiting.as_mut()).await,
        "a model list is no model call"
    );

    let sent = Instant::now();
    let answer = http(&mock, "POST", "/v1/messages", r#"{"model":"m"}"#).await;
    let answered = Instant::now();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    tokio::time::timeout(Duration::from_secs(10), waiting)
        .await
        .expect("wait_for_calls did not wake for the call");

    let requests = mock.requests();
    assert_eq!(requests.len(), 1);
    let at = requests[0].received_at;
    assert!(
        sent <= at && at <= answered,
        "received_at lies outside the call"
    );
    assert_eq!(mock.request(0).map(|r| r.received_at), Some(at));
    assert!(mock.request(1).is_none());
    // Already there: returns at once.
    tokio::time::timeout(Duration::from_secs(10), mock.wait_for_calls(1))
        .await
        .expect("a count already reached must not wait");
}

/// Reads one answer (head and a `content-length` body) from a kept-alive connection.
async fn read_answer(stream: &mut tokio::io::BufReader<TcpStream>) -> String {
    use tokio::io::AsyncBufReadExt;
    let mut head = String::new();
    let mut len = 0;
    loop {
        let mut line = String::new();
        stream.read_line(&mut line).await.expect("read");
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            len = v.trim().parse().expect("content-length");
        }
        head.push_str(&line);
        if line == "\r\n" {
            break;
        }
    }
    let mut body = vec![0; len];
    stream.read_exact(&mut body).await.expect("read");
    head + &String::from_utf8_lossy(&body)
}

/// A reply written as two segments (head, then body) without TCP_NODELAY waits
/// for the client's delayed ACK of the first: 40 ms on Linux, for every answer
/// on a kept-alive connection after its first few. Providers keep their
/// connection alive, so every model call of a test or a bench paid it.
#[tokio::test]
async fn answers_on_a_kept_alive_connection_do_not_wait_for_delayed_acks() {
    const CALLS: usize = 12;
    let replies = (0..CALLS)
        .map(|_| MockReply::anthropic_text("hi"))
        .collect();
    let mock = MockLlm::start(replies);
    let addr = mock.url().trim_start_matches("http://").to_string();
    let stream = TcpStream::connect(addr).await.expect("connect");
    // The client's side cannot be what waits: each request goes in one write.
    stream.set_nodelay(true).expect("nodelay");
    let mut stream = tokio::io::BufReader::new(stream);
    let body = r#"{"model":"m"}"#;
    let request = format!(
        "POST /v1/messages HTTP/1.1\r\nhost: mock\r\nanthropic-version: 2023-06-01\r\n\
         content-length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut round_trips = Vec::new();
    for _ in 0..CALLS {
        let sent = Instant::now();
        stream
            .get_mut()
            .write_all(request.as_bytes())
            .await
            .expect("write");
        let answer = read_answer(&mut stream).await;
        round_trips.push(sent.elapsed());
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    }
    round_trips.sort();
    // A stalled answer takes 40 ms or more; an unstalled one well under a
    // millisecond. The median keeps a stray slow answer on a busy host from
    // failing the test, while a stall on every answer still does.
    let median = round_trips[CALLS / 2];
    assert!(
        median < Duration::from_millis(20),
        "median round trip {median:?}: {round_trips:?}"
    );
}
