//! teammated's answers to what `codex app-server` asks: approvals of commands,
//! file changes and permissions, and MCP elicitations.
//!
//! Every request gets an answer, at once: a request left unanswered would hold
//! the agent's turn forever. Requests teammated does not serve get a JSON-RPC
//! error.
//!
//! Traps (docs/design/runtime-codex-acp.md §6):
//! - An approval request may list its `availableDecisions`; only one of those
//!   is answered. Where `decline` is not among them, the refusal is `cancel`,
//!   which also ends the turn: the caller is told ([`Answer::ends_turn`]).
//! - An MCP tool call is approved with `mcpServer/elicitation/request`, whose
//!   answer is `{"action": "accept", "content": {}}`; a `{"decision": ...}`
//!   answer is taken as a rejection.
//! - `item/permissions/requestApproval` answers with the permissions granted
//!   (all that were asked, or none), not with a decision.

use super::params::MCP_NAME;
use crate::runtime::jsonrpc::{self, METHOD_NOT_FOUND};
use serde_json::{Value, json};

/// The answer to one request from the agent.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// The JSON-RPC response to write.
    pub message: Value,
    /// What was decided, for the log.
    pub decided: &'static str,
    /// The answer cancels the agent's turn (a refusal offered only as `cancel`).
    pub ends_turn: bool,
}

/// Answers request `id`. `allowed`: whether the teammate lets the agent act
/// (the plan gate is open and the policy is `workspace`).
pub fn answer(id: &Value, method: &str, params: &Value, allowed: bool) -> Answer {
    match method {
        "item/commandExecution/requestApproval" | "item/fileChange/requestApproval" => {
            let decision = decide(allowed, params.get("availableDecisions"));
            Answer {
                message: jsonrpc::response(id, json!({"decision": decision})),
                decided: decision,
                ends_turn: decision == "cancel",
            }
        }
        // The protocol's first version, which a v2 client should not be sent;
        // answered in its own terms all the same.
        "execCommandApproval" | "applyPatchApproval" => {
            let decision = if allowed { "approved" } else { "denied" };
            Answer {
                message: jsonrpc::response(id, json!({"decision": decision})),
                decided: decision,
                ends_turn: false,
            }
        }
        "item/permissions/requestApproval" => {
            let (granted, decided) = if allowed {
                (
                    params.get("permissions").cloned().unwrap_or(json!({})),
                    "granted",
                )
            } else {
                (json!({}), "refused")
            };
            Answer {
                message: jsonrpc::response(id, json!({"permissions": granted, "scope": "turn"})),
                decided,
                ends_turn: false,
            }
        }
        "mcpServer/elicitation/request" => {
            // The board's own tools are always allowed: submit_plan is how the
            // agent gets out of the plan gate.
            let board = params.get("serverName").and_then(Value::as_str) == Some(MCP_NAME);
            let result = if board || allowed {
                json!({"action": "accept", "content": {}})
            } else {
                json!({"action": "decline"})
            };
            Answer {
                decided: if board || allowed {
                    "accept"
                } else {
                    "decline"
                },
                message: jsonrpc::response(id, result),
                ends_turn: false,
            }
        }
        _ => Answer {
            message: jsonrpc::error_response(
                id,
                METHOD_NOT_FOUND,
                &format!("teammated does not serve {method}: there is no person to ask"),
            ),
            decided: "unserved",
            ends_turn: false,
        },
    }
}

/// The decision for an approval, among `available` when it is given.
fn decide(allowed: bool, available: Option<&Value>) -> &'static str {
    let offered = |d: &str| match available.and_then(Value::as_array) {
        Some(list) => list.iter().any(|x| x.as_str() == Some(d)),
        None => true,
    };
    let wanted: &[&'static str] = if allowed {
        &["accept", "acceptForSession", "decline", "cancel"]
    } else {
        &["decline", "cancel"]
    };
    wanted
        .iter()
        .copied()
        .find(|d| offered(d))
        .unwrap_or("decline")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The request of the survey's capture (§3.5), whose decisions lack
    /// `decline`.
    fn command_request() -> Value {
        json!({"kind":"command","threadId":"t","turnId":"u","itemId":"call_resp_2",
            "command":"/bin/bash -lc 'echo hi > tool.txt'","cwd":"/w",
            "availableDecisions":["accept",{"acceptWithExecpolicyAmendment":{"execpolicy_amendment":["/bin/bash"]}},"cancel"]})
    }

    #[test]
    fn a_command_is_accepted_or_refused_among_the_decisions_offered() {
        let yes = answer(
            &json!(0),
            "item/commandExecution/requestApproval",
            &command_request(),
            true,
        );
        assert_eq!(
            yes.message,
            json!({"jsonrpc":"2.0","id":0,"result":{"decision":"accept"}})
        );
        assert!(!yes.ends_turn);
        let no = answer(
            &json!(1),
            "item/commandExecution/requestApproval",
            &command_request(),
            false,
        );
        assert_eq!(no.message["result"]["decision"], "cancel");
        assert!(no.ends_turn, "cancel ends the turn");
        let mut offered = command_request();
        offered["availableDecisions"] = json!(["accept", "decline", "cancel"]);
        let no = answer(
            &json!(2),
            "item/commandExecution/requestApproval",
            &offered,
            false,
        );
        assert_eq!(no.message["result"]["decision"], "decline");
        assert!(!no.ends_turn);
        // Without a list, the schema's plain decisions.
        let no = answer(
            &json!(3),
            "item/fileChange/requestApproval",
            &json!({}),
            false,
        );
        assert_eq!(no.message["result"]["decision"], "decline");
    }

    #[test]
    fn the_board_mcp_tools_are_accepted_with_an_action_not_a_decision() {
        let params = json!({"serverName":"teamboard","threadId":"t","turnId":"u",
            "message":"Allow the teamboard MCP server to run tool \"submit_plan\"?"});
        let a = answer(&json!(5), "mcpServer/elicitation/request", &params, false);
        assert_eq!(a.message["result"], json!({"action":"accept","content":{}}));
        assert!(a.message["result"].get("decision").is_none());
        let other = json!({"serverName":"github"});
        let a = answer(&json!(6), "mcpServer/elicitation/request", &other, false);
        assert_eq!(a.message["result"], json!({"action":"decline"}));
        let a = answer(&json!(7), "mcpServer/elicitation/request", &other, true);
        assert_eq!(a.message["result"]["action"], "accept");
    }

    #[test]
    fn permissions_are_granted_whole_or_not_at_all() {
        let params = json!({"permissions":{"network":{"enabled":true}}});
        let a = answer(&json!(1), "item/permissions/requestApproval", &params, true);
        assert_eq!(a.message["result"]["permissions"], params["permissions"]);
        let a = answer(
            &json!(1),
            "item/permissions/requestApproval",
            &params,
            false,
        );
        assert_eq!(a.message["result"]["permissions"], json!({}));
    }

    #[test]
    fn an_unknown_request_gets_an_error_not_silence() {
        let a = answer(&json!(9), "item/tool/requestUserInput", &json!({}), true);
        assert_eq!(a.message["error"]["code"], METHOD_NOT_FOUND);
        assert_eq!(a.message["id"], 9);
    }
}
