//! Anthropic's Messages API.
//!
//! The neutral conversation shape is modelled on this API, so the translation is
//! nearly one to one; the care is in what the API refuses (empty text blocks) and in
//! what it may add to answers (thinking blocks, new stop reasons).
//!
//! Prompt caching: a request marks with `cache_control` the end of its stable
//! prefix (the last tool and the system prompt, which the API caches in the order
//! tools, system, messages) and the end of the conversation (the last block of the
//! last message). The next call of the same work phase then reads everything up to
//! the previous call's tail from the cache, since the API looks for cached prefixes
//! at the block boundaries before a breakpoint; a fresh task reads the tools and the
//! system prompt. Three breakpoints of the four the API allows.
use super::chat::{Block, ChatMessage, Completion, CompletionRequest, Role, StopReason};
use super::error::LlmError;
use super::http::{HttpClient, Retries, redact_error, shown_url};
use super::probe::{ModelList, Probe};
use crate::config::{ProviderConfig, setting};
use serde_json::{Value, json};
use teamboard_protocol::TokenUsage;

const PROVIDER: &str = "anthropic";
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
pub const DEFAULT_MODEL: &str = "claude-sonnet-4-5";
/// The API version this translation was written against.
const API_VERSION: &str = "2023-06-01";

pub struct Anthropic {
    http: HttpClient,
    /// The base URL as given, without a trailing slash.
    base: String,
    url: String,
    model: String,
    api_key: String,
}

/// Written by hand so that the key can never be printed.
impl std::fmt::Debug for Anthropic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Anthropic")
            .field("url", &self.url)
            .field("model", &self.model)
            .field("api_key", &"<redacted>")
            .finish()
    }
}

impl Anthropic {
    /// A client for `cfg`; fails without an API key, since every call would.
    pub fn new(cfg: &ProviderConfig) -> Result<Anthropic, LlmError> {
        let api_key = setting(cfg.api_key.as_deref())
            .ok_or_else(|| LlmError::MissingKey {
                provider: PROVIDER,
                var: "ANTHROPIC_API_KEY",
                file: crate::config::keys_file().display().to_string(),
            })?
            .to_string();
        let base = setting(cfg.base_url.as_deref())
            .unwrap_or(DEFAULT_BASE_URL)
            .trim_end_matches('/');
        let model = setting(cfg.model.as_deref())
            .unwrap_or(DEFAULT_MODEL)
            .to_string();
        Ok(Anthropic {
            http: HttpClient::new(PROVIDER, cfg)?,
            base: base.to_string(),
            url: format!("{base}/v1/messages"),
            model,
            api_key,
        })
    }

    /// The model and where it is asked.
    pub fn describe(&self) -> String {
        format!("model {} at {}", self.model, shown_url(&self.base))
    }

    /// `GET /v1/models`: see [`super::probe`].
    pub async fn probe(&self) -> Result<Probe, LlmError> {
        let headers = [
            ("x-api-key", self.api_key.clone()),
            ("anthropic-version", API_VERSION.to_string()),
        ];
        // The messages path carries /v1 itself, so a base URL that ends in it is
        // the most likely mistake.
        let hint = match self.base.strip_suffix("/v1") {
            Some(root) => format!("leave out /v1 (try {root}): teammated adds it"),
            None => {
                format!("it is the server's root, without /v1 (Anthropic's is {DEFAULT_BASE_URL})")
            }
        };
        ModelList {
            provider: PROVIDER,
            url: format!("{}/v1/models", self.base),
            headers: &headers,
            key_var: "ANTHROPIC_API_KEY",
            has_key: true,
            hint,
        }
        .check(&self.http)
        .await
        .map_err(|e| redact_error(e, &[&self.api_key]))
    }

    pub async fn complete(&self, req: CompletionRequest<'_>) -> Result<Completion, LlmError> {
        let body = request_body(&self.model, &req);
        let headers = [
            ("x-api-key", self.api_key.clone()),
            ("anthropic-version", API_VERSION.to_string()),
            ("content-type", "application/json".to_string()),
        ];
        let answer = self
            .http
            .post_json(PROVIDER, &self.url, &headers, &body, Retries::of(&req))
            .await?;
        let completion =
            parse_response(&answer.body).map_err(|e| redact_error(e, &[&self.api_key]))?;
        Ok(Completion {
            rate: answer.rate,
            ..completion
        })
    }
}

/// The marker that ends a cacheable prefix. "ephemeral" is the only type; it
/// lives five minutes from its last use.
fn cache_control() -> Value {
    json!({"type": "ephemeral"})
}

/// The Messages API request for `req`, with `cache_control` breakpoints (see the
/// module's notes).
fn request_body(model: &str, req: &CompletionRequest<'_>) -> Value {
    // A request without tools is a one-off (the summary that compaction asks for):
    // its prefix is never sent again, and writing it to the cache would cost a
    // quarter more than reading it fresh, for nothing.
    let cache = !req.tools.is_empty();
    let mut messages: Vec<Value> = req.messages.iter().map(message_json).collect();
    if cache
        && let Some(last) = messages
            .last_mut()
            .and_then(|m| m["content"].as_array_mut())
            .and_then(|blocks| blocks.last_mut())
    {
        last["cache_control"] = cache_control();
    }
    let mut body = json!({
        "model": model,
        "max_tokens": req.max_tokens,
        "messages": messages,
    });
    // An empty system prompt is left out rather than sent as "", which is not a
    // prompt at all.
    if !req.system.is_empty() {
        body["system"] = if cache {
            json!([{"type": "text", "text": req.system, "cache_control": cache_control()}])
        } else {
            json!(req.system)
        };
    }
    // `tools: []` is refused by some API versions; no tools means no field.
    if !req.tools.is_empty() {
        let mut tools: Vec<Value> = req
            .tools
            .iter()
            .map(|t| {
                json!({
                    "name": t.name,
                    "description": t.description,
                    "input_schema": t.input_schema,
                })
            })
            .collect();
        if cache && let Some(last) = tools.last_mut() {
            last["cache_control"] = cache_control();
        }
        body["tools"] = Value::Array(tools);
    }
    body
}

fn message_json(msg: &ChatMessage) -> Value {
    let role = match msg.role {
        Role::User => "user",
        Role::Assistant => "assistant",
    };
    let mut content: Vec<Value> = msg
        .content
        .iter()
        .filter_map(|block| match block {
            // The API refuses empty text blocks with a 400, which would end the
            // teammate's work on a message that carried nothing anyway.
            Block::Text { text } if text.trim().is_empty() => None,
            Block::Text { text } => Some(json!({"type": "text", "text": text})),
            Block::ToolUse { id, name, input } => Some(json!({
                "type": "tool_use",
                "id": id,
                "name": name,
                "input": input,
            })),
            Block::ToolResult {
                tool_use_id,
                content,
                is_error,
            } => Some(json!({
                "type": "tool_result",
                "tool_use_id": tool_use_id,
                "content": content,
                "is_error": is_error,
            })),
        })
        .collect();
    // An empty content list is refused too; a placeholder keeps the turn order.
    if content.is_empty() {
        content.push(json!({"type": "text", "text": "(empty)"}));
    }
    json!({"role": role, "content": content})
}

/// The neutral completion in a Messages API answer.
#[doc(hidden)]
pub fn parse_response(answer: &Value) -> Result<Completion, LlmError> {
    let decode = |message: String| LlmError::Decode {
        provider: PROVIDER,
        message,
    };
    if answer["type"] == "error" {
        return Err(decode(format!(
            "the API answered with an error: {}",
            answer["error"]
        )));
    }
    let blocks = answer["content"]
        .as_array()
        .ok_or_else(|| decode("no `content` list in the answer".into()))?;
    let mut content = Vec::new();
    for block in blocks {
        match block["type"].as_str() {
            Some("text") => {
                let text = block["text"].as_str().unwrap_or_default();
                if !text.trim().is_empty() {
                    content.push(Block::text(text));
                }
            }
            Some("tool_use") => {
                let id = block["id"]
                    .as_str()
                    .ok_or_else(|| decode("a tool_use block without an id".into()))?;
                let name = block["name"]
                    .as_str()
                    .ok_or_else(|| decode("a tool_use block without a name".into()))?;
                let input = match &block["input"] {
                    Value::Null => json!({}),
                    v => v.clone(),
                };
                content.push(Block::ToolUse {
                    id: id.to_string(),
                    name: name.to_string(),
                    input,
                });
            }
            // Thinking, redacted thinking, server tool results and whatever comes
            // next carry nothing the work loop can use.
            other => tracing::debug!(block_type = ?other, "ignoring an answer block"),
        }
    }
    let stop = match answer["stop_reason"].as_str() {
        Some("end_turn") | Some("stop_sequence") => StopReason::EndTurn,
        Some("tool_use") => StopReason::ToolUse,
        Some("max_tokens") => StopReason::MaxTokens,
        Some(other) => StopReason::Other(other.to_string()),
        None => StopReason::Other(String::new()),
    };
    Ok(Completion {
        content,
        stop,
        usage: parse_usage(&answer["usage"]),
        rate: None,
    })
}

/// Token use in a Messages API answer. `input_tokens` counts only the input after
/// the last cache breakpoint; what was read from the cache and what was written to
/// it come apart, and the three add up to the whole prompt.
fn parse_usage(usage: &Value) -> TokenUsage {
    let count = |field: &str| usage[field].as_u64().unwrap_or(0);
    TokenUsage {
        input: count("input_tokens"),
        output: count("output_tokens"),
        cache_read: count("cache_read_input_tokens"),
        cache_write: count("cache_creation_input_tokens"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ToolSpec;

    #[test]
    fn request_carries_system_tools_and_blocks() {
        let messages = [
            ChatMessage::user_text("list files"),
            ChatMessage {
                role: Role::Assistant,
                content: vec![
                    Block::text("looking"),
                    Block::ToolUse {
                        id: "toolu_1".into(),
                        name: "bash".into(),
                        input: json!({"command": "ls"}),
                    },
                ],
            },
            ChatMessage {
                role: Role::User,
                content: vec![Block::ToolResult {
                    tool_use_id: "toolu_1".into(),
                    content: "a\nb".into(),
                    is_error: true,
                }],
            },
        ];
        let tools = [ToolSpec {
            name: "bash".into(),
            description: "run a command".into(),
            input_schema: json!({"type": "object"}),
        }];
        let req = CompletionRequest {
            system: "be brief",
            messages: &messages,
            tools: &tools,
            max_tokens: 100,
            on_retry: None,
            retry_rate_limits: true,
        };
        let body = request_body("m", &req);
        assert_eq!(body["model"], "m");
        assert_eq!(body["max_tokens"], 100);
        assert_eq!(body["system"][0]["text"], "be brief");
        assert_eq!(body["tools"][0]["input_schema"]["type"], "object");
        assert_eq!(
            body["messages"][0]["content"][0],
            json!({"type": "text", "text": "list files"})
        );
        assert_eq!(body["messages"][1]["role"], "assistant");
        assert_eq!(body["messages"][1]["content"][1]["type"], "tool_use");
        assert_eq!(body["messages"][1]["content"][1]["input"]["command"], "ls");
        assert_eq!(
            body["messages"][2]["content"][0],
            json!({"type": "tool_result", "tool_use_id": "toolu_1", "content": "a\nb", "is_error": true, "cache_control": {"type": "ephemeral"}})
        );

        let bare = CompletionRequest {
            system: "",
            messages: &[ChatMessage::user_text("")],
            tools: &[],
            max_tokens: 5,
            on_retry: None,
            retry_rate_limits: true,
        };
        let body = request_body("m", &bare);
        assert!(body.get("tools").is_none());
        assert!(body.get("system").is_none());
        assert_eq!(body["messages"][0]["content"][0]["text"], "(empty)");
        // No tools: a one-off request, so no breakpoints.
        assert!(!body.to_string().contains("cache_control"), "{body}");
    }

    #[test]
    fn cache_breakpoints_end_the_tools_the_system_prompt_and_the_conversation() {
        let messages = [
            ChatMessage::user_text("list files"),
            ChatMessage {
                role: Role::Assistant,
                content: vec![Block::ToolUse {
                    id: "toolu_1".into(),
                    name: "bash".into(),
                    input: json!({"command": "ls"}),
                }],
            },
            ChatMessage {
                role: Role::User,
                content: vec![
                    Block::ToolResult {
                        tool_use_id: "toolu_1".into(),
                        content: "a".into(),
                        is_error: false,
                    },
                    Block::text("[Message #4 from lead (message)] hurry"),
                ],
            },
        ];
        let tool = |name: &str| ToolSpec {
            name: name.into(),
            description: "d".into(),
            input_schema: json!({"type": "object"}),
        };
        let tools = [tool("bash"), tool("read_file")];
        let req = CompletionRequest {
            system: "be brief",
            messages: &messages,
            tools: &tools,
            max_tokens: 100,
            on_retry: None,
            retry_rate_limits: true,
        };
        let body = request_body("m", &req);
        let ephemeral = json!({"type": "ephemeral"});
        assert_eq!(
            body["system"],
            json!([{"type": "text", "text": "be brief", "cache_control": ephemeral}])
        );
        assert!(body["tools"][0].get("cache_control").is_none());
        assert_eq!(body["tools"][1]["cache_control"], ephemeral);
        let last = &body["messages"][2]["content"];
        assert!(last[0].get("cache_control").is_none());
        assert_eq!(last[1]["cache_control"], ephemeral);
        assert_eq!(last[1]["text"], "[Message #4 from lead (message)] hurry");
        // Exactly three breakpoints: the API refuses more than four.
        assert_eq!(body.to_string().matches("cache_control").count(), 3);
    }

    #[test]
    fn response_blocks_stop_reasons_and_usage() {
        let answer = json!({
            "id": "msg_1", "type": "message", "role": "assistant", "model": "m",
            "content": [
                {"type": "thinking", "thinking": "hmm", "signature": "x"},
                {"type": "text", "text": "I will look."},
                {"type": "tool_use", "id": "toolu_9", "name": "read_file", "input": {"path": "a"}}
            ],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 10, "output_tokens": 4, "cache_read_input_tokens": 5}
        });
        let c = parse_response(&answer).unwrap();
        assert_eq!(
            c.content,
            vec![
                Block::text("I will look."),
                Block::ToolUse {
                    id: "toolu_9".into(),
                    name: "read_file".into(),
                    input: json!({"path": "a"}),
                }
            ]
        );
        assert_eq!(c.stop, StopReason::ToolUse);
        assert_eq!(
            c.usage,
            TokenUsage {
                input: 10,
                output: 4,
                cache_read: 5,
                cache_write: 0,
            }
        );
        let written = parse_usage(&json!({
            "input_tokens": 3, "output_tokens": 9,
            "cache_creation_input_tokens": 2048, "cache_read_input_tokens": 1800
        }));
        assert_eq!(
            written,
            TokenUsage {
                input: 3,
                output: 9,
                cache_read: 1800,
                cache_write: 2048,
            }
        );
        assert_eq!(written.all_input(), 3 + 2048 + 1800);

        for (wire, stop) in [
            ("end_turn", StopReason::EndTurn),
            ("stop_sequence", StopReason::EndTurn),
            ("max_tokens", StopReason::MaxTokens),
            ("refusal", StopReason::Other("refusal".into())),
        ] {
            let c = parse_response(&json!({"content": [], "stop_reason": wire})).unwrap();
            assert_eq!(c.stop, stop);
            assert_eq!(c.usage, TokenUsage::default());
        }
        assert!(matches!(
            parse_response(&json!({"type": "error", "error": {"type": "overloaded_error"}})),
            Err(LlmError::Decode { .. })
        ));
        assert!(matches!(
            parse_response(&json!({})),
            Err(LlmError::Decode { .. })
        ));
    }
}
