//! Streamed Responses API answers, read back the way Codex reads them: the
//! event order and sequence numbers, the text and the function call put
//! together from the events, the usage, the simulated prompt cache, and a
//! client that drops the connection in the middle.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "test code: a panic fails the test, and the harness captures what it prints"
)]

use serde_json::{Value, json};
use std::time::Duration;
use teamboard_mock_llm::responses::{self, TEAMBOARD_NAMESPACE};
use teamboard_mock_llm::{MockLlm, MockReply, TEXT_USAGE, TOOL_USAGE};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use wire::{exchange, parts, sse_events};

mod wire;

/// `POST /v1/responses` with `body` on a fresh connection: (status, head,
/// body).
async fn post(mock: &MockLlm, body: &Value) -> (u16, String, String) {
    let headers = ["content-type: application/json"];
    let answer = exchange(mock, "POST", "/v1/responses", &headers, &body.to_string()).await;
    parts(&answer)
}

/// The events of an SSE body ([`sse_events`]), whose sequence numbers must
/// count from 0.
fn events(body: &str) -> Vec<(String, Value)> {
    let events = sse_events(body);
    for (i, (_, data)) in events.iter().enumerate() {
        assert_eq!(
            data["sequence_number"],
            json!(i),
            "sequence numbers count up"
        );
    }
    events
}

/// The output items as a client puts them together: from `added`, the deltas
/// appended, checked against `done`.
fn assemble(events: &[(String, Value)]) -> (Value, Vec<Value>) {
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names.first(), Some(&"response.created"), "{names:?}");
    assert_eq!(names.last(), Some(&"response.completed"), "{names:?}");
    assert_eq!(events[0].1["response"]["status"], "in_progress");
    assert_eq!(events[0].1["response"]["output"], json!([]));
    let mut items: Vec<Value> = Vec::new();
    let mut text = String::new();
    for (name, data) in &events[1..events.len() - 1] {
        match name.as_str() {
            "response.output_item.added" => {
                assert_eq!(data["output_index"], json!(items.len()));
                items.push(data["item"].clone());
                text.clear();
            }
            "response.output_text.delta" => text.push_str(data["delta"].as_str().expect("delta")),
            "response.function_call_arguments.delta" => {
                text.push_str(data["delta"].as_str().expect("delta"))
            }
            "response.output_item.done" => {
                let item = items.last_mut().expect("an item is open");
                match item["type"].as_str() {
                    Some("message") => {
                        assert_eq!(item["content"], json!([]), "added carries no text");
                        assert_eq!(data["item"]["content"][0]["text"], json!(text));
                    }
                    Some("function_call") => {
                        assert_eq!(item["arguments"], "", "added carries no arguments");
                        assert_eq!(data["item"]["arguments"], json!(text));
                    }
                    other => panic!("unexpected item {other:?}"),
                }
                *item = data["item"].clone();
            }
            other => panic!("unexpected event {other}"),
        }
    }
    let completed = &events[events.len() - 1].1["response"];
    assert_eq!(completed["status"], "completed");
    assert_eq!(completed["output"], json!(items));
    (completed["usage"].clone(), items)
}

#[tokio::test]
async fn a_text_answer_streams_in_the_api_order_with_its_usage() {
    let mock = MockLlm::start(vec![MockReply::responses_text("Hello from the mock.")]);
    let (status, head, body) = post(&mock, &json!({"stream": true, "input": []})).await;
    assert_eq!(status, 200);
    assert!(head.contains("content-type: text/event-stream"), "{head}");
    let (usage, items) = assemble(&events(&body));
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["role"], "assistant");
    assert_eq!(items[0]["content"][0]["text"], "Hello from the mock.");
    assert_eq!(usage["input_tokens"], TEXT_USAGE.0);
    assert_eq!(usage["output_tokens"], TEXT_USAGE.1);
    assert_eq!(usage["total_tokens"], TEXT_USAGE.0 + TEXT_USAGE.1);
    assert_eq!(usage["input_tokens_details"]["cached_tokens"], 0);
    // The mock records what it answered.
    assert_eq!(mock.requests()[0].answered_usage, usage);
}

#[tokio::test]
async fn a_function_call_carries_its_call_id_arguments_and_namespace() {
    let mock = MockLlm::start(vec![
        MockReply::responses_function_call("call_1", "exec_command", r#"{"cmd":"ls"}"#, None),
        MockReply::responses_function_call(
            "call_2",
            "submit_plan",
            r#"{"plan":"do it"}"#,
            Some(TEAMBOARD_NAMESPACE),
        ),
    ]);
    let (_, _, body) = post(&mock, &json!({"stream": true})).await;
    let (usage, items) = assemble(&events(&body));
    assert_eq!(items[0]["type"], "function_call");
    assert_eq!(items[0]["call_id"], "call_1");
    assert_eq!(items[0]["name"], "exec_command");
    assert_eq!(items[0]["arguments"], r#"{"cmd":"ls"}"#);
    assert!(items[0].get("namespace").is_none());
    assert_eq!(usage["input_tokens"], TOOL_USAGE.0);
    let (_, _, body) = post(&mock, &json!({"stream": true})).await;
    let (_, items) = assemble(&events(&body));
    assert_eq!(items[0]["namespace"], "mcp__teamboard");
    assert_eq!(items[0]["name"], "submit_plan");
}

#[tokio::test]
async fn a_responder_scripts_by_the_last_user_text_and_the_tool_result() {
    let mock = MockLlm::start(vec![]);
    mock.set_responder(|req| {
        if let Some((id, output)) = responses::function_call_output(&req.body) {
            return Some(MockReply::responses_text(&format!("{id} said {output}")));
        }
        let said = responses::last_user_text(&req.body)?;
        Some(MockReply::responses_function_call(
            "c1",
            "exec_command",
            &json!({"cmd": format!("echo {said}")}).to_string(),
            None,
        ))
    });
    let user = json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]});
    let (_, _, body) = post(&mock, &json!({"input": [user]})).await;
    let (_, items) = assemble(&events(&body));
    assert_eq!(items[0]["arguments"], r#"{"cmd":"echo hi"}"#);
    let result = json!({"type": "function_call_output", "call_id": "c1", "output": "hi\n"});
    let (_, _, body) = post(&mock, &json!({"input": [user, items[0], result]})).await;
    let (_, items) = assemble(&events(&body));
    assert_eq!(items[0]["content"][0]["text"], "c1 said hi\n");
}

#[tokio::test]
async fn the_prompt_cache_is_simulated_for_the_responses_api() {
    let mock = MockLlm::start(vec![
        MockReply::responses_text("one"),
        MockReply::responses_text("two"),
    ]);
    mock.simulate_prompt_cache();
    let long = "x".repeat(10_000);
    let user = |t: &str| json!({"role": "user", "content": [{"type": "input_text", "text": t}]});
    let first = json!({"instructions": "be brief", "input": [user(&long)]});
    let (_, _, body) = post(&mock, &first).await;
    let (usage, _) = assemble(&events(&body));
    let prompt = usage["input_tokens"].as_u64().expect("input tokens");
    assert!(prompt > 2_500, "{usage}");
    assert_eq!(usage["input_tokens_details"]["cached_tokens"], 0);
    let second = json!({"instructions": "be brief", "input": [user(&long), user("more")]});
    let (_, _, body) = post(&mock, &second).await;
    let (usage, _) = assemble(&events(&body));
    let cached = usage["input_tokens_details"]["cached_tokens"]
        .as_u64()
        .expect("cached");
    assert!(cached >= 1024 && cached <= prompt, "{usage}");
    assert_eq!(
        usage["total_tokens"],
        usage["input_tokens"].as_u64().unwrap_or(0) + TEXT_USAGE.1
    );
}

#[tokio::test]
async fn a_client_that_drops_the_connection_mid_answer_leaves_the_mock_serving() {
    let mock = MockLlm::start(vec![
        MockReply::responses_text("slow").with_delay(Duration::from_millis(300)),
        MockReply::responses_text(&"long answer ".repeat(50_000)),
        MockReply::responses_text("after"),
    ]);
    let addr = mock.url().trim_start_matches("http://").to_string();
    let request = |body: &str| {
        format!(
            "POST /v1/responses HTTP/1.1\r\nhost: mock\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        )
    };
    // Dropped while the mock waits to answer.
    let mut slow = TcpStream::connect(&addr).await.expect("connect");
    slow.write_all(request("{}").as_bytes())
        .await
        .expect("write");
    mock.wait_for_calls(1).await;
    drop(slow);
    // Dropped after the first bytes of a long stream.
    let mut long = TcpStream::connect(&addr).await.expect("connect");
    long.write_all(request("{}").as_bytes())
        .await
        .expect("write");
    let mut first = [0u8; 64];
    let n = long.read(&mut first).await.expect("read");
    assert!(String::from_utf8_lossy(&first[..n]).starts_with("HTTP/1.1 200"));
    drop(long);
    tokio::time::sleep(Duration::from_millis(400)).await;
    let (status, _, body) = post(&mock, &json!({})).await;
    assert_eq!(status, 200);
    let (_, items) = assemble(&events(&body));
    assert_eq!(items[0]["content"][0]["text"], "after");
    assert_eq!(mock.calls(), 3);
}

#[tokio::test]
async fn a_slow_answer_opens_its_stream_before_it_pauses() {
    let delay = Duration::from_secs(2);
    let mock = MockLlm::start(vec![MockReply::responses_text("at last").with_delay(delay)]);
    let addr = mock.url().trim_start_matches("http://").to_string();
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    stream
        .write_all(b"POST /v1/responses HTTP/1.1\r\nhost: mock\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}")
        .await
        .expect("write");
    let started = std::time::Instant::now();
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&seen).contains("event: response.created\n") {
        let n = tokio::time::timeout(delay / 2, stream.read(&mut buf))
            .await
            .expect("the stream opens before the pause ends")
            .expect("read");
        assert!(n > 0, "closed early");
        seen.extend_from_slice(&buf[..n]);
    }
    assert!(!String::from_utf8_lossy(&seen).contains("response.completed"));
    stream.read_to_end(&mut seen).await.expect("read");
    assert!(started.elapsed() >= delay / 2);
    let text = String::from_utf8_lossy(&seen).into_owned();
    let (_, body) = text.split_once("\r\n\r\n").expect("head and body");
    let (_, items) = assemble(&events(body));
    assert_eq!(items[0]["content"][0]["text"], "at last");
}
