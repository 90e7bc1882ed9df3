//! Streamed Anthropic answers, read back the way a streaming client reads them:
//! the event order, the text and tool input put together from the deltas, the
//! usage, and JSON still for a request that does not ask for a stream.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "test code: a panic fails the test, and the harness captures what it prints"
)]

use serde_json::{Value, json};
use teamboard_mock_llm::{MockLlm, MockReply, TEXT_USAGE, TOOL_USAGE};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use wire::sse_events as events;

mod wire;

/// An answer: status, lowercased headers, body.
struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Sends `POST path` with `body` on a kept-alive connection and reads the answer
/// by its `content-length`, as Claude Code does.
async fn post(conn: &mut BufReader<TcpStream>, path: &str, body: &Value) -> Answer {
    let body = body.to_string();
    let head = format!(
        "POST {path} HTTP/1.1\r\nhost: mock\r\nanthropic-version: 2023-06-01\r\n\
         content-type: application/json\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    let stream = conn.get_mut();
    stream.write_all(head.as_bytes()).await.expect("write");
    stream.write_all(body.as_bytes()).await.expect("write");
    let mut status_line = String::new();
    conn.read_line(&mut status_line).await.expect("read");
    let status = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("status");
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        conn.read_line(&mut line).await.expect("read");
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (k, v) = line.split_once(':').expect("header");
        headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
    }
    let len: usize = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .expect("content-length");
    let mut body = vec![0; len];
    conn.read_exact(&mut body).await.expect("body");
    Answer {
        status,
        headers,
        body: String::from_utf8(body).expect("utf-8"),
    }
}

async fn connect(mock: &MockLlm) -> BufReader<TcpStream> {
    let addr = mock.url().trim_start_matches("http://").to_string();
    BufReader::new(TcpStream::connect(addr).await.expect("connect"))
}

/// The message a client builds from the events, as the SDKs do: start from
/// `message_start`, append blocks, concatenate deltas, parse the tool input at
/// the block's stop, lay `message_delta` over it. Also checks the order.
fn assemble(events: &[(String, Value)]) -> Value {
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names.first(), Some(&"message_start"), "{names:?}");
    assert_eq!(
        names[names.len() - 2..],
        ["message_delta", "message_stop"],
        "{names:?}"
    );
    let mut message = events[0].1["message"].clone();
    assert_eq!(message["content"], json!([]));
    assert_eq!(message["stop_reason"], Value::Null);
    let mut open: Option<(usize, String)> = None;
    for (name, data) in &events[1..] {
        match name.as_str() {
            "ping" | "message_stop" => {}
            "content_block_start" => {
                assert!(open.is_none(), "a block starts while another is open");
                let index = data["index"].as_u64().expect("index") as usize;
                assert_eq!(index, message["content"].as_array().expect("content").len());
                message["content"]
                    .as_array_mut()
                    .expect("content")
                    .push(data["content_block"].clone());
                open = Some((index, String::new()));
            }
            "content_block_delta" => {
                let (index, json_so_far) = open.as_mut().expect("a delta outside a block");
                assert_eq!(data["index"], *index);
                let block = &mut message["content"][*index];
                let delta = &data["delta"];
                match delta["type"].as_str() {
                    Some("text_delta") => {
                        let text = format!(
                            "{}{}",
                            block["text"].as_str().expect("text block"),
                            delta["text"].as_str().expect("text")
                        );
                        block["text"] = json!(text);
                    }
                    Some("input_json_delta") => {
                        json_so_far.push_str(delta["partial_json"].as_str().expect("partial"));
                    }
                    other => panic!("unexpected delta {other:?}"),
                }
            }
            "content_block_stop" => {
                let (index, json) = open.take().expect("a stop outside a block");
                assert_eq!(data["index"], index);
                let block = &mut message["content"][index];
                if block["type"] == "tool_use" {
                    assert_eq!(block["input"], json!({}), "the start carries no input");
                    block["input"] = serde_json::from_str(&json).expect("tool input JSON");
                }
            }
            "message_delta" => {
                assert!(open.is_none(), "message_delta inside a block");
                message["stop_reason"] = data["delta"]["stop_reason"].clone();
                message["stop_sequence"] = data["delta"]["stop_sequence"].clone();
                for (k, v) in data["usage"].as_object().expect("usage") {
                    message["usage"][k] = v.clone();
                }
            }
            other => panic!("unexpected event {other}"),
        }
    }
    message
}

fn names(events: &[(String, Value)]) -> Vec<&str> {
    events.iter().map(|(n, _)| n.as_str()).collect()
}

#[tokio::test]
async fn a_streamed_text_answer_has_the_api_event_order_text_and_usage() {
    let mock = MockLlm::start(vec![MockReply::anthropic_stream_text(
        "Hello from the mock.",
    )]);
    let mut conn = connect(&mock).await;
    let answer = post(
        &mut conn,
        "/v1/messages?beta=true",
        &json!({"stream": true}),
    )
    .await;
    assert_eq!(answer.status, 200);
    assert_eq!(answer.header("content-type"), Some("text/event-stream"));
    let events = events(&answer.body);
    assert_eq!(
        names(&events),
        [
            "message_start",
            "ping",
            "content_block_start",
            "content_block_delta",
            "content_block_delta",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop",
        ]
    );
    let start_usage = &events[0].1["message"]["usage"];
    assert_eq!(start_usage["input_tokens"], TEXT_USAGE.0);
    assert_eq!(start_usage["output_tokens"], 1, "before generating");
    let message = assemble(&events);
    assert_eq!(
        message["content"],
        json!([{"type": "text", "text": "Hello from the mock."}])
    );
    assert_eq!(message["stop_reason"], "end_turn");
    assert_eq!(message["usage"]["input_tokens"], TEXT_USAGE.0);
    assert_eq!(message["usage"]["output_tokens"], TEXT_USAGE.1);
    assert_eq!(mock.requests()[0].answered_usage, message["usage"]);
}

#[tokio::test]
async fn a_streamed_tool_use_sends_its_input_in_pieces() {
    let input = json!({"command": "echo hello-from-bash", "description": "say hello"});
    let mock = MockLlm::start(vec![MockReply::anthropic_stream_tool_use(
        "toolu_0001",
        "Bash",
        input.clone(),
    )]);
    let mut conn = connect(&mock).await;
    let answer = post(
        &mut conn,
        "/v1/messages?beta=true",
        &json!({"stream": true}),
    )
    .await;
    assert_eq!(answer.header("content-type"), Some("text/event-stream"));
    let events = events(&answer.body);
    let partials: Vec<&str> = events
        .iter()
        .filter(|(_, d)| d["delta"]["type"] == "input_json_delta")
        .map(|(_, d)| d["delta"]["partial_json"].as_str().expect("partial"))
        .collect();
    assert!(partials.len() >= 2, "{partials:?}");
    assert!(
        partials
            .iter()
            .all(|p| serde_json::from_str::<Value>(p).is_err()),
        "no piece is the whole input: {partials:?}"
    );
    let message = assemble(&events);
    assert_eq!(
        message["content"],
        json!([
            {"type": "text", "text": "I'll use Bash."},
            {"type": "tool_use", "id": "toolu_0001", "name": "Bash", "input": input},
        ])
    );
    assert_eq!(message["stop_reason"], "tool_use");
    assert_eq!(message["usage"]["input_tokens"], TOOL_USAGE.0);
    assert_eq!(message["usage"]["output_tokens"], TOOL_USAGE.1);
}

#[tokio::test]
async fn a_scripted_json_message_is_streamed_only_to_a_request_asking_for_a_stream() {
    let scripted = MockReply::anthropic_tool_use("toolu_1", "Bash", json!({"command": "ls"}));
    let mock = MockLlm::start(vec![
        scripted.clone(),
        scripted.clone(),
        MockReply::status(529),
        MockReply::openai_text("hi"),
    ]);
    let mut conn = connect(&mock).await;

    // Both on one kept-alive connection, as the CLI sends them.
    let streamed = post(
        &mut conn,
        "/v1/messages?beta=true",
        &json!({"stream": true}),
    )
    .await;
    let plain = post(&mut conn, "/v1/messages", &json!({"stream": false})).await;

    assert_eq!(streamed.header("content-type"), Some("text/event-stream"));
    let scripted_json: Value = serde_json::from_str(&scripted.body).expect("scripted JSON");
    assert_eq!(assemble(&events(&streamed.body)), scripted_json);

    assert_eq!(plain.header("content-type"), Some("application/json"));
    assert_eq!(
        plain.body, scripted.body,
        "a JSON request gets the script as is"
    );

    // An error is JSON even to a streaming request, as the API answers it.
    let error = post(
        &mut conn,
        "/v1/messages?beta=true",
        &json!({"stream": true}),
    )
    .await;
    assert_eq!(error.status, 529);
    assert_eq!(error.header("content-type"), Some("application/json"));
    // Only the Messages API is streamed this way.
    let openai = post(&mut conn, "/v1/chat/completions", &json!({"stream": true})).await;
    assert_eq!(openai.header("content-type"), Some("application/json"));

    let requests = mock.requests();
    assert_eq!(requests.len(), 4);
    assert_eq!(requests[0].answered_usage, scripted_json["usage"]);
    assert_eq!(requests[1].answered_usage, scripted_json["usage"]);
}

/// A request whose system prompt is long enough to cache, with a breakpoint.
fn cacheable(stream: bool) -> Value {
    json!({
        "model": "claude-opus-5-5",
        "stream": stream,
        "system": [{
            "type": "text",
            "text": "You are a careful teammate. ".repeat(300),
            "cache_control": {"type": "ephemeral"},
        }],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "hello"}]},
        ],
    })
}

#[tokio::test]
async fn the_prompt_cache_simulation_sets_a_streamed_answer_usage_as_a_json_one() {
    let script = || {
        vec![
            MockReply::anthropic_text("one"),
            MockReply::anthropic_stream_text("two"),
        ]
    };
    let json_mock = MockLlm::start(script());
    let stream_mock = MockLlm::start(script());
    json_mock.simulate_prompt_cache();
    stream_mock.simulate_prompt_cache();

    let mut json_conn = connect(&json_mock).await;
    let mut stream_conn = connect(&stream_mock).await;
    let mut json_usages = Vec::new();
    let mut stream_usages = Vec::new();
    for _ in 0..2 {
        // The JSON mock's second reply is a stream already; only compare usage.
        let a = post(&mut json_conn, "/v1/messages", &cacheable(false)).await;
        json_usages.push(match a.header("content-type") {
            Some("text/event-stream") => assemble(&events(&a.body))["usage"].clone(),
            _ => serde_json::from_str::<Value>(&a.body).expect("JSON")["usage"].clone(),
        });
        let b = post(&mut stream_conn, "/v1/messages?beta=true", &cacheable(true)).await;
        assert_eq!(b.header("content-type"), Some("text/event-stream"));
        stream_usages.push(assemble(&events(&b.body))["usage"].clone());
    }

    assert_eq!(json_usages, stream_usages);
    assert!(stream_usages[0]["cache_creation_input_tokens"].as_u64() > Some(0));
    assert_eq!(stream_usages[0]["cache_read_input_tokens"], 0);
    assert!(stream_usages[1]["cache_read_input_tokens"].as_u64() > Some(0));
    assert_eq!(stream_usages[1]["output_tokens"], TEXT_USAGE.1);
    let recorded: Vec<Value> = stream_mock
        .requests()
        .into_iter()
        .map(|r| r.answered_usage)
        .collect();
    assert_eq!(recorded, stream_usages);
}
