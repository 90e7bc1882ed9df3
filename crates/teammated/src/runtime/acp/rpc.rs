//! The JSON-RPC side of an ACP agent's process: numbered requests out, lines in.
//!
//! While the session opens, requests are made one at a time and awaited
//! ([`Rpc::call`]); once it is open the driver sends without waiting and matches
//! answers by id itself. Either way every request the agent makes of us is
//! answered, never left hanging: an agent waits for its answer forever.

use crate::runtime::jsonrpc::{self, Incoming, RpcError};
use crate::runtime::process::{AgentProcess, Line};
use crate::runtime::{AgentError, acp::wire};
use serde_json::Value;

/// Why a call got no result.
#[derive(Debug)]
pub enum CallError {
    /// The agent answered with an error.
    Rpc(RpcError),
    /// The agent's output ended (it exited) before the answer.
    Closed,
    Agent(AgentError),
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallError::Rpc(e) => write!(f, "{e}"),
            CallError::Closed => write!(f, "the agent's output ended"),
            CallError::Agent(e) => write!(f, "{e}"),
        }
    }
}

impl From<AgentError> for CallError {
    fn from(e: AgentError) -> CallError {
        CallError::Agent(e)
    }
}

pub struct Rpc {
    pub proc: AgentProcess,
    next_id: u64,
}

impl Rpc {
    pub fn new(proc: AgentProcess) -> Rpc {
        Rpc { proc, next_id: 0 }
    }

    /// Sends a request; returns its id.
    pub async fn request(&mut self, method: &str, params: Value) -> Result<u64, AgentError> {
        self.next_id += 1;
        let id = self.next_id;
        self.proc
            .write(&jsonrpc::request(id, method, params))
            .await?;
        Ok(id)
    }

    pub async fn notify(&mut self, method: &str, params: Value) -> Result<(), AgentError> {
        self.proc
            .write(&jsonrpc::notification(method, params))
            .await
    }

    pub async fn respond(&mut self, id: &Value, result: Value) -> Result<(), AgentError> {
        self.proc.write(&jsonrpc::response(id, result)).await
    }

    /// Answers a request teammated does not serve (`fs/*`, `terminal/*`, ...):
    /// it offered neither in `initialize`, so this is the agent's mistake, but it
    /// must not wait for an answer forever.
    pub async fn refuse(&mut self, id: &Value, method: &str) -> Result<(), AgentError> {
        tracing::debug!(
            method,
            "the agent asked for something teammated does not serve"
        );
        self.proc
            .write(&jsonrpc::error_response(
                id,
                jsonrpc::METHOD_NOT_FOUND,
                &format!("teammated does not serve {method}"),
            ))
            .await
    }

    /// The next message; `None` once the output has ended. Lines that are not
    /// JSON-RPC are logged and skipped. Cancel-safe.
    pub async fn next(&mut self) -> Option<Incoming> {
        loop {
            match self.proc.next_line().await? {
                Line::Json(v) => match jsonrpc::classify(v) {
                    Incoming::Invalid(what) => {
                        tracing::debug!(line = %what, "the agent wrote a line that is not JSON-RPC")
                    }
                    msg => return Some(msg),
                },
                Line::Text(t) => {
                    tracing::debug!(line = %t, "the agent wrote a line that is not JSON")
                }
            }
        }
    }

    /// Makes a request and waits for its answer. Meanwhile notifications are
    /// dropped (a load's replay, command lists) and the agent's own requests
    /// are answered: a permission with `cancelled` (no prompt runs yet), the
    /// rest with an error.
    pub async fn call(&mut self, method: &str, params: Value) -> Result<Value, CallError> {
        let id = self.request(method, params).await?;
        loop {
            match self.next().await.ok_or(CallError::Closed)? {
                Incoming::Response { id: got, result } if got.as_u64() == Some(id) => {
                    return result.map_err(CallError::Rpc);
                }
                Incoming::Request { id, method, .. } => self.turn_away(&id, &method).await?,
                _ => {}
            }
        }
    }

    /// Answers a request that comes while no prompt runs or the work is being
    /// stopped.
    pub async fn turn_away(&mut self, id: &Value, method: &str) -> Result<(), AgentError> {
        if method == "session/request_permission" {
            self.respond(id, wire::cancelled()).await
        } else {
            self.refuse(id, method).await
        }
    }
}
