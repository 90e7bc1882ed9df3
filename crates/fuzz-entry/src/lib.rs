//! The entry points of the fuzz targets, one per parser of outside input.
//!
//! Each `pub fn NAME(data: &[u8])` feeds arbitrary bytes to the function that
//! production runs on what comes from outside: a client's frames, an MCP
//! client's lines, an agent CLI's stdout, a model API's answer. They must
//! never panic; a panic is a bug in the parser, not in the entry.
//!
//! Why a crate of its own, in the workspace, rather than code in `fuzz/`:
//! `fuzz/` is a cargo-fuzz crate that needs nightly and libFuzzer, so it lives
//! outside the workspace and CI never builds it. The entries live here, where
//! `cargo test --workspace` builds them against the current code and replays
//! every stored input (`tests/replay.rs`): a corpus file that panics fails CI,
//! and an entry that no longer compiles is seen at once, not at the next
//! fuzzing run. The libFuzzer targets are one line each over these functions.
//!
//! Where production decodes inside an async loop tied to a process or a
//! socket, the entry drives the pure step that loop already calls (boardd's
//! `decode`, the runtimes' state machines, `llm::http::read_answer`), made
//! public under `#[doc(hidden)]` for this crate only. What the entry adds is
//! the plumbing the loop would do: splitting bytes into frames or lines, and
//! the driver's own calls (a send, an interrupt, a plan decision), which a
//! script line asks for (see [`script`]).

mod acp;
mod boardd;
mod claude;
mod codex;
mod llm;
mod mcp;
pub mod script;

pub use acp::acp;
pub use boardd::boardd_frame;
pub use claude::claude_stream;
pub use codex::codex_app_server;
pub use llm::{llm_anthropic, llm_openai};
pub use mcp::mcp_jsonrpc;

/// A target's entry.
pub type Entry = fn(&[u8]);

/// Every target by name, for the replay test.
pub const TARGETS: &[(&str, Entry)] = &[
    ("boardd_frame", boardd_frame),
    ("mcp_jsonrpc", mcp_jsonrpc),
    ("claude_stream", claude_stream),
    ("codex_app_server", codex_app_server),
    ("acp", acp),
    ("llm_anthropic", llm_anthropic),
    ("llm_openai", llm_openai),
];
