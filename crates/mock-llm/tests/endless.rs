//! A turn that never ends, at a fixed cost per call: every call answered with
//! a tool call that reports the usage the test chose, also when the prompt
//! cache is simulated.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "test code: a panic fails the test, and the harness captures what it prints"
)]

use serde_json::{Value, json};
use std::collections::HashSet;
use teamboard_mock_llm::{MockLlm, MockReply, endless_tool_calls};
use wire::{exchange, parts};

mod wire;

async fn post(mock: &MockLlm, path: &str, body: &Value) -> Value {
    let headers = ["anthropic-version: 2023-06-01"];
    let answer = exchange(mock, "POST", path, &headers, &body.to_string()).await;
    let (status, _, body) = parts(&answer);
    assert_eq!(status, 200, "{body}");
    serde_json::from_str(&body).expect("JSON")
}

#[tokio::test]
async fn every_call_gets_one_more_tool_call_at_the_usage_chosen() {
    let mock = MockLlm::start(vec![]);
    mock.simulate_prompt_cache();
    let bash = json!({"command": "true"});
    mock.set_responder(endless_tool_calls("bash", bash.clone(), Some((6000, 4000))));
    let long = "x".repeat(20_000);
    let request = json!({"system": [{"type": "text", "text": long, "cache_control": {"type": "ephemeral"}}],
        "messages": [{"role": "user", "content": "go"}]});
    let mut ids = HashSet::new();
    for _ in 0..5 {
        let answer = post(&mock, "/v1/messages", &request).await;
        assert_eq!(answer["stop_reason"], "tool_use");
        let call = &answer["content"][1];
        assert_eq!(
            (call["name"].clone(), call["input"].clone()),
            (json!("bash"), bash.clone())
        );
        assert!(ids.insert(call["id"].to_string()), "a fresh id each time");
    }
    for _ in 0..3 {
        let answer = post(&mock, "/v1/chat/completions", &json!({"messages": []})).await;
        let choice = &answer["choices"][0];
        assert_eq!(choice["finish_reason"], "tool_calls");
        let function = &choice["message"]["tool_calls"][0]["function"];
        assert_eq!(function["name"], "bash");
        assert_eq!(function["arguments"], r#"{"command":"true"}"#);
        assert_eq!(answer["usage"]["total_tokens"], 10_000);
    }
    // Codex's Responses API and Gemini's too.
    let answer = exchange(&mock, "POST", "/v1/responses", &[], "{}").await;
    assert!(answer.contains(r#""name":"bash""#), "{answer}");
    let path = "/v1beta/models/gemini-2.5-flash:generateContent";
    let answer = post(&mock, path, &json!({"contents": []})).await;
    let part = &answer["candidates"][0]["content"]["parts"][0];
    assert_eq!(part["functionCall"]["args"], bash);
    let requests = mock.requests();
    assert_eq!(requests[8].answered_usage["total_tokens"], 10_000);
    assert_eq!(requests[9].answered_usage["totalTokenCount"], 10_000);
    assert_eq!(mock.calls(), 10);
    assert_eq!(mock.fallback_calls(), 0);
    for request in &mock.requests()[..5] {
        let usage = &request.answered_usage;
        assert_eq!(usage["input_tokens"], 6000, "the cache left it alone");
        assert_eq!(usage["output_tokens"], 4000);
        assert_eq!(usage["cache_read_input_tokens"], 0);
    }
}

#[tokio::test]
async fn a_streaming_client_reads_the_fixed_usage_and_the_cache_still_counts_other_replies() {
    let mock = MockLlm::start(vec![
        MockReply::anthropic_text("fixed").with_usage(7, 3),
        MockReply::anthropic_text("simulated"),
    ]);
    mock.simulate_prompt_cache();
    let body = json!({"stream": true, "messages": [{"role": "user", "content": "y".repeat(400)}]});
    for _ in 0..2 {
        let answer = exchange(&mock, "POST", "/v1/messages", &[], &body.to_string()).await;
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    }
    let requests = mock.requests();
    assert_eq!(requests[0].answered_usage["input_tokens"], 7);
    assert_eq!(requests[0].answered_usage["output_tokens"], 3);
    // The cache's estimate of a 400-byte message, not the scripted 25.
    let simulated = requests[1].answered_usage["input_tokens"].as_u64().unwrap();
    assert!(simulated > 100, "{simulated}");
}
