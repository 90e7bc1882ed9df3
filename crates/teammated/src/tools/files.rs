//! `read_file`, `write_file` and `edit_file`.
use super::{LocalEnv, ToolOutput};
use serde_json::Value;

pub async fn read(_env: &LocalEnv, _input: &Value) -> ToolOutput {
    ToolOutput::error("read_file: not implemented yet")
}
pub async fn write(_env: &LocalEnv, _input: &Value) -> ToolOutput {
    ToolOutput::error("write_file: not implemented yet")
}
pub async fn edit(_env: &LocalEnv, _input: &Value) -> ToolOutput {
    ToolOutput::error("edit_file: not implemented yet")
}
