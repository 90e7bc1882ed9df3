//! The Gemini API (`generativelanguage`, `v1beta`), as Gemini CLI calls it.
//!
//! - `POST /v1beta/models/{model}:generateContent`: one JSON
//!   `GenerateContentResponse` (`candidates`, `usageMetadata`, `modelVersion`).
//! - `POST /v1beta/models/{model}:streamGenerateContent?alt=sse`: the same answer
//!   as Server-Sent Events, `data: JSON` chunks with no `event:` names, each a
//!   partial `GenerateContentResponse`. A scripted JSON answer is streamed on its
//!   own when the path asks for a stream ([`to_stream`]), so one script serves
//!   both kinds of call.
//! - `POST /v1beta/models/{model}:countTokens`: `{"totalTokens": N}`, answered
//!   apart from the script (it is no model call) with an estimate of the
//!   request's size ([`count_tokens`]).
//!
//! Decisions and traps:
//! - Text is split over a few chunks and only the last chunk carries
//!   `finishReason` and `usageMetadata`, as the real API streams: a client that
//!   keeps only the last chunk's text, or reads usage from the first, fails here
//!   as it would against the real API.
//! - A `functionCall` part goes whole into one chunk (the API never splits one).
//! - Usage is `usageMetadata`, not `usage`: `promptTokenCount`,
//!   `candidatesTokenCount`, `totalTokenCount`, and `cachedContentTokenCount`
//!   when the prompt cache is simulated.

use crate::MockReply;
use crate::stream::pieces;
use serde_json::{Value, json};

/// Usage numbers the Gemini text replies report: (prompt, candidates).
pub const GEMINI_TEXT_USAGE: (u64, u64) = (1200, 15);
/// Usage numbers the Gemini function-call replies report: (prompt, candidates).
pub const GEMINI_CALL_USAGE: (u64, u64) = (1400, 30);
/// The model the answers name.
pub const GEMINI_MODEL: &str = "gemini-2.5-flash";

/// Whether `path` is a Gemini API call (`/v1beta/models/M:method`).
pub fn is_gemini(path: &str) -> bool {
    method(path).is_some()
}

/// Whether `path` asks for a streamed answer (`:streamGenerateContent`).
pub fn is_stream(path: &str) -> bool {
    method(path) == Some("streamGenerateContent")
}

/// Whether `path` asks to count tokens (`:countTokens`).
pub fn is_count_tokens(path: &str) -> bool {
    method(path) == Some("countTokens")
}

/// The method after the model's name: `generateContent`,
/// `streamGenerateContent`, `countTokens`, ...
fn method(path: &str) -> Option<&str> {
    let path = path.split('?').next().unwrap_or_default();
    let (model, method) = path.rsplit_once(':')?;
    model.contains("/models/").then_some(method)
}

/// A whole `GenerateContentResponse` with one candidate of `parts`.
pub fn gemini_response(parts: Value, finish_reason: &str, usage: (u64, u64)) -> Value {
    json!({
        "candidates": [{
            "content": {"role": "model", "parts": parts},
            "finishReason": finish_reason,
            "index": 0,
        }],
        "usageMetadata": {
            "promptTokenCount": usage.0,
            "candidatesTokenCount": usage.1,
            "totalTokenCount": usage.0 + usage.1,
        },
        "modelVersion": GEMINI_MODEL,
        "responseId": "mock-gemini-response",
    })
}

impl MockReply {
    /// A Gemini answer with text, `finishReason: STOP`.
    pub fn gemini_text(text: &str) -> MockReply {
        MockReply::json(
            200,
            gemini_response(json!([{"text": text}]), "STOP", GEMINI_TEXT_USAGE),
        )
    }

    /// A Gemini answer calling one function with `args` (an object).
    pub fn gemini_function_call(name: &str, args: Value) -> MockReply {
        MockReply::json(
            200,
            gemini_response(
                json!([{"functionCall": {"name": name, "args": args}}]),
                "STOP",
                GEMINI_CALL_USAGE,
            ),
        )
    }

    /// A Gemini error in the API's shape (`{"error": {code, message, status}}`).
    pub fn gemini_error(status: u16, message: &str) -> MockReply {
        let name = match status {
            400 => "INVALID_ARGUMENT",
            403 => "PERMISSION_DENIED",
            404 => "NOT_FOUND",
            429 => "RESOURCE_EXHAUSTED",
            503 => "UNAVAILABLE",
            _ => "INTERNAL",
        };
        MockReply::json(
            status,
            json!({"error": {"code": status, "message": message, "status": name}}),
        )
    }
}

/// `reply` as the event stream of `:streamGenerateContent`, when it is a
/// successful JSON `GenerateContentResponse` (it has `candidates`); any other
/// reply (an error, a raw body, a stream already) is returned as it is.
pub fn to_stream(mut reply: MockReply) -> MockReply {
    if reply.status != 200 || !reply.has_content_type("application/json") {
        return reply;
    }
    let Ok(answer) = serde_json::from_str::<Value>(&reply.body) else {
        return reply;
    };
    if !answer["candidates"].is_array() {
        return reply;
    }
    reply.body = chunks(&answer)
        .iter()
        .map(|c| format!("data: {c}\n\n"))
        .collect();
    reply.with_event_stream()
}

/// The chunks the real API streams for `answer`: the first candidate's parts,
/// text cut into pieces, then `finishReason` and `usageMetadata` on the last.
pub fn chunks(answer: &Value) -> Vec<Value> {
    let candidate = &answer["candidates"][0];
    let role = candidate["content"]["role"].as_str().unwrap_or("model");
    let mut parts: Vec<Value> = Vec::new();
    for part in candidate["content"]["parts"]
        .as_array()
        .into_iter()
        .flatten()
    {
        match part["text"].as_str() {
            Some(text) if part.as_object().is_some_and(|o| o.len() == 1) => {
                parts.extend(pieces(text).into_iter().map(|t| json!({"text": t})));
            }
            _ => parts.push(part.clone()),
        }
    }
    if parts.is_empty() {
        parts.push(json!({"text": ""}));
    }
    let last = parts.len() - 1;
    parts
        .into_iter()
        .enumerate()
        .map(|(i, part)| {
            let mut c = json!({
                "candidates": [{"content": {"role": role, "parts": [part]}, "index": 0}],
                "modelVersion": answer["modelVersion"],
                "responseId": answer["responseId"],
            });
            if i == last {
                c["candidates"][0]["finishReason"] = candidate["finishReason"].clone();
                if !answer["usageMetadata"].is_null() {
                    c["usageMetadata"] = answer["usageMetadata"].clone();
                }
            }
            c
        })
        .collect()
}

/// The `data:` chunks of a streamed body; `None` when one is not JSON.
pub fn parse_stream(body: &str) -> Option<Vec<Value>> {
    body.split("\n\n")
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .map(|chunk| {
            let data: String = chunk
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(str::trim)
                .collect();
            serde_json::from_str(&data).ok()
        })
        .collect()
}

/// The usage a streamed body reports in the end: the last `usageMetadata`.
pub fn stream_usage(body: &str) -> Option<Value> {
    parse_stream(body)?
        .into_iter()
        .rev()
        .map(|c| c["usageMetadata"].clone())
        .find(Value::is_object)
}

/// The answer to `:countTokens`: the request's estimated tokens (a quarter of
/// the bytes of its `contents`, or of a `generateContentRequest`'s).
pub fn count_tokens(body: &Value) -> MockReply {
    let contents = if body["contents"].is_null() {
        &body["generateContentRequest"]["contents"]
    } else {
        &body["contents"]
    };
    let total = contents.to_string().len().div_ceil(4);
    MockReply::json(200, json!({"totalTokens": total}))
}

/// The model list (`GET /v1beta/models`) in Gemini's format.
pub fn models() -> MockReply {
    MockReply::json(
        200,
        json!({"models": [{
            "name": format!("models/{GEMINI_MODEL}"),
            "displayName": "Gemini 2.5 Flash",
            "supportedGenerationMethods": ["generateContent", "countTokens"],
        }]}),
    )
}

/// The text of the request's last user content that has text (its `text`
/// parts joined; a tool's result has none), empty when there is none: what a
/// responder usually scripts on.
pub fn last_user_text(body: &Value) -> String {
    let has_text = |c: &&Value| {
        c["parts"]
            .as_array()
            .is_some_and(|p| p.iter().any(|p| p["text"].is_string()))
    };
    body["contents"]
        .as_array()
        .into_iter()
        .flatten()
        .rev()
        .filter(|c| c["role"] == "user")
        .find(has_text)
        .map(|c| crate::messages::content_text(&c["parts"], |_| true))
        .unwrap_or_default()
}

/// The `functionResponse`s in the request's last content, by function name:
/// a responder answers a tool's result with these.
pub fn function_responses(body: &Value) -> Vec<(String, Value)> {
    body["contents"]
        .as_array()
        .and_then(|c| c.last())
        .and_then(|c| c["parts"].as_array())
        .into_iter()
        .flatten()
        .filter_map(|p| {
            let r = p.get("functionResponse")?;
            Some((r["name"].as_str()?.to_string(), r["response"].clone()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_told_apart() {
        let stream = "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse";
        assert!(is_gemini(stream) && is_stream(stream));
        let once = "/v1beta/models/gemini-2.5-flash:generateContent";
        assert!(is_gemini(once) && !is_stream(once));
        assert!(is_count_tokens("/v1beta/models/m:countTokens"));
        assert!(!is_gemini("/v1/messages"));
        assert!(!is_gemini("/v1/chat/completions"));
        assert!(!is_gemini("/v1beta/models"));
    }

    #[test]
    fn a_stream_puts_finish_and_usage_on_the_last_chunk_only() {
        let answer = gemini_response(json!([{"text": "hello there"}]), "STOP", (7, 3));
        let chunks = chunks(&answer);
        assert!(chunks.len() > 1);
        let text: String = chunks
            .iter()
            .filter_map(|c| c["candidates"][0]["content"]["parts"][0]["text"].as_str())
            .collect();
        assert_eq!(text, "hello there");
        for c in &chunks[..chunks.len() - 1] {
            assert!(c["candidates"][0]["finishReason"].is_null());
            assert!(c["usageMetadata"].is_null());
        }
        let last = chunks.last().expect("a chunk");
        assert_eq!(last["candidates"][0]["finishReason"], "STOP");
        assert_eq!(last["usageMetadata"]["totalTokenCount"], 10);
    }

    #[test]
    fn a_function_call_stays_whole_and_the_stream_parses_back() {
        let reply = to_stream(MockReply::gemini_function_call(
            "run_shell_command",
            json!({"command": "echo hi"}),
        ));
        assert!(reply.has_content_type("text/event-stream"));
        let chunks = parse_stream(&reply.body).expect("parses");
        assert_eq!(chunks.len(), 1);
        assert_eq!(
            chunks[0]["candidates"][0]["content"]["parts"][0]["functionCall"]["args"]["command"],
            "echo hi"
        );
        assert_eq!(
            stream_usage(&reply.body).map(|u| u["promptTokenCount"].clone()),
            Some(json!(GEMINI_CALL_USAGE.0))
        );
        // An error stays JSON.
        let err = to_stream(MockReply::gemini_error(429, "slow down"));
        assert_eq!(err.status, 429);
        assert!(err.has_content_type("application/json"));
    }

    #[test]
    fn scripting_helpers_read_the_request() {
        let body = json!({"contents": [
            {"role": "user", "parts": [{"text": "first"}]},
            {"role": "model", "parts": [{"functionCall": {"name": "f", "args": {}}}]},
            {"role": "user", "parts": [{"functionResponse": {"name": "f", "response": {"output": "ok"}}}]},
        ]});
        assert_eq!(last_user_text(&body), "first");
        assert_eq!(
            function_responses(&body),
            vec![("f".to_string(), json!({"output": "ok"}))]
        );
        let asked =
            json!({"contents": [{"role": "user", "parts": [{"text": "a"}, {"text": "b"}]}]});
        assert_eq!(last_user_text(&asked), "a\nb");
        assert!(function_responses(&asked).is_empty());
    }
}
