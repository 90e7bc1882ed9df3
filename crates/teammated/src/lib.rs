//! teammated: one teammate of a teamboard team.
//!
//! A teammate registers with boardd, then alternates between two phases:
//!
//! - **WORK**: an LLM loop with tools (shell, files, tasks, messages) on the task it
//!   holds, with new inbox messages fed in between tool rounds, or an agent runtime
//!   (Claude Code, Codex, an ACP agent) driven through its structured interface;
//! - **IDLE**: one wait on boardd, which answers with the teammate's messages first
//!   and otherwise with a task it claimed for the teammate atomically. No model call
//!   happens while idle.
//!
//! Its rooms: `teammate` is the board side (the session, the held task and its
//! fence, what the team asks), `work` is the work on it (the native loop or an
//! agent run), and [`model_loop`] is the one model loop, which the native work and
//! the lead ([`lead`]) both run as front ends. `run` opens the two sides and drives
//! them; `docs/architecture.md` follows one task through them.
//!
//! The binary is a thin shell around [`run`], so that tests can run teammates
//! in-process as well as as real processes.

pub mod accounts;
pub mod backoff;
mod board_text;
mod board_view;
pub mod config;
pub mod context;
pub mod error;
pub mod heartbeat;
pub mod lead;
pub mod llm;
mod member;
pub mod meter;
pub mod model_loop;
mod prompts;
pub mod provider_args;
mod run;
pub mod runtime;
mod sandbox;
pub mod session;
pub mod teammate;
pub mod tools;
pub mod transcript;
mod work;
pub mod worktree;

pub use config::{Config, MaxTokensField, ProviderConfig, ProviderKind};
pub use error::Error;
pub use run::run;
pub use teammate::Exit;
