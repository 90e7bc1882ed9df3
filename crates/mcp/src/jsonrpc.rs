//! JSON-RPC 2.0 as MCP's stdio transport uses it: one message per line, each a
//! JSON object (protocol version 2025-06-18 dropped batches). Reading a line gives a
//! request, a notification or a response; anything else gets the error that
//! JSON-RPC names for it, and the connection goes on.

use serde_json::{Map, Value, json};

/// The line is not JSON.
pub const PARSE_ERROR: i64 = -32700;
/// JSON, but not a JSON-RPC message.
pub const INVALID_REQUEST: i64 = -32600;
pub const METHOD_NOT_FOUND: i64 = -32601;
pub const INVALID_PARAMS: i64 = -32602;

/// One message from the client.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// Wants an answer with the same `id`.
    Request {
        id: Value,
        method: String,
        params: Value,
    },
    /// Wants none.
    Notification { method: String, params: Value },
    /// The answer to a request of ours. The server sends none, so it is dropped.
    Response,
}

/// An error to answer with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
}

impl RpcError {
    pub fn new(code: i64, message: impl Into<String>) -> RpcError {
        RpcError {
            code,
            message: message.into(),
        }
    }
}

/// Reads one line. `Err` is the error response to write back.
pub fn read(line: &[u8]) -> Result<Incoming, Value> {
    let value: Value = serde_json::from_slice(line).map_err(|e| {
        error(
            Value::Null,
            &RpcError::new(PARSE_ERROR, format!("Parse error: {e}")),
        )
    })?;
    let Value::Object(mut msg) = value else {
        return Err(invalid(
            Value::Null,
            "a message is one JSON object (batches are not supported)",
        ));
    };
    // The id, when it is one a response can carry back.
    let id = match msg.remove("id") {
        None => None,
        Some(id @ (Value::String(_) | Value::Number(_))) => Some(id),
        Some(other) => {
            return Err(invalid(
                Value::Null,
                &format!("the id must be a string or a number, not {other}"),
            ));
        }
    };
    let answer_to = id.clone().unwrap_or(Value::Null);
    if msg.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(invalid(answer_to, "\"jsonrpc\" must be \"2.0\""));
    }
    let params = msg.remove("params").unwrap_or(Value::Null);
    match (msg.remove("method"), id) {
        (Some(Value::String(method)), Some(id)) => Ok(Incoming::Request { id, method, params }),
        (Some(Value::String(method)), None) => Ok(Incoming::Notification { method, params }),
        (Some(_), _) => Err(invalid(answer_to, "\"method\" must be a string")),
        (None, _) if is_response(&msg) => Ok(Incoming::Response),
        (None, _) => Err(invalid(answer_to, "the message has no \"method\"")),
    }
}

fn is_response(msg: &Map<String, Value>) -> bool {
    msg.contains_key("result") || msg.contains_key("error")
}

fn invalid(id: Value, why: &str) -> Value {
    error(
        id,
        &RpcError::new(INVALID_REQUEST, format!("Invalid Request: {why}")),
    )
}

/// A success response.
pub fn result(id: Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// An error response.
pub fn error(id: Value, e: &RpcError) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": e.code, "message": e.message}})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(answer: &Value) -> i64 {
        answer["error"]["code"].as_i64().expect("an error response")
    }

    #[test]
    fn requests_notifications_and_responses() {
        assert_eq!(
            read(br#"{"jsonrpc":"2.0","id":"server-discover-probe-1","method":"server/discover","params":{}}"#),
            Ok(Incoming::Request {
                id: json!("server-discover-probe-1"),
                method: "server/discover".into(),
                params: json!({}),
            })
        );
        assert_eq!(
            read(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            Ok(Incoming::Notification {
                method: "notifications/initialized".into(),
                params: Value::Null,
            })
        );
        assert_eq!(
            read(br#"{"jsonrpc":"2.0","id":4,"result":{}}"#),
            Ok(Incoming::Response)
        );
    }

    #[test]
    fn bad_lines_get_the_error_json_rpc_names() {
        let parse = read(b"{not json").expect_err("not JSON");
        assert_eq!(code(&parse), PARSE_ERROR);
        assert_eq!(parse["id"], Value::Null);
        for (line, id) in [
            (
                &br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#[..],
                Value::Null,
            ),
            (br#""ping""#, Value::Null),
            (br#"{"jsonrpc":"1.0","id":7,"method":"ping"}"#, json!(7)),
            (
                br#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
                Value::Null,
            ),
            (br#"{"jsonrpc":"2.0","id":{},"method":"ping"}"#, Value::Null),
            (br#"{"jsonrpc":"2.0","id":"a","method":3}"#, json!("a")),
            (br#"{"jsonrpc":"2.0","id":"b"}"#, json!("b")),
        ] {
            let answer = read(line).expect_err(&String::from_utf8_lossy(line));
            assert_eq!(code(&answer), INVALID_REQUEST, "{answer}");
            assert_eq!(answer["id"], id, "{answer}");
            assert_eq!(answer["jsonrpc"], "2.0");
        }
    }
}
