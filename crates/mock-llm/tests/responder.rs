//! A responder chooses replies from the request once the queue is empty.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "test code: a panic fails the test, and the harness captures what it prints"
)]

use teamboard_mock_llm::{MockLlm, MockReply};
use wire::exchange;

mod wire;

async fn post(mock: &MockLlm, body: &str) -> String {
    let headers = ["anthropic-version: 2023-06-01"];
    exchange(mock, "POST", "/v1/messages", &headers, body).await
}

#[tokio::test]
async fn the_queue_comes_first_then_the_responder_then_the_fallback() {
    let mock = MockLlm::start(vec![MockReply::anthropic_text("from the queue")]);
    mock.set_responder(|req| {
        let said = req.body["messages"][0]["content"].as_str()?;
        said.contains("ping")
            .then(|| MockReply::anthropic_text(&format!("pong to {said}")))
    });
    let first = post(
        &mock,
        r#"{"messages":[{"role":"user","content":"ping 1"}]}"#,
    )
    .await;
    assert!(first.contains("from the queue"), "{first}");
    let second = post(
        &mock,
        r#"{"messages":[{"role":"user","content":"ping 2"}]}"#,
    )
    .await;
    assert!(second.contains("pong to ping 2"), "{second}");
    let third = post(&mock, r#"{"messages":[{"role":"user","content":"other"}]}"#).await;
    assert!(third.starts_with("HTTP/1.1 500"), "{third}");
    assert_eq!(mock.fallback_calls(), 1);
    assert_eq!(mock.calls(), 3);
}

#[test]
fn every_scripted_anthropic_answer_has_an_id_of_its_own() {
    // Claude Code merges the assistant messages that share an id into one.
    let id =
        |r: MockReply| serde_json::from_str::<serde_json::Value>(&r.body).unwrap()["id"].clone();
    assert_ne!(
        id(MockReply::anthropic_text("a")),
        id(MockReply::anthropic_text("a"))
    );
}
