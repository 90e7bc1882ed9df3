//! When model calls arrive: `received_at` and `wait_for_calls`.

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;
use std::time::{Duration, Instant};
use teamboard_mock_llm::{MockLlm, MockReply};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Sends one request on a fresh connection and reads the whole answer.
async fn http(mock: &MockLlm, method: &str, path: &str, body: &str) -> String {
    let addr = mock.url().trim_start_matches("http://").to_string();
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    let head = format!(
        "{method} {path} HTTP/1.1\r\nhost: mock\r\nanthropic-version: 2023-06-01\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.expect("write");
    stream.write_all(body.as_bytes()).await.expect("write");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.expect("read");
    answer
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
    // Already there: returns at once.
    tokio::time::timeout(Duration::from_secs(10), mock.wait_for_calls(1))
        .await
        .expect("a count already reached must not wait");
}
