//! The seven board tools as MCP offers them: names, descriptions and input
//! schemas for `tools/list`, and the shape of a `tools/call` result.
//!
//! The schemas are written by hand and kept short: every agent pays for them in
//! every model call (Claude Code loads them into `tools` when tool search is
//! off). Together they must stay within [`TOKEN_BUDGET`]; the test below counts
//! them. A description says what the tool does and what to know to use it well,
//! nothing the schema already says. The arguments are read by
//! `teamboard_protocol::board_call::BoardCall::parse`, the one reader of board
//! calls, so that a tool and its schema cannot drift apart (a test checks it).

use crate::board::{Answer, Mode};
use serde_json::{Value, json};
use teamboard_protocol::board_call::BOARD_TOOLS;
use teamboard_protocol::member::MemberReply;

/// The most tokens the `tools/list` entries (name, description, input schema)
/// may take together (issue 16).
pub const TOKEN_BUDGET: usize = 1500;

const STATUSES: [&str; 5] = ["pending", "in_progress", "completed", "failed", "cancelled"];

/// The `tools/list` entries for `mode`, in [`BOARD_TOOLS`] order.
pub fn list(mode: Mode) -> Vec<Value> {
    BOARD_TOOLS.iter().map(|name| tool(name, mode)).collect()
}

/// Whether `name` is one of the tools.
pub fn is_tool(name: &str) -> bool {
    BOARD_TOOLS.contains(&name)
}

fn tool(name: &str, mode: Mode) -> Value {
    let (description, schema) = match name {
        "list_tasks" => (
            "The team's task board: every task with its status, owner and blockers. A pending \
             task is ready (\"ready\": true) when it has no owner and its blockers completed.",
            object(json!({"status": {"type": "string", "enum": STATUSES}}), &[]),
        ),
        "get_task" => match mode {
            Mode::Member => (
                "One task in full: description, result, last error, plans and history.",
                object(json!({"id": {"type": "integer"}}), &["id"]),
            ),
            Mode::Own => (
                "One task in full: description, result, last error, plans and history. \
                 claim: true takes a ready task for you (one at a time): work in its \
                 worktree.path if it has one, then end it with complete_task or fail_task.",
                object(
                    json!({"id": {"type": "integer"}, "claim": {"type": "boolean"}}),
                    &["id"],
                ),
            ),
        },
        "create_task" => (
            "Put a new task on the board for the team.",
            object(
                json!({
                    "subject": {"type": "string", "description": "Short title"},
                    "description": {"type": "string", "description": "What to do, with what a teammate needs to know"},
                    "blocked_by": {"type": "array", "items": {"type": "integer"}, "description": "Tasks that must complete first"},
                    "role": {"type": "string", "description": "Only members of this role may take it"},
                    "require_plan": {"type": "boolean", "description": "The lead approves a plan before any change"},
                    "checks": {"type": "array", "items": {"type": "string"}, "description": "Shell commands that must pass in its worktree before it completes"},
                    "no_worktree": {"type": "boolean", "description": "Only reads: no worktree, no checks"},
                }),
                &["subject"],
            ),
        ),
        "send_message" => (
            "Send a message to a team member by name, or to \"lead\".",
            object(
                json!({"to": {"type": "string"}, "text": {"type": "string"}}),
                &["to", "text"],
            ),
        ),
        "complete_task" => (
            match mode {
                Mode::Member => {
                    "End the task you hold as done, then end your turn: your teammate \
                     completes it then. The result is what the lead reads: what you did, \
                     where, and what is left. A task with a worktree is committed, checked \
                     and merged; if a check fails or the branch conflicts, it stays yours and \
                     the refusal comes as your next input: fix that and call again."
                }
                Mode::Own => {
                    "End the task you hold as done. The result is what the lead reads: what \
                     you did, where, and what is left. A task with a worktree is committed, \
                     checked and merged first; if a check fails or the branch conflicts, it \
                     stays yours: fix that and call again."
                }
            },
            object(json!({"result": {"type": "string"}}), &["result"]),
        ),
        "fail_task" => (
            match mode {
                Mode::Member => {
                    "Give up the task you hold: your teammate stops you and it goes back to \
                     the board for another attempt."
                }
                Mode::Own => {
                    "Give up the task you hold. It goes back to the board for another attempt."
                }
            },
            object(
                json!({"reason": {"type": "string", "description": "Why, and what you found"}}),
                &["reason"],
            ),
        ),
        _ => (
            match mode {
                Mode::Member => {
                    "Ask the lead to approve your plan for the task you hold. Returns the \
                     request at once; the decision comes to you as a message. A task that \
                     requires a plan may not change anything before approval."
                }
                Mode::Own => {
                    "Ask the lead to approve your plan for the task you hold. Returns the \
                     request at once; the decision comes with a later tool result (and in \
                     get_task's plans). A task that requires a plan cannot complete before \
                     approval."
                }
            },
            object(
                json!({"plan": {"type": "string", "description": "What you will do, step by step"}}),
                &["plan"],
            ),
        ),
    };
    json!({"name": name, "description": description, "inputSchema": schema})
}

fn object(properties: Value, required: &[&str]) -> Value {
    if required.is_empty() {
        json!({"type": "object", "properties": properties})
    } else {
        json!({"type": "object", "properties": properties, "required": required})
    }
}

/// The `tools/call` result for an answer: the value as the pretty JSON the
/// `teamctl` twin prints, or the refusal's text with `isError`, then the notes.
///
/// An object value also goes as `structuredContent`, unless there are notes:
/// clients hand the model `structuredContent` instead of `content` when a
/// result has it (Claude Code does, as compact JSON: teamctl's
/// `tests/cli/mcp_claude.rs` sees it), and the notes would be lost.
pub fn call_result(answer: Answer) -> Value {
    let Answer { reply, notes } = answer;
    let (text, structured, is_error) = match reply {
        MemberReply::Ok { value } => {
            let text = serde_json::to_string_pretty(&value).unwrap_or_else(|_| value.to_string());
            let structured = (value.is_object() && notes.is_empty()).then_some(value);
            (text, structured, false)
        }
        MemberReply::Error { message, .. } => (message, None, true),
    };
    let content: Vec<Value> = std::iter::once(text)
        .chain(notes)
        .map(|text| json!({"type": "text", "text": text}))
        .collect();
    let mut result = json!({"content": content, "isError": is_error});
    if let Some(value) = structured {
        result["structuredContent"] = value;
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use teamboard_protocol::board_call::BoardCall;
    use teamboard_protocol::member::MemberCall;

    /// A conservative count of the tokens of `text`: one per 3 bytes. Byte-pair
    /// tokenizers give English and JSON 3.5 to 4.5 bytes a token, so this
    /// over-counts; docs/benchmarks.md has the count of a real tokenizer.
    fn tokens_at_most(text: &str) -> usize {
        text.len().div_ceil(3)
    }

    #[test]
    fn seven_tools_within_the_token_budget_in_either_mode() {
        for mode in [Mode::Member, Mode::Own] {
            let tools = list(mode);
            assert_eq!(tools.len(), 7);
            let text = serde_json::to_string(&tools).expect("JSON");
            let tokens = tokens_at_most(&text);
            assert!(
                tokens <= TOKEN_BUDGET,
                "{mode:?}: {} bytes, up to {tokens} tokens",
                text.len()
            );
        }
    }

    /// Every property a schema offers is read by the one reader of board calls,
    /// and every required one is required there too.
    #[test]
    fn the_schemas_say_what_the_reader_reads() {
        let sample = |schema: &Value| -> Value {
            match schema["type"].as_str() {
                Some("integer") => json!(1),
                Some("boolean") => json!(true),
                Some("array") if schema["items"]["type"] == "integer" => json!([1]),
                Some("array") => json!(["x"]),
                _ => match schema["enum"].get(0) {
                    Some(first) => first.clone(),
                    None => json!("x"),
                },
            }
        };
        for mode in [Mode::Member, Mode::Own] {
            for tool in list(mode) {
                let name = tool["name"].as_str().expect("a name");
                let schema = &tool["inputSchema"];
                let props = schema["properties"].as_object().expect("properties");
                let required: Vec<&str> = schema["required"]
                    .as_array()
                    .map(|r| r.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                let mut all = serde_json::Map::new();
                for (key, prop) in props {
                    // no_worktree and checks together are refused, and rightly.
                    if key != "no_worktree" {
                        all.insert(key.clone(), sample(prop));
                    }
                }
                let call = |arguments: Value| MemberCall {
                    tool: name.into(),
                    arguments,
                };
                BoardCall::parse(&call(Value::Object(all.clone())))
                    .unwrap_or_else(|e| panic!("{name}: every property: {e}"));
                for key in &required {
                    let mut without = all.clone();
                    without.remove(*key);
                    let e = BoardCall::parse(&call(Value::Object(without)))
                        .expect_err("a required argument");
                    assert!(e.0.contains(key), "{name} without {key}: {e}");
                }
            }
        }
    }

    #[test]
    fn the_claim_is_offered_to_a_persons_session_only() {
        let claim = |mode| {
            list(mode)[1]["inputSchema"]["properties"]
                .get("claim")
                .is_some()
        };
        assert!(claim(Mode::Own));
        assert!(!claim(Mode::Member));
    }

    #[test]
    fn results_carry_the_twins_json_refusals_are_errors() {
        let value = json!({"id": 3, "subject": "s"});
        let ok = call_result(Answer::from(MemberReply::Ok {
            value: value.clone(),
        }));
        assert_eq!(ok["isError"], false);
        assert_eq!(
            ok["content"][0]["text"],
            serde_json::to_string_pretty(&value).expect("JSON")
        );
        assert_eq!(ok["structuredContent"], value);

        // A list is not an object: text only.
        let list = call_result(Answer::from(MemberReply::Ok { value: json!([]) }));
        assert!(list.get("structuredContent").is_none());

        let noted = call_result(Answer {
            reply: MemberReply::Ok { value },
            notes: vec!["from lead: hi".into()],
        });
        assert_eq!(noted["content"][1]["text"], "from lead: hi");
        assert!(noted.get("structuredContent").is_none());

        let refused = call_result(Answer::from(MemberReply::error("you hold no task")));
        assert_eq!(refused["isError"], true);
        assert_eq!(refused["content"][0]["text"], "you hold no task");
    }
}
