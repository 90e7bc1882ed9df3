//! A teammate's transcript on disk, as `teammated` writes it and `teamctl logs`
//! reads it.
//!
//! Each teammate appends one JSON object per line to
//! `<state dir>/teammates/<team>/<name>/transcript.jsonl`. The file is the whole
//! conversation as it happened, including what compaction later summarised away, so a
//! person can always see what the model saw and did.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Who or what produced an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[derive(strum::Display, strum::IntoStaticStr)]
#[strum(serialize_all = "snake_case")]
#[cfg_attr(test, derive(strum::VariantArray))]
pub enum EntryKind {
    /// Something the runtime put into the context: a claimed task, a message, the
    /// identity block.
    User,
    /// Text the model wrote.
    Assistant,
    /// The model asked for a tool; `tool` names it and `text` holds its input as JSON.
    ToolUse,
    /// What a tool answered; `is_error` marks failures.
    ToolResult,
    /// A lifecycle change of the runtime itself: idle, work, compaction, shutdown.
    Lifecycle,
}

/// One line of a transcript.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TranscriptEntry {
    /// Milliseconds since the Unix epoch.
    pub at: i64,
    pub kind: EntryKind,
    /// The tool's name, for `tool_use` and `tool_result`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// The task the teammate held when the entry was written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<u64>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
    pub text: String,
}

/// The folder that holds one teammate's transcript, archives and process log.
pub fn teammate_dir(state_dir: &Path, team: &str, name: &str) -> PathBuf {
    state_dir.join("teammates").join(team).join(name)
}

/// The live transcript file of a teammate.
pub fn transcript_path(state_dir: &Path, team: &str, name: &str) -> PathBuf {
    teammate_dir(state_dir, team, name).join("transcript.jsonl")
}

/// Where `teamctl spawn` sends a teammate's stdout and stderr.
pub fn process_log_path(state_dir: &Path, team: &str, name: &str) -> PathBuf {
    teammate_dir(state_dir, team, name).join("teammated.log")
}
