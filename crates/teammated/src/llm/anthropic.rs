//! Anthropic's Messages API.
use super::{Completion, CompletionRequest, LlmError};
use crate::config::ProviderConfig;

pub struct Anthropic {}

impl Anthropic {
    pub fn new(_cfg: &ProviderConfig) -> Result<Anthropic, LlmError> {
        Ok(Anthropic {})
    }

    pub async fn complete(&self, _req: CompletionRequest<'_>) -> Result<Completion, LlmError> {
        Err(LlmError::Decode { provider: "anthropic", message: "not implemented yet".into() })
    }
}
