//! The board as an MCP server on stdio, for one named member: what `teamctl mcp`
//! runs. docs/runtimes.md ("The board's MCP server") is the user's contract.
//!
//! An MCP client (Claude Code, Codex, an ACP agent) starts the server as its
//! child and speaks newline-delimited JSON-RPC 2.0 on its stdin and stdout. The
//! server offers seven tools ([`tools`]), the board as a member sees it. Where a
//! call is carried out depends on who started the server, and is a [`Board`]:
//!
//! - [`MemberBoard`]: inside a teammate's agent (`TEAMBOARD_MEMBER_SOCKET` is
//!   set). Every call goes over the member socket to the teammate, which carries
//!   it out with its own session and claim, so that a task the agent completes
//!   goes through the teammate's completion gate and result reporting.
//! - [`OwnBoard`]: a person's own session (`claude mcp add teamboard -- teamctl
//!   mcp --name me`). The server registers the name on boardd itself, claims
//!   with `get_task {claim: true}`, keeps the claim's lease while it runs, and
//!   ends the task it holds.
//!
//! Data flows one way: [`serve`] reads a line, [`Server`] turns it into at most
//! one answer with the help of the board, and the answer is written. The
//! protocol is written by hand with serde_json: the part used (`initialize`,
//! `ping`, `tools/list`, `tools/call`) is small, and the schemas are
//! hand-written anyway to hold the token budget.

mod board;
mod error;
pub mod jsonrpc;
mod member;
mod own;
mod server;
pub mod tools;

pub use board::{Answer, Board, Mode};
pub use error::McpError;
pub use member::{MemberBoard, MemberClient, MemberError};
pub use own::{OwnBoard, OwnConfig};
pub use server::{MAX_LINE, Server, serve};

/// The server's name in `initialize`, and what clients call it by default.
pub const SERVER_NAME: &str = "teamboard";
