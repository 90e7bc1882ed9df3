//! The Gemini API as Gemini CLI calls it: streamed and whole answers from one
//! script, `countTokens` apart from the script, usage recorded and simulated.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "test code: a panic fails the test, and the harness captures what it prints"
)]

use serde_json::{Value, json};
use teamboard_mock_llm::gemini::{GEMINI_TEXT_USAGE, last_user_text};
use teamboard_mock_llm::{MockLlm, MockReply};
use wire::{exchange, parts};

mod wire;

const STREAM: &str = "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse";
const ONCE: &str = "/v1beta/models/gemini-2.5-flash:generateContent";

/// Sends `POST path` with `body` on a fresh connection: (status, head, body).
async fn post(mock: &MockLlm, path: &str, body: &Value) -> (u16, String, String) {
    let headers = ["x-goog-api-key: k", "content-type: application/json"];
    parts(&exchange(mock, "POST", path, &headers, &body.to_string()).await)
}

fn ask(text: &str) -> Value {
    json!({"contents": [{"role": "user", "parts": [{"text": text}]}]})
}

/// The `data:` chunks of an SSE body, parsed apart from the crate's reader.
fn chunks(body: &str) -> Vec<Value> {
    body.split("\n\n")
        .filter(|c| !c.trim().is_empty())
        .map(|c| {
            let data = c.strip_prefix("data: ").expect("a data line");
            serde_json::from_str(data).expect("JSON data")
        })
        .collect()
}

#[tokio::test]
async fn one_script_answers_a_stream_and_a_whole_call() {
    let mock = MockLlm::start(vec![]);
    mock.set_responder(|req| {
        let said = last_user_text(&req.body);
        Some(MockReply::gemini_text(&format!("you said: {said}")))
    });

    let (status, head, body) = post(&mock, STREAM, &ask("streaming please")).await;
    assert_eq!(status, 200, "{head}");
    assert!(head.contains("content-type: text/event-stream"), "{head}");
    let chunks = chunks(&body);
    assert!(chunks.len() > 1, "text comes in pieces: {body}");
    let text: String = chunks
        .iter()
        .filter_map(|c| c["candidates"][0]["content"]["parts"][0]["text"].as_str())
        .collect();
    assert_eq!(text, "you said: streaming please");
    let last = chunks.last().expect("a chunk");
    assert_eq!(last["candidates"][0]["finishReason"], "STOP");
    assert_eq!(
        last["usageMetadata"]["promptTokenCount"],
        GEMINI_TEXT_USAGE.0
    );

    let (status, head, body) = post(&mock, ONCE, &ask("whole")).await;
    assert_eq!(status, 200, "{head}");
    assert!(head.contains("content-type: application/json"), "{head}");
    let answer: Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(
        answer["candidates"][0]["content"]["parts"][0]["text"],
        "you said: whole"
    );

    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    // The usage the answers reported, streamed or not.
    for r in &requests {
        assert_eq!(
            r.answered_usage["totalTokenCount"],
            GEMINI_TEXT_USAGE.0 + GEMINI_TEXT_USAGE.1
        );
    }
}

#[tokio::test]
async fn a_function_call_streams_whole() {
    let mock = MockLlm::start(vec![MockReply::gemini_function_call(
        "run_shell_command",
        json!({"command": "touch x", "description": "make x"}),
    )]);
    let (_, _, body) = post(&mock, STREAM, &ask("run it")).await;
    let chunks = chunks(&body);
    assert_eq!(chunks.len(), 1);
    let call = &chunks[0]["candidates"][0]["content"]["parts"][0]["functionCall"];
    assert_eq!(call["name"], "run_shell_command");
    assert_eq!(call["args"]["command"], "touch x");
}

#[tokio::test]
async fn count_tokens_is_no_model_call_and_errors_stay_json() {
    let mock = MockLlm::start(vec![MockReply::gemini_error(429, "quota")]);
    let (status, _, body) = post(
        &mock,
        "/v1beta/models/gemini-2.5-flash:countTokens",
        &ask("x".repeat(400).as_str()),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let counted: Value = serde_json::from_str(&body).expect("JSON");
    assert!(
        counted["totalTokens"].as_u64().unwrap_or(0) >= 100,
        "{body}"
    );
    assert_eq!(mock.calls(), 0, "countTokens is not a model call");
    assert_eq!(mock.model_list_requests().len(), 1);
    assert_eq!(mock.remaining(), 1, "the script is untouched");

    let (status, head, body) = post(&mock, STREAM, &ask("hi")).await;
    assert_eq!(status, 429, "{head}");
    assert!(head.contains("application/json"), "{head}");
    assert!(body.contains("RESOURCE_EXHAUSTED"), "{body}");
}

#[tokio::test]
async fn the_simulated_prompt_cache_reports_gemini_usage() {
    let mock = MockLlm::start(vec![]);
    mock.set_fallback(MockReply::gemini_text("ok"));
    mock.simulate_prompt_cache();
    let long = "context ".repeat(1500);
    let (_, _, first) = post(&mock, STREAM, &ask(&long)).await;
    let usage = &chunks(&first).last().expect("a chunk")["usageMetadata"].clone();
    assert!(
        usage["promptTokenCount"].as_u64().unwrap_or(0) > 2000,
        "{usage}"
    );
    assert_eq!(usage["cachedContentTokenCount"], 0);
    let mut again = ask(&long);
    again["contents"]
        .as_array_mut()
        .expect("contents")
        .push(json!({"role": "user", "parts": [{"text": "more"}]}));
    let (_, _, second) = post(&mock, STREAM, &again).await;
    let usage = &chunks(&second).last().expect("a chunk")["usageMetadata"].clone();
    assert!(
        usage["cachedContentTokenCount"].as_u64().unwrap_or(0) >= 1024,
        "{usage}"
    );
    assert_eq!(
        mock.requests()[1].answered_usage["cachedContentTokenCount"],
        usage["cachedContentTokenCount"]
    );
}
