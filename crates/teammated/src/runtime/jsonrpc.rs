//! JSON-RPC 2.0 as newline-delimited JSON on an agent's stdio, with requests in
//! both directions: what Codex's app-server and ACP agents speak. One module for
//! both drivers: the message shapes, the table of our requests in flight
//! ([`Requests`]: each numbered, each answer read as what it answers) and
//! [`Peer`], the conversation over an [`AgentProcess`] for a driver that does its
//! own I/O (ACP). Codex's session is a state machine without I/O
//! (`codex::state`), so it keeps a [`Requests`] and hands its lines to its actor.
//!
//! By hand, since the crates with JSON-RPC types do not fit: the ACP schema
//! crate's `JsonRpcMessage` and `rmcp`'s require `"jsonrpc": "2.0"` in every
//! message, and `jsonrpsee-types` in requests, which Codex leaves out of its own
//! (the ACP crate also turns on `serde_json`'s `preserve_order` for the whole
//! build, see `acp::wire`; jsonrpsee's params are raw JSON text, which a parsed
//! `Value` cannot give). A connection layer (`agent-client-protocol`'s,
//! jsonrpsee's client) would own the pipes that [`AgentProcess`] must own for
//! its process guard, cancel-safe reads and the stderr tail of a crash report.

use crate::runtime::AgentError;
use crate::runtime::process::{AgentProcess, Line};
use serde_json::{Value, json};
use std::collections::HashMap;

/// One message from the agent, an answer already matched to its request.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming<A> {
    /// The answer to one of our requests: what that request asked, and the
    /// result.
    Response {
        asked: A,
        result: Result<Value, RpcError>,
    },
    /// The agent asks us something (a permission, an approval) and waits: it
    /// must be answered, or the agent waits forever.
    Request {
        id: Value,
        method: String,
        params: Value,
    },
    /// The agent tells us something.
    Notification { method: String, params: Value },
}

/// An error answer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message} (code {code}){}", data.as_ref().map(|d| format!(": {d}")).unwrap_or_default())]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    pub data: Option<Value>,
}

/// The standard "no such method" code, for requests a driver does not serve.
pub const METHOD_NOT_FOUND: i64 = -32601;

pub fn response(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

pub fn error_response(id: &Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

pub fn notification(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": method, "params": params})
}

/// Our requests whose answers have not come: each is numbered (from 1), and
/// its answer comes back as what it asked (`A`), since what an answer means
/// depends on the question. `"jsonrpc"` is never required of the agent.
#[derive(Debug)]
pub struct Requests<A> {
    next_id: u64,
    asked: HashMap<u64, A>,
}

impl<A> Default for Requests<A> {
    fn default() -> Self {
        Requests {
            next_id: 0,
            asked: HashMap::new(),
        }
    }
}

impl<A> Requests<A> {
    /// Numbers a request and remembers what it asks: returns the line to write.
    pub fn ask(&mut self, method: &str, params: Value, asked: A) -> Value {
        self.next_id += 1;
        self.asked.insert(self.next_id, asked);
        json!({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
    }

    /// What the requests still waiting for an answer asked.
    pub fn pending(&self) -> impl Iterator<Item = &A> {
        self.asked.values()
    }

    /// Sorts a line from the agent. `None` for a line that is not JSON-RPC
    /// and for an answer to nothing we are waiting for: both are logged and
    /// skipped.
    pub fn read(&mut self, line: Value) -> Option<Incoming<A>> {
        let Value::Object(mut m) = line else {
            tracing::debug!(%line, "the agent wrote a line that is not JSON-RPC");
            return None;
        };
        let method = m
            .remove("method")
            .and_then(|x| x.as_str().map(str::to_string));
        let params = m.remove("params").unwrap_or(Value::Null);
        let id = m.remove("id");
        match (method, id) {
            (Some(method), Some(id)) if !id.is_null() => {
                Some(Incoming::Request { id, method, params })
            }
            (Some(method), _) => Some(Incoming::Notification { method, params }),
            (None, Some(id)) => {
                let Some(asked) = id.as_u64().and_then(|n| self.asked.remove(&n)) else {
                    tracing::debug!(%id, "the agent answered a request it was not asked");
                    return None;
                };
                let result = match m.remove("error") {
                    Some(err) => Err(RpcError {
                        code: err.get("code").and_then(Value::as_i64).unwrap_or(0),
                        message: err
                            .get("message")
                            .and_then(Value::as_str)
                            .unwrap_or("(no message)")
                            .to_string(),
                        data: err.get("data").cloned(),
                    }),
                    None => Ok(m.remove("result").unwrap_or(Value::Null)),
                };
                Some(Incoming::Response { asked, result })
            }
            (None, None) => {
                let line = Value::Object(m);
                tracing::debug!(%line, "the agent wrote a line that is not JSON-RPC");
                None
            }
        }
    }
}

/// The JSON-RPC conversation with an agent's process, for a driver that does
/// its own I/O. Every line is written whole by one `write`; reading is
/// cancel-safe ([`AgentProcess::next_line`]).
pub struct Peer<A> {
    pub proc: AgentProcess,
    requests: Requests<A>,
}

impl<A> Peer<A> {
    pub fn new(proc: AgentProcess) -> Peer<A> {
        Peer {
            proc,
            requests: Requests::default(),
        }
    }

    /// Sends a request; its answer comes from [`Peer::next`] as `asked`.
    pub async fn request(
        &mut self,
        method: &str,
        params: Value,
        asked: A,
    ) -> Result<(), AgentError> {
        // One that cannot be sent stays in the table: the agent is gone.
        let line = self.requests.ask(method, params, asked);
        self.proc.write(&line).await
    }

    pub async fn notify(&mut self, method: &str, params: Value) -> Result<(), AgentError> {
        self.proc.write(&notification(method, params)).await
    }

    pub async fn respond(&mut self, id: &Value, result: Value) -> Result<(), AgentError> {
        self.proc.write(&response(id, result)).await
    }

    /// Answers a request the driver does not serve with "no such method":
    /// the agent must not wait for an answer forever.
    pub async fn refuse(&mut self, id: &Value, method: &str) -> Result<(), AgentError> {
        tracing::debug!(
            method,
            "the agent asked for something teammated does not serve"
        );
        let why = format!("teammated does not serve {method}");
        self.proc
            .write(&error_response(id, METHOD_NOT_FOUND, &why))
            .await
    }

    /// The next message; `None` once the output has ended. Lines that are not
    /// JSON-RPC, and answers to nothing asked, are logged and skipped.
    /// Cancel-safe.
    pub async fn next(&mut self) -> Option<Incoming<A>> {
        loop {
            match self.proc.next_line().await? {
                Line::Json(v) => {
                    if let Some(msg) = self.requests.read(v) {
                        return Some(msg);
                    }
                }
                Line::Text(t) => {
                    tracing::debug!(line = %t, "the agent wrote a line that is not JSON")
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shape_is_told_apart_and_answers_find_their_question() {
        let mut requests = Requests::default();
        assert_eq!(
            requests.ask("initialize", json!({}), "init"),
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}})
        );
        assert_eq!(requests.ask("session/new", json!({}), "new")["id"], 2);
        assert_eq!(requests.pending().count(), 2);
        // Codex leaves "jsonrpc" out.
        assert_eq!(
            requests.read(json!({"id": 2, "error": {"code": -32600, "message": "bad"}})),
            Some(Incoming::Response {
                asked: "new",
                result: Err(RpcError {
                    code: -32600,
                    message: "bad".into(),
                    data: None
                })
            })
        );
        assert_eq!(
            requests.read(json!({"id": 1, "result": {"ok": true}})),
            Some(Incoming::Response {
                asked: "init",
                result: Ok(json!({"ok": true}))
            })
        );
        // Each is answered once; an answer to nothing asked is skipped.
        assert_eq!(requests.read(json!({"id": 1, "result": {}})), None);
        assert_eq!(requests.read(json!({"id": "x", "result": {}})), None);
        assert_eq!(requests.pending().count(), 0);
        assert!(matches!(
            requests.read(json!({"id": 0, "method": "session/request_permission", "params": {}})),
            Some(Incoming::Request { .. })
        ));
        assert!(matches!(
            requests.read(json!({"method": "turn/started", "params": {}})),
            Some(Incoming::Notification { .. })
        ));
        // How a Gemini error reads in a transcript.
        requests.ask("session/load", json!({}), "load");
        let Some(Incoming::Response { result: Err(e), .. }) = requests.read(json!({"id": 3,
            "error": {"code": -32603, "message": "Internal error",
                      "data": {"details": "No previous sessions found for this project."}}}))
        else {
            panic!("not an error answer")
        };
        assert_eq!(
            e.to_string(),
            r#"Internal error (code -32603): {"details":"No previous sessions found for this project."}"#
        );
        assert_eq!(requests.read(json!([1])), None);
        assert_eq!(requests.read(json!({"x": 1})), None);
    }
}
