//! The MCP methods, and the loop that serves them on stdio.
//!
//! Messages are handled one at a time, in the order they came: a tool call
//! that waits (a completion while the checks run) holds the next message back,
//! which MCP allows, and which keeps the calls of one agent in order on the
//! board. Nothing the client sends ends the server but the end of its stdin.

use crate::board::Board;
use crate::error::McpError;
use crate::jsonrpc::{self, INVALID_PARAMS, INVALID_REQUEST, Incoming, METHOD_NOT_FOUND, RpcError};
use crate::tools;
use serde_json::{Value, json};
use teamboard_protocol::member::{MAX_MEMBER_LINE, MemberCall};
use tokio::io::{
    AsyncBufRead, AsyncBufReadExt as _, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _,
};
use tracing::Instrument as _;

/// The protocol versions the server speaks, newest first. A client asking for
/// another gets the newest, and decides itself whether it can go on.
pub const PROTOCOL_VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// The longest line read: a call's arguments go on to the teammate or boardd,
/// which take at most a MiB, so this leaves room for the envelope only.
pub const MAX_LINE: usize = MAX_MEMBER_LINE + 64 * 1024;

/// The MCP methods over a [`Board`].
pub struct Server<B> {
    board: B,
}

impl<B: Board> Server<B> {
    pub fn new(board: B) -> Server<B> {
        Server { board }
    }

    /// The board, for a caller that wants it back.
    pub fn into_board(self) -> B {
        self.board
    }

    /// Handles one line: the response to write, if any.
    pub async fn handle(&mut self, line: &[u8]) -> Option<Value> {
        match jsonrpc::read(line) {
            Err(answer) => Some(answer),
            // Notifications (`initialized`, `cancelled`, progress) need no answer,
            // and the server sends no requests whose responses it would wait for.
            Ok(Incoming::Notification { .. } | Incoming::Response) => None,
            Ok(Incoming::Request { id, method, params }) => {
                Some(match self.request(&method, params).await {
                    Ok(result) => jsonrpc::result(id, result),
                    Err(e) => jsonrpc::error(id, &e),
                })
            }
        }
    }

    async fn request(&mut self, method: &str, params: Value) -> Result<Value, RpcError> {
        match method {
            "initialize" => Ok(initialize(&params)),
            "ping" => Ok(json!({})),
            "tools/list" => Ok(json!({"tools": tools::list(self.board.mode())})),
            "tools/call" => self.call(params).await,
            // Among them Claude Code's `server/discover` probe of a newer protocol:
            // "not found" makes it fall back to `initialize`.
            _ => Err(RpcError::new(
                METHOD_NOT_FOUND,
                format!("Method not found: {method}"),
            )),
        }
    }

    async fn call(&mut self, params: Value) -> Result<Value, RpcError> {
        let Some(name) = params.get("name").and_then(Value::as_str) else {
            return Err(RpcError::new(
                INVALID_PARAMS,
                "tools/call needs the tool's \"name\"",
            ));
        };
        if !tools::is_tool(name) {
            return Err(RpcError::new(
                INVALID_PARAMS,
                format!("Unknown tool: {name}"),
            ));
        }
        let arguments = params.get("arguments").cloned().unwrap_or(Value::Null);
        let answer = self
            .board
            .call(MemberCall {
                tool: name.to_string(),
                arguments,
            })
            .instrument(tracing::info_span!("tools/call", tool = name))
            .await;
        Ok(tools::call_result(answer))
    }
}

/// The answer to `initialize`: the client's version when the server speaks it.
fn initialize(params: &Value) -> Value {
    let asked = params.get("protocolVersion").and_then(Value::as_str);
    let version = PROTOCOL_VERSIONS
        .iter()
        .find(|v| Some(**v) == asked)
        .unwrap_or(&PROTOCOL_VERSIONS[0]);
    json!({
        "protocolVersion": version,
        "capabilities": {"tools": {"listChanged": false}},
        "serverInfo": {"name": crate::SERVER_NAME, "version": env!("CARGO_PKG_VERSION")},
    })
}

/// Serves MCP on `input` and `output` until `input` ends. Only the two streams
/// failing stop it early.
pub async fn serve<R, W, B>(input: R, mut output: W, board: B) -> Result<B, McpError>
where
    R: AsyncBufRead + Unpin,
    W: AsyncWrite + Unpin,
    B: Board,
{
    let mut server = Server::new(board);
    let mut input = input;
    let mut line = Vec::new();
    loop {
        line.clear();
        let read = (&mut input)
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut line)
            .await
            .map_err(McpError::Read)?;
        if read == 0 {
            return Ok(server.into_board());
        }
        let answer = if line.len() > MAX_LINE {
            // Too long to be a call that could be carried out: skip the rest of
            // it and say so once.
            let mut rest = Vec::new();
            input
                .read_until(b'\n', &mut rest)
                .await
                .map_err(McpError::Read)?;
            Some(jsonrpc::error(
                Value::Null,
                &RpcError::new(
                    INVALID_REQUEST,
                    format!("Invalid Request: the message is longer than {MAX_LINE} bytes"),
                ),
            ))
        } else if line.iter().all(u8::is_ascii_whitespace) {
            None
        } else {
            server.handle(&line).await
        };
        if let Some(answer) = answer {
            let mut bytes = answer.to_string().into_bytes();
            bytes.push(b'\n');
            output.write_all(&bytes).await.map_err(McpError::Write)?;
            output.flush().await.map_err(McpError::Write)?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::board::{Answer, Mode};
    use teamboard_protocol::member::MemberReply;

    /// A board that answers every call with its own arguments.
    struct Echo {
        calls: Vec<MemberCall>,
    }

    impl Board for Echo {
        fn mode(&self) -> Mode {
            Mode::Own
        }

        async fn call(&mut self, call: MemberCall) -> Answer {
            self.calls.push(call.clone());
            Answer::from(MemberReply::Ok {
                value: json!({"echo": call.arguments}),
            })
        }
    }

    fn echo() -> Echo {
        Echo { calls: Vec::new() }
    }

    async fn run(lines: &str) -> (Vec<Value>, Echo) {
        let mut out = Vec::new();
        let board = serve(lines.as_bytes(), &mut out, echo())
            .await
            .expect("served");
        let answers = String::from_utf8(out)
            .expect("utf-8")
            .lines()
            .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
            .collect();
        (answers, board)
    }

    /// What Claude Code 2.1 sends, in its order (docs/design/runtime-claude.md §8).
    #[tokio::test]
    async fn a_claude_code_session() {
        let session = concat!(
            r#"{"jsonrpc":"2.0","id":"server-discover-probe-1","method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#,
            "\n",
            r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"roots":{},"elicitation":{}},"clientInfo":{"name":"claude-code","version":"2.1.332"}}}"#,
            "\n",
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            "\n",
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#,
            "\n",
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"send_message","arguments":{"to":"lead","text":"hi"},"_meta":{"claudecode/toolUseId":"toolu_0004","progressToken":2}}}"#,
            "\n",
        );
        let (answers, board) = run(session).await;
        assert_eq!(answers.len(), 4, "{answers:?}");
        assert_eq!(answers[0]["id"], "server-discover-probe-1");
        assert_eq!(answers[0]["error"]["code"], METHOD_NOT_FOUND);
        assert_eq!(answers[1]["result"]["protocolVersion"], "2025-11-25");
        assert_eq!(
            answers[1]["result"]["capabilities"]["tools"],
            json!({"listChanged": false})
        );
        assert_eq!(answers[1]["result"]["serverInfo"]["name"], "teamboard");
        let names: Vec<&str> = answers[2]["result"]["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .filter_map(|t| t["name"].as_str())
            .collect();
        assert_eq!(
            names,
            [
                "list_tasks",
                "get_task",
                "create_task",
                "send_message",
                "complete_task",
                "fail_task",
                "submit_plan"
            ]
        );
        assert_eq!(answers[3]["id"], 2);
        assert_eq!(answers[3]["result"]["isError"], false);
        assert_eq!(
            answers[3]["result"]["structuredContent"],
            json!({"echo": {"to": "lead", "text": "hi"}})
        );
        assert_eq!(board.calls.len(), 1);
    }

    #[tokio::test]
    async fn versions_it_does_not_speak_get_its_newest() {
        let mut server = Server::new(echo());
        let init = |v: &str| {
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":"{v}"}}}}"#
            )
        };
        for (asked, given) in [
            ("2025-06-18", "2025-06-18"),
            ("2024-11-05", "2024-11-05"),
            ("1999-01-01", "2025-11-25"),
        ] {
            let answer = server
                .handle(init(asked).as_bytes())
                .await
                .expect("an answer");
            assert_eq!(answer["result"]["protocolVersion"], given);
        }
    }

    #[tokio::test]
    async fn bad_input_is_answered_and_the_server_goes_on() {
        let lines = [
            "{not json",
            "",
            "   ",
            r#"{"jsonrpc":"2.0","id":1,"method":"resources/list"}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"make_coffee"}}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#,
            r#"{"jsonrpc":"2.0","id":4,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":5,"method":"ping"}"#,
        ]
        .join("\n");
        let (answers, board) = run(&lines).await;
        let codes: Vec<Value> = answers.iter().map(|a| a["error"]["code"].clone()).collect();
        assert_eq!(
            codes,
            [
                json!(jsonrpc::PARSE_ERROR),
                json!(METHOD_NOT_FOUND),
                json!(INVALID_PARAMS),
                json!(INVALID_PARAMS),
                Value::Null,
            ]
        );
        assert!(
            answers[2]["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("make_coffee"))
        );
        assert_eq!(answers[4], json!({"jsonrpc": "2.0", "id": 5, "result": {}}));
        assert!(board.calls.is_empty());
    }

    #[tokio::test]
    async fn an_overlong_line_is_refused_once_and_skipped() {
        let long = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{{\"x\":\"{}\"}}}}\n",
            "a".repeat(MAX_LINE)
        );
        let lines = format!("{long}{}\n", r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#);
        let (answers, _) = run(&lines).await;
        assert_eq!(answers.len(), 2, "{answers:?}");
        assert_eq!(answers[0]["error"]["code"], INVALID_REQUEST);
        assert_eq!(answers[1]["id"], 2);
    }

    #[tokio::test]
    async fn a_last_line_without_a_newline_is_served() {
        let (answers, _) = run(r#"{"jsonrpc":"2.0","id":9,"method":"ping"}"#).await;
        assert_eq!(answers, [json!({"jsonrpc": "2.0", "id": 9, "result": {}})]);
    }
}
