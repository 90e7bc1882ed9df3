//! What the mock's own tests share: a request written by hand on a fresh
//! connection, as a client would send it, and an SSE body read apart from the
//! crate's own parser.

#![allow(dead_code, reason = "each test crate that includes it uses a part")]

use serde_json::Value;
use teamboard_mock_llm::MockLlm;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Sends `METHOD path` with `headers` (each `name: value`) and `body` on a
/// fresh connection, and reads the whole answer: the mock closes the
/// connection after it (`connection: close`).
pub async fn exchange(
    mock: &MockLlm,
    method: &str,
    path: &str,
    headers: &[&str],
    body: &str,
) -> String {
    let addr = mock.url().trim_start_matches("http://").to_string();
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    let mut head = format!("{method} {path} HTTP/1.1\r\nhost: mock\r\n");
    for header in headers {
        head.push_str(header);
        head.push_str("\r\n");
    }
    head.push_str(&format!(
        "content-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    ));
    stream.write_all(head.as_bytes()).await.expect("write");
    stream.write_all(body.as_bytes()).await.expect("write");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.expect("read");
    answer
}

/// An answer taken apart: its status code, its head in lower case, its body.
pub fn parts(answer: &str) -> (u16, String, String) {
    let (head, body) = answer.split_once("\r\n\r\n").expect("head and body");
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("status");
    (status, head.to_ascii_lowercase(), body.to_string())
}

/// The events of an SSE body: `event:` and `data:` lines, each event ended
/// by a blank line. Checks that the stream ends with one, that each event
/// has one data line, and that `data.type` names the event.
pub fn sse_events(body: &str) -> Vec<(String, Value)> {
    assert!(body.ends_with("\n\n"), "the stream ends with a blank line");
    body.split("\n\n")
        .filter(|e| !e.is_empty())
        .map(|e| {
            let mut lines = e.lines();
            let name = lines
                .next()
                .and_then(|l| l.strip_prefix("event: "))
                .expect("event line first");
            let data = lines
                .next()
                .and_then(|l| l.strip_prefix("data: "))
                .expect("data line second");
            assert_eq!(lines.next(), None, "one data line per event");
            let data: Value = serde_json::from_str(data).expect("data is JSON");
            assert_eq!(data["type"], name, "data.type names the event");
            (name.to_string(), data)
        })
        .collect()
}
