//! The tools a teammate's model can call.
//!
//! Local tools (shell and files) run here, confined to the working directory. Task and
//! team tools talk to boardd and live with the teammate's board side
//! (`crate::teammate`), because they need the session and the current claim. Every
//! tool answers with a [`ToolOutput`]; a failure is an output with `is_error` set that
//! the model can read and react to, never a crash of the teammate.
//!
//! Imports run one way: this module dispatches to each tool, and the tools share the
//! leaf module [`call`] (environment, arguments, output) instead of naming this one.
//! The `bash` tool's processes are supervised by [`guard`] (the process that runs
//! each command) and kept track of by `guards` (the guards of finished commands),
//! both leaves too.

pub mod call;
pub mod confine;
pub mod files;
pub mod glob;
pub mod guard;
mod guards;
pub mod shell;
pub mod specs;

pub use call::{LocalEnv, ToolOutput, str_arg};
pub use guards::Guards;

use serde_json::Value;

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
