//! A reply that reports the usage a test chose, whatever the prompt: a
//! budget test needs each call to cost a known figure (10,000 tokens, say),
//! where the scripted replies' own usage is tiny and the simulated prompt
//! cache's follows the request.
//!
//! The figure is written into the reply's own format, found by the fields its
//! usage object has (`input_tokens`/`output_tokens` for the Messages and
//! Responses APIs, `prompt_tokens`/`completion_tokens` for Chat Completions,
//! `promptTokenCount`/`candidatesTokenCount` for Gemini), nothing cached; a
//! field the reply lacks is not added. A streamed Messages answer reports it as
//! the real one does: the prompt and at most 1 output token in
//! `message_start`, the output in `message_delta`. The prompt cache
//! ([`crate::MockLlm::simulate_prompt_cache`]) leaves such a reply alone: the
//! test fixed that figure on purpose.

use crate::MockReply;
use crate::stream;
use serde_json::{Value, json};

impl MockReply {
    /// This reply reporting `input` prompt tokens and `output` output tokens.
    pub fn with_usage(mut self, input: u64, output: u64) -> MockReply {
        self.fixed_usage = true;
        if self.has_content_type("text/event-stream") {
            let Some(mut events) = stream::parse_sse(&self.body) else {
                return self;
            };
            for (name, data) in &mut events {
                let (usage, output) = match name.as_str() {
                    "message_start" => (data.pointer_mut("/message/usage"), output.min(1)),
                    "message_delta" => (data.pointer_mut("/usage"), output),
                    "response.completed" => (data.pointer_mut("/response/usage"), output),
                    _ => continue,
                };
                set(usage, input, output);
            }
            self.body = stream::to_sse(&events);
        } else if let Ok(mut answer) = serde_json::from_str::<Value>(&self.body) {
            set(answer.pointer_mut("/usage"), input, output);
            set(answer.pointer_mut("/usageMetadata"), input, output);
            self.body = answer.to_string();
        }
        self
    }
}

/// Writes `input` and `output` into the fields `usage` has, and nothing cached.
fn set(usage: Option<&mut Value>, input: u64, output: u64) {
    let Some(fields) = usage.and_then(Value::as_object_mut) else {
        return;
    };
    let total = input + output;
    for (key, value) in [
        ("input_tokens", input),
        ("prompt_tokens", input),
        ("promptTokenCount", input),
        ("output_tokens", output),
        ("completion_tokens", output),
        ("candidatesTokenCount", output),
        ("total_tokens", total),
        ("totalTokenCount", total),
        ("cache_read_input_tokens", 0),
        ("cache_creation_input_tokens", 0),
        ("cachedContentTokenCount", 0),
    ] {
        if let Some(field) = fields.get_mut(key) {
            *field = json!(value);
        }
    }
    for details in ["prompt_tokens_details", "input_tokens_details"] {
        if let Some(cached) = fields
            .get_mut(details)
            .and_then(|d| d.get_mut("cached_tokens"))
        {
            *cached = json!(0);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::MockReply;
    use serde_json::{Value, json};

    fn usage(reply: &MockReply) -> Value {
        crate::answered_usage(reply)
    }

    #[test]
    fn each_format_reports_the_chosen_usage() {
        let tool = json!({"command": "true"});
        let anthropic = MockReply::anthropic_tool_use("t", "bash", tool.clone());
        let u = usage(&anthropic.clone().with_usage(6000, 4000));
        assert_eq!(
            (u["input_tokens"].clone(), u["output_tokens"].clone()),
            (json!(6000), json!(4000))
        );
        assert_eq!(u["cache_read_input_tokens"], 0);
        // Fixed before it is streamed, or after: the same figures.
        for streamed in [
            anthropic.clone().with_usage(6000, 4000).streamed(),
            anthropic.streamed().with_usage(6000, 4000),
        ] {
            let events = crate::stream::parse_sse(&streamed.body).unwrap();
            assert_eq!(events[0].1["message"]["usage"]["output_tokens"], 1);
            let u = usage(&streamed);
            assert_eq!(
                (u["input_tokens"].clone(), u["output_tokens"].clone()),
                (json!(6000), json!(4000))
            );
        }
        let u = usage(&MockReply::openai_tool_call("c", "bash", "{}").with_usage(6000, 4000));
        assert_eq!(
            u,
            json!({"prompt_tokens": 6000, "completion_tokens": 4000, "total_tokens": 10000})
        );
        let u = usage(&MockReply::responses_text("hi").with_usage(6000, 4000));
        assert_eq!(u["total_tokens"], 10000);
        assert_eq!(u["input_tokens_details"]["cached_tokens"], 0);
        let u = usage(&MockReply::gemini_text("hi").with_usage(6000, 4000));
        assert_eq!(u["totalTokenCount"], 10000);
        // A reply without usage gets none.
        let error = MockReply::status(500).with_usage(1, 2);
        assert_eq!(usage(&error), Value::Null);
        assert!(!error.body.contains("usage"));
    }
}
