//! What teammated asks of `codex app-server`: the parameters of its requests,
//! and the texts it adds to the agent's turns.
//!
//! Only the fields a teammate needs are sent; everything else is the user's own
//! configuration (`$CODEX_HOME/config.toml`), which the agent keeps.
//!
//! Decisions:
//! - `approvalPolicy: "on-request"`: the sandbox bounds what the agent does on
//!   its own, and what it asks to do beyond it comes to teammated as an
//!   approval request, answered by the teammate's policy (`answers`).
//! - The sandbox is named by its mode on `thread/start` and `thread/resume`
//!   (`read-only` while the plan gate is closed or the policy is read-only,
//!   else `workspace-write`), so the user's `[sandbox_workspace_write]` settings
//!   apply. A resume sets it again: a thread keeps the sandbox of its last
//!   turn otherwise. Only the turn that follows an approved plan overrides it
//!   with a `sandboxPolicy` object (which then holds for the thread's later
//!   turns too).
//! - The board's MCP server goes into the thread's `config` on a start *and*
//!   on a resume: its member socket is teammated's, and a restarted teammated
//!   has a new one.

use crate::runtime::{AgentPolicy, McpServer};
use serde_json::{Map, Value, json};
use std::path::Path;

/// The name the board's MCP server has in Codex's configuration; its tools
/// reach the model in the namespace `mcp__teamboard`.
pub const MCP_NAME: &str = "teamboard";
/// The board tool with which the agent submits its plan.
pub const SUBMIT_PLAN: &str = "submit_plan";
/// The `clientUserMessageId` prefix of a message sent with `Agent::send`; the
/// rest is its tag. Codex echoes it as the `clientId` of the `userMessage`
/// item once the message is in the conversation.
pub const CLIENT_ID_PREFIX: &str = "teammated-";

/// The arguments of `codex app-server`, before the user's `--agent-arg`s.
/// Plugins, apps and in-app updates are off: a teammate needs none, and each
/// would reach beyond the machine.
pub fn args() -> Vec<String> {
    [
        "--disable",
        "plugins",
        "--disable",
        "apps",
        "--disable",
        "in_app_updates",
        "app-server",
    ]
    .map(String::from)
    .to_vec()
}

pub fn initialize() -> Value {
    json!({
        "clientInfo": {
            "name": "teammated",
            "title": "teammated",
            "version": env!("CARGO_PKG_VERSION"),
        },
        "capabilities": {"experimentalApi": false},
    })
}

/// What a thread is opened with.
#[derive(Debug, Clone)]
pub struct ThreadSetup<'a> {
    pub cwd: &'a Path,
    pub identity: &'a str,
    pub model: Option<&'a str>,
    pub mcp: Option<&'a McpServer>,
    /// The thread may write (the plan gate is open and the policy allows it).
    pub writable: bool,
}

/// `thread/start`'s parameters.
pub fn thread_start(setup: &ThreadSetup) -> Value {
    let mut params = thread_common(setup);
    params.insert("cwd".into(), json!(setup.cwd));
    Value::Object(params)
}

/// `thread/resume`'s parameters: the thread's history stays out of the answer
/// (`excludeTurns`), teammated does not need it.
pub fn thread_resume(thread: &str, setup: &ThreadSetup) -> Value {
    let mut params = thread_common(setup);
    params.insert("threadId".into(), json!(thread));
    params.insert("excludeTurns".into(), json!(true));
    params.insert("cwd".into(), json!(setup.cwd));
    Value::Object(params)
}

fn thread_common(setup: &ThreadSetup) -> Map<String, Value> {
    let mut params = Map::new();
    params.insert("approvalPolicy".into(), json!("on-request"));
    params.insert("sandbox".into(), json!(sandbox_mode(setup.writable)));
    params.insert("developerInstructions".into(), json!(setup.identity));
    if let Some(model) = setup.model {
        params.insert("model".into(), json!(model));
    }
    if let Some(mcp) = setup.mcp {
        params.insert("config".into(), mcp_config(mcp));
    }
    params
}

fn sandbox_mode(writable: bool) -> &'static str {
    if writable {
        "workspace-write"
    } else {
        "read-only"
    }
}

/// The `sandboxPolicy` of the turn that follows a decision on the plan.
pub fn sandbox_policy(writable: bool) -> Value {
    if writable {
        json!({"type": "workspaceWrite"})
    } else {
        json!({"type": "readOnly"})
    }
}

/// `config` overrides that add the board's MCP server.
fn mcp_config(mcp: &McpServer) -> Value {
    let env: Map<String, Value> = mcp.env.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
    json!({
        "mcp_servers": {
            MCP_NAME: {
                "command": mcp.command,
                "args": mcp.args,
                "env": env,
            },
        },
    })
}

/// `turn/start`'s parameters.
pub fn turn_start(thread: &str, text: &str, client_id: &str, sandbox: Option<&Value>) -> Value {
    let mut params = json!({
        "threadId": thread,
        "clientUserMessageId": client_id,
        "input": [{"type": "text", "text": text}],
    });
    if let Some(policy) = sandbox {
        params["sandboxPolicy"] = policy.clone();
    }
    params
}

/// `turn/steer`'s parameters: `turn` must be the active turn's id, or Codex
/// refuses (a wrong id is an error, not a queue).
pub fn turn_steer(thread: &str, turn: &str, text: &str, client_id: &str) -> Value {
    json!({
        "threadId": thread,
        "expectedTurnId": turn,
        "clientUserMessageId": client_id,
        "input": [{"type": "text", "text": text}],
    })
}

pub fn turn_interrupt(thread: &str, turn: &str) -> Value {
    json!({"threadId": thread, "turnId": turn})
}

/// The client message id of a send's tag, and back.
pub fn client_id(tag: u64) -> String {
    format!("{CLIENT_ID_PREFIX}{tag}")
}

pub fn tag_of(client_id: &str) -> Option<u64> {
    client_id.strip_prefix(CLIENT_ID_PREFIX)?.parse().ok()
}

/// Whether the policy lets the agent write once the plan gate is open.
pub fn may_write(policy: AgentPolicy) -> bool {
    policy == AgentPolicy::Workspace
}

/// Texts the runtime adds to the agent's turns.
pub mod texts {
    /// Under the first turn of a task whose plan must be approved: Codex has
    /// no plan mode, so the gate is the read-only sandbox and the refusals.
    pub const PLAN_GATE: &str = "[Runtime] Until the lead approves your plan you work in a \
         read-only sandbox, and every command or change that needs more is refused. When your \
         plan is ready, submit it with the teamboard tool submit_plan, or end your turn with the \
         plan as your whole answer; then wait for the lead's decision.";

    /// In front of the first turn when the task's session could not be resumed.
    pub const NEW_SESSION: &str = "[Runtime] Your earlier session on this task could not be \
         resumed; this is a new one. Check what is already done in the working directory.";

    pub fn approved(feedback: &str) -> String {
        let note = feedback_note(feedback);
        format!(
            "[Runtime] The lead approved your plan.{note} Carry it out now; you may change \
             files and run commands."
        )
    }

    pub fn rejected(feedback: &str) -> String {
        let note = feedback_note(feedback);
        format!(
            "[Runtime] The lead rejected your plan.{note} Revise it and submit it again \
             (submit_plan, or end your turn with the plan); you still may not change anything."
        )
    }

    /// After a refusal that ended the turn (Codex offered no way to decline
    /// and go on).
    pub const REFUSED: &str = "[Runtime] That was refused: nothing may change before the \
         lead approves your plan. Go on with reading, then submit your plan.";

    fn feedback_note(feedback: &str) -> String {
        let feedback = feedback.trim();
        if feedback.is_empty() {
            String::new()
        } else {
            format!(" The lead says: {feedback}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn a_thread_gets_the_sandbox_the_mcp_server_and_the_identity() {
        let mcp = McpServer {
            command: PathBuf::from("/bin/teamctl"),
            args: vec!["mcp".into(), "--name".into(), "bob".into()],
            env: vec![("TEAMBOARD_MEMBER_SOCKET".into(), "/run/m.sock".into())],
        };
        let setup = ThreadSetup {
            cwd: Path::new("/work/t1"),
            identity: "You are bob.",
            model: Some("gpt-5-codex"),
            mcp: Some(&mcp),
            writable: false,
        };
        let start = thread_start(&setup);
        assert_eq!(start["sandbox"], "read-only");
        assert_eq!(start["approvalPolicy"], "on-request");
        assert_eq!(start["cwd"], "/work/t1");
        assert_eq!(start["model"], "gpt-5-codex");
        assert_eq!(start["developerInstructions"], "You are bob.");
        let server = &start["config"]["mcp_servers"]["teamboard"];
        assert_eq!(server["command"], "/bin/teamctl");
        assert_eq!(server["args"], json!(["mcp", "--name", "bob"]));
        assert_eq!(server["env"]["TEAMBOARD_MEMBER_SOCKET"], "/run/m.sock");
        let resume = thread_resume(
            "t-1",
            &ThreadSetup {
                writable: true,
                model: None,
                ..setup
            },
        );
        assert_eq!(resume["threadId"], "t-1");
        assert_eq!(resume["excludeTurns"], true);
        assert_eq!(resume["sandbox"], "workspace-write");
        assert!(resume.get("model").is_none());
        assert_eq!(resume["config"], start["config"]);
    }

    #[test]
    fn client_ids_carry_the_tag() {
        assert_eq!(tag_of(&client_id(42)), Some(42));
        assert_eq!(tag_of("someone-else-1"), None);
        assert_eq!(tag_of("teammated-x"), None);
    }
}
