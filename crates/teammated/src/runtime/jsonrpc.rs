//! JSON-RPC 2.0 messages as newline-delimited JSON: what Codex's app-server and
//! ACP agents speak on stdio, in both directions.
//!
//! Only the message shapes live here; each driver keeps its own table of
//! requests in flight, since what an answer means depends on what was asked.
//! Codex leaves `"jsonrpc"` out of its own messages, so it is never required.

use serde_json::{Value, json};

/// One message from the agent.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// The answer to one of our requests.
    Response {
        id: Value,
        result: Result<Value, RpcError>,
    },
    /// The agent asks us something (a permission, an approval) and waits.
    Request {
        id: Value,
        method: String,
        params: Value,
    },
    /// The agent tells us something.
    Notification { method: String, params: Value },
    /// Neither: logged and skipped.
    Invalid(String),
}

/// An error answer.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    pub data: Option<Value>,
}

impl std::fmt::Display for RpcError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (code {})", self.message, self.code)?;
        if let Some(data) = &self.data {
            write!(f, ": {data}")?;
        }
        Ok(())
    }
}

/// Sorts a parsed line.
pub fn classify(v: Value) -> Incoming {
    let Value::Object(mut m) = v else {
        return Incoming::Invalid(format!("not an object: {v}"));
    };
    let method = m
        .remove("method")
        .and_then(|x| x.as_str().map(str::to_string));
    let params = m.remove("params").unwrap_or(Value::Null);
    let id = m.remove("id");
    match (method, id) {
        (Some(method), Some(id)) if !id.is_null() => Incoming::Request { id, method, params },
        (Some(method), _) => Incoming::Notification { method, params },
        (None, Some(id)) => {
            if let Some(err) = m.remove("error") {
                let code = err.get("code").and_then(Value::as_i64).unwrap_or(0);
                let message = err
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("(no message)")
                    .to_string();
                let data = err.get("data").cloned();
                Incoming::Response {
                    id,
                    result: Err(RpcError {
                        code,
                        message,
                        data,
                    }),
                }
            } else {
                let result = m.remove("result").unwrap_or(Value::Null);
                Incoming::Response {
                    id,
                    result: Ok(result),
                }
            }
        }
        (None, None) => Incoming::Invalid(Value::Object(m).to_string()),
    }
}

pub fn request(id: u64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

pub fn notification(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": method, "params": params})
}

pub fn response(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

pub fn error_response(id: &Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// The standard "no such method" code, for requests a driver does not serve.
pub const METHOD_NOT_FOUND: i64 = -32601;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shape_is_told_apart() {
        assert!(matches!(
            classify(json!({"id": 1, "result": {"ok": true}})),
            Incoming::Response { result: Ok(_), .. }
        ));
        let Incoming::Response { result: Err(e), .. } =
            classify(json!({"id": 2, "error": {"code": -32600, "message": "bad"}}))
        else {
            panic!("not an error response")
        };
        assert_eq!((e.code, e.message.as_str()), (-32600, "bad"));
        assert!(matches!(
            classify(json!({"id": 0, "method": "session/request_permission", "params": {}})),
            Incoming::Request { .. }
        ));
        assert!(matches!(
            classify(json!({"method": "turn/started", "params": {}})),
            Incoming::Notification { .. }
        ));
        assert!(matches!(classify(json!([1])), Incoming::Invalid(_)));
        assert!(matches!(classify(json!({"x": 1})), Incoming::Invalid(_)));
    }
}
