//! teammated: one teammate of a teamboard team.
//!
//! A teammate registers with boardd, then alternates between two phases:
//!
//! - **WORK**: an LLM loop with tools (shell, files, tasks, messages) on the task it
//!   holds, with new inbox messages fed in between tool rounds;
//! - **IDLE**: one wait on boardd, which answers with the teammate's messages first
//!   and otherwise with a task it claimed for the teammate atomically. No model call
//!   happens while idle.
//!
//! The binary is a thin shell around [`run`], so that tests can run teammates
//! in-process as well as as real processes.

pub mod backoff;
mod board_text;
mod board_view;
pub mod config;
pub mod context;
pub mod error;
pub mod heartbeat;
mod idle;
pub mod lead;
pub mod llm;
mod member;
mod messages;
pub mod model_loop;
mod prompts;
pub mod provider_args;
pub mod runtime;
pub mod session;
pub mod teammate;
pub mod tools;
pub mod transcript;
mod work;
pub mod worktree;

pub use config::{Config, MaxTokensField, ProviderConfig, ProviderKind};
pub use error::Error;
pub use teammate::{Exit, run};
