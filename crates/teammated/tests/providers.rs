//! The real providers against a scripted HTTP server: wire format both ways, retries,
//! and the handling of API keys.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "test code: a panic fails the test, and the harness captures what it prints"
)]

use serde_json::{Value, json};
use std::time::{Duration, Instant};
use teamboard_protocol::TokenUsage;
use teamboard_protocol::spend::{RateSnapshot, RateWindow};
use teamboard_testkit::mock_llm::{self, MockLlm, MockReply, TEXT_USAGE, TOOL_USAGE};
use teammated::config::{ProviderConfig, ProviderKind};
use teammated::llm::anthropic::Anthropic;
use teammated::llm::openai::OpenAi;
use teammated::llm::retry::RetryPolicy;
use teammated::llm::{
    Block, ChatMessage, Completion, CompletionRequest, LlmError, Role, StopReason, ToolSpec,
};

const ANTHROPIC_KEY: &str = "sk-ant-test-0123456789abcdef";
const OPENAI_KEY: &str = "sk-proj-test-0123456789abcdef";

/// Retries in milliseconds, so retry tests stay fast.
fn fast_retry() -> RetryPolicy {
    RetryPolicy {
        max_attempts: 3,
        base: Duration::from_millis(2),
        cap: Duration::from_millis(20),
    }
}

fn config(kind: ProviderKind, base_url: Option<String>, key: Option<&str>) -> ProviderConfig {
    ProviderConfig {
        kind,
        model: None,
        base_url,
        api_key: key.map(str::to_string),
        max_tokens: 1024,
        max_tokens_field: None,
        request_timeout: Duration::from_secs(10),
        retry: fast_retry(),
        account: Default::default(),
    }
}

fn anthropic(mock: &MockLlm) -> Anthropic {
    Anthropic::new(&config(
        ProviderKind::Anthropic,
        Some(mock.url()),
        Some(ANTHROPIC_KEY),
    ))
    .unwrap()
}

fn openai(mock: &MockLlm, key: Option<&str>) -> OpenAi {
    // A trailing slash, as people paste it; the provider must not double it.
    OpenAi::new(&config(
        ProviderKind::Openai,
        Some(format!("{}/v1/", mock.url())),
        key,
    ))
    .unwrap()
}

fn bash_tool() -> ToolSpec {
    ToolSpec {
        name: "bash".into(),
        description: "Run a shell command".into(),
        input_schema: json!({
            "type": "object",
            "properties": {"command": {"type": "string"}},
            "required": ["command"],
        }),
    }
}

fn request<'a>(messages: &'a [ChatMessage], tools: &'a [ToolSpec]) -> CompletionRequest<'a> {
    CompletionRequest {
        system: "You are a careful teammate.",
        messages,
        tools,
        max_tokens: 512,
        on_retry: None,
        retry_rate_limits: true,
    }
}

fn hello() -> Vec<ChatMessage> {
    vec![ChatMessage::user_text("hello")]
}

/// Runs one conversation turn of the neutral work loop: the answer goes into the
/// history, and each tool use gets a result.
fn answer_tools(history: &mut Vec<ChatMessage>, completion: &Completion) {
    history.push(ChatMessage {
        role: Role::Assistant,
        content: completion.content.clone(),
    });
    let results = completion
        .content
        .iter()
        .filter_map(|b| match b {
            Block::ToolUse { id, .. } => Some(Block::ToolResult {
                tool_use_id: id.clone(),
                content: "Cargo.toml\nsrc".into(),
                is_error: false,
            }),
            _ => None,
        })
        .collect();
    history.push(ChatMessage {
        role: Role::User,
        content: results,
    });
}

#[tokio::test]
async fn anthropic_multi_turn_tool_use() {
    let mock = MockLlm::start(vec![
        MockReply::anthropic_tool_use("toolu_01A", "bash", json!({"command": "ls"})),
        MockReply::anthropic_text("There are two entries."),
    ]);
    let provider = anthropic(&mock);
    let tools = [bash_tool()];
    let mut history = vec![ChatMessage::user_text("What is in the directory?")];

    let first = provider.complete(request(&history, &tools)).await.unwrap();
    assert_eq!(first.stop, StopReason::ToolUse);
    assert_eq!(
        first.usage,
        TokenUsage {
            input: TOOL_USAGE.0,
            output: TOOL_USAGE.1,
            ..Default::default()
        }
    );
    assert!(first.content.contains(&Block::ToolUse {
        id: "toolu_01A".into(),
        name: "bash".into(),
        input: json!({"command": "ls"}),
    }));
    answer_tools(&mut history, &first);

    let second = provider.complete(request(&history, &tools)).await.unwrap();
    assert_eq!(second.stop, StopReason::EndTurn);
    assert_eq!(second.content, vec![Block::text("There are two entries.")]);
    assert_eq!(
        second.usage,
        TokenUsage {
            input: TEXT_USAGE.0,
            output: TEXT_USAGE.1,
            ..Default::default()
        }
    );

    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    for r in &requests {
        assert_eq!(r.method, "POST");
        assert_eq!(r.path, "/v1/messages");
        assert_eq!(r.header("x-api-key"), Some(ANTHROPIC_KEY));
        assert_eq!(r.header("anthropic-version"), Some("2023-06-01"));
        assert_eq!(r.header("content-type"), Some("application/json"));
        assert_eq!(r.header("authorization"), None);
        assert_eq!(r.body["model"], "claude-sonnet-4-5");
        assert_eq!(r.body["max_tokens"], 512);
        // The system prompt and the last tool end the cacheable prefix.
        let ephemeral = json!({"type": "ephemeral"});
        assert_eq!(
            r.body["system"],
            json!([{"type": "text", "text": "You are a careful teammate.", "cache_control": ephemeral}])
        );
        assert_eq!(r.body["tools"][0]["cache_control"], ephemeral);
        assert_eq!(r.body["tools"][0]["name"], "bash");
        assert_eq!(r.body["tools"][0]["description"], "Run a shell command");
        assert_eq!(
            r.body["tools"][0]["input_schema"]["required"],
            json!(["command"])
        );
    }
    let messages = requests[1].body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 3);
    assert_eq!(
        messages[0],
        json!({"role": "user", "content": [{"type": "text", "text": "What is in the directory?"}]})
    );
    assert_eq!(messages[1]["role"], "assistant");
    let tool_use = messages[1]["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["type"] == "tool_use")
        .unwrap();
    assert_eq!(tool_use["id"], "toolu_01A");
    assert_eq!(tool_use["input"], json!({"command": "ls"}));
    assert_eq!(messages[2]["role"], "user");
    // The conversation's tail is marked too, so the next call reads it all.
    assert_eq!(
        messages[2]["content"][0],
        json!({
            "type": "tool_result",
            "tool_use_id": "toolu_01A",
            "content": "Cargo.toml\nsrc",
            "is_error": false,
            "cache_control": {"type": "ephemeral"},
        })
    );
    assert!(messages[1].get("cache_control").is_none());
}

#[tokio::test]
async fn anthropic_ignores_thinking_blocks() {
    let answer = mock_llm::anthropic_message(
        json!([
            {"type": "thinking", "thinking": "Let me think.", "signature": "sig"},
            {"type": "text", "text": "Done."}
        ]),
        "end_turn",
        (3, 2),
    );
    let mock = MockLlm::start(vec![MockReply::json(200, answer)]);
    let c = anthropic(&mock)
        .complete(request(&hello(), &[]))
        .await
        .unwrap();
    assert_eq!(c.content, vec![Block::text("Done.")]);
    assert_eq!(
        c.usage,
        TokenUsage {
            input: 3,
            output: 2,
            ..Default::default()
        }
    );
    // No tools, no `tools` field.
    assert!(mock.requests()[0].body.get("tools").is_none());
}

#[tokio::test]
async fn openai_multi_turn_tool_calls() {
    let mock = MockLlm::start(vec![
        MockReply::openai_tool_call("call_abc", "bash", r#"{"command":"ls"}"#),
        MockReply::openai_text("There are two entries."),
    ]);
    let provider = openai(&mock, Some(OPENAI_KEY));
    let tools = [bash_tool()];
    let mut history = vec![ChatMessage::user_text("What is in the directory?")];

    let first = provider.complete(request(&history, &tools)).await.unwrap();
    assert_eq!(first.stop, StopReason::ToolUse);
    assert_eq!(
        first.content,
        vec![Block::ToolUse {
            id: "call_abc".into(),
            name: "bash".into(),
            input: json!({"command": "ls"}),
        }]
    );
    assert_eq!(
        first.usage,
        TokenUsage {
            input: TOOL_USAGE.0,
            output: TOOL_USAGE.1,
            ..Default::default()
        }
    );
    answer_tools(&mut history, &first);

    let second = provider.complete(request(&history, &tools)).await.unwrap();
    assert_eq!(second.stop, StopReason::EndTurn);
    assert_eq!(second.content, vec![Block::text("There are two entries.")]);

    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    for r in &requests {
        assert_eq!(r.method, "POST");
        assert_eq!(r.path, "/v1/chat/completions");
        assert_eq!(
            r.header("authorization"),
            Some(format!("Bearer {OPENAI_KEY}").as_str())
        );
        assert_eq!(r.header("x-api-key"), None);
        assert_eq!(r.body["model"], "gpt-4o-mini");
        assert_eq!(r.body["max_tokens"], 512);
        assert_eq!(r.body["tools"][0]["type"], "function");
        assert_eq!(r.body["tools"][0]["function"]["name"], "bash");
        assert_eq!(
            r.body["tools"][0]["function"]["parameters"]["required"],
            json!(["command"])
        );
    }
    let messages = requests[1].body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 4, "{messages:#?}");
    assert_eq!(
        messages[0],
        json!({"role": "system", "content": "You are a careful teammate."})
    );
    assert_eq!(
        messages[1],
        json!({"role": "user", "content": "What is in the directory?"})
    );
    assert_eq!(messages[2]["role"], "assistant");
    assert_eq!(messages[2]["content"], Value::Null);
    let call = &messages[2]["tool_calls"][0];
    assert_eq!(call["id"], "call_abc");
    assert_eq!(call["type"], "function");
    assert_eq!(call["function"]["name"], "bash");
    let arguments = call["function"]["arguments"].as_str().unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(arguments).unwrap(),
        json!({"command": "ls"})
    );
    assert_eq!(
        messages[3],
        json!({"role": "tool", "tool_call_id": "call_abc", "content": "Cargo.toml\nsrc"})
    );
}

#[tokio::test]
async fn openai_sends_the_output_limit_in_the_chosen_field() {
    use teammated::MaxTokensField::{MaxCompletionTokens, MaxTokens};
    // Off api.openai.com the default is max_tokens, which every compatible server
    // knows; max_completion_tokens is what OpenAI's own API wants.
    let cases = [
        (None, "max_tokens", "max_completion_tokens"),
        (Some(MaxTokens), "max_tokens", "max_completion_tokens"),
        (
            Some(MaxCompletionTokens),
            "max_completion_tokens",
            "max_tokens",
        ),
    ];
    for (field, sent, absent) in cases {
        let mock = MockLlm::start(vec![MockReply::openai_text("hi")]);
        let mut cfg = config(
            ProviderKind::Openai,
            Some(format!("{}/v1", mock.url())),
            None,
        );
        cfg.max_tokens_field = field;
        OpenAi::new(&cfg)
            .unwrap()
            .complete(request(&hello(), &[]))
            .await
            .unwrap();
        let body = &mock.requests()[0].body;
        assert_eq!(body[sent], 512, "{field:?}: {body}");
        assert!(body.get(absent).is_none(), "{field:?}: {body}");
    }
}

#[tokio::test]
async fn openai_local_server_needs_no_key_and_gets_no_bearer() {
    let mock = MockLlm::start(vec![MockReply::openai_text("hi")]);
    let c = openai(&mock, None)
        .complete(request(&hello(), &[]))
        .await
        .unwrap();
    assert_eq!(c.content, vec![Block::text("hi")]);
    let r = &mock.requests()[0];
    assert_eq!(r.header("authorization"), None);
    assert!(r.body.get("tools").is_none());
}

#[tokio::test]
async fn openai_unparseable_arguments_reach_the_tool_verbatim() {
    let mock = MockLlm::start(vec![MockReply::openai_tool_call(
        "call_x",
        "bash",
        "{\"command\": \"ls",
    )]);
    let c = openai(&mock, None)
        .complete(request(&hello(), &[bash_tool()]))
        .await
        .unwrap();
    assert_eq!(
        c.content,
        vec![Block::ToolUse {
            id: "call_x".into(),
            name: "bash".into(),
            input: json!({"_unparsed_arguments": "{\"command\": \"ls"}),
        }]
    );
}

#[tokio::test]
async fn rate_limit_then_success_is_retried_for_both_providers() {
    let mock = MockLlm::start(vec![
        MockReply::status(429).with_header("retry-after", "0"),
        MockReply::anthropic_text("ok"),
    ]);
    let c = anthropic(&mock)
        .complete(request(&hello(), &[]))
        .await
        .unwrap();
    assert_eq!(c.content, vec![Block::text("ok")]);
    assert_eq!(mock.calls(), 2);
    assert_eq!(mock.fallback_calls(), 0);

    let mock = MockLlm::start(vec![
        MockReply::status(429).with_header("retry-after", "0"),
        MockReply::openai_text("ok"),
    ]);
    let c = openai(&mock, Some(OPENAI_KEY))
        .complete(request(&hello(), &[]))
        .await
        .unwrap();
    assert_eq!(c.content, vec![Block::text("ok")]);
    assert_eq!(mock.calls(), 2);
    // The retry is the same request again.
    let requests = mock.requests();
    assert_eq!(requests[0].body, requests[1].body);
}

#[tokio::test]
async fn anthropic_overloaded_529_is_retried() {
    let overloaded = MockReply::json(
        529,
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
    );
    let mock = MockLlm::start(vec![overloaded, MockReply::anthropic_text("ok")]);
    let c = anthropic(&mock)
        .complete(request(&hello(), &[]))
        .await
        .unwrap();
    assert_eq!(c.stop, StopReason::EndTurn);
    assert_eq!(mock.calls(), 2);
}

#[tokio::test]
async fn retry_after_is_honoured() {
    let mock = MockLlm::start(vec![
        MockReply::status(429).with_header("retry-after-ms", "150"),
        MockReply::openai_text("ok"),
    ]);
    let mut cfg = config(
        ProviderKind::Openai,
        Some(format!("{}/v1", mock.url())),
        None,
    );
    cfg.retry.cap = Duration::from_secs(5);
    let provider = OpenAi::new(&cfg).unwrap();
    let started = Instant::now();
    provider.complete(request(&hello(), &[])).await.unwrap();
    assert!(started.elapsed() >= Duration::from_millis(150));
    assert_eq!(mock.calls(), 2);
}

/// `request` for a caller that schedules calls per account: rate limits come
/// back to it instead of being retried.
fn scheduled<'a>(messages: &'a [ChatMessage]) -> CompletionRequest<'a> {
    CompletionRequest {
        retry_rate_limits: false,
        ..request(messages, &[])
    }
}

/// `now_ms` before and after `f`, to bound a reset counted from "now".
async fn timed<T>(f: impl Future<Output = T>) -> (i64, T, i64) {
    let before = teamboard_protocol::now_ms();
    let out = f.await;
    (before, out, teamboard_protocol::now_ms())
}

#[tokio::test]
async fn each_answer_brings_what_its_headers_say_about_the_rate_limits() {
    let mock = MockLlm::start(vec![
        MockReply::openai_text("ok")
            .with_header("x-ratelimit-limit-requests", "5000")
            .with_header("x-ratelimit-remaining-requests", "4999")
            .with_header("x-ratelimit-reset-requests", "12ms")
            .with_header("x-ratelimit-limit-tokens", "800000")
            .with_header("x-ratelimit-remaining-tokens", "799126")
            .with_header("x-ratelimit-reset-tokens", "6m0s"),
    ]);
    let provider = openai(&mock, Some(OPENAI_KEY));
    let (before, c, after) = timed(provider.complete(request(&hello(), &[]))).await;
    let rate = c.unwrap().rate.unwrap();
    let requests = rate.requests.unwrap();
    assert_eq!((requests.limit, requests.remaining), (Some(5000), 4999));
    assert!((before + 12..=after + 12).contains(&requests.reset_at_ms));
    let tokens = rate.tokens.unwrap();
    assert_eq!((tokens.limit, tokens.remaining), (Some(800_000), 799_126));
    assert!((before + 360_000..=after + 360_000).contains(&tokens.reset_at_ms));
    assert_eq!(rate.blocked_until_ms, None);

    let mock = MockLlm::start(vec![
        MockReply::anthropic_text("ok")
            .with_header("anthropic-ratelimit-requests-limit", "50")
            .with_header("anthropic-ratelimit-requests-remaining", "49")
            .with_header("anthropic-ratelimit-requests-reset", "2025-01-22T17:12:01Z")
            .with_header("anthropic-ratelimit-input-tokens-limit", "40000")
            .with_header("anthropic-ratelimit-input-tokens-remaining", "39000")
            .with_header(
                "anthropic-ratelimit-input-tokens-reset",
                "2025-01-22T17:12:02Z",
            )
            .with_header("anthropic-ratelimit-output-tokens-limit", "8000")
            .with_header("anthropic-ratelimit-output-tokens-remaining", "2000")
            .with_header(
                "anthropic-ratelimit-output-tokens-reset",
                "2025-01-22T17:12:45Z",
            ),
    ]);
    let rate = anthropic(&mock)
        .complete(request(&hello(), &[]))
        .await
        .unwrap()
        .rate
        .unwrap();
    assert_eq!(
        rate,
        RateSnapshot {
            requests: Some(RateWindow {
                limit: Some(50),
                remaining: 49,
                reset_at_ms: 1_737_565_921_000,
            }),
            tokens: Some(RateWindow {
                limit: Some(8000),
                remaining: 2000,
                reset_at_ms: 1_737_565_965_000,
            }),
            ..RateSnapshot::default()
        }
    );
}

#[tokio::test]
async fn a_rate_limit_comes_back_at_once_when_the_caller_schedules() {
    let limited = MockReply::json(
        429,
        json!({"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}),
    )
    .with_header("retry-after", "2")
    .with_header("anthropic-ratelimit-requests-limit", "50")
    .with_header("anthropic-ratelimit-requests-remaining", "0")
    .with_header("anthropic-ratelimit-requests-reset", "2025-01-22T17:12:01Z");
    let mock = MockLlm::start(vec![limited, MockReply::anthropic_text("never sent")]);
    let retried = std::sync::atomic::AtomicU32::new(0);
    let count = |_: &teammated::llm::Retrying<'_>| {
        retried.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    };
    let messages = hello();
    let req = CompletionRequest {
        on_retry: Some(&count),
        ..scheduled(&messages)
    };
    let (before, err, after) = timed(anthropic(&mock).complete(req)).await;
    let err = err.unwrap_err();
    assert!(matches!(err, LlmError::Http { status: 429, .. }), "{err:?}");
    let rate = err.rate().unwrap();
    let until = rate.blocked_until_ms.unwrap();
    assert!((before + 2000..=after + 2000).contains(&until), "{rate:?}");
    assert_eq!(rate.blocked_reason.as_deref(), Some("rate_limit_error"));
    assert_eq!(rate.requests.unwrap().remaining, 0);
    assert_eq!(mock.calls(), 1, "no second request");
    assert_eq!(retried.load(std::sync::atomic::Ordering::Relaxed), 0);

    // A usage limit through the Codex backend: blocked until it resets.
    let usage_limit = MockReply::json(
        429,
        json!({"error": {"type": "usage_limit_reached", "message": "The usage limit has been reached",
            "plan_type": "plus", "resets_at": 1_900_000_000, "resets_in_seconds": 18_000}}),
    );
    let mock = MockLlm::start(vec![usage_limit, MockReply::openai_text("never sent")]);
    let err = openai(&mock, Some(OPENAI_KEY))
        .complete(scheduled(&hello()))
        .await
        .unwrap_err();
    let rate = err.rate().unwrap();
    assert_eq!(rate.blocked_until_ms, Some(1_900_000_000_000));
    assert_eq!(rate.blocked_reason.as_deref(), Some("usage_limit_reached"));
    assert_eq!(mock.calls(), 1, "no second request");
}

#[tokio::test]
async fn a_caller_that_schedules_still_gets_overload_and_server_errors_retried() {
    let overloaded = MockReply::json(
        529,
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
    );
    let mock = MockLlm::start(vec![
        overloaded,
        MockReply::status(503),
        MockReply::anthropic_text("ok"),
    ]);
    let c = anthropic(&mock)
        .complete(scheduled(&hello()))
        .await
        .unwrap();
    assert_eq!(c.content, vec![Block::text("ok")]);
    assert_eq!(mock.calls(), 3);
}

#[tokio::test]
async fn retried_rate_limits_that_run_out_keep_the_last_snapshot() {
    let limited = || {
        MockReply::json(
            429,
            json!({"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}}),
        )
        .with_header("retry-after", "0")
    };
    let mock = MockLlm::start(vec![limited(), limited(), limited()]);
    let err = openai(&mock, Some(OPENAI_KEY))
        .complete(request(&hello(), &[]))
        .await
        .unwrap_err();
    assert!(
        matches!(err, LlmError::GaveUp { attempts: 3, .. }),
        "{err:?}"
    );
    let rate = err.rate().unwrap();
    assert_eq!(rate.blocked_reason.as_deref(), Some("rate_limit_exceeded"));
    assert_eq!(mock.calls(), 3);
}

#[tokio::test]
async fn bad_request_is_not_retried() {
    let bad = MockReply::json(
        400,
        json!({"type": "error", "error": {"type": "invalid_request_error", "message": "max_tokens: too big"}}),
    );
    let mock = MockLlm::start(vec![bad, MockReply::anthropic_text("never sent")]);
    let err = anthropic(&mock)
        .complete(request(&hello(), &[]))
        .await
        .unwrap_err();
    match &err {
        LlmError::Http { status, body, .. } => {
            assert_eq!(*status, 400);
            assert!(body.contains("max_tokens: too big"), "{body}");
        }
        other => panic!("expected Http 400, got {other:?}"),
    }
    assert!(err.to_string().contains("HTTP 400"), "{err}");
    assert_eq!(mock.calls(), 1);

    let mock = MockLlm::start(vec![MockReply::status(401), MockReply::openai_text("no")]);
    let err = openai(&mock, Some(OPENAI_KEY))
        .complete(request(&hello(), &[]))
        .await
        .unwrap_err();
    assert!(matches!(err, LlmError::Http { status: 401, .. }), "{err:?}");
    assert_eq!(mock.calls(), 1);
}

#[tokio::test]
async fn exhausted_retries_give_up() {
    // The queue is empty: every request gets the mock's 500 fallback.
    let mock = MockLlm::start(vec![MockReply::status(503)]);
    let err = anthropic(&mock)
        .complete(request(&hello(), &[]))
        .await
        .unwrap_err();
    let LlmError::GaveUp { attempts, last } = &err else {
        panic!("expected GaveUp, got {err:?}");
    };
    assert_eq!(*attempts, 3);
    assert!(
        matches!(**last, LlmError::Http { status: 500, .. }),
        "{last:?}"
    );
    assert!(
        err.to_string().contains("gave up after 3 attempts"),
        "{err}"
    );
    assert!(err.to_string().contains("no scripted reply left"), "{err}");
    assert_eq!(mock.calls(), 3);
    assert_eq!(mock.fallback_calls(), 2);
}

#[tokio::test]
async fn timeouts_are_retried() {
    let mock = MockLlm::start(vec![
        MockReply::openai_text("too late").with_delay(Duration::from_secs(3)),
        MockReply::openai_text("in time"),
    ]);
    let mut cfg = config(
        ProviderKind::Openai,
        Some(format!("{}/v1", mock.url())),
        None,
    );
    cfg.request_timeout = Duration::from_millis(200);
    let c = OpenAi::new(&cfg)
        .unwrap()
        .complete(request(&hello(), &[]))
        .await
        .unwrap();
    assert_eq!(c.content, vec![Block::text("in time")]);
    assert_eq!(mock.calls(), 2);
}

#[tokio::test]
async fn unreachable_server_gives_up_with_a_transport_error() {
    // A port that was just free: nothing listens there.
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let cfg = config(
        ProviderKind::Anthropic,
        Some(format!("http://{addr}")),
        Some(ANTHROPIC_KEY),
    );
    let err = Anthropic::new(&cfg)
        .unwrap()
        .complete(request(&hello(), &[]))
        .await
        .unwrap_err();
    let LlmError::GaveUp { attempts: 3, last } = &err else {
        panic!("expected GaveUp after 3 attempts, got {err:?}");
    };
    assert!(
        matches!(**last, LlmError::Transport { timeout: false, .. }),
        "{last:?}"
    );
}

#[tokio::test]
async fn anthropic_without_key_is_a_missing_key_error() {
    let cfg = config(ProviderKind::Anthropic, None, None);
    let err = Anthropic::new(&cfg).unwrap_err();
    assert!(
        matches!(
            err,
            LlmError::MissingKey {
                provider: "anthropic",
                var: "ANTHROPIC_API_KEY",
                ..
            }
        ),
        "{err:?}"
    );
    let shown = err.to_string();
    assert!(shown.contains("ANTHROPIC_API_KEY"), "{shown}");
    assert!(shown.contains("keys.env"), "{shown}");

    // A blank key is no key.
    let err = Anthropic::new(&config(ProviderKind::Anthropic, None, Some("  "))).unwrap_err();
    assert!(matches!(err, LlmError::MissingKey { .. }), "{err:?}");
}

#[tokio::test]
async fn openai_itself_without_key_is_a_missing_key_error() {
    for base in [None, Some("https://api.openai.com/v1/".to_string())] {
        let err = OpenAi::new(&config(ProviderKind::Openai, base, None)).unwrap_err();
        assert!(
            matches!(
                err,
                LlmError::MissingKey {
                    var: "OPENAI_API_KEY",
                    ..
                }
            ),
            "{err:?}"
        );
        assert!(err.to_string().contains("OPENAI_API_KEY"), "{err}");
    }
}

/// Errors end up in logs, task results and the board's history, so the key must not
/// be in any of them, even when the server echoes it back.
#[tokio::test]
async fn api_keys_never_appear_in_errors() {
    let echo = |status: u16, key: &str| {
        MockReply::json(
            status,
            json!({"error": {"message": format!("Incorrect API key provided: {key}"), "key": key}}),
        )
    };
    let mut errors = Vec::new();

    let mock =
        MockLlm::start_with_fallback(vec![echo(401, ANTHROPIC_KEY)], echo(500, ANTHROPIC_KEY));
    let provider = anthropic(&mock);
    // 401: returned at once.
    errors.push(provider.complete(request(&hello(), &[])).await.unwrap_err());
    // 500s until the attempts run out.
    errors.push(provider.complete(request(&hello(), &[])).await.unwrap_err());
    // 2xx that is not JSON, and 2xx with an error object.
    mock.push(MockReply::raw(200, format!("<html>{ANTHROPIC_KEY}</html>")));
    errors.push(provider.complete(request(&hello(), &[])).await.unwrap_err());
    mock.push(MockReply::json(
        200,
        json!({"type": "error", "error": {"message": ANTHROPIC_KEY}}),
    ));
    errors.push(provider.complete(request(&hello(), &[])).await.unwrap_err());
    assert!(format!("{provider:?}").contains("<redacted>"));
    assert!(!format!("{provider:?}").contains(ANTHROPIC_KEY));

    let mock = MockLlm::start_with_fallback(vec![echo(401, OPENAI_KEY)], echo(502, OPENAI_KEY));
    let provider = openai(&mock, Some(OPENAI_KEY));
    errors.push(provider.complete(request(&hello(), &[])).await.unwrap_err());
    errors.push(provider.complete(request(&hello(), &[])).await.unwrap_err());
    mock.push(MockReply::json(
        200,
        json!({"error": {"message": format!("bad key {OPENAI_KEY}")}}),
    ));
    errors.push(provider.complete(request(&hello(), &[])).await.unwrap_err());
    assert!(!format!("{provider:?}").contains(OPENAI_KEY));

    // Transport errors and bad headers.
    let unreachable = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let cfg = config(
        ProviderKind::Openai,
        Some(format!("http://{unreachable}/v1")),
        Some(OPENAI_KEY),
    );
    errors.push(
        OpenAi::new(&cfg)
            .unwrap()
            .complete(request(&hello(), &[]))
            .await
            .unwrap_err(),
    );
    let bad_key = format!("{ANTHROPIC_KEY}\n");
    let cfg = config(
        ProviderKind::Anthropic,
        Some(mock.url()),
        Some(&format!("x{bad_key}y")),
    );
    errors.push(
        Anthropic::new(&cfg)
            .unwrap()
            .complete(request(&hello(), &[]))
            .await
            .unwrap_err(),
    );

    assert_eq!(errors.len(), 9);
    for err in &errors {
        let shown = format!("{err}\n{err:?}");
        for key in [ANTHROPIC_KEY, OPENAI_KEY] {
            assert!(!shown.contains(key), "key leaked: {shown}");
        }
    }
    // The redaction is visible, so the echo is not silently lost.
    assert!(
        errors[0].to_string().contains("<redacted>"),
        "{}",
        errors[0]
    );
}

/// A 404 says which URL was tried, without what must not be shown: a password in
/// the URL, a key in its query.
#[tokio::test]
async fn http_and_transport_errors_name_the_url_they_tried() {
    let mock = MockLlm::start(vec![MockReply::status(404)]);
    let host = mock.url().trim_start_matches("http://").to_string();
    let cfg = config(
        ProviderKind::Openai,
        Some(format!("http://user:pa55word-secret@{host}/v1")),
        None,
    );
    let err = OpenAi::new(&cfg)
        .unwrap()
        .complete(request(&hello(), &[]))
        .await
        .unwrap_err();
    let shown = err.to_string();
    assert!(
        shown.contains(&format!("HTTP 404 from http://{host}/v1/chat/completions")),
        "{shown}"
    );
    assert!(!shown.contains("pa55word"), "{shown}");

    let unreachable = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let cfg = config(
        ProviderKind::Anthropic,
        Some(format!("http://{unreachable}")),
        Some(ANTHROPIC_KEY),
    );
    let err = Anthropic::new(&cfg)
        .unwrap()
        .complete(request(&hello(), &[]))
        .await
        .unwrap_err();
    let shown = err.to_string();
    assert!(
        shown.contains(&format!("http://{unreachable}/v1/messages")),
        "{shown}"
    );
}
