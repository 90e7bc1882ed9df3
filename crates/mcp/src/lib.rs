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
//! protocol is written by hand with serde_json ([`jsonrpc`], `server.rs`): the
//! part used (`initialize`, `ping`, `tools/list`, `tools/call`) is small, and
//! the schemas are hand-written anyway to hold the token budget.
//!
//! Why not `rmcp`, the official Rust SDK: its server does not keep what
//! clients and this crate's tests rely on, and keeping it would take more code
//! than it replaces.
//! - Its stdio transport answers nothing to a line that is not JSON (here:
//!   -32700), drops an overlong line without a word (here: -32600, once),
//!   drops a last line that has no newline, and answers a batch or a wrong
//!   `jsonrpc` with an "Invalid request" that has no id and no reason.
//! - Its handshake refuses a `tools/call` before `initialize` (a shell pipe
//!   and the tests send one alone), ends the server on a notification before
//!   `initialize`, and answers Claude Code's `server/discover` probe with
//!   -32602 rather than the "not found" that sends it on to `initialize`.
//! - Its loop runs requests concurrently; here an agent's calls reach the
//!   board in the order it made them, and a completion holds the next back.
//!
//! Keeping all that on `rmcp` means a transport of our own around its loop and
//! a gate that undoes its concurrency, which is more code than `jsonrpc.rs` and
//! `server.rs`, for some thirty more crates in the build (schemars, chrono,
//! sha2, …) and nearly twice the clean build time of this crate.

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
