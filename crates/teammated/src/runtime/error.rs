/// Why an agent could not be started or driven.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// The program could not be started (not found, not executable), or it
    /// ended before its session opened; with its last stderr lines.
    #[error("cannot start the agent: {0}")]
    Start(String),
    /// The agent broke its protocol (an answer that does not parse, an error to
    /// a request it must accept).
    #[error("the agent broke its protocol: {0}")]
    Protocol(String),
    /// The agent's input is closed: it has exited.
    #[error("the agent has exited")]
    Gone,
    #[error("agent I/O: {0}")]
    Io(#[from] std::io::Error),
}
