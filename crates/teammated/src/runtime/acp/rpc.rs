//! What ACP adds to the JSON-RPC conversation ([`jsonrpc::Peer`]): what our
//! requests ask, a call awaited while the session opens, and the answer to
//! what the agent asks while no prompt runs.
//!
//! While the session opens, requests are made one at a time and awaited
//! ([`call`]); once it is open the driver sends without waiting and reads the
//! answers as they come. Either way every request the agent makes of us is
//! answered, never left hanging: an agent waits for its answer forever.

use crate::runtime::jsonrpc::{self, Incoming, RpcError};
use crate::runtime::{AgentError, acp::wire};
use serde_json::Value;

/// The conversation with an ACP agent.
pub type Rpc = jsonrpc::Peer<Asked>;

/// What one of our requests asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Asked {
    /// A step of the handshake, awaited by [`call`] (one at a time).
    Open,
    /// A `session/prompt`: its answer ends the turn.
    Prompt,
    /// Anything else sent without waiting (`session/set_mode`).
    Other,
}

/// Why a call got no result.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// The agent answered with an error.
    #[error("{0}")]
    Rpc(RpcError),
    /// The agent's output ended (it exited) before the answer.
    #[error("the agent's output ended")]
    Closed,
    #[error(transparent)]
    Agent(#[from] AgentError),
}

/// Makes a request and waits for its answer. Meanwhile notifications are
/// dropped (a load's replay, command lists) and the agent's own requests are
/// answered: a permission with `cancelled` (no prompt runs yet), the rest
/// with an error.
pub async fn call(rpc: &mut Rpc, method: &str, params: Value) -> Result<Value, CallError> {
    rpc.request(method, params, Asked::Open).await?;
    loop {
        match rpc.next().await.ok_or(CallError::Closed)? {
            Incoming::Response {
                asked: Asked::Open,
                result,
            } => return result.map_err(CallError::Rpc),
            Incoming::Request { id, method, .. } => turn_away(rpc, &id, &method).await?,
            _ => {}
        }
    }
}

/// Answers a request that comes while no prompt runs or the work is being
/// stopped.
pub async fn turn_away(rpc: &mut Rpc, id: &Value, method: &str) -> Result<(), AgentError> {
    if method == "session/request_permission" {
        rpc.respond(id, wire::cancelled()).await
    } else {
        rpc.refuse(id, method).await
    }
}
