//! The conversation in one provider-neutral shape, close to Anthropic's Messages API:
//! a system prompt, then alternating user and assistant messages made of blocks
//! (text, tool use, tool result), and what one call asks and gets back. Each provider
//! translates it to its wire format and back.

use super::retry::Retrying;
use crate::tools::specs::ToolSpec;
use serde::{Deserialize, Serialize};
use teamboard_protocol::TokenUsage;
use teamboard_protocol::spend::RateSnapshot;

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    User,
    Assistant,
}

/// One piece of a message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Block {
    Text {
        text: String,
    },
    /// The model asks for a tool. `id` ties the answer to the request.
    ToolUse {
        id: String,
        name: String,
        input: serde_json::Value,
    },
    /// A tool's answer, always in a user message right after the tool use.
    ToolResult {
        tool_use_id: String,
        content: String,
        #[serde(default)]
        is_error: bool,
    },
}

impl Block {
    pub fn text(text: impl Into<String>) -> Block {
        Block::Text { text: text.into() }
    }

    /// The text of a text block.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Block::Text { text } => Some(text),
            _ => None,
        }
    }
}

/// One turn of the conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatMessage {
    pub role: Role,
    pub content: Vec<Block>,
}

impl ChatMessage {
    pub fn user_text(text: impl Into<String>) -> ChatMessage {
        ChatMessage {
            role: Role::User,
            content: vec![Block::text(text)],
        }
    }

    pub fn assistant_text(text: impl Into<String>) -> ChatMessage {
        ChatMessage {
            role: Role::Assistant,
            content: vec![Block::text(text)],
        }
    }

    /// The message's text blocks.
    pub fn texts(&self) -> Vec<&str> {
        self.content.iter().filter_map(Block::as_text).collect()
    }

    /// The message's text blocks joined by newlines.
    pub fn joined_text(&self) -> String {
        self.texts().join("\n")
    }

    /// Whether the message answers tool uses (and so must stay right after them).
    pub fn has_tool_results(&self) -> bool {
        self.content
            .iter()
            .any(|b| matches!(b, Block::ToolResult { .. }))
    }

    /// Whether the message asks for tools.
    pub fn has_tool_uses(&self) -> bool {
        self.content
            .iter()
            .any(|b| matches!(b, Block::ToolUse { .. }))
    }
}

/// Told before each retry of a model call, so that a wait (a server's
/// `retry-after` may ask for a minute) can be shown where a person looks.
pub type OnRetry<'a> = &'a (dyn Fn(&Retrying<'_>) + Send + Sync);

/// Everything a provider needs for one call.
#[derive(Clone, Copy)]
pub struct CompletionRequest<'a> {
    pub system: &'a str,
    pub messages: &'a [ChatMessage],
    /// Empty when the model must answer in text only (summaries for compaction).
    pub tools: &'a [ToolSpec],
    pub max_tokens: u32,
    pub on_retry: Option<OnRetry<'a>>,
    /// Whether the provider retries the account's rate limit (429) itself, as
    /// it retries overload, 5xx and dropped connections. `false` for a caller
    /// that schedules calls per account: the 429 comes back at once, with
    /// what the provider said about the account (`LlmError::rate`).
    pub retry_rate_limits: bool,
}

/// Why the model stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopReason {
    /// A final answer.
    EndTurn,
    /// It wants tool results before it goes on.
    ToolUse,
    /// It ran out of output tokens.
    MaxTokens,
    /// Anything else the provider said, verbatim.
    Other(String),
}

/// The model's answer to one call.
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    pub content: Vec<Block>,
    pub stop: StopReason,
    pub usage: TokenUsage,
    /// What the answer's headers said about the account's rate limits; `None`
    /// when they said nothing (a local server) and for the scripted model.
    pub rate: Option<RateSnapshot>,
}

/// A rough token count: about four bytes of text per token, which is what both
/// providers' tokenizers average on English and code. Budgets only need the order of
/// magnitude, and a real tokenizer would be a heavy dependency.
pub fn estimate_tokens(text: &str) -> u64 {
    (text.len() as u64).div_ceil(4)
}

/// The estimated size of a whole request.
pub fn estimate_request(system: &str, messages: &[ChatMessage]) -> u64 {
    let mut total = estimate_tokens(system);
    for m in messages {
        // A few tokens of framing per message and per block.
        total += 4;
        for b in &m.content {
            total += 3 + match b {
                Block::Text { text } => estimate_tokens(text),
                Block::ToolUse { name, input, .. } => {
                    estimate_tokens(name) + estimate_tokens(&input.to_string())
                }
                Block::ToolResult { content, .. } => estimate_tokens(content),
            };
        }
    }
    total
}
