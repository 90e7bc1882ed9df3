//! The MCP server's stdio loop (`teamboard_mcp::serve`): line limits,
//! JSON-RPC, the methods, and a tool call's arguments read as the board reads
//! them (`BoardCall::parse`, what `OwnBoard` and the teammate's member socket
//! do first). The call goes no further: there is no board behind it.

use serde_json::json;
use teamboard_mcp::{Answer, Board, Mode};
use teamboard_protocol::board_call::BoardCall;
use teamboard_protocol::member::{MemberCall, MemberReply};

/// A board that reads each call and carries out none.
struct Parsed;

impl Board for Parsed {
    fn mode(&self) -> Mode {
        Mode::Own
    }

    async fn call(&mut self, call: MemberCall) -> Answer {
        Answer::from(match BoardCall::parse(&call) {
            Ok(parsed) => MemberReply::Ok {
                value: json!(format!("{parsed:?}")),
            },
            Err(bad) => MemberReply::error(bad.0),
        })
    }
}

/// The bytes an MCP client writes to the server's stdin.
pub fn mcp_jsonrpc(data: &[u8]) {
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread().build() else {
        return;
    };
    let mut out = Vec::new();
    let _ = runtime.block_on(teamboard_mcp::serve(data, &mut out, Parsed));
}
