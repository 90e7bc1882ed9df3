//! The seven board tools as MCP offers them: `tools/list`'s entries, and the
//! shape of a `tools/call` result.
//!
//! The schemas and their descriptions are the protocol crate's
//! (`teamboard_protocol::board_call`), next to `BoardCall::parse`, the one
//! reader of board calls, so that a tool and its schema cannot drift apart (a
//! test there checks it). They are kept short: every agent pays for them in
//! every model call (Claude Code loads them into `tools` when tool search is
//! off), and together they must stay within [`TOKEN_BUDGET`]; the test below
//! counts them.

use crate::board::{Answer, Mode};
use serde_json::{Value, json};
use teamboard_protocol::board_call::{BOARD_TOOLS, Front};
use teamboard_protocol::member::MemberReply;

/// The most tokens the `tools/list` entries (name, description, input schema)
/// may take together: what an agent pays for the board in every request.
pub const TOKEN_BUDGET: usize = 1500;

/// The `tools/list` entries for `mode`, in [`BOARD_TOOLS`] order.
pub fn list(mode: Mode) -> Vec<Value> {
    let front = match mode {
        Mode::Member => Front::McpMember,
        Mode::Own => Front::McpOwn,
    };
    front
        .specs()
        .into_iter()
        .map(|s| json!({"name": s.name, "description": s.description, "inputSchema": s.input_schema}))
        .collect()
}

/// Whether `name` is one of the tools.
pub fn is_tool(name: &str) -> bool {
    BOARD_TOOLS.contains(&name)
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
