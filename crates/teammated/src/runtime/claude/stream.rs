//! Claude Code's stream-json, both ways, as a pure state machine: the lines
//! teammated writes (user turns, control requests and answers) and what each
//! line the CLI prints means ([`Action`]s). No I/O here; `driver` does it.
//!
//! The shapes are those of Claude Code 2.1.332 (`docs/design/runtime-claude.md`
//! §3, §4, §6, §9). Decisions and traps:
//!
//! - **The final answer.** One process may print several `result`s for one
//!   task: a user line written while the model streams a reply becomes the next
//!   turn, with a `result` of its own. Every user line is echoed once
//!   (`isReplay`, thanks to `--replay-user-messages`) when the CLI takes it into
//!   the conversation, in the order written; a line not yet echoed when a
//!   `result` comes is still to be answered. So a `result` is the final answer
//!   (`Idle`) only when every line written has been echoed (`queued_turn_count`
//!   stays 0 even with a line queued: it cannot tell); else it is `TurnEnded`.
//! - **The outcome** is read from `is_error` (and an `error_*` subtype), never
//!   from `subtype` alone: an API error is `subtype:"success"`, `is_error:true`.
//! - **Usage** is settled per model call, as it comes, so that a budget can
//!   stop a turn that never ends: with `--include-partial-messages` each call
//!   streams its `message_start` (the input and the model) and its
//!   `message_delta` (the final output count), and the call is reported at
//!   the delta. A turn's `result.usage` sums its calls; only what the calls
//!   left out (one cut off before its delta) is reported with it. Trap: the
//!   `assistant` events repeat the `message_start` snapshot per content block,
//!   and summing those would count the input many times over.
//! - **Billing.** `system/init`'s `apiKeySource` is `none` without an API key:
//!   on a claude.ai login, but also with `ANTHROPIC_AUTH_TOKEN` (a gateway)
//!   and on Bedrock or Vertex. So a subscription is `none` with none of those
//!   in the CLI's environment (`args::other_credentials`). On a subscription
//!   the CLI prints a `rate_limit_event` whenever the plan's windows change; a
//!   `rejected` one (with `resetsAt`, in seconds) is a usage limit.
//! - **Its own spend cap** (`--max-budget-usd`) ends the turn with
//!   `error_max_budget_usd`: reported as [`AgentEvent::OverBudget`], not as a
//!   failure.
//! - **Permissions.** With `--permission-prompt-tool stdio` every tool call the
//!   mode does not allow by itself comes as a `can_use_tool` control request and
//!   waits for its answer. Each one is answered, by the policy and the plan gate;
//!   `ExitPlanMode` while the gate is closed is held until the lead decides. A
//!   control request of any other kind gets an error answer: the CLI waits on
//!   every request, and one left unanswered would hang the turn.

use crate::runtime::{AgentEvent, AgentPolicy, Limit, PlanAnswer, Usage, approved_note};
use serde_json::{Value, json};
use std::collections::{BTreeMap, VecDeque};
use teamboard_protocol::TokenUsage;

/// The tool Claude Code calls to leave plan mode with its plan.
pub(super) const EXIT_PLAN: &str = "ExitPlanMode";

/// The tools a read-only teammate (or one whose plan is not approved yet) may
/// use: they read the worktree and change nothing. `TodoWrite` only keeps the
/// agent's own list.
const READ_TOOLS: &[&str] = &[
    "Read",
    "Glob",
    "Grep",
    "LS",
    "NotebookRead",
    "TodoWrite",
    "TodoRead",
];

/// The account of a claude.ai login, as the ledger names it.
pub(super) const SUBSCRIPTION: &str = "claude-subscription";

/// The prefix of the board's MCP tools (the server is named `teamboard`). They
/// are the teammate's own board operations, allowed under every policy: the
/// member socket and the board check them.
const BOARD_TOOLS: &str = "mcp__teamboard__";

/// What a line from the CLI asks of the driver.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Report this to the caller.
    Emit(AgentEvent),
    /// Write this line to the CLI.
    Write(Value),
    /// The turn failed: report [`AgentEvent::Failed`] with this reason and the
    /// last stderr lines.
    Fail(String),
    /// The session asked for with `--resume` cannot be resumed: start a new one.
    /// The reason, for the transcript.
    ResumeFailed(String),
}

/// A user line written and not yet echoed.
#[derive(Debug, Clone)]
pub struct Pending {
    /// What its echo reports as delivered: [`FIRST_INPUT`] for the brief's
    /// prompt, a send's tag; `None` for a line of teammated's own (a plan
    /// decision), which nobody waits on.
    pub tag: Option<u64>,
    pub text: String,
}

/// What teammated knows of the conversation with one CLI process.
#[derive(Debug)]
pub struct Stream {
    policy: AgentPolicy,
    /// The claim needs an approved plan and has none yet: everything but reads
    /// is refused, and `ExitPlanMode` is held for the lead.
    gate_closed: bool,
    /// `--resume` was asked for and no `system/init` has come yet: an error
    /// now means the session cannot be resumed.
    resuming: bool,
    /// Whether the session was resumed, once it is open.
    resumed: bool,
    /// Why a new session replaced the one asked for.
    why_new: Option<String>,
    /// The session id, once `system/init` said it.
    session: Option<String>,
    /// User lines written and not yet echoed, in order.
    unechoed: VecDeque<Pending>,
    /// A turn runs (or is queued): from a user line written until the `result`
    /// that leaves nothing to answer.
    busy: bool,
    /// The `ExitPlanMode` request held for the lead: (request id, its input).
    held_plan: Option<(String, Value)>,
    /// For the ids of control requests teammated sends.
    next_request: u64,
    /// The CLI has credentials other than a claude.ai login in its
    /// environment (see the module's notes on billing).
    other_credentials: bool,
    /// On a claude.ai login, once `system/init` said so.
    subscription: bool,
    /// The model `system/init` named, for usage whose call named none.
    model: Option<String>,
    /// The model calls streaming now, by the tool call of the subagent that
    /// makes them (`parent_tool_use_id`; none for the session's own): each
    /// one's `message_start` usage and model, until its `message_delta`.
    calls: BTreeMap<String, (TokenUsage, Option<String>)>,
    /// What the calls of the running turn reported: its `result.usage`
    /// reports only the rest.
    turn: TokenUsage,
}

impl Stream {
    pub fn new(policy: AgentPolicy, plan_first: bool, resuming: bool) -> Stream {
        Stream {
            policy,
            gate_closed: plan_first,
            resuming,
            resumed: false,
            why_new: None,
            session: None,
            unechoed: VecDeque::new(),
            busy: false,
            held_plan: None,
            next_request: 0,
            other_credentials: false,
            subscription: false,
            model: None,
            calls: BTreeMap::new(),
            turn: TokenUsage::default(),
        }
    }

    /// The CLI has credentials other than a claude.ai login in its
    /// environment: `apiKeySource: none` is then no subscription.
    pub fn with_other_credentials(mut self, other: bool) -> Stream {
        self.other_credentials = other;
        self
    }

    /// Whether a turn is running or queued (an interrupt has something to stop).
    pub fn busy(&self) -> bool {
        self.busy
    }

    /// Whether the session asked for with `--resume` has not opened yet.
    pub fn resuming(&self) -> bool {
        self.resuming
    }

    /// Whether the plan gate is closed (the CLI is to start in plan mode).
    pub fn gate_closed(&self) -> bool {
        self.gate_closed
    }

    /// A user line carrying `text`; `tag` is what its echo reports.
    pub fn user_line(&mut self, tag: Option<u64>, text: &str) -> Value {
        self.unechoed.push_back(Pending {
            tag,
            text: text.to_string(),
        });
        self.busy = true;
        user_value(text)
    }

    /// The resume failed and a new process starts a new session: returns the
    /// lines the old process had not taken, to be written again (each through
    /// [`Stream::user_line`]).
    pub fn restart_new(&mut self, why: String) -> Vec<Pending> {
        self.resuming = false;
        self.why_new = Some(why);
        self.busy = false;
        self.held_plan = None;
        self.unechoed.drain(..).collect()
    }

    /// The `interrupt` control request.
    pub fn interrupt(&mut self) -> Value {
        self.control_request(json!({"subtype": "interrupt"}))
    }

    /// The lines that answer the lead's decision on the plan: the answer to
    /// the held `ExitPlanMode`, or, for a plan that came another way (the
    /// board's `submit_plan`), a user line with the decision. Trap: without
    /// that line an agent whose turn ended waiting for the decision would
    /// never hear of it.
    pub fn answer_plan(&mut self, answer: PlanAnswer) -> Vec<Value> {
        let held = self.held_plan.take();
        match answer {
            PlanAnswer::Approved { feedback } => {
                self.gate_closed = false;
                let mut lines = Vec::new();
                let was_held = held.is_some();
                if let Some((id, input)) = held {
                    lines.push(allow(&id, input));
                }
                // Out of plan mode; what the CLI then asks is answered by the
                // policy.
                lines.push(
                    self.control_request(
                        json!({"subtype": "set_permission_mode", "mode": "default"}),
                    ),
                );
                if !was_held {
                    lines.push(self.user_line(None, &approved_note(&feedback)));
                }
                lines
            }
            PlanAnswer::Rejected { feedback } => {
                let feedback = feedback.trim();
                let message = if feedback.is_empty() {
                    "The lead rejected the plan. Revise it and propose it again.".to_string()
                } else {
                    format!(
                        "The lead rejected the plan: {feedback}\nRevise it and propose it again."
                    )
                };
                match held {
                    Some((id, _)) => vec![deny(&id, &message)],
                    None => vec![self.user_line(None, &format!("[Runtime] {message}"))],
                }
            }
        }
    }

    /// What one JSON line from the CLI means.
    pub fn on_line(&mut self, v: &Value) -> Vec<Action> {
        match v["type"].as_str().unwrap_or_default() {
            "system" if v["subtype"] == "init" => self.on_init(v),
            "assistant" => said(v),
            "user" if v["isReplay"] == true => self.on_echo(),
            "result" => self.on_result(v),
            "stream_event" => {
                let by = v["parent_tool_use_id"].as_str().unwrap_or_default();
                self.on_stream_event(by, &v["event"])
            }
            "rate_limit_event" => self.on_rate_limit(&v["rate_limit_info"]),
            "control_request" => self.on_control_request(v),
            "control_response" => {
                if v["response"]["subtype"] == "error" {
                    tracing::warn!(
                        answer = %v["response"],
                        "claude refused a control request"
                    );
                }
                Vec::new()
            }
            _ => Vec::new(),
        }
    }

    /// `system/init` comes at the start of every turn; the first one opens the
    /// session.
    fn on_init(&mut self, v: &Value) -> Vec<Action> {
        if let Some(model) = v["model"].as_str() {
            self.model = Some(model.to_string());
        }
        self.subscription = v["apiKeySource"] == "none" && !self.other_credentials;
        if self.session.is_some() {
            return Vec::new();
        }
        let Some(id) = v["session_id"].as_str() else {
            return Vec::new();
        };
        self.resumed = self.resuming;
        self.resuming = false;
        self.session = Some(id.to_string());
        vec![Action::Emit(AgentEvent::Session {
            id: id.to_string(),
            resumed: self.resumed,
            why_new: self.why_new.clone(),
        })]
    }

    fn on_echo(&mut self) -> Vec<Action> {
        match self.unechoed.pop_front() {
            Some(Pending { tag: Some(tag), .. }) => vec![Action::Emit(AgentEvent::Delivered(tag))],
            Some(Pending { tag: None, .. }) => Vec::new(),
            None => {
                tracing::warn!("claude echoed a user line teammated did not write");
                Vec::new()
            }
        }
    }

    fn on_result(&mut self, v: &Value) -> Vec<Action> {
        let failed = v["is_error"] == true
            || v["subtype"]
                .as_str()
                .is_some_and(|s| s.starts_with("error"));
        if self.resuming && self.session.is_none() && failed {
            return vec![Action::ResumeFailed(failure(v))];
        }
        let mut actions = Vec::new();
        // The turn's calls reported themselves; what they left out, now.
        let turn = std::mem::take(&mut self.turn);
        self.calls.clear();
        if let Some(all) = usage(&v["usage"]) {
            let rest = TokenUsage {
                input: all.input.saturating_sub(turn.input),
                output: all.output.saturating_sub(turn.output),
                cache_read: all.cache_read.saturating_sub(turn.cache_read),
                cache_write: all.cache_write.saturating_sub(turn.cache_write),
            };
            if rest.total() > 0 {
                actions.push(self.usage_event(rest, None, true));
            }
        }
        if v["subtype"] == "error_max_budget_usd" {
            self.busy = false;
            actions.push(Action::Emit(AgentEvent::OverBudget(failure(v))));
        } else if failed {
            self.busy = false;
            actions.push(Action::Fail(failure(v)));
        } else {
            let answer = v["result"].as_str().unwrap_or_default().to_string();
            self.busy = !self.unechoed.is_empty();
            actions.push(Action::Emit(match self.busy {
                false => AgentEvent::Idle { answer },
                true => AgentEvent::TurnEnded { answer },
            }));
        }
        actions
    }

    /// A raw event of the model call streaming now
    /// (`--include-partial-messages`): its start and its final usage.
    fn on_stream_event(&mut self, by: &str, e: &Value) -> Vec<Action> {
        match e["type"].as_str().unwrap_or_default() {
            "message_start" => {
                let m = &e["message"];
                let tokens = usage(&m["usage"]).unwrap_or_default();
                let model = m["model"].as_str().map(str::to_string);
                self.calls.insert(by.to_string(), (tokens, model));
                Vec::new()
            }
            "message_delta" => {
                let Some((mut tokens, model)) = self.calls.remove(by) else {
                    return Vec::new();
                };
                // The model ended its turn, rather than asked for a tool.
                let ends_turn = matches!(
                    e["delta"]["stop_reason"].as_str(),
                    Some("end_turn" | "stop_sequence")
                );
                // The delta's counts are final; what it leaves out stays as
                // the start said.
                let u = &e["usage"];
                for (key, field) in [
                    ("input_tokens", &mut tokens.input),
                    ("output_tokens", &mut tokens.output),
                    ("cache_read_input_tokens", &mut tokens.cache_read),
                    ("cache_creation_input_tokens", &mut tokens.cache_write),
                ] {
                    if let Some(n) = u[key].as_u64() {
                        *field = n;
                    }
                }
                if tokens.total() == 0 {
                    return Vec::new();
                }
                self.turn.add(tokens);
                vec![self.usage_event(tokens, model, ends_turn)]
            }
            _ => Vec::new(),
        }
    }

    /// A change of the subscription's windows: a `rejected` status is a usage
    /// limit, until `resetsAt`.
    fn on_rate_limit(&mut self, info: &Value) -> Vec<Action> {
        if info["status"] != "rejected" {
            return Vec::new();
        }
        let reason = info["rateLimitType"]
            .as_str()
            .map_or("usage limit".to_string(), |t| format!("{t} usage limit"));
        vec![Action::Emit(AgentEvent::LimitReached(Limit {
            account: SUBSCRIPTION.to_string(),
            model: self.priced(None),
            until_ms: info["resetsAt"].as_i64().map(|s| s.saturating_mul(1000)),
            reason,
        }))]
    }

    /// Usage of `tokens` by `model` (else the session's).
    fn usage_event(&self, tokens: TokenUsage, model: Option<String>, ends_turn: bool) -> Action {
        Action::Emit(AgentEvent::Usage(Usage {
            tokens,
            model: self.priced(model),
            subscription: self.subscription.then(|| SUBSCRIPTION.to_string()),
            ends_turn,
        }))
    }

    /// `model` (else the session's) as the price table names it. The CLI's
    /// stand-in for an API error (`<synthetic>`) is no model.
    fn priced(&self, model: Option<String>) -> Option<String> {
        model
            .or_else(|| self.model.clone())
            .filter(|m| !m.is_empty() && !m.starts_with('<'))
            .map(|m| format!("anthropic/{m}"))
    }

    fn on_control_request(&mut self, v: &Value) -> Vec<Action> {
        let id = match &v["request_id"] {
            Value::String(s) => s.clone(),
            Value::Null => return Vec::new(),
            other => other.to_string(),
        };
        let request = &v["request"];
        if request["subtype"] != "can_use_tool" {
            let what = request["subtype"].as_str().unwrap_or("(none)");
            return vec![Action::Write(json!({
                "type": "control_response",
                "response": {
                    "subtype": "error",
                    "request_id": id,
                    "error": format!("teamboard does not handle '{what}' requests"),
                },
            }))];
        }
        let tool = request["tool_name"].as_str().unwrap_or_default();
        let input = request["input"].clone();
        if tool == EXIT_PLAN && self.gate_closed {
            let mut actions = Vec::new();
            if let Some((old, _)) = self.held_plan.take() {
                // A second proposal replaces the first, which must not hang.
                actions.push(Action::Write(deny(&old, "superseded by a newer plan")));
            }
            let plan = input["plan"].as_str().unwrap_or_default().to_string();
            self.held_plan = Some((id, input));
            actions.push(Action::Emit(AgentEvent::PlanProposed(plan)));
            return actions;
        }
        let answer = match self.refusal(tool) {
            None => allow(&id, input),
            Some(why) => deny(&id, &why),
        };
        vec![Action::Write(answer)]
    }

    /// Why `tool` is refused, or `None` when it is allowed.
    fn refusal(&self, tool: &str) -> Option<String> {
        if tool.starts_with(BOARD_TOOLS) || READ_TOOLS.contains(&tool) || tool == EXIT_PLAN {
            return None;
        }
        if self.gate_closed {
            return Some(format!(
                "{tool} is refused until the lead approves your plan: look around with \
                 read-only tools, then propose the plan with {EXIT_PLAN}"
            ));
        }
        match self.policy {
            AgentPolicy::Workspace => None,
            AgentPolicy::ReadOnly => Some(format!(
                "{tool} is refused: this teammate's policy is read-only (reads only, no \
                 commands, no changes)"
            )),
        }
    }

    fn control_request(&mut self, request: Value) -> Value {
        self.next_request += 1;
        json!({
            "type": "control_request",
            "request_id": format!("teamboard-{}", self.next_request),
            "request": request,
        })
    }
}

/// A user turn.
pub(super) fn user_value(text: &str) -> Value {
    json!({"type": "user", "message": {"role": "user", "content": text}})
}

fn allow(id: &str, input: Value) -> Value {
    let input = if input.is_object() { input } else { json!({}) };
    json!({
        "type": "control_response",
        "response": {
            "subtype": "success",
            "request_id": id,
            "response": {"behavior": "allow", "updatedInput": input},
        },
    })
}

fn deny(id: &str, message: &str) -> Value {
    json!({
        "type": "control_response",
        "response": {
            "subtype": "success",
            "request_id": id,
            "response": {"behavior": "deny", "message": message},
        },
    })
}

/// The transcript of an `assistant` event: each content block is an event of
/// its own, text or a tool call.
fn said(v: &Value) -> Vec<Action> {
    let Some(blocks) = v["message"]["content"].as_array() else {
        return Vec::new();
    };
    blocks
        .iter()
        .filter_map(|b| match b["type"].as_str()? {
            "text" => {
                let text = b["text"].as_str()?.trim();
                (!text.is_empty()).then(|| Action::Emit(AgentEvent::Said(text.to_string())))
            }
            "tool_use" => Some(Action::Emit(AgentEvent::ToolCall {
                name: b["name"].as_str().unwrap_or("(unnamed)").to_string(),
                input: b["input"].to_string(),
            })),
            _ => None,
        })
        .collect()
}

/// A `result`'s usage; `None` when it has none.
fn usage(u: &Value) -> Option<TokenUsage> {
    if !u.is_object() {
        return None;
    }
    let n = |k: &str| u[k].as_u64().unwrap_or(0);
    Some(TokenUsage {
        input: n("input_tokens"),
        output: n("output_tokens"),
        cache_read: n("cache_read_input_tokens"),
        cache_write: n("cache_creation_input_tokens"),
    })
}

/// Why a failed `result` failed, in words: its terminal reason, its errors and
/// its text.
fn failure(v: &Value) -> String {
    let reason = v["terminal_reason"]
        .as_str()
        .or_else(|| v["subtype"].as_str())
        .unwrap_or("error");
    let mut parts = Vec::new();
    if let Some(errors) = v["errors"].as_array() {
        parts.extend(errors.iter().map(|e| match e.as_str() {
            Some(s) => s.to_string(),
            None => e.to_string(),
        }));
    }
    if let Some(text) = v["result"].as_str().map(str::trim)
        && !text.is_empty()
        && !parts.iter().any(|p| p == text)
    {
        parts.push(text.to_string());
    }
    if parts.is_empty() {
        format!("claude ended the turn with an error ({reason})")
    } else {
        format!(
            "claude ended the turn with an error ({reason}): {}",
            parts.join("; ")
        )
    }
}

#[cfg(test)]
mod tests;
