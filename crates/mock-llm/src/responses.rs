//! The OpenAI Responses API (`POST /v1/responses`), streamed, as Codex reads it.
//!
//! Codex always sends `"stream": true` and reads Server-Sent Events, each
//! `event: TYPE\ndata: JSON\n\n` whose data carries its `type` and a
//! `sequence_number` counted from 0:
//!
//! 1. `response.created`: the response with `status: in_progress`, no output;
//! 2. per output item: `response.output_item.added` (a message with no content,
//!    or a function call with empty `arguments`), then for a message one or
//!    more `response.output_text.delta` and, for a function call,
//!    `response.function_call_arguments.delta`, then
//!    `response.output_item.done` with the whole item;
//! 3. `response.completed`: the whole response with its `usage`.
//!
//! A reply is scripted whole ([`MockReply::responses_text`],
//! [`MockReply::responses_function_call`], [`MockReply::responses_output`]) and
//! turned into those events here, so that a test reads as what the model said.
//!
//! Decisions and traps:
//! - Codex offers the tools of an MCP server as one `namespace` tool
//!   (`mcp__teamboard` for the board's) and refuses a call to one of them
//!   without the item's `namespace` field ("unsupported call").
//! - Text is split into a few deltas on purpose: a client that keeps only the
//!   last one fails here as it would against the real API.
//! - `input_tokens` counts the whole prompt, cached tokens included
//!   (`input_tokens_details.cached_tokens` is the cached part), as OpenAI
//!   reports it.
//! - A delayed reply ([`MockReply::with_delay`]) sends its `response.created`
//!   event first and pauses after it, as a slow model does: Codex folds steered
//!   input into the turn only once the stream is open, not while it waits for
//!   the answer's head.
//! - Codex drops the connection when a turn is steered or interrupted: the
//!   server's writes then fail, which ends that connection only.
//!
//! The helpers at the end read a request the way a test's responder wants to
//! ([`last_user_text`], [`last_item`], [`function_call_output`]).

use crate::stream::{Event, to_sse};
use crate::{MockReply, TEXT_USAGE, TOOL_USAGE};
use serde_json::{Value, json};

/// The namespace Codex gives the tools of the board's MCP server `teamboard`.
pub const TEAMBOARD_NAMESPACE: &str = "mcp__teamboard";

impl MockReply {
    /// A streamed Responses API answer with one assistant message.
    pub fn responses_text(text: &str) -> MockReply {
        MockReply::responses_output(
            json!([{
                "type": "message",
                "id": "msg_mock",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }]),
            TEXT_USAGE,
        )
    }

    /// A streamed Responses API answer calling one function. `arguments_json`
    /// is sent as the string it is, as the API does; `namespace` names the
    /// tool's namespace (Codex's `mcp__SERVER` for an MCP server's tools).
    pub fn responses_function_call(
        call_id: &str,
        name: &str,
        arguments_json: &str,
        namespace: Option<&str>,
    ) -> MockReply {
        let mut item = json!({
            "type": "function_call",
            "id": format!("fc_{call_id}"),
            "call_id": call_id,
            "name": name,
            "arguments": arguments_json,
            "status": "completed",
        });
        if let Some(ns) = namespace {
            item["namespace"] = json!(ns);
        }
        MockReply::responses_output(json!([item]), TOOL_USAGE)
    }

    /// A streamed Responses API answer with these output items, reporting
    /// `usage` (input, output) tokens.
    pub fn responses_output(output: Value, usage: (u64, u64)) -> MockReply {
        let response = response(output, usage);
        MockReply {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            body: to_sse(&events(&response)),
            delay: None,
            fixed_usage: false,
        }
    }
}

/// How many body bytes of `reply` open its stream (its first event), when it
/// is a Responses API event stream.
pub fn opening(reply: &MockReply) -> Option<usize> {
    if !reply.body.starts_with("event: response.created\n") {
        return None;
    }
    reply.body.find("\n\n").map(|end| end + 2)
}

/// A whole, completed response around `output`.
pub fn response(output: Value, usage: (u64, u64)) -> Value {
    json!({
        "id": "resp_mock",
        "object": "response",
        "created_at": 1_700_000_000,
        "status": "completed",
        "model": "gpt-5-codex",
        "output": output,
        "usage": {
            "input_tokens": usage.0,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": usage.1,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": usage.0 + usage.1,
        },
    })
}

/// The events the real API streams for `response` (a whole, completed one).
pub fn events(response: &Value) -> Vec<Event> {
    let mut out = Vec::new();
    let mut created = response.clone();
    created["status"] = json!("in_progress");
    created["output"] = json!([]);
    if let Some(fields) = created.as_object_mut() {
        fields.remove("usage");
    }
    out.push(("response.created".into(), json!({"response": created})));
    let empty = Vec::new();
    let items = response["output"].as_array().unwrap_or(&empty);
    for (index, item) in items.iter().enumerate() {
        item_events(index, item, &mut out);
    }
    out.push(("response.completed".into(), json!({"response": response})));
    for (seq, (name, data)) in out.iter_mut().enumerate() {
        data["type"] = json!(name);
        data["sequence_number"] = json!(seq);
    }
    out
}

/// The added / delta / done events of output item `index`.
fn item_events(index: usize, item: &Value, out: &mut Vec<Event>) {
    let id = item["id"].clone();
    let mut added = item.clone();
    let mut deltas = Vec::new();
    match item["type"].as_str() {
        Some("message") => {
            added["content"] = json!([]);
            added["status"] = json!("in_progress");
            let text: String = item["content"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|part| part["text"].as_str())
                .collect();
            for piece in pieces(&text) {
                deltas.push((
                    "response.output_text.delta".to_string(),
                    json!({"output_index": index, "content_index": 0, "item_id": id, "delta": piece}),
                ));
            }
        }
        Some("function_call") => {
            added["arguments"] = json!("");
            added["status"] = json!("in_progress");
            let arguments = item["arguments"].as_str().unwrap_or_default();
            for piece in pieces(arguments) {
                deltas.push((
                    "response.function_call_arguments.delta".to_string(),
                    json!({"output_index": index, "item_id": id, "delta": piece}),
                ));
            }
        }
        _ => {}
    }
    out.push((
        "response.output_item.added".into(),
        json!({"output_index": index, "item": added}),
    ));
    out.extend(deltas);
    out.push((
        "response.output_item.done".into(),
        json!({"output_index": index, "item": item}),
    ));
}

/// `text` in up to three pieces cut at character boundaries; nothing for an
/// empty text.
fn pieces(text: &str) -> Vec<String> {
    crate::stream::pieces(text)
        .into_iter()
        .filter(|p| !p.is_empty())
        .collect()
}

/// The usage in `response.completed`; `Null` when there is none.
pub fn usage(events: &[Event]) -> Value {
    events
        .iter()
        .find(|(name, _)| name == "response.completed")
        .map(|(_, data)| data["response"]["usage"].clone())
        .unwrap_or(Value::Null)
}

/// The last input item of a Responses request.
pub fn last_item(body: &Value) -> Option<&Value> {
    body["input"].as_array()?.last()
}

/// The text of the last `user` message of a Responses request (its text parts
/// joined by newlines).
pub fn last_user_text(body: &Value) -> Option<String> {
    body["input"]
        .as_array()?
        .iter()
        .rev()
        .find(|item| item["role"] == "user")
        .map(text_of)
}

/// The texts of every `user` message of a Responses request, in order.
pub fn user_texts(body: &Value) -> Vec<String> {
    body["input"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|item| item["role"] == "user")
        .map(text_of)
        .collect()
}

/// `(call_id, output)` when the request's last input item is a function's
/// result: the model is to go on from a tool call.
pub fn function_call_output(body: &Value) -> Option<(String, String)> {
    let last = last_item(body)?;
    if last["type"] != "function_call_output" {
        return None;
    }
    let output = match &last["output"] {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    Some((
        last["call_id"].as_str().unwrap_or_default().to_string(),
        output,
    ))
}

fn text_of(item: &Value) -> String {
    crate::messages::content_text(&item["content"], |_| true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_join_back_and_an_empty_text_has_none() {
        for text in ["a", "héllo wörld ✓", "{\"cmd\":\"ls\"}"] {
            assert_eq!(pieces(text).concat(), text);
            assert!(pieces(text).len() <= 3);
        }
        assert!(pieces("").is_empty());
    }

    #[test]
    fn a_request_is_read_as_a_responder_wants() {
        let body = json!({"input": [
            {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "dev"}]},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "first"}]},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "second"}]},
            {"type": "function_call", "call_id": "c1", "name": "exec_command", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": "done"},
        ]});
        assert_eq!(last_user_text(&body).as_deref(), Some("second"));
        assert_eq!(user_texts(&body), ["first", "second"]);
        assert_eq!(
            function_call_output(&body),
            Some(("c1".to_string(), "done".to_string()))
        );
        assert_eq!(last_user_text(&json!({})), None);
        assert_eq!(function_call_output(&json!({"input": []})), None);
    }
}
