//! Anthropic Messages API answers as Server-Sent Events, the form a client that
//! sends `"stream": true` (Claude Code always does) reads.
//!
//! A whole message (as [`crate::anthropic_message`] builds it) is turned into the
//! event sequence of the real API: `message_start` (the message with no content,
//! `stop_reason: null`, and its usage with `output_tokens` at 1, as the API
//! reports it before generating), a `ping`, then per content block
//! `content_block_start` / `content_block_delta`... / `content_block_stop`, then
//! `message_delta` (`stop_reason`, `stop_sequence`, `usage.output_tokens`) and
//! `message_stop`. Each event goes out as `event: NAME\ndata: JSON\n\n`.
//!
//! Decisions and traps:
//! - Text and tool input are split into a few deltas on purpose: a client that
//!   keeps only the last delta, or parses `partial_json` before the block stops,
//!   fails here as it would against the real API.
//! - A `tool_use` block starts with `input: {}` and its input comes only as
//!   `input_json_delta` pieces; clients must not take the start's `input`.
//! - The body is written whole, with a `content-length`, on the kept-alive
//!   connection: the real CLI reads that as a stream, so the mock's writer needs
//!   no chunked encoding.
//! - The final usage of a streamed answer is the `message_start` usage with the
//!   `message_delta` usage laid over it ([`usage`]); summing the two double counts.

use serde_json::{Value, json};

/// One event: its name and its `data` JSON.
pub type Event = (String, Value);

/// The events the real API streams for `message` (a whole Messages API answer).
pub fn anthropic_events(message: &Value) -> Vec<Event> {
    let mut start = message.clone();
    start["content"] = json!([]);
    start["stop_reason"] = Value::Null;
    start["stop_sequence"] = Value::Null;
    let output_tokens = message["usage"]["output_tokens"].as_u64().unwrap_or(0);
    if start["usage"].is_object() {
        start["usage"]["output_tokens"] = json!(output_tokens.min(1));
    }
    let mut events = vec![
        event("message_start", json!({"message": start})),
        event("ping", json!({})),
    ];
    let empty = Vec::new();
    let blocks = message["content"].as_array().unwrap_or(&empty);
    for (index, block) in blocks.iter().enumerate() {
        block_events(index, block, &mut events);
    }
    events.push(event(
        "message_delta",
        json!({
            "delta": {
                "stop_reason": message["stop_reason"],
                "stop_sequence": message["stop_sequence"],
            },
            "usage": {"output_tokens": output_tokens},
        }),
    ));
    events.push(event("message_stop", json!({})));
    events
}

/// The start, deltas and stop of content block `index`.
fn block_events(index: usize, block: &Value, events: &mut Vec<Event>) {
    let kind = block["type"].as_str().unwrap_or_default();
    let (start, deltas): (Value, Vec<Value>) = match kind {
        "text" => (
            json!({"type": "text", "text": ""}),
            pieces(block["text"].as_str().unwrap_or_default())
                .into_iter()
                .map(|text| json!({"type": "text_delta", "text": text}))
                .collect(),
        ),
        "tool_use" => {
            let mut start = block.clone();
            start["input"] = json!({});
            let input = if block["input"].is_null() {
                "{}".to_string()
            } else {
                block["input"].to_string()
            };
            let deltas = pieces(&input)
                .into_iter()
                .map(|part| json!({"type": "input_json_delta", "partial_json": part}))
                .collect();
            (start, deltas)
        }
        "thinking" => {
            let mut deltas: Vec<Value> = pieces(block["thinking"].as_str().unwrap_or_default())
                .into_iter()
                .map(|text| json!({"type": "thinking_delta", "thinking": text}))
                .collect();
            if let Some(signature) = block["signature"].as_str() {
                deltas.push(json!({"type": "signature_delta", "signature": signature}));
            }
            (
                json!({"type": "thinking", "thinking": "", "signature": ""}),
                deltas,
            )
        }
        // Blocks with nothing to stream (redacted thinking, server tool results)
        // arrive whole in their start event.
        _ => (block.clone(), Vec::new()),
    };
    events.push(event(
        "content_block_start",
        json!({"index": index, "content_block": start}),
    ));
    for delta in deltas {
        events.push(event(
            "content_block_delta",
            json!({"index": index, "delta": delta}),
        ));
    }
    events.push(event("content_block_stop", json!({"index": index})));
}

/// `text` cut into up to three pieces at character boundaries; an empty text
/// is one empty piece, as the Messages API and Gemini send it.
pub(crate) fn pieces(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    if chars.is_empty() {
        return vec![String::new()];
    }
    let size = chars.len().div_ceil(3).max(1);
    chars.chunks(size).map(|c| c.iter().collect()).collect()
}

/// `name` with `data`, whose `type` is the event's name as the API sends it.
fn event(name: &str, mut data: Value) -> Event {
    data["type"] = json!(name);
    (name.to_string(), data)
}

/// The events as an SSE body.
pub fn to_sse(events: &[Event]) -> String {
    events
        .iter()
        .map(|(name, data)| format!("event: {name}\ndata: {data}\n\n"))
        .collect()
}

/// The events of an SSE body; `None` when an event lacks a name or its data is
/// not JSON (a hand-written body the mock must then leave alone).
pub fn parse_sse(body: &str) -> Option<Vec<Event>> {
    let mut events = Vec::new();
    for chunk in body.split("\n\n").filter(|c| !c.trim().is_empty()) {
        let mut name = None;
        let mut data = String::new();
        for line in chunk.lines() {
            if let Some(v) = line.strip_prefix("event:") {
                name = Some(v.trim().to_string());
            } else if let Some(v) = line.strip_prefix("data:") {
                data.push_str(v.strip_prefix(' ').unwrap_or(v));
            }
        }
        events.push((name?, serde_json::from_str(&data).ok()?));
    }
    Some(events)
}

/// The usage the streamed answer reports in the end: `message_start`'s, with
/// `message_delta`'s fields laid over it. `Null` when there is no usage.
pub fn usage(events: &[Event]) -> Value {
    let mut usage = Value::Null;
    for (name, data) in events {
        let part = match name.as_str() {
            "message_start" => &data["message"]["usage"],
            "message_delta" => &data["usage"],
            _ => continue,
        };
        let Some(fields) = part.as_object() else {
            continue;
        };
        if !usage.is_object() {
            usage = json!({});
        }
        for (k, v) in fields {
            usage[k] = v.clone();
        }
    }
    usage
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_split_at_char_boundaries_and_join_back() {
        for text in ["", "a", "ab", "héllo wörld ✓", "{\"command\":\"ls\"}"] {
            let parts = pieces(text);
            assert!(parts.len() <= 3);
            assert_eq!(parts.concat(), text);
        }
        assert_eq!(pieces("abcdef").len(), 3);
    }

    #[test]
    fn parse_sse_reads_back_what_to_sse_writes() {
        let message = crate::anthropic_message(
            json!([{"type": "text", "text": "hi there"}]),
            "end_turn",
            (5, 7),
        );
        let events = anthropic_events(&message);
        assert_eq!(parse_sse(&to_sse(&events)), Some(events));
        assert_eq!(parse_sse("data: {}\n\n"), None, "an event needs a name");
        assert_eq!(parse_sse("event: x\ndata: {oops\n\n"), None);
    }

    #[test]
    fn a_thinking_block_streams_its_text_then_its_signature() {
        let message = crate::anthropic_message(
            json!([{"type": "thinking", "thinking": "let me see", "signature": "sig"}]),
            "end_turn",
            (5, 7),
        );
        let deltas: Vec<Value> = anthropic_events(&message)
            .into_iter()
            .filter(|(name, _)| name == "content_block_delta")
            .map(|(_, data)| data["delta"].clone())
            .collect();
        let thinking: String = deltas
            .iter()
            .filter_map(|d| d["thinking"].as_str())
            .collect();
        assert_eq!(thinking, "let me see");
        assert_eq!(
            deltas.last().map(|d| d["type"].clone()),
            Some(json!("signature_delta"))
        );
        assert_eq!(
            deltas.last().map(|d| d["signature"].clone()),
            Some(json!("sig"))
        );
    }

    #[test]
    fn usage_lays_the_delta_over_the_start() {
        let message = crate::anthropic_message(json!([]), "end_turn", (5, 7));
        let usage = usage(&anthropic_events(&message));
        assert_eq!(usage["input_tokens"], 5);
        assert_eq!(usage["output_tokens"], 7);
        assert_eq!(usage["cache_read_input_tokens"], 0);
        assert_eq!(super::usage(&[]), Value::Null);
    }
}
