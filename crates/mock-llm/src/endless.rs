//! A turn that never ends: a responder that answers every model call with one
//! more tool call, so that a client's model loop calls again and again until
//! something outside the model stops it (a budget, a limit, a cancel). That is
//! what a runaway agent looks like to whoever pays for it. The calls are
//! counted by the mock's recorded requests.

use crate::cache::Api;
use crate::{MockReply, RecordedRequest};
use serde_json::Value;
use std::sync::atomic::{AtomicU64, Ordering};

/// A responder ([`crate::MockLlm::set_responder`]) calling tool `name` with
/// `input` in every answer, in the format of the API asked (Messages, Chat
/// Completions, Responses, Gemini), each call with an id of its own; `usage`
/// (input, output) fixes what each answer reports ([`MockReply::with_usage`]).
/// teammated's shell tool is `bash` with `{"command": "true"}`.
pub fn endless_tool_calls(
    name: &str,
    input: Value,
    usage: Option<(u64, u64)>,
) -> impl Fn(&RecordedRequest) -> Option<MockReply> + Send + Sync + 'static {
    let (name, arguments) = (name.to_string(), input.to_string());
    let next = AtomicU64::new(1);
    move |request| {
        let n = next.fetch_add(1, Ordering::Relaxed);
        let reply = match Api::of_path(&request.path)? {
            Api::Anthropic => {
                MockReply::anthropic_tool_use(&format!("toolu_endless_{n}"), &name, input.clone())
            }
            Api::OpenAi => {
                MockReply::openai_tool_call(&format!("call_endless_{n}"), &name, &arguments)
            }
            Api::Responses => MockReply::responses_function_call(
                &format!("call_endless_{n}"),
                &name,
                &arguments,
                None,
            ),
            Api::Gemini => MockReply::gemini_function_call(&name, input.clone()),
        };
        Some(match usage {
            Some((input, output)) => reply.with_usage(input, output),
            None => reply,
        })
    }
}
