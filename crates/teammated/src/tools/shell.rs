//! The `bash` tool.
use super::{LocalEnv, ToolOutput};
use serde_json::Value;

pub async fn run(_env: &LocalEnv, _input: &Value) -> ToolOutput {
    ToolOutput::error("bash: not implemented yet")
}
