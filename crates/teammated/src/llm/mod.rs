//! Talking to a language model.
//!
//! The conversation is kept in one provider-neutral shape, close to Anthropic's
//! Messages API: a system prompt, then alternating user and assistant messages made
//! of blocks (text, tool use, tool result). Each provider translates that shape to
//! its wire format and back, so the work loop never knows which model it talks to.
//!
//! Imports run one way: this module builds a provider and dispatches to it; the
//! providers share the leaf modules [`chat`] (the conversation) and [`error`], and
//! none of them names this module, so no module cycle can form here.

pub mod anthropic;
pub mod chat;
pub mod error;
pub mod http;
pub mod lead_plan;
pub mod openai;
pub mod probe;
pub mod ratelimit;
pub mod retry;
pub mod scripted;
pub mod scripted_lead;

pub use crate::tools::specs::ToolSpec;
pub use chat::{
    Block, ChatMessage, Completion, CompletionRequest, OnRetry, Role, StopReason, estimate_request,
    estimate_tokens,
};
pub use error::LlmError;
pub use probe::Probe;
pub use retry::Retrying;

use crate::config::{ProviderConfig, ProviderKind};

/// The model a teammate talks to.
pub enum Provider {
    Anthropic(anthropic::Anthropic),
    OpenAi(openai::OpenAi),
    Scripted(scripted::Scripted),
}

impl Provider {
    /// Asks the model for its next turn. HTTP providers retry transient failures
    /// themselves; an error here is one that would not go away.
    pub async fn complete(&self, req: CompletionRequest<'_>) -> Result<Completion, LlmError> {
        match self {
            Provider::Anthropic(p) => p.complete(req).await,
            Provider::OpenAi(p) => p.complete(req).await,
            Provider::Scripted(p) => p.complete(req).await,
        }
    }

    /// Checks that the base URL leads to the API and that the key is taken, with
    /// one request that spends no tokens (see [`probe`]). An error is a key the
    /// server refuses, a reason to stop; anything else is at most advice, a
    /// [`Probe::Unsure`].
    pub async fn probe(&self) -> Result<Probe, LlmError> {
        match self {
            Provider::Anthropic(p) => p.probe().await,
            Provider::OpenAi(p) => p.probe().await,
            Provider::Scripted(_) => Ok(Probe::Skipped),
        }
    }

    /// The provider with what it was told to use, for the transcript's first line:
    /// `openai (model gpt-4o-mini at http://localhost:11434/v1, output limit in
    /// max_tokens)`. No key, no password.
    pub fn describe(&self) -> String {
        match self {
            Provider::Anthropic(p) => format!("anthropic ({})", p.describe()),
            Provider::OpenAi(p) => format!("openai ({})", p.describe()),
            Provider::Scripted(_) => {
                "scripted (an offline stand-in, not a model; its tokens are estimates)".to_string()
            }
        }
    }

    /// The provider's name as `--provider` spells it.
    pub fn name(&self) -> &'static str {
        match self {
            Provider::Anthropic(_) => "anthropic",
            Provider::OpenAi(_) => "openai",
            Provider::Scripted(_) => "scripted",
        }
    }
}

/// The model the configuration names, for the roster: `scripted`, or the
/// provider and its model (`anthropic/claude-sonnet-4-5`), the provider's
/// default when none is named.
pub fn model_label(cfg: &ProviderConfig) -> String {
    let model = crate::config::setting(cfg.model.as_deref());
    match cfg.kind {
        ProviderKind::Scripted => teamboard_protocol::names::SCRIPTED_MODEL.to_string(),
        ProviderKind::Anthropic => {
            format!("anthropic/{}", model.unwrap_or(anthropic::DEFAULT_MODEL))
        }
        ProviderKind::Openai => format!("openai/{}", model.unwrap_or(openai::DEFAULT_MODEL)),
    }
}

/// Builds the provider the configuration names.
pub fn build(cfg: &ProviderConfig) -> Result<Provider, LlmError> {
    Ok(match cfg.kind {
        ProviderKind::Anthropic => Provider::Anthropic(anthropic::Anthropic::new(cfg)?),
        ProviderKind::Openai => Provider::OpenAi(openai::OpenAi::new(cfg)?),
        ProviderKind::Scripted => Provider::Scripted(scripted::Scripted::default()),
    })
}
