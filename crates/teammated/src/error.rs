//! Why a teammate stopped when it did not choose to.

use crate::llm::LlmError;
use teamboard_protocol::ClientError;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Boardd(#[from] ClientError),
    /// Shown with its cause by `{:#}`, so the cause is not repeated here.
    #[error("the model provider cannot be used")]
    Provider(#[from] LlmError),
    #[error("working directory {path}: {message}")]
    Workdir { path: String, message: String },
    /// The agent runtime cannot be used at all (its program is missing).
    #[error("the agent runtime cannot be used: {0}")]
    Agent(String),
    /// `--sandbox` asks for bubblewrap, which is missing or does not work.
    #[error(transparent)]
    Sandbox(#[from] teamboard_sandbox::Missing),
}
