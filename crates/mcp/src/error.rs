//! What ends the server: only its own stdin and stdout failing. Everything a
//! client or boardd does wrong is answered, never fatal.

/// Why [`crate::serve`] stopped before stdin ended. The messages name their
/// cause, so it is not also a `source`, which `{:#}` would print twice.
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    #[error("cannot read the MCP client's messages on stdin: {0}")]
    Read(std::io::Error),
    #[error("cannot write to the MCP client on stdout: {0}")]
    Write(std::io::Error),
}
