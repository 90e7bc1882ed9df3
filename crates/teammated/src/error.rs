//! Why a teammate stopped when it did not choose to.

use crate::llm::LlmError;
use teamboard_protocol::ClientError;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Boardd(#[from] ClientError),
    #[error("cannot set up the model: {0}")]
    Provider(#[from] LlmError),
    #[error("working directory {path}: {message}")]
    Workdir { path: String, message: String },
}
