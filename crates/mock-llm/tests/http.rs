//! The HTTP the mock serves, as clients send it: a chunked body is read whole,
//! and dropping the mock closes its connections, an answer in flight included.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "test code: a panic fails the test, and the harness captures what it prints"
)]

use std::time::Duration;
use teamboard_mock_llm::{MockLlm, MockReply};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

async fn connect(mock: &MockLlm) -> TcpStream {
    let addr = mock.url().trim_start_matches("http://").to_string();
    TcpStream::connect(addr).await.expect("connect")
}

#[tokio::test]
async fn a_chunked_body_is_recorded_whole() {
    let mock = MockLlm::start(vec![MockReply::anthropic_text("hi")]);
    let mut stream = connect(&mock).await;
    stream
        .write_all(
            b"POST /v1/messages HTTP/1.1\r\nhost: mock\r\nanthropic-version: 2023-06-01\r\n\
              transfer-encoding: chunked\r\nconnection: close\r\n\r\n\
              7\r\n{\"model\r\n8;ext=1\r\n\":\"m\",\"x\r\n4\r\n\":1}\r\n0\r\n\r\n",
        )
        .await
        .expect("write");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.expect("read");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let request = mock.request(0).expect("recorded");
    assert_eq!(request.body, serde_json::json!({"model": "m", "x": 1}));
    assert_eq!(request.header("transfer-encoding"), Some("chunked"));
}

#[tokio::test]
async fn dropping_the_mock_closes_its_connections() {
    let mock = MockLlm::start(vec![
        MockReply::anthropic_text("first"),
        MockReply::anthropic_text("never sent").with_delay(Duration::from_secs(3600)),
    ]);
    let mut stream = connect(&mock).await;
    let request = b"POST /v1/messages HTTP/1.1\r\nhost: mock\r\ncontent-length: 2\r\n\r\n{}";
    stream.write_all(request).await.expect("write");
    let mut buf = [0u8; 4096];
    let n = stream.read(&mut buf).await.expect("read");
    assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));
    // The second waits for its delay on the kept-alive connection.
    stream.write_all(request).await.expect("write");
    mock.wait_for_calls(2).await;
    drop(mock);
    let closed = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut buf))
        .await
        .expect("the connection closes when the mock is dropped");
    assert!(matches!(closed, Ok(0) | Err(_)), "{closed:?}");
}
