//! The tools a teammate's model can call.
//!
//! Local tools (shell and files) run here, confined to the working directory. Task and
//! team tools talk to boardd and live with the work loop in `crate::work::board_tools`,
//! because they need the session and the current claim. Every tool answers with a
//! [`ToolOutput`]; a failure is an output with `is_error` set that the model can read
//! and react to, never a crash of the teammate.

pub mod confine;
pub mod files;
pub mod glob;
pub mod shell;
pub mod specs;

use serde_json::Value;
use std::path::PathBuf;
use std::time::Duration;

/// What a tool answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutput {
    pub content: String,
    pub is_error: bool,
}

impl ToolOutput {
    pub fn ok(content: impl Into<String>) -> ToolOutput {
        ToolOutput {
            content: content.into(),
            is_error: false,
        }
    }

    pub fn error(content: impl Into<String>) -> ToolOutput {
        ToolOutput {
            content: content.into(),
            is_error: true,
        }
    }
}

/// What the local tools need.
#[derive(Debug, Clone)]
pub struct LocalEnv {
    /// The working directory: the shell's cwd and the root file tools are confined to.
    pub workdir: PathBuf,
    /// The `bash` timeout when the model names none.
    pub shell_timeout: Duration,
}

/// The names of the tools [`run_local`] handles.
pub const LOCAL_TOOLS: [&str; 5] = ["bash", "read_file", "write_file", "edit_file", "glob"];

/// Runs a local tool. `None` when `name` is not a local tool.
pub async fn run_local(env: &LocalEnv, name: &str, input: &Value) -> Option<ToolOutput> {
    let out = match name {
        "bash" => shell::run(env, input).await,
        "read_file" => files::read(env, input).await,
        "write_file" => files::write(env, input).await,
        "edit_file" => files::edit(env, input).await,
        "glob" => glob::run(env, input).await,
        _ => return None,
    };
    Some(out)
}

/// Reads a required string argument, or explains what is missing.
pub fn str_arg<'a>(input: &'a Value, key: &str) -> Result<&'a str, ToolOutput> {
    input.get(key).and_then(Value::as_str).ok_or_else(|| {
        ToolOutput::error(format!(
            "missing or non-string argument '{key}'; got {input}"
        ))
    })
}
