//! OpenAI-compatible Chat Completions (OpenAI, ollama, llama.cpp server, vLLM).
//!
//! Chat Completions has no blocks: tool calls hang off the assistant message, and
//! every tool result is a message of its own with role `tool`. The translation below
//! maps the neutral blocks onto that, and is lenient with what local servers send
//! back, since they follow OpenAI's format only approximately.
use super::chat::{Block, ChatMessage, Completion, CompletionRequest, Role, StopReason};
use super::error::{LlmError, refuses_parameter};
use super::http::{Answer, HttpClient, Retries, redact_error, shown_url};
use super::probe::{ModelList, Probe};
use crate::config::{MaxTokensField, ProviderConfig, setting};
use serde_json::{Value, json};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use teamboard_protocol::TokenUsage;

const PROVIDER: &str = "openai";
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
pub const DEFAULT_MODEL: &str = "gpt-4o-mini";

pub struct OpenAi {
    http: HttpClient,
    /// The base URL as given, without a trailing slash.
    base: String,
    url: String,
    model: String,
    /// `None` for local servers, which take no key.
    api_key: Option<String>,
    max_tokens_field: MaxTokensField,
    /// Set once the server refused `max_tokens_field` and took the other field:
    /// every request from then on sends the other one (see [`OpenAi::complete`]).
    learned_other_field: AtomicBool,
}

/// Written by hand so that the key can never be printed.
impl std::fmt::Debug for OpenAi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAi")
            .field("url", &self.url)
            .field("model", &self.model)
            .field("max_tokens_field", &self.max_tokens_field())
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

impl OpenAi {
    /// A client for `cfg`. The key is optional because local servers need none, but
    /// OpenAI itself always does, so its absence there is reported up front.
    pub fn new(cfg: &ProviderConfig) -> Result<OpenAi, LlmError> {
        let api_key = setting(cfg.api_key.as_deref()).map(str::to_string);
        let base = setting(cfg.base_url.as_deref())
            .unwrap_or(DEFAULT_BASE_URL)
            .trim_end_matches('/');
        if api_key.is_none() && is_openai_itself(base) {
            return Err(LlmError::MissingKey {
                provider: PROVIDER,
                var: "OPENAI_API_KEY",
                file: crate::config::keys_file().display().to_string(),
            });
        }
        let model = setting(cfg.model.as_deref())
            .unwrap_or(DEFAULT_MODEL)
            .to_string();
        // OpenAI itself wants the newer field (its reasoning models refuse the
        // older). Elsewhere the older one is the safe default: every compatible
        // server knows it, while one that does not know the newer field ignores
        // it, and the output would have no limit at all.
        let max_tokens_field = cfg.max_tokens_field.unwrap_or(if is_openai_itself(base) {
            MaxTokensField::MaxCompletionTokens
        } else {
            MaxTokensField::MaxTokens
        });
        Ok(OpenAi {
            http: HttpClient::new(PROVIDER, cfg)?,
            base: base.to_string(),
            url: format!("{base}/chat/completions"),
            model,
            api_key,
            max_tokens_field,
            learned_other_field: AtomicBool::new(false),
        })
    }

    /// The field that carries the output limit now: the one configured, or the
    /// other once the server refused it.
    fn max_tokens_field(&self) -> MaxTokensField {
        if self.learned_other_field.load(Ordering::Relaxed) {
            other_field(self.max_tokens_field)
        } else {
            self.max_tokens_field
        }
    }

    /// The model, where it is asked, and the field that carries the output limit.
    pub fn describe(&self) -> String {
        format!(
            "model {} at {}, output limit in {}",
            self.model,
            shown_url(&self.base),
            self.max_tokens_field()
        )
    }

    /// `GET {base}/models`: see [`super::probe`].
    pub async fn probe(&self) -> Result<Probe, LlmError> {
        let headers: Vec<(&str, String)> = self
            .api_key
            .iter()
            .map(|key| ("authorization", format!("Bearer {key}")))
            .collect();
        let base = &self.base;
        let hint = if let Some(root) = base.strip_suffix("/chat/completions") {
            format!("give it without /chat/completions (try {root})")
        } else if !base.ends_with("/v1") {
            format!("OpenAI-compatible servers serve the API under /v1: try {base}/v1")
        } else {
            "check the host and port (ollama: http://localhost:11434/v1, llama.cpp: \
             http://localhost:8080/v1)"
                .to_string()
        };
        let key = self.api_key.as_deref().unwrap_or_default();
        ModelList {
            provider: PROVIDER,
            url: format!("{base}/models"),
            headers: &headers,
            key_var: "OPENAI_API_KEY",
            has_key: self.api_key.is_some(),
            hint,
        }
        .check(&self.http)
        .await
        .map_err(|e| redact_error(e, &[key]))
    }

    /// Asks for the next turn. A server that refuses the output-limit field is
    /// asked again, once, with the other field, which is kept from then on: the
    /// default is a guess by the base URL, and a model behind a compatible server
    /// may want the other field. Refused again, the request is a setup error.
    pub async fn complete(&self, req: CompletionRequest<'_>) -> Result<Completion, LlmError> {
        let field = self.max_tokens_field();
        let answer = match self.send(field, &req).await {
            Err(LlmError::Http {
                status: 400 | 422,
                body,
                ..
            }) if refuses_parameter(&body, field.into()) => {
                let other = other_field(field);
                tracing::warn!(
                    "the model refuses {} for the output limit; asking again with {}, kept \
                     for later calls if it is taken (--max-tokens-field {} sends it from the \
                     start)",
                    field,
                    other,
                    other
                );
                let retried = self.send(other, &req).await;
                if retried.is_ok() {
                    self.learned_other_field
                        .store(other != self.max_tokens_field, Ordering::Relaxed);
                }
                retried
            }
            answer => answer,
        }?;
        let key = self.api_key.as_deref().unwrap_or_default();
        let completion = parse_response(&answer.body).map_err(|e| redact_error(e, &[key]))?;
        Ok(Completion {
            rate: answer.rate,
            ..completion
        })
    }

    async fn send(
        &self,
        field: MaxTokensField,
        req: &CompletionRequest<'_>,
    ) -> Result<Answer, LlmError> {
        let body = request_body(&self.model, field, req);
        let mut headers = vec![("content-type", "application/json".to_string())];
        if let Some(key) = &self.api_key {
            headers.push(("authorization", format!("Bearer {key}")));
        }
        self.http
            .post_json(PROVIDER, &self.url, &headers, &body, Retries::of(req))
            .await
    }
}

/// The output-limit field that is not `field`.
fn other_field(field: MaxTokensField) -> MaxTokensField {
    match field {
        MaxTokensField::MaxTokens => MaxTokensField::MaxCompletionTokens,
        MaxTokensField::MaxCompletionTokens => MaxTokensField::MaxTokens,
    }
}

/// Whether `base` is OpenAI's own API (which always needs a key).
fn is_openai_itself(base: &str) -> bool {
    let rest = base
        .strip_prefix("https://")
        .or_else(|| base.strip_prefix("http://"))
        .unwrap_or(base);
    let host = rest.split(['/', ':']).next().unwrap_or_default();
    host.eq_ignore_ascii_case("api.openai.com")
}

/// The Chat Completions request for `req`.
fn request_body(model: &str, field: MaxTokensField, req: &CompletionRequest<'_>) -> Value {
    let mut messages = Vec::new();
    if !req.system.is_empty() {
        messages.push(json!({"role": "system", "content": req.system}));
    }
    for msg in req.messages {
        push_message(&mut messages, msg);
    }
    let mut body = json!({
        "model": model,
        "messages": messages,
    });
    body[<&str>::from(field)] = json!(req.max_tokens);
    // Several servers refuse `tools: []`; no tools means no field.
    if !req.tools.is_empty() {
        body["tools"] = req
            .tools
            .iter()
            .map(|t| {
                json!({
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": t.input_schema,
                    },
                })
            })
            .collect();
    }
    body
}

/// Appends the wire messages for one neutral message (a user message with tool
/// results becomes several).
fn push_message(out: &mut Vec<Value>, msg: &ChatMessage) {
    match msg.role {
        Role::User => {
            // Tool results must come straight after the assistant message that asked
            // for them, so they go first and any text follows as a user message.
            for block in &msg.content {
                if let Block::ToolResult {
                    tool_use_id,
                    content,
                    is_error,
                } = block
                {
                    // Chat Completions has no error flag; the prefix tells the model.
                    let content = if *is_error {
                        format!("ERROR: {content}")
                    } else {
                        content.clone()
                    };
                    out.push(json!({
                        "role": "tool",
                        "tool_call_id": tool_use_id,
                        "content": content,
                    }));
                }
            }
            let text = msg.joined_text();
            if !text.is_empty() || !msg.has_tool_results() {
                out.push(json!({"role": "user", "content": text}));
            }
        }
        Role::Assistant => {
            let text = msg.joined_text();
            let tool_calls: Vec<Value> = msg
                .content
                .iter()
                .filter_map(|block| match block {
                    Block::ToolUse { id, name, input } => Some(json!({
                        "id": id,
                        "type": "function",
                        "function": {"name": name, "arguments": input.to_string()},
                    })),
                    _ => None,
                })
                .collect();
            let mut wire = json!({
                "role": "assistant",
                // null rather than "" when the model only called tools: that is what
                // OpenAI itself sends back, and some servers reject "" next to calls.
                "content": if text.is_empty() { Value::Null } else { json!(text) },
            });
            if !tool_calls.is_empty() {
                wire["tool_calls"] = Value::Array(tool_calls);
            }
            out.push(wire);
        }
    }
}

/// The neutral completion in a Chat Completions answer.
#[doc(hidden)]
pub fn parse_response(answer: &Value) -> Result<Completion, LlmError> {
    let decode = |message: String| LlmError::Decode {
        provider: PROVIDER,
        message,
    };
    // Some compatible servers answer 200 with an error object instead of a status.
    if let Some(error) = answer.get("error").filter(|e| !e.is_null()) {
        return Err(decode(format!("the API answered with an error: {error}")));
    }
    let choice = answer["choices"]
        .get(0)
        .ok_or_else(|| decode("no `choices` in the answer".into()))?;
    let message = &choice["message"];
    let mut content = Vec::new();
    if let Some(text) = message["content"].as_str().filter(|t| !t.is_empty()) {
        content.push(Block::text(text));
    }
    let calls = message["tool_calls"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    for call in calls {
        let function = &call["function"];
        let name = function["name"]
            .as_str()
            .ok_or_else(|| decode("a tool call without a function name".into()))?;
        let id = call["id"]
            .as_str()
            .filter(|id| !id.is_empty())
            .map(str::to_string)
            .unwrap_or_else(synthesize_call_id);
        content.push(Block::ToolUse {
            id,
            name: name.to_string(),
            input: parse_arguments(&function["arguments"]),
        });
    }
    let stop = match choice["finish_reason"].as_str() {
        Some("length") => StopReason::MaxTokens,
        // ollama and some llama.cpp builds say "stop" even when they called tools;
        // the calls are what matters, or the loop would drop them as a final answer.
        _ if !calls.is_empty() => StopReason::ToolUse,
        Some("stop") | None => StopReason::EndTurn,
        Some("tool_calls") | Some("function_call") => StopReason::ToolUse,
        Some(other) => StopReason::Other(other.to_string()),
    };
    Ok(Completion {
        content,
        stop,
        usage: parse_usage(&answer["usage"]),
        rate: None,
    })
}

/// Token use in a Chat Completions answer. `prompt_tokens` counts the cached
/// prompt tokens too (unlike Anthropic's `input_tokens`), so fresh input is the
/// difference. OpenAI caches prompt prefixes on its own and bills nothing extra
/// for writing them, so there is no cache write to report.
fn parse_usage(usage: &Value) -> TokenUsage {
    let count = |v: &Value| v.as_u64().unwrap_or(0);
    let prompt = count(&usage["prompt_tokens"]);
    // A server that reports more cached tokens than prompt tokens is wrong about
    // one of them; the prompt is what was surely read.
    let cached = count(&usage["prompt_tokens_details"]["cached_tokens"]).min(prompt);
    TokenUsage {
        input: prompt - cached,
        output: count(&usage["completion_tokens"]),
        cache_read: cached,
        cache_write: 0,
    }
}

/// A tool call's arguments. OpenAI sends a JSON string; ollama sometimes sends the
/// object itself. Arguments that do not parse (models do emit broken JSON) are kept
/// verbatim under `_unparsed_arguments`, so the tool can say what was wrong instead
/// of the whole call failing here.
fn parse_arguments(arguments: &Value) -> Value {
    match arguments {
        Value::String(s) if s.trim().is_empty() => json!({}),
        Value::String(s) => {
            serde_json::from_str(s).unwrap_or_else(|_| json!({ "_unparsed_arguments": s }))
        }
        Value::Null => json!({}),
        other => other.clone(),
    }
}

/// An id for a tool call that came without one, unique in this process so that
/// results cannot be matched to the wrong call across turns.
fn synthesize_call_id() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!("call_{}", NEXT.fetch_add(1, Ordering::Relaxed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ToolSpec;

    #[test]
    fn request_maps_blocks_to_chat_messages() {
        let messages = [
            ChatMessage::user_text("list files"),
            ChatMessage {
                role: Role::Assistant,
                content: vec![Block::ToolUse {
                    id: "call_a".into(),
                    name: "bash".into(),
                    input: json!({"command": "ls"}),
                }],
            },
            ChatMessage {
                role: Role::User,
                content: vec![
                    Block::ToolResult {
                        tool_use_id: "call_a".into(),
                        content: "no such dir".into(),
                        is_error: true,
                    },
                    Block::text("also: hurry"),
                ],
            },
            ChatMessage::assistant_text("done"),
        ];
        let tools = [ToolSpec {
            name: "bash".into(),
            description: "run".into(),
            input_schema: json!({"type": "object"}),
        }];
        let req = CompletionRequest {
            system: "sys",
            messages: &messages,
            tools: &tools,
            max_tokens: 64,
            on_retry: None,
            retry_rate_limits: true,
        };
        let body = request_body("m", MaxTokensField::MaxTokens, &req);
        let wire = body["messages"].as_array().unwrap();
        assert_eq!(wire[0], json!({"role": "system", "content": "sys"}));
        assert_eq!(wire[1], json!({"role": "user", "content": "list files"}));
        assert_eq!(wire[2]["role"], "assistant");
        assert_eq!(wire[2]["content"], Value::Null);
        assert_eq!(wire[2]["tool_calls"][0]["id"], "call_a");
        assert_eq!(wire[2]["tool_calls"][0]["type"], "function");
        let args = wire[2]["tool_calls"][0]["function"]["arguments"]
            .as_str()
            .unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(args).unwrap(),
            json!({"command": "ls"})
        );
        assert_eq!(
            wire[3],
            json!({"role": "tool", "tool_call_id": "call_a", "content": "ERROR: no such dir"})
        );
        assert_eq!(wire[4], json!({"role": "user", "content": "also: hurry"}));
        assert_eq!(wire[5], json!({"role": "assistant", "content": "done"}));
        assert_eq!(wire.len(), 6);
        assert_eq!(body["tools"][0]["function"]["parameters"]["type"], "object");
        assert_eq!(body["max_tokens"], 64);

        let bare = CompletionRequest {
            system: "",
            messages: &messages[..1],
            tools: &[],
            max_tokens: 1,
            on_retry: None,
            retry_rate_limits: true,
        };
        let body = request_body("m", MaxTokensField::MaxCompletionTokens, &bare);
        assert!(body.get("tools").is_none());
        assert_eq!(body["messages"].as_array().unwrap().len(), 1);
        assert_eq!(body["max_completion_tokens"], 1);
        assert!(body.get("max_tokens").is_none(), "{body}");
    }

    #[test]
    fn response_text_tool_calls_and_usage() {
        let answer = json!({
            "choices": [{
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": "checking",
                    "tool_calls": [
                        {"id": "call_1", "type": "function",
                         "function": {"name": "bash", "arguments": "{\"command\":\"ls\"}"}},
                        {"type": "function",
                         "function": {"name": "bash", "arguments": "{not json"}},
                        {"id": "call_3", "type": "function",
                         "function": {"name": "glob", "arguments": {"pattern": "*.rs"}}}
                    ]
                },
                "finish_reason": "tool_calls"
            }],
            "usage": {"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19}
        });
        let c = parse_response(&answer).unwrap();
        assert_eq!(c.stop, StopReason::ToolUse);
        assert_eq!(
            c.usage,
            TokenUsage {
                input: 12,
                output: 7,
                ..Default::default()
            }
        );
        assert_eq!(c.content[0], Block::text("checking"));
        assert_eq!(
            c.content[1],
            Block::ToolUse {
                id: "call_1".into(),
                name: "bash".into(),
                input: json!({"command": "ls"}),
            }
        );
        let Block::ToolUse { id, input, .. } = &c.content[2] else {
            panic!("{:?}", c.content[2]);
        };
        assert!(id.starts_with("call_"), "{id}");
        assert_eq!(input, &json!({"_unparsed_arguments": "{not json"}));
        let Block::ToolUse { input, .. } = &c.content[3] else {
            panic!("{:?}", c.content[3]);
        };
        assert_eq!(input, &json!({"pattern": "*.rs"}));
    }

    #[test]
    fn cached_prompt_tokens_are_told_apart_from_fresh_ones() {
        let usage = json!({
            "prompt_tokens": 2006,
            "completion_tokens": 300,
            "total_tokens": 2306,
            "prompt_tokens_details": {"cached_tokens": 1920, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0}
        });
        assert_eq!(
            parse_usage(&usage),
            TokenUsage {
                input: 86,
                output: 300,
                cache_read: 1920,
                cache_write: 0,
            }
        );
        // Local servers send no details: all of the prompt is fresh.
        let plain = json!({"prompt_tokens": 12, "completion_tokens": 7});
        assert_eq!(
            parse_usage(&plain),
            TokenUsage {
                input: 12,
                output: 7,
                ..TokenUsage::default()
            }
        );
        // More cached than prompt tokens is nonsense; it never makes input negative.
        let odd = json!({"prompt_tokens": 5, "prompt_tokens_details": {"cached_tokens": 9}});
        assert_eq!(parse_usage(&odd).input, 0);
        assert_eq!(parse_usage(&odd).cache_read, 5);
        assert_eq!(parse_usage(&Value::Null), TokenUsage::default());
    }

    #[test]
    fn finish_reasons_and_missing_parts() {
        let answer = |finish: Value, content: Value, calls: Value| {
            json!({"choices": [{"message": {"content": content, "tool_calls": calls},
                                "finish_reason": finish}]})
        };
        let call = json!([{"id": "c", "function": {"name": "f", "arguments": ""}}]);
        let cases = [
            (json!("stop"), json!("hi"), Value::Null, StopReason::EndTurn),
            (
                json!("length"),
                json!("hi"),
                Value::Null,
                StopReason::MaxTokens,
            ),
            (
                json!("tool_calls"),
                Value::Null,
                call.clone(),
                StopReason::ToolUse,
            ),
            (
                json!("stop"),
                Value::Null,
                call.clone(),
                StopReason::ToolUse,
            ),
            (
                json!("content_filter"),
                json!(""),
                Value::Null,
                StopReason::Other("content_filter".into()),
            ),
        ];
        for (finish, content, calls, stop) in cases {
            let c = parse_response(&answer(finish, content, calls)).unwrap();
            assert_eq!(c.stop, stop);
            assert_eq!(c.usage, TokenUsage::default());
        }
        // Null and empty content give no text block; empty arguments give `{}`.
        let c = parse_response(&answer(json!("tool_calls"), json!(""), call)).unwrap();
        assert_eq!(
            c.content,
            vec![Block::ToolUse {
                id: "c".into(),
                name: "f".into(),
                input: json!({})
            }]
        );
        assert!(matches!(
            parse_response(&json!({"choices": []})),
            Err(LlmError::Decode { .. })
        ));
        assert!(matches!(
            parse_response(&json!({"error": {"message": "model not found"}})),
            Err(LlmError::Decode { .. })
        ));
    }

    #[test]
    fn the_limit_field_defaults_by_base_url_and_can_be_chosen() {
        let cfg = |base: &str, field| ProviderConfig {
            kind: crate::config::ProviderKind::Openai,
            model: None,
            base_url: Some(base.to_string()),
            api_key: Some("sk-test".into()),
            max_tokens: 1,
            max_tokens_field: field,
            request_timeout: std::time::Duration::from_secs(1),
            retry: Default::default(),
            account: Default::default(),
        };
        let field = |base: &str, given| OpenAi::new(&cfg(base, given)).unwrap().max_tokens_field;
        use MaxTokensField::{MaxCompletionTokens, MaxTokens};
        assert_eq!(
            field("https://api.openai.com/v1", None),
            MaxCompletionTokens
        );
        assert_eq!(field("http://localhost:11434/v1", None), MaxTokens);
        assert_eq!(
            field("https://api.openai.com/v1", Some(MaxTokens)),
            MaxTokens
        );
        assert_eq!(
            field("http://localhost:8000/v1", Some(MaxCompletionTokens)),
            MaxCompletionTokens
        );
    }

    #[test]
    fn only_openai_itself_requires_a_key() {
        assert!(is_openai_itself("https://api.openai.com/v1"));
        assert!(is_openai_itself("https://API.openai.com"));
        assert!(!is_openai_itself("http://localhost:11434/v1"));
        assert!(!is_openai_itself("https://api.openai.com.example.org/v1"));
    }
}
