//! Reading a Messages API request (`POST /v1/messages`) the way a responder
//! wants to, as Claude Code sends it (survey §10 in
//! `docs/design/runtime-claude.md`): `messages` holds `role:"system"` entries
//! too, so the last message is not the last user message; the user's text
//! comes after `<system-reminder>` blocks; a tool's result is a `tool_result`
//! block in the last user message.

use serde_json::Value;

/// The last `role:"user"` message of a Messages API request body.
pub fn last_user(body: &Value) -> &Value {
    body["messages"]
        .as_array()
        .and_then(|m| m.iter().rev().find(|m| m["role"] == "user"))
        .unwrap_or(&Value::Null)
}

/// The text of a message: its string content, or its text blocks joined.
pub fn text_of(message: &Value) -> String {
    content_text(&message["content"], |b| b["type"] == "text")
}

/// A `content` as text: a string as it is, or the `text` of each part of a list
/// that `keep` lets through, joined by newlines; empty otherwise.
pub(crate) fn content_text(content: &Value, keep: impl Fn(&Value) -> bool) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter(|p| keep(p))
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The `tool_result` blocks of a message: (tool_use_id, its text, is_error).
pub fn tool_results(message: &Value) -> Vec<(String, String, bool)> {
    let Some(blocks) = message["content"].as_array() else {
        return Vec::new();
    };
    blocks
        .iter()
        .filter(|b| b["type"] == "tool_result")
        .map(|b| {
            let text = match &b["content"] {
                c @ (Value::String(_) | Value::Array(_)) => content_text(c, |_| true),
                other => other.to_string(),
            };
            (
                b["tool_use_id"].as_str().unwrap_or_default().to_string(),
                text,
                b["is_error"] == true,
            )
        })
        .collect()
}

/// The result of the tool call `id` in the last user message, if it is there.
pub fn result_of<'a>(results: &'a [(String, String, bool)], id: &str) -> Option<&'a str> {
    results
        .iter()
        .find(|(i, _, _)| i == id)
        .map(|(_, t, _)| t.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_last_user_message_its_text_and_its_tool_results_are_found() {
        let body = json!({"messages": [
            {"role": "user", "content": "first"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "out"}]},
                {"type": "text", "text": "<system-reminder>x</system-reminder>"},
                {"type": "text", "text": "and a message"},
            ]},
            {"role": "system", "content": []},
        ]});
        let last = last_user(&body);
        assert_eq!(
            text_of(last),
            "<system-reminder>x</system-reminder>\nand a message"
        );
        let results = tool_results(last);
        assert_eq!(results, [("t1".to_string(), "out".to_string(), false)]);
        assert_eq!(result_of(&results, "t1"), Some("out"));
        assert_eq!(result_of(&results, "t2"), None);
        assert_eq!(text_of(&body["messages"][0]), "first");
        assert!(last_user(&json!({})).is_null());
    }
}
