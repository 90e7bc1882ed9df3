//! What ACP messages mean to teammated: pure functions from the agent's JSON to
//! decisions and events, apart from the process and its timing so that they can
//! be tested on captured lines.
//!
//! Shapes follow the Agent Client Protocol (protocol version 1) as Gemini CLI
//! 0.61.0 speaks it (`docs/design/runtime-codex-acp.md` §4). Everything is read
//! leniently: a field an agent leaves out is a default, never an error.
//!
//! Read from `Value`s rather than the official schema types
//! (`agent-client-protocol-schema`, which `agent-client-protocol` re-exports):
//! - that crate turns on `serde_json`'s `preserve_order` for every crate built
//!   with it, and so changes the bytes of every JSON object teamboard writes
//!   (the tool schemas sent to models and shown in `docs/tools.md` among them);
//! - its `SessionUpdate` has no catch-all: one update kind newer than the crate
//!   fails the whole notification, where an unknown kind must be skipped;
//! - it is a large schema crate behind three proc-macro crates (`serde_with`,
//!   `derive_more`, `strum`) on teammated's build path, for the dozen fields
//!   read here, each of which a test on a captured line pins.

use crate::runtime::{AgentPolicy, Usage};
use serde_json::{Value, json};
use teamboard_protocol::TokenUsage;
use teamboard_protocol::board_call::BOARD_TOOLS;

/// The protocol version teammated speaks.
pub const PROTOCOL_VERSION: u64 = 1;

/// Tool kinds that only look: allowed under the `read-only` policy and before
/// an approved plan.
const READ_KINDS: [&str; 4] = ["read", "search", "fetch", "think"];

/// The `initialize` request's params: no file system or terminal offered, so
/// the agent uses its own tools (and asks for permission).
pub fn initialize_params() -> Value {
    json!({
        "protocolVersion": PROTOCOL_VERSION,
        "clientCapabilities": {
            "fs": {"readTextFile": false, "writeTextFile": false},
            "terminal": false,
        },
        "clientInfo": {"name": "teammated", "version": env!("CARGO_PKG_VERSION")},
    })
}

/// The name the agent gives itself in its `initialize` result
/// (`agentInfo.name`), if any.
pub fn agent_name(init: &Value) -> Option<&str> {
    init["agentInfo"]["name"].as_str()
}

/// The name the board's MCP server goes by in the agent's configuration.
pub const BOARD_SERVER: &str = "teamboard";

/// ACP's stdio MCP server entry: `env` as `[{name, value}]`.
pub fn mcp_servers(mcp: Option<&crate::runtime::McpServer>) -> Value {
    let Some(m) = mcp else {
        return json!([]);
    };
    let env: Vec<Value> = m
        .env
        .iter()
        .map(|(k, v)| json!({"name": k, "value": v}))
        .collect();
    json!([{
        "name": BOARD_SERVER,
        "command": m.command.display().to_string(),
        "args": m.args,
        "env": env,
    }])
}

/// A session's mode ids, from a `session/new` or `session/load` result.
pub fn modes(result: &Value) -> Vec<String> {
    result["modes"]["availableModes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["id"].as_str().map(str::to_string))
        .collect()
}

/// How a prompt ended, from its result's `stopReason`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stop {
    /// `end_turn`: the agent is done and waits.
    EndTurn,
    /// `cancelled`: by our `session/cancel`, or a turn the agent gave up.
    Cancelled,
    /// `refusal`, `max_tokens`, `max_turn_requests`, or one we do not know:
    /// the work ends with this error.
    Error(String),
}

pub fn stop_reason(result: &Value) -> Stop {
    match result["stopReason"].as_str() {
        Some("end_turn") => Stop::EndTurn,
        Some("cancelled") => Stop::Cancelled,
        Some("refusal") => Stop::Error("the agent refused to go on (stopReason: refusal)".into()),
        Some("max_tokens") => {
            Stop::Error("the agent hit its output token limit (stopReason: max_tokens)".into())
        }
        Some("max_turn_requests") => Stop::Error(
            "the agent hit its limit of model requests in one turn (stopReason: max_turn_requests)"
                .into(),
        ),
        Some(other) => Stop::Error(format!("the prompt ended with stopReason '{other}'")),
        None => Stop::Error(format!("the prompt's result has no stopReason: {result}")),
    }
}

/// The usage a prompt's result reports, per model: Gemini's non-standard
/// `_meta.quota` (`model_usage`, else the whole `token_count` with no model).
/// The model is named as the agent gave it. Empty when absent or zero (a
/// cancelled prompt, an agent that reports none). ACP has no usage while a
/// prompt runs, so an agent's turn is settled when it ends.
pub fn usage(result: &Value) -> Vec<Usage> {
    let quota = &result["_meta"]["quota"];
    let tokens = |count: &Value| TokenUsage {
        input: count["input_tokens"].as_u64().unwrap_or(0),
        output: count["output_tokens"].as_u64().unwrap_or(0),
        ..TokenUsage::default()
    };
    let per_model: Vec<Usage> = quota["model_usage"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|m| Usage {
            tokens: tokens(&m["token_count"]),
            model: m["model"].as_str().map(str::to_string),
            subscription: None,
            ends_turn: true,
        })
        .collect();
    let all = if per_model.is_empty() {
        vec![Usage {
            tokens: tokens(&quota["token_count"]),
            ends_turn: true,
            ..Usage::default()
        }]
    } else {
        per_model
    };
    all.into_iter().filter(|u| u.tokens.total() > 0).collect()
}

/// One `session/update` notification, as far as teammated cares.
#[derive(Debug, Clone, PartialEq)]
pub enum Update {
    /// A piece of the agent's answer.
    Text(String),
    /// A tool call, first seen or updated: its id, a name for the transcript,
    /// its input as text, and the paths it touches.
    Tool {
        id: String,
        name: String,
        input: String,
        locations: Vec<String>,
    },
    /// Anything else: thoughts, plans, commands, modes, replayed user text.
    Other,
}

pub fn update(params: &Value) -> Update {
    let u = &params["update"];
    match u["sessionUpdate"].as_str() {
        Some("agent_message_chunk") => match u["content"]["text"].as_str() {
            Some(text) => Update::Text(text.to_string()),
            None => Update::Other,
        },
        Some("tool_call") | Some("tool_call_update") => tool(u),
        _ => Update::Other,
    }
}

/// A tool call (a `tool_call` update, or a permission request's `toolCall`).
pub fn tool(call: &Value) -> Update {
    let id = call["toolCallId"].as_str().unwrap_or_default().to_string();
    let locations = call["locations"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|l| l["path"].as_str().map(str::to_string))
        .collect();
    let title = call["title"].as_str().unwrap_or_default();
    let input = match &call["rawInput"] {
        Value::Null => title.to_string(),
        raw => raw.to_string(),
    };
    Update::Tool {
        name: tool_name(&id, call["kind"].as_str()),
        id,
        input,
        locations,
    }
}

/// A tool's name from its call id where the agent puts it there (Gemini:
/// `run_shell_command__run_shell_command_1796…_0`), else its kind.
fn tool_name(id: &str, kind: Option<&str>) -> String {
    match id.split_once("__") {
        Some((name, _)) if !name.is_empty() => name.to_string(),
        _ => kind.unwrap_or("tool").to_string(),
    }
}

/// Whether a permission request is the agent asking to leave plan mode: the
/// plan gate. ACP's kind for it is `switch_mode`; Gemini 0.61.0 sends `other`
/// with an `exit_plan_mode__…` call id and a "Requesting plan approval" title.
pub fn is_plan_exit(params: &Value) -> bool {
    let call = &params["toolCall"];
    call["kind"] == "switch_mode"
        || call["toolCallId"]
            .as_str()
            .is_some_and(|id| id.starts_with("exit_plan_mode"))
        || call["title"]
            .as_str()
            .is_some_and(|t| t.starts_with(PLAN_TITLE))
}

const PLAN_TITLE: &str = "Requesting plan approval for:";

/// Whether a permission request's tool call is one of the board's own tools
/// (the [`BOARD_SERVER`] MCP server): allowed under every policy and gate,
/// since they touch no file and the board checks them itself (the plan gate,
/// who holds the task).
///
/// Traps: the `kind` says nothing (Gemini CLI sends `other` for every MCP
/// tool), and a title may be the model's own words (Gemini's title of an MCP
/// call is its `command` argument when it has one, so any MCP tool can be
/// titled like a board tool). So the tool's name is read where the agent
/// itself writes it:
/// - Gemini CLI: the call id is `<tool name>__<id>` (or `<tool name>-<ms>-<n>`
///   when it makes up the id), and an MCP tool's name is
///   `mcp_<server>_<tool>`. When the id names the tool, the title is not read.
/// - Claude Code's ACP adapter: the call id is the model's `toolu_…`, and the
///   title of an MCP call is the tool's name, `mcp__<server>__<tool>`.
///
/// Only the board's own tool names count, not any name under the server's
/// prefix: `mcp_teamboard_x_y` is tool `y` of a server `teamboard_x` as well.
pub fn is_board_tool(call: &Value) -> bool {
    let id = call["toolCallId"].as_str().unwrap_or_default();
    if let Some(name) = gemini_tool_name(id) {
        let prefix = format!("mcp_{BOARD_SERVER}_");
        return name
            .strip_prefix(&prefix)
            .is_some_and(|tool| BOARD_TOOLS.contains(&tool));
    }
    let prefix = format!("mcp__{BOARD_SERVER}__");
    call["title"]
        .as_str()
        .and_then(|title| title.strip_prefix(&prefix))
        .is_some_and(|tool| BOARD_TOOLS.contains(&tool))
}

/// The tool's name in a Gemini CLI call id: `<name>__<id>`, or the
/// `<name>-<ms>-<n>` its ACP server makes up when the call has no id.
fn gemini_tool_name(id: &str) -> Option<&str> {
    if let Some((name, _)) = id.split_once("__") {
        return Some(name);
    }
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let (rest, n) = id.rsplit_once('-')?;
    let (name, ms) = rest.rsplit_once('-')?;
    (digits(n) && digits(ms) && !name.is_empty()).then_some(name)
}

/// Where the plan of a plan-exit request is written: the file its title names
/// (Gemini), else `None`.
pub fn plan_file(params: &Value) -> Option<String> {
    let title = params["toolCall"]["title"].as_str()?;
    let path = title.strip_prefix(PLAN_TITLE)?.trim();
    (!path.is_empty()).then(|| path.to_string())
}

/// The plan carried in the request itself: `rawInput.plan` (the Claude Code
/// adapter), else the text of its content.
pub fn plan_inline(params: &Value) -> Option<String> {
    let call = &params["toolCall"];
    if let Some(plan) = call["rawInput"]["plan"].as_str() {
        return Some(plan.to_string());
    }
    let text: Vec<&str> = call["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["content"]["text"].as_str())
        .collect();
    (!text.is_empty()).then(|| text.join("\n"))
}

/// How teammated answers one permission request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Permission {
    /// Choose this option.
    Select(String),
    /// The plan gate: hold the request until the lead decides.
    Hold,
    /// No fitting option: answer `cancelled`.
    Cancelled,
}

/// The answer to a permission request under `policy`, with the plan gate
/// closed (`gated`) or open. The board's own tools are always allowed.
pub fn permission(params: &Value, policy: AgentPolicy, gated: bool) -> Permission {
    if gated && is_plan_exit(params) {
        return Permission::Hold;
    }
    let kind = params["toolCall"]["kind"].as_str().unwrap_or("other");
    let reads = READ_KINDS.contains(&kind);
    let allowed =
        reads || is_board_tool(&params["toolCall"]) || (!gated && policy == AgentPolicy::Workspace);
    let option = if allowed {
        option(params, &["allow_once", "allow_always"])
    } else {
        option(params, &["reject_once", "reject_always"])
    };
    option.map_or(Permission::Cancelled, Permission::Select)
}

/// The id of the first option of the first of `kinds` offered.
pub fn option(params: &Value, kinds: &[&str]) -> Option<String> {
    let options = params["options"].as_array()?;
    kinds.iter().find_map(|kind| {
        options
            .iter()
            .find(|o| o["kind"] == *kind)
            .and_then(|o| o["optionId"].as_str().map(str::to_string))
    })
}

/// A permission answer choosing `option_id`.
pub fn selected(option_id: &str) -> Value {
    json!({"outcome": {"outcome": "selected", "optionId": option_id}})
}

/// A permission answer for a request that no longer matters (the turn was
/// cancelled): the prompt does not end before every one is answered.
pub fn cancelled() -> Value {
    json!({"outcome": {"outcome": "cancelled"}})
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The permission request of survey §4.3, for a shell command.
    fn shell_request() -> Value {
        serde_json::from_str(
            r#"{"sessionId":"s","options":[{"optionId":"proceed_always","name":"Allow for this session","kind":"allow_always"},{"optionId":"proceed_once","name":"Allow","kind":"allow_once"},{"optionId":"cancel","name":"Reject","kind":"reject_once"}],"toolCall":{"toolCallId":"run_shell_command__run_shell_command_1796147959488_0","status":"pending","title":"echo hello-from-tool > tool.txt; cat tool.txt","content":[{"type":"content","content":{"type":"text","text":"[current working directory /tmp/agents/ws] (write a file)"}}],"locations":[],"kind":"execute"}}"#,
        )
        .unwrap()
    }

    /// The plan-exit request of survey §4.4a.
    fn plan_request() -> Value {
        serde_json::from_str(
            r#"{"sessionId":"597ab86c","options":[{"optionId":"proceed_once","name":"Allow","kind":"allow_once"},{"optionId":"cancel","name":"Reject","kind":"reject_once"}],"toolCall":{"toolCallId":"exit_plan_mode__exit_plan_mode_1796148168725_0","status":"pending","title":"Requesting plan approval for: /var/tmp/h/.gemini/tmp/ws/597ab86c/plans/plan.md","content":[],"locations":[],"kind":"other"}}"#,
        )
        .unwrap()
    }

    #[test]
    fn the_policy_chooses_among_the_offered_options() {
        let shell = shell_request();
        assert_eq!(
            permission(&shell, AgentPolicy::Workspace, false),
            Permission::Select("proceed_once".into())
        );
        assert_eq!(
            permission(&shell, AgentPolicy::ReadOnly, false),
            Permission::Select("cancel".into())
        );
        // Before an approved plan, a command is refused whatever the policy.
        assert_eq!(
            permission(&shell, AgentPolicy::Workspace, true),
            Permission::Select("cancel".into())
        );
        let mut read = shell.clone();
        read["toolCall"]["kind"] = json!("read");
        assert_eq!(
            permission(&read, AgentPolicy::ReadOnly, true),
            Permission::Select("proceed_once".into())
        );
        // No option of the wanted kind: cancelled, never an invented id.
        let mut bare = shell;
        bare["options"] = json!([{"optionId": "x", "kind": "allow_once"}]);
        assert_eq!(
            permission(&bare, AgentPolicy::ReadOnly, false),
            Permission::Cancelled
        );
    }

    /// Gemini CLI 0.61.0 asking to run the board's `send_message`
    /// (`mcp_teamboard_send_message`), captured under the `read-only` policy.
    fn board_tool_request() -> Value {
        serde_json::from_str(
            r#"{"sessionId":"74b1fa9e-4213-42ba-a21e-ac07652fc7de","options":[{"optionId":"proceed_always_server","name":"Allow all server tools for this session","kind":"allow_always"},{"optionId":"proceed_always_tool","name":"Allow tool for this session","kind":"allow_always"},{"optionId":"proceed_once","name":"Allow","kind":"allow_once"},{"optionId":"cancel","name":"Reject","kind":"reject_once"}],"toolCall":{"toolCallId":"mcp_teamboard_send_message__mcp_teamboard_send_message_1796162996129_0","status":"pending","title":"send_message (teamboard MCP Server)","content":[{"type":"content","content":{"type":"text","text":"{\"text\":\"BOARD-MSG-FROM-GEMINI\",\"to\":\"lead\"}"}}],"locations":[],"kind":"other"}}"#,
        )
        .unwrap()
    }

    #[test]
    fn the_boards_own_tools_are_allowed_under_every_policy_and_gate() {
        let board = board_tool_request();
        assert!(is_board_tool(&board["toolCall"]));
        for policy in [AgentPolicy::ReadOnly, AgentPolicy::Workspace] {
            for gated in [true, false] {
                assert_eq!(
                    permission(&board, policy, gated),
                    Permission::Select("proceed_once".into()),
                    "{policy:?}, gated: {gated}"
                );
            }
        }
        // Every board tool, and the id Gemini makes up when the call has none.
        let with_id = |id: &str| json!({"toolCallId": id, "title": "x", "kind": "other"});
        for tool in BOARD_TOOLS {
            assert!(is_board_tool(&with_id(&format!(
                "mcp_teamboard_{tool}__c_1_0"
            ))));
        }
        assert!(is_board_tool(&with_id(
            "mcp_teamboard_list_tasks-1796162996129-3"
        )));
        // Claude Code's adapter: the tool's name is the title.
        let adapter = json!({"toolCallId": "toolu_01AbC", "title": "mcp__teamboard__complete_task", "kind": "other"});
        assert!(is_board_tool(&adapter));
    }

    #[test]
    fn a_tool_that_only_looks_like_a_board_tool_is_not_one() {
        let call =
            |id: &str, title: &str| json!({"toolCallId": id, "title": title, "kind": "other"});
        for (id, title) in [
            // Another server's tool, titled by its `command` argument.
            ("mcp_other_run__c_1_0", "mcp__teamboard__complete_task"),
            (
                "mcp_other_run__c_1_0",
                "send_message (teamboard MCP Server)",
            ),
            // Under the board server's prefix, but not a board tool: a server
            // named `teamboard_extra`, or a tool the board does not have.
            ("mcp_teamboard_extra_send_message__c_1_0", "send_message"),
            ("mcp_teamboard_delete_everything__c_1_0", "x"),
            // A shell command whose id the model chose to look like one.
            (
                "run_shell_command__mcp_teamboard_send_message__c",
                "rm -rf .",
            ),
            ("toolu_01AbC", "mcp__teamboard__delete_everything"),
            ("toolu_01AbC", "mcp__teamboard_x__send_message"),
            ("", ""),
        ] {
            assert!(!is_board_tool(&call(id, title)), "{id} / {title}");
        }
        // Refused as any other call would be.
        let mut other = board_tool_request();
        other["toolCall"]["toolCallId"] = json!("mcp_other_send_message__c_1_0");
        assert_eq!(
            permission(&other, AgentPolicy::ReadOnly, false),
            Permission::Select("cancel".into())
        );
        assert_eq!(
            permission(&other, AgentPolicy::Workspace, true),
            Permission::Select("cancel".into())
        );
    }

    #[test]
    fn the_plan_exit_is_held_while_gated_and_names_its_file() {
        let plan = plan_request();
        assert!(is_plan_exit(&plan));
        assert!(!is_plan_exit(&shell_request()));
        assert_eq!(
            permission(&plan, AgentPolicy::Workspace, true),
            Permission::Hold
        );
        assert_eq!(
            permission(&plan, AgentPolicy::Workspace, false),
            Permission::Select("proceed_once".into())
        );
        assert_eq!(
            plan_file(&plan).as_deref(),
            Some("/var/tmp/h/.gemini/tmp/ws/597ab86c/plans/plan.md")
        );
        assert_eq!(plan_inline(&plan), None);
        assert_eq!(option(&plan, &["reject_once"]).as_deref(), Some("cancel"));
        let adapter =
            json!({"toolCall": {"kind": "switch_mode", "rawInput": {"plan": "1. do it"}}});
        assert!(is_plan_exit(&adapter));
        assert_eq!(plan_inline(&adapter).as_deref(), Some("1. do it"));
    }

    #[test]
    fn updates_are_text_tools_or_nothing() {
        let chunk: Value = serde_json::from_str(
            r#"{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Tool said:"}}}"#,
        )
        .unwrap();
        assert_eq!(update(&chunk), Update::Text("Tool said:".into()));
        let done: Value = serde_json::from_str(
            r#"{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"run_shell_command__run_shell_command_1_0","status":"completed","title":"echo hi","content":[],"locations":[{"path":"/w/a.txt"}],"kind":"execute"}}"#,
        )
        .unwrap();
        assert_eq!(
            update(&done),
            Update::Tool {
                id: "run_shell_command__run_shell_command_1_0".into(),
                name: "run_shell_command".into(),
                input: "echo hi".into(),
                locations: vec!["/w/a.txt".into()],
            }
        );
        let commands = json!({"sessionId":"s","update":{"sessionUpdate":"available_commands_update","availableCommands":[]}});
        assert_eq!(update(&commands), Update::Other);
        let other_agent = json!({"toolCallId": "call_7", "kind": "edit", "title": "Edit a.rs"});
        assert!(matches!(tool(&other_agent), Update::Tool { name, .. } if name == "edit"));
    }

    #[test]
    fn stop_reasons_and_usage_of_a_prompt_result() {
        let result: Value = serde_json::from_str(
            r#"{"stopReason":"end_turn","_meta":{"quota":{"token_count":{"input_tokens":2400,"output_tokens":30},"model_usage":[{"model":"gemini-2.5-flash","token_count":{"input_tokens":2400,"output_tokens":30}}]}}}"#,
        )
        .unwrap();
        assert_eq!(stop_reason(&result), Stop::EndTurn);
        let [u] = usage(&result).try_into().unwrap();
        assert_eq!((u.tokens.input, u.tokens.output), (2400, 30));
        assert_eq!(u.model.as_deref(), Some("gemini-2.5-flash"));
        // Two models: each its own; none named: the whole, with no model.
        let two = json!({"_meta":{"quota":{"token_count":{"input_tokens":30,"output_tokens":3},
            "model_usage":[{"model":"a","token_count":{"input_tokens":10,"output_tokens":1}},
                           {"model":"b","token_count":{"input_tokens":20,"output_tokens":2}}]}}});
        let models: Vec<_> = usage(&two)
            .into_iter()
            .map(|u| (u.model, u.tokens.total()))
            .collect();
        assert_eq!(models, [(Some("a".into()), 11), (Some("b".into()), 22)]);
        let whole = json!({"_meta":{"quota":{"token_count":{"input_tokens":7,"output_tokens":3}}}});
        let [u] = usage(&whole).try_into().unwrap();
        assert_eq!((u.model, u.tokens.total()), (None, 10));
        let cancelled = json!({"stopReason": "cancelled"});
        assert_eq!(stop_reason(&cancelled), Stop::Cancelled);
        assert_eq!(usage(&cancelled), []);
        for reason in ["refusal", "max_tokens", "max_turn_requests", "weird"] {
            let Stop::Error(why) = stop_reason(&json!({"stopReason": reason})) else {
                panic!("{reason} is an error");
            };
            assert!(why.contains(reason), "{why}");
        }
    }

    #[test]
    fn the_board_server_goes_in_acp_stdio_form() {
        let m = crate::runtime::McpServer {
            command: "/bin/teamctl".into(),
            args: vec!["mcp".into(), "--name".into(), "bob".into()],
            env: vec![("TEAMBOARD_MEMBER_SOCKET".into(), "/run/s".into())],
        };
        assert_eq!(
            mcp_servers(Some(&m)),
            json!([{"name": "teamboard", "command": "/bin/teamctl", "args": ["mcp", "--name", "bob"],
                    "env": [{"name": "TEAMBOARD_MEMBER_SOCKET", "value": "/run/s"}]}])
        );
        assert_eq!(mcp_servers(None), json!([]));
        let opened = json!({"sessionId": "x", "modes": {"availableModes": [{"id": "default"}, {"id": "plan"}]}});
        assert_eq!(modes(&opened), vec!["default", "plan"]);
    }
}
