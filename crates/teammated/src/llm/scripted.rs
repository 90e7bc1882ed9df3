//! The offline scripted model.
use super::{Completion, CompletionRequest, LlmError};

pub struct Scripted {}

impl Scripted {
    pub async fn complete(&self, _req: CompletionRequest<'_>) -> Result<Completion, LlmError> {
        Err(LlmError::Scripted("not implemented yet".into()))
    }
}
