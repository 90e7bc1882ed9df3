//! The one error type of the board core.

use teamboard_protocol::{ErrorBody, ErrorCode};

/// Why the board refused an operation. `code` is what clients branch on; `message`
/// is one line for a person.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct BoardError {
    pub code: ErrorCode,
    pub message: String,
}

impl BoardError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        BoardError {
            code,
            message: message.into(),
        }
    }

    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::InvalidArgs, message)
    }

    pub fn state(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::InvalidState, message)
    }

    pub fn no_task(id: u64, team: &str) -> Self {
        Self::new(
            ErrorCode::NotFound,
            format!("task #{id} does not exist in team '{team}'"),
        )
    }
}

impl From<BoardError> for ErrorBody {
    fn from(e: BoardError) -> Self {
        ErrorBody::new(e.code, e.message)
    }
}

pub type Result<T, E = BoardError> = std::result::Result<T, E>;
