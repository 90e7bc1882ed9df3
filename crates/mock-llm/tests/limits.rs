//! The limits the mock enforces, as a client sees them on the wire: a rate's
//! 429s and headers in each API's format, a throttled call that leaves the
//! script alone, the calls that came back too early, and Codex's usage limit.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "test code: a panic fails the test, and the harness captures what it prints"
)]

use serde_json::Value;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use teamboard_mock_llm::{MockLlm, MockReply, Rate, WindowUse};
use wire::{exchange, parts};

mod wire;

/// A model call in `path`'s API: (status, head in lower case, body as JSON).
async fn call(mock: &MockLlm, path: &str) -> (u16, String, Value) {
    let headers = [
        "anthropic-version: 2023-06-01",
        "content-type: application/json",
    ];
    let answer = exchange(mock, "POST", path, &headers, r#"{"model":"m"}"#).await;
    let (status, head, body) = parts(&answer);
    (
        status,
        head,
        serde_json::from_str(&body).expect("a JSON body"),
    )
}

/// The value of header `name` in a lower-cased head.
fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(": "))
}

#[tokio::test]
async fn anthropic_calls_over_the_rate_get_429s_that_keep_the_script() {
    let mock = MockLlm::start(vec![
        MockReply::anthropic_text("one"),
        MockReply::anthropic_text("two"),
        MockReply::anthropic_text("three"),
    ]);
    mock.enforce_rate(Rate::requests(2, Duration::from_secs(60)));
    for remaining in ["1", "0"] {
        let (status, head, _) = call(&mock, "/v1/messages").await;
        assert_eq!(status, 200);
        let h = |n| header(&head, n);
        assert_eq!(h("anthropic-ratelimit-requests-limit"), Some("2"));
        assert_eq!(h("anthropic-ratelimit-requests-remaining"), Some(remaining));
        let reset = h("anthropic-ratelimit-requests-reset").expect("a reset");
        // An RFC 3339 time in whole seconds (the head is read lower-cased).
        assert!(reset.len() == 20 && reset.ends_with('z'), "{reset}");
        assert_eq!(h("retry-after"), None);
        assert_eq!(h("x-ratelimit-limit-requests"), None, "not OpenAI's");
    }

    let (status, head, body) = call(&mock, "/v1/messages").await;
    assert_eq!(status, 429);
    assert_eq!(body["type"], "error");
    assert_eq!(body["error"]["type"], "rate_limit_error");
    assert_eq!(
        header(&head, "anthropic-ratelimit-requests-remaining"),
        Some("0")
    );
    let retry: u64 = header(&head, "retry-after").unwrap().parse().unwrap();
    // What is left of the window, in whole seconds: 60 unless this machine
    // took over a second for two calls.
    assert!((50..=60).contains(&retry), "{retry}");
    assert_eq!(
        mock.remaining(),
        1,
        "the throttled call left the script alone"
    );
    assert_eq!(mock.fallback_calls(), 0);

    let requests = mock.requests();
    assert!(requests[..2].iter().all(|r| r.throttled.is_none()));
    let throttle = requests[2].throttled.expect("the third was throttled");
    assert_eq!(throttle.until - throttle.at, Duration::from_secs(retry));
    assert!(throttle.at >= requests[2].received_at);
    assert_eq!(requests[2].answered_usage, Value::Null);
    assert!(
        mock.early_calls().is_empty(),
        "nobody was told to wait before"
    );

    // Back at once, not after its retry-after: early, and throttled again.
    let (status, _, _) = call(&mock, "/v1/messages").await;
    assert_eq!(status, 429);
    let early = mock.early_calls();
    assert_eq!(early.len(), 1);
    assert_eq!(early[0].received_at, mock.requests()[3].received_at);
    assert_eq!(
        mock.rate_windows(),
        [WindowUse {
            calls: 2,
            tokens: 74
        }]
    );
}

#[tokio::test]
async fn openai_answers_carry_its_headers_and_a_spent_token_window_refuses() {
    let mock = MockLlm::start(vec![
        MockReply::openai_text("one"),
        MockReply::openai_text("two"),
        MockReply::openai_text("three"),
    ]);
    // Each text answer reports 25 + 12 tokens.
    mock.enforce_rate(Rate::requests(10, Duration::from_secs(360)).with_tokens(50));
    let (status, head, _) = call(&mock, "/v1/chat/completions").await;
    assert_eq!(status, 200);
    let h = |n| header(&head, n);
    assert_eq!(h("x-ratelimit-limit-requests"), Some("10"));
    assert_eq!(h("x-ratelimit-remaining-requests"), Some("9"));
    assert_eq!(h("x-ratelimit-limit-tokens"), Some("50"));
    assert_eq!(h("x-ratelimit-remaining-tokens"), Some("13"));
    // The first call opened the window: all of it is left.
    assert_eq!(h("x-ratelimit-reset-requests"), Some("6m0s"));
    assert_eq!(
        h("anthropic-ratelimit-requests-limit"),
        None,
        "not Anthropic's"
    );

    let (status, head, _) = call(&mock, "/v1/chat/completions").await;
    assert_eq!(status, 200);
    assert_eq!(header(&head, "x-ratelimit-remaining-tokens"), Some("0"));
    let reset = header(&head, "x-ratelimit-reset-requests").unwrap();
    // Less is left, to the millisecond rounded up.
    assert!(reset == "6m0s" || reset.starts_with("5m59."), "{reset}");

    let (status, head, body) = call(&mock, "/v1/chat/completions").await;
    assert_eq!(status, 429);
    assert_eq!(body["error"]["type"], "tokens");
    assert_eq!(body["error"]["code"], "rate_limit_exceeded");
    assert_eq!(header(&head, "x-ratelimit-remaining-requests"), Some("8"));
    assert!(header(&head, "retry-after").is_some());
    assert_eq!(mock.remaining(), 1);
}

#[tokio::test]
async fn a_usage_limit_answers_codexs_body_until_its_reset() {
    let mock = MockLlm::start(vec![MockReply::responses_text("after the reset")]);
    // An hour and 0.4 s from the last whole second.
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let reset = UNIX_EPOCH + Duration::from_millis((now + 3600) * 1000 + 400);
    mock.usage_limit_until(reset);
    let (status, head, body) = call(&mock, "/v1/responses").await;
    assert_eq!(status, 429);
    let error = &body["error"];
    assert_eq!(error["type"], "usage_limit_reached");
    assert_eq!(error["plan_type"], "plus");
    assert_eq!(error["resets_at"], now + 3601, "rounded up");
    let resets_in = error["resets_in_seconds"].as_u64().unwrap();
    assert!((3590..=3601).contains(&resets_in), "{resets_in}");
    assert_eq!(
        header(&head, "retry-after"),
        None,
        "the reset is in the body"
    );
    let throttle = mock.requests()[0].throttled.expect("throttled");
    let left = throttle.until - throttle.at;
    assert!(left > Duration::from_secs(3590) && left <= Duration::from_millis(3_601_400));
    assert_eq!(mock.remaining(), 1);

    // A reset gone by: answered from the script again.
    mock.usage_limit_until(SystemTime::now() - Duration::from_secs(1));
    let answer = exchange(&mock, "POST", "/v1/responses", &[], "{}").await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains("after the reset"));
    assert!(mock.requests()[1].throttled.is_none());
    assert_eq!(mock.remaining(), 0);
}

#[tokio::test]
async fn the_model_list_is_not_limited() {
    let mock = MockLlm::start(vec![]);
    mock.enforce_rate(Rate::requests(0, Duration::from_secs(60)));
    mock.usage_limit_until(SystemTime::now() + Duration::from_secs(60));
    let answer = exchange(&mock, "GET", "/v1/models", &[], "").await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(!answer.contains("x-ratelimit"));
    assert_eq!(mock.calls(), 0);
    assert!(mock.rate_windows().is_empty());
}
