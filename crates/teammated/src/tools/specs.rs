//! The JSON schemas of every tool, as the model sees them.
//!
//! The descriptions are the model's only manual for the tools, so they say when to use
//! a tool, what comes back, and the limits it will run into. The local tools' are
//! here; the board tools' are the protocol crate's, next to the one reader of their
//! arguments (`teamboard_protocol::board_call`). `docs/tools.md` shows the same
//! schemas; a test below keeps the two from drifting apart.

use serde_json::json;
use teamboard_protocol::board_call::Front;
pub use teamboard_protocol::board_call::ToolSpec;

/// Every tool a teammate offers its model: the local tools first (in the order of
/// `super::LOCAL_TOOLS`), then the task and team tools.
pub fn all() -> Vec<ToolSpec> {
    let mut all = local();
    all.extend(Front::Teammate.specs());
    all
}

/// The tools [`super::run_local`] runs.
fn local() -> Vec<ToolSpec> {
    vec![
        ToolSpec::new(
            "bash",
            "Run a bash command in the working directory and get its output. Use it to \
             build, test, search (grep, find), run git, and anything else a shell does. \
             Each call is a fresh `bash -c`: `cd` and variables do not carry over to the \
             next call, so chain commands with `&&`. stdin is closed (no interactive \
             programs: pass flags like `--yes`, and no editors or pagers). stdout and \
             stderr come back interleaved, followed by a last line `[exit code: N]`, \
             `[killed by signal N]` or `[timed out after Ns; killed]`. Output over about \
             50 KB keeps its beginning and end with `[... N bytes omitted ...]` between; \
             pipe long output through `tail`, `head` or `grep` yourself. On timeout the \
             command and everything it started are killed. Background jobs (`cmd &`) keep \
             running after the call returns, but their output is discarded: redirect it \
             to a file (`cmd > log 2>&1 &`). Prefer read_file, write_file and edit_file \
             for files.",
            json!({
                "command": {
                    "type": "string",
                    "description": "The bash command line to run."
                },
                "timeout_secs": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": 600,
                    "description": "Seconds before the command is killed. Defaults to the teammate's configured shell timeout; at most 600."
                }
            }),
            &["command"],
        ),
        ToolSpec::new(
            "read_file",
            "Read a text file inside the working directory. Lines come back numbered, as \
             `     1\\tfirst line` (a right-aligned number, a tab, the line); the numbers \
             are not part of the file, so leave them out when you copy text into \
             edit_file. At most `limit` lines (default 2000) are shown from line \
             `offset` (default 1); when more follow, a last line says which offset to \
             read next. Lines over 2000 characters are cut. Binary files and files over \
             10 MB are refused: use bash for those.",
            json!({
                "path": {
                    "type": "string",
                    "description": "The file, relative to the working directory (or absolute inside it)."
                },
                "offset": {
                    "type": "integer",
                    "minimum": 1,
                    "description": "The first line to show, 1-based. Default 1."
                },
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "description": "How many lines to show at most. Default 2000."
                }
            }),
            &["path"],
        ),
        ToolSpec::new(
            "write_file",
            "Create a file or replace its whole content, inside the working directory. \
             Missing parent directories are created. The write is atomic: other readers \
             see the old or the new content, never a mix. Answers `wrote N bytes to \
             PATH`. To change part of an existing file, prefer edit_file: it does not \
             need the rest of the file repeated.",
            json!({
                "path": {
                    "type": "string",
                    "description": "The file, relative to the working directory (or absolute inside it)."
                },
                "content": {
                    "type": "string",
                    "description": "The complete new content of the file."
                }
            }),
            &["path", "content"],
        ),
        ToolSpec::new(
            "edit_file",
            "Replace one passage of a text file: `old_text` must occur in the file \
             exactly once, character for character (indentation, blank lines and line \
             breaks included), and is replaced by `new_text`. If it does not occur, or \
             occurs several times, nothing is changed and the error says which; then \
             read the file again and include more surrounding lines to make old_text \
             unique. To delete a passage, give an empty new_text. Copy old_text from \
             read_file's output without the line-number prefixes.",
            json!({
                "path": {
                    "type": "string",
                    "description": "The file, relative to the working directory (or absolute inside it)."
                },
                "old_text": {
                    "type": "string",
                    "description": "The exact text to replace; must occur exactly once and must not be empty."
                },
                "new_text": {
                    "type": "string",
                    "description": "The text to put in its place (may be empty)."
                }
            }),
            &["path", "old_text", "new_text"],
        ),
        ToolSpec::new(
            "glob",
            "Find files and directories in the working directory by path pattern. `*` \
             matches within one path component, `?` one character, `[abc]` or `[a-z]` \
             one character of a set, and `**` any number of directories: `**/*.rs` finds \
             Rust files at any depth, `src/*.md` only directly in src. Answers matching \
             paths relative to the working directory, sorted, one per line, with a \
             trailing `/` on directories; `no files match` when there are none. At most \
             1000 are listed. `.git` is skipped and symlinked directories are not \
             entered. Use bash with grep to search file contents.",
            json!({
                "pattern": {
                    "type": "string",
                    "description": "The pattern, relative to the working directory, e.g. 'src/**/*.rs' or '*.md'."
                }
            }),
            &["pattern"],
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn names_are_unique_and_local_tools_come_first() {
        let specs = all();
        let from_specs: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(specs.len(), 17);
        let unique: HashSet<&str> = from_specs.iter().copied().collect();
        assert_eq!(unique.len(), specs.len(), "duplicate tool names");
        assert_eq!(
            &from_specs[..super::super::LOCAL_TOOLS.len()],
            super::super::LOCAL_TOOLS
        );
    }

    #[test]
    fn every_schema_is_a_valid_object_schema() {
        for s in all() {
            let name = &s.name;
            assert!(!s.description.is_empty(), "{name}: no description");
            // Providers restrict tool names to [a-zA-Z0-9_-]{1,64}.
            assert!(
                !name.is_empty()
                    && name.len() <= 64
                    && name
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'),
                "{name}: bad name"
            );
            let schema = s.input_schema.as_object().unwrap();
            assert_eq!(schema["type"], "object", "{name}");
            assert_eq!(schema["additionalProperties"], false, "{name}");
            let props = schema["properties"].as_object().unwrap();
            for (key, prop) in props {
                let prop = prop.as_object().unwrap();
                let ty = prop["type"].as_str().unwrap();
                assert!(
                    ["string", "integer", "array", "object", "boolean", "number"].contains(&ty),
                    "{name}.{key}: type {ty}"
                );
                if ty == "array" {
                    assert!(
                        prop["items"].is_object(),
                        "{name}.{key}: array without items"
                    );
                }
                assert!(
                    prop["description"].is_string(),
                    "{name}.{key}: no description"
                );
            }
            for r in schema["required"].as_array().unwrap() {
                let r = r.as_str().unwrap();
                assert!(
                    props.contains_key(r),
                    "{name}: required '{r}' is not a property"
                );
            }
        }
    }

    /// Prints every schema as `docs/tools.md` shows it, to paste after a change:
    /// `cargo test -p teammated --lib print_tool_schemas -- --ignored --nocapture`.
    #[test]
    #[ignore = "a helper for updating docs/tools.md, not a check"]
    fn print_tool_schemas() {
        for s in all() {
            let pretty = serde_json::to_string_pretty(&s.input_schema).unwrap();
            println!("### `{}`\n\n```json\n{pretty}\n```\n", s.name);
        }
    }

    /// `docs/tools.md` must show every schema exactly as the model receives it. When
    /// this fails, paste the printed block into the tool's section of the doc.
    #[test]
    fn docs_show_every_schema() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/tools.md");
        let doc = std::fs::read_to_string(path).unwrap();
        for s in all() {
            let pretty = serde_json::to_string_pretty(&s.input_schema).unwrap();
            let block = format!("```json\n{pretty}\n```");
            assert!(
                doc.contains(&format!("### `{}`", s.name)),
                "docs/tools.md has no section for {}",
                s.name
            );
            assert!(
                doc.contains(&block),
                "docs/tools.md does not show the current schema of {}; it should contain:\n{block}",
                s.name
            );
        }
    }
}
