//! OpenAI-compatible Chat Completions (OpenAI, ollama, llama.cpp server, vLLM).
use super::{Completion, CompletionRequest, LlmError};
use crate::config::ProviderConfig;

pub struct OpenAi {}

impl OpenAi {
    pub fn new(_cfg: &ProviderConfig) -> Result<OpenAi, LlmError> {
        Ok(OpenAi {})
    }

    pub async fn complete(&self, _req: CompletionRequest<'_>) -> Result<Completion, LlmError> {
        Err(LlmError::Decode { provider: "openai", message: "not implemented yet".into() })
    }
}
