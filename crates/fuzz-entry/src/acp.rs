//! ACP as teammated reads it: each line sorted by the JSON-RPC table of our
//! requests (`runtime::jsonrpc::Requests`), then each message read by the
//! functions of `runtime::acp::wire` that the handshake and the driver call
//! on it. The driver's own I/O and timers are left out.

use crate::script::{self, Call, Step};
use serde_json::{Value, json};
use teammated::runtime::acp::wire::{self, Permission};
use teammated::runtime::jsonrpc::{Incoming, Requests};
use teammated::runtime::process::Line;

/// What one of our requests asked, as far as reading its answer goes.
#[derive(Debug, Clone, Copy)]
enum Asked {
    Initialize,
    SessionNew,
    Prompt,
}

/// A session: a setup byte, then the agent's lines and the driver's calls.
pub fn acp(data: &[u8]) {
    let (setup, steps) = script::read(data);
    let mut requests = Requests::default();
    // Ids 1, 2 and 3: the handshake and the first prompt.
    requests.ask("initialize", wire::initialize_params(), Asked::Initialize);
    requests.ask("session/new", json!({}), Asked::SessionNew);
    requests.ask("session/prompt", json!({}), Asked::Prompt);
    let mut gated = setup.plan_first;
    let mut held: Option<Value> = None;
    for step in steps {
        match step {
            Step::Agent(line) => {
                let Some(Line::Json(value)) = Line::read(line) else {
                    continue;
                };
                let Some(msg) = requests.read(value) else {
                    continue;
                };
                match msg {
                    Incoming::Response { asked, result } => answered(asked, result.ok()),
                    Incoming::Request { method, params, .. } => {
                        if method == "session/request_permission" {
                            let _ = wire::tool(&params["toolCall"]);
                            if let Permission::Hold = wire::permission(&params, setup.policy, gated)
                            {
                                let _ = wire::plan_file(&params);
                                let _ = wire::plan_inline(&params);
                                held = Some(params);
                            }
                        }
                    }
                    Incoming::Notification { method, params } => {
                        if method == "session/update" && params["sessionId"] == "sess_1" {
                            let _ = wire::update(&params);
                        }
                    }
                }
            }
            Step::Call(Call::Send(_)) => {
                requests.ask("session/prompt", json!({}), Asked::Prompt);
            }
            Step::Call(Call::Interrupt) => {}
            Step::Call(Call::Approve(_)) => {
                gated = false;
                if let Some(params) = held.take() {
                    let _ = wire::option(&params, &["allow_once", "allow_always"]);
                }
            }
            Step::Call(Call::Reject(_)) => {
                if let Some(params) = held.take() {
                    let _ = wire::option(&params, &["reject_once", "reject_always"]);
                }
            }
        }
    }
}

/// Reads the result of one of our requests as its caller does.
fn answered(asked: Asked, result: Option<Value>) {
    let Some(result) = result else {
        return;
    };
    match asked {
        Asked::Initialize => {
            let _ = result["protocolVersion"].as_u64();
            let _ = wire::agent_name(&result);
        }
        Asked::SessionNew => {
            let _ = result["sessionId"].as_str();
            let _ = wire::modes(&result);
        }
        Asked::Prompt => {
            let _ = wire::usage(&result);
            let _ = wire::stop_reason(&result);
        }
    }
}
