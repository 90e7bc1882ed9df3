//! One Codex session as a state machine: the messages `codex app-server`
//! writes go in, the lines to write back and the [`AgentEvent`]s for the WORK
//! loop come out. No I/O here, so that the mapping is tested on captured lines
//! without the CLI (`tests.rs`); `actor.rs` moves the lines.
//!
//! The mapping (docs/runtimes.md):
//! - **open**: `initialize`, `initialized`, then `thread/resume` of the task's
//!   thread, or `thread/start`; a resume that fails becomes a start, and the
//!   [`AgentEvent::Session`] says why. Then `turn/start` with the task.
//! - **input** ([`Core::send`]): `turn/steer` into the active turn, else
//!   `turn/start`. It is [`AgentEvent::Delivered`] when its `userMessage` item
//!   appears (Codex echoes our `clientUserMessageId` as the item's `clientId`),
//!   so a message is acknowledged only once it is in the conversation.
//! - **final answer**: a `completed` turn with nothing sent still on its way is
//!   [`AgentEvent::Idle`] with the turn's last `agentMessage`; with a send on its
//!   way (a steer that missed the turn), [`AgentEvent::TurnEnded`].
//! - **errors**: a `failed` turn, an `error` that Codex will not retry, or an
//!   error answer to a turn it must accept is [`AgentEvent::Failed`], once.
//! - **usage**: each `thread/tokenUsage/updated` of a turn of this process
//!   (its `last`: one model call's), priced as `openai/` and the thread's model
//!   (`thread/start`'s answer, or a `model/rerouted`). Trap: a resume reports
//!   the thread's usage so far with the id of an old turn, which must not count
//!   again.
//! - **billing**: `account/read` says the login. A ChatGPT account (on a
//!   provider that uses it, `requiresOpenaiAuth`) is a subscription,
//!   `codex-chatgpt`; anything else (an API key, a provider with a key of its
//!   own, no answer) is paid per call.
//! - **usage limits**: an `error` with `codexErrorInfo: usageLimitExceeded`
//!   is [`AgentEvent::LimitReached`] instead of a failure, until the reset of
//!   the window the last `account/rateLimits/updated` showed full. Trap: the
//!   error itself has the reset only in its words ("try again at 8:16 AM", in
//!   local time); the windows come from the provider's `x-codex-*` headers.
//!
//! The plan gate. Codex has no plan mode, so the gate is made of three things:
//! the thread runs `read-only`, every approval request is refused, and the
//! agent is told to plan and submit the plan. A planning turn that completes
//! never becomes `Idle` (the WORK loop would complete the task): if the agent
//! called the board's `submit_plan` during the turn, the plan is with the lead
//! already and the session waits; otherwise the turn's last message is the plan
//! ([`AgentEvent::PlanProposed`]), which the WORK loop submits. An answer
//! ([`Core::answer_plan`]) starts the next turn at the turn boundary: approved,
//! with a writable sandbox; rejected, read-only with the feedback.
//!
//! Invariants: at most one `turn/start` is in flight, and none while a turn is
//! active (input then goes in with `turn/steer`, whose id must be the active
//! turn's: a wrong one is an error, not a queue). A steer that loses the race
//! with the end of its turn is sent again as a `turn/start`.

use super::answers;
use super::params::{self, ThreadSetup, texts};
use crate::runtime::jsonrpc::{self, Incoming, Requests, RpcError};
use crate::runtime::{AgentEvent, AgentPolicy, FIRST_INPUT, Limit, McpServer, PlanAnswer, Usage};
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashSet, VecDeque};
use std::path::PathBuf;
use teamboard_protocol::TokenUsage;

/// What the core wants done.
#[derive(Debug, Clone, PartialEq)]
pub enum Out {
    /// A line for the agent's stdin.
    Write(Value),
    /// An event for the WORK loop.
    Emit(AgentEvent),
}

/// What one session starts from.
#[derive(Debug, Clone)]
pub struct Setup {
    pub cwd: PathBuf,
    pub identity: String,
    pub prompt: String,
    pub resume: Option<String>,
    pub model: Option<String>,
    pub mcp: Option<McpServer>,
    pub policy: AgentPolicy,
    pub plan_first: bool,
    /// Model calls allowed in this session (`--max-rounds`).
    pub max_rounds: u32,
}

/// A request of ours whose answer has not come.
#[derive(Debug, Clone)]
enum Asked {
    Initialize,
    Account,
    ThreadResume,
    /// `why_new`: why a resume was not possible, when one was asked for.
    ThreadStart {
        why_new: Option<String>,
    },
    TurnStart,
    Steer {
        tag: u64,
    },
    Interrupt,
}

#[derive(Debug, Clone, PartialEq)]
enum Turn {
    Idle,
    /// A `turn/start` is on its way; its id comes with the answer.
    Starting,
    Active(String),
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Gate {
    Open,
    /// The agent is to plan; its plan has not gone to the lead.
    Planning,
    /// The plan is with the lead.
    Submitted,
}

/// The text of a turn to start, and the send it carries, if any.
#[derive(Debug, Clone)]
struct Input {
    text: String,
    tag: Option<u64>,
    sandbox: Option<Value>,
}

pub struct Core {
    setup: Setup,
    requests: Requests<Asked>,
    thread: Option<String>,
    opened: bool,
    turn: Turn,
    /// Turns started by this process: their usage counts.
    ours: HashSet<String>,
    /// The last `agentMessage` of the current turn.
    last_message: String,
    /// The agent called the board's `submit_plan` in the current turn.
    plan_called: bool,
    gate: Gate,
    /// Turns to start at the next turn boundary (answers to the plan).
    held: VecDeque<Input>,
    /// Sends waiting for the starting turn's id, to be steered in.
    waiting: Vec<u64>,
    /// Sends not delivered yet: tag → text.
    undelivered: BTreeMap<u64, String>,
    /// The first turn's input (its client id and text) until its
    /// `userMessage` item shows: then it is [`FIRST_INPUT`], delivered. Never
    /// sent again (the task's prompt would start over), unlike a send.
    first: Option<(String, String)>,
    /// Sends already sent a second time after an error.
    retried: HashSet<u64>,
    /// Runtime turns started (their client ids).
    runtime_turns: u64,
    interrupting: bool,
    /// A refusal of ours (`cancel`) ended the current turn.
    cancelled: bool,
    failed: bool,
    rounds: u32,
    /// The thread's model and provider, as Codex answered them.
    model: Option<String>,
    provider: Option<String>,
    /// On a ChatGPT login (see the module's notes).
    chatgpt: bool,
    /// When the window the provider last showed full resets, in ms since the
    /// epoch.
    full_until: Option<i64>,
}

/// The account of a ChatGPT login, as the ledger names it.
pub const CHATGPT: &str = "codex-chatgpt";

impl Core {
    pub fn new(setup: Setup) -> Core {
        let gate = if setup.plan_first {
            Gate::Planning
        } else {
            Gate::Open
        };
        Core {
            setup,
            requests: Requests::default(),
            thread: None,
            opened: false,
            turn: Turn::Idle,
            ours: HashSet::new(),
            last_message: String::new(),
            plan_called: false,
            gate,
            held: VecDeque::new(),
            waiting: Vec::new(),
            undelivered: BTreeMap::new(),
            first: None,
            retried: HashSet::new(),
            runtime_turns: 0,
            interrupting: false,
            cancelled: false,
            failed: false,
            rounds: 0,
            model: None,
            provider: None,
            chatgpt: false,
            full_until: None,
        }
    }

    /// No turn is running (or starting).
    pub fn turn_over(&self) -> bool {
        self.turn == Turn::Idle
    }

    /// The first lines: `initialize`.
    pub fn begin(&mut self) -> Vec<Out> {
        vec![self.request("initialize", params::initialize(), Asked::Initialize)]
    }

    /// One line from the agent.
    pub fn on_line(&mut self, line: Value) -> Vec<Out> {
        let Some(msg) = self.requests.read(line) else {
            return Vec::new();
        };
        match msg {
            Incoming::Response { asked, result } => self.on_response(asked, result),
            Incoming::Request { id, method, params } => {
                let allowed = self.gate == Gate::Open && params::may_write(self.setup.policy);
                let answer = answers::answer(&id, &method, &params, allowed);
                tracing::debug!(%method, decided = answer.decided, "codex asked");
                if answer.ends_turn {
                    self.cancelled = true;
                }
                vec![Out::Write(answer.message)]
            }
            Incoming::Notification { method, params } => self.on_notification(&method, &params),
        }
    }

    /// Input from the WORK loop, tagged for its [`AgentEvent::Delivered`].
    pub fn send(&mut self, tag: u64, text: &str) -> Vec<Out> {
        if self.failed {
            return Vec::new();
        }
        self.undelivered.insert(tag, text.to_string());
        self.dispatch(tag)
    }

    /// The lead's decision on the plan: the next turn, at the turn boundary.
    pub fn answer_plan(&mut self, answer: PlanAnswer) -> Vec<Out> {
        let input = match answer {
            PlanAnswer::Approved { feedback } => {
                self.gate = Gate::Open;
                Input {
                    text: texts::approved(&feedback),
                    tag: None,
                    sandbox: Some(params::sandbox_policy(params::may_write(self.setup.policy))),
                }
            }
            PlanAnswer::Rejected { feedback } => {
                self.gate = Gate::Planning;
                Input {
                    text: texts::rejected(&feedback),
                    tag: None,
                    sandbox: Some(params::sandbox_policy(false)),
                }
            }
        };
        if self.failed {
            return Vec::new();
        }
        if self.opened && self.turn == Turn::Idle {
            self.start_turn(input)
        } else {
            self.held.push_back(input);
            Vec::new()
        }
    }

    /// Interrupts the active turn, for a stop. The caller then waits a while
    /// for [`Core::turn_over`].
    pub fn interrupt(&mut self) -> Vec<Out> {
        self.interrupting = true;
        match (&self.turn, &self.thread) {
            (Turn::Active(turn), Some(thread)) => {
                let params = params::turn_interrupt(thread, turn);
                vec![self.request("turn/interrupt", params, Asked::Interrupt)]
            }
            _ => Vec::new(),
        }
    }

    fn request(&mut self, method: &str, params: Value, asked: Asked) -> Out {
        Out::Write(self.requests.ask(method, params, asked))
    }

    fn thread_setup(&self) -> ThreadSetup<'_> {
        ThreadSetup {
            cwd: &self.setup.cwd,
            identity: &self.setup.identity,
            model: self.setup.model.as_deref(),
            mcp: self.setup.mcp.as_ref(),
            writable: self.gate == Gate::Open && params::may_write(self.setup.policy),
        }
    }

    fn on_response(&mut self, asked: Asked, result: Result<Value, RpcError>) -> Vec<Out> {
        match (asked, result) {
            (Asked::Initialize, Ok(_)) => {
                let mut out = vec![Out::Write(jsonrpc::notification(
                    "initialized",
                    Value::Null,
                ))];
                out.push(self.request("account/read", json!({}), Asked::Account));
                out.push(match self.setup.resume.clone() {
                    Some(thread) => {
                        let params = params::thread_resume(&thread, &self.thread_setup());
                        self.request("thread/resume", params, Asked::ThreadResume)
                    }
                    None => self.start_thread(None),
                });
                out
            }
            (Asked::Initialize, Err(e)) => self.fail(format!("codex refused to initialize: {e}")),
            (Asked::Account, Ok(r)) => {
                self.chatgpt = r["requiresOpenaiAuth"] == true && r["account"]["type"] == "chatgpt";
                Vec::new()
            }
            (Asked::Account, Err(e)) => {
                tracing::warn!(error = %e, "codex did not say its login; its usage is priced");
                Vec::new()
            }
            (Asked::ThreadResume, Ok(r)) => {
                self.thread_model(&r);
                let id = r["thread"]["id"]
                    .as_str()
                    .map(str::to_string)
                    .or_else(|| self.setup.resume.clone());
                self.opened_thread(id, true, None)
            }
            (Asked::ThreadResume, Err(e)) => vec![self.start_thread(Some(e.message))],
            (Asked::ThreadStart { why_new }, Ok(r)) => {
                self.thread_model(&r);
                let id = r["thread"]["id"].as_str().map(str::to_string);
                self.opened_thread(id, false, why_new)
            }
            (Asked::ThreadStart { .. }, Err(e)) => {
                self.fail(format!("codex could not open a thread: {e}"))
            }
            (Asked::TurnStart, Ok(r)) => match r["turn"]["id"].as_str() {
                Some(id) => self.turn_began(id),
                None => self.fail("codex started a turn without an id".into()),
            },
            (Asked::TurnStart, Err(e)) => {
                self.turn = Turn::Idle;
                self.fail(format!("codex refused a turn: {e}"))
            }
            (Asked::Steer { .. }, Ok(_)) => Vec::new(),
            (Asked::Steer { tag }, Err(e)) => {
                if !self.undelivered.contains_key(&tag) {
                    return Vec::new();
                }
                if !self.retried.insert(tag) {
                    return self.fail(format!("codex refused a message twice: {e}"));
                }
                tracing::debug!(error = %e, tag, "a steer missed its turn; sent again");
                self.dispatch(tag)
            }
            (Asked::Interrupt, _) => Vec::new(),
        }
    }

    /// The model and provider of the thread just opened.
    fn thread_model(&mut self, r: &Value) {
        let text = |v: &Value| v.as_str().filter(|s| !s.is_empty()).map(str::to_string);
        self.model = text(&r["model"]).or_else(|| self.setup.model.clone());
        self.provider = text(&r["modelProvider"]);
    }

    /// The model as the price table names it.
    fn priced(&self) -> Option<String> {
        self.model.as_ref().map(|m| format!("openai/{m}"))
    }

    /// The account the calls go to: the ChatGPT login, else the provider's.
    fn account(&self) -> String {
        match (&self.provider, self.chatgpt) {
            (_, true) => CHATGPT.to_string(),
            (Some(p), false) => format!("codex-{p}"),
            (None, false) => "codex".to_string(),
        }
    }

    fn start_thread(&mut self, why_new: Option<String>) -> Out {
        let params = params::thread_start(&self.thread_setup());
        self.request("thread/start", params, Asked::ThreadStart { why_new })
    }

    fn opened_thread(
        &mut self,
        id: Option<String>,
        resumed: bool,
        why_new: Option<String>,
    ) -> Vec<Out> {
        let Some(id) = id else {
            return self.fail("codex opened a thread without an id".into());
        };
        self.thread = Some(id.clone());
        self.opened = true;
        let mut text = self.setup.prompt.clone();
        if why_new.is_some() {
            text = format!("{}\n\n{text}", texts::NEW_SESSION);
        }
        if self.gate == Gate::Planning {
            text = format!("{text}\n\n{}", texts::PLAN_GATE);
        }
        let mut out = vec![Out::Emit(AgentEvent::Session {
            id,
            resumed,
            why_new,
        })];
        self.first = Some((runtime_client_id(self.runtime_turns + 1), text.clone()));
        let first = Input {
            text,
            tag: None,
            sandbox: None,
        };
        out.extend(self.start_turn(first));
        out
    }

    fn start_turn(&mut self, input: Input) -> Vec<Out> {
        let Some(thread) = self.thread.clone() else {
            self.held.push_back(input);
            return Vec::new();
        };
        self.turn = Turn::Starting;
        self.cancelled = false;
        let client_id = match input.tag {
            Some(tag) => params::client_id(tag),
            None => {
                self.runtime_turns += 1;
                runtime_client_id(self.runtime_turns)
            }
        };
        let params = params::turn_start(&thread, &input.text, &client_id, input.sandbox.as_ref());
        vec![self.request("turn/start", params, Asked::TurnStart)]
    }

    /// A turn of ours has its id: sends that waited for it go in.
    fn turn_began(&mut self, id: &str) -> Vec<Out> {
        if self.ours.insert(id.to_string()) {
            self.last_message.clear();
            self.plan_called = false;
        }
        if self.turn == Turn::Idle {
            // Its end came first; nothing to do.
            return Vec::new();
        }
        self.turn = Turn::Active(id.to_string());
        if self.interrupting {
            // A stop came while the turn started.
            return self.interrupt();
        }
        let waiting = std::mem::take(&mut self.waiting);
        waiting
            .into_iter()
            .flat_map(|tag| self.dispatch(tag))
            .collect()
    }

    /// Sends input `tag` the way the turn's state allows.
    fn dispatch(&mut self, tag: u64) -> Vec<Out> {
        let Some(text) = self.undelivered.get(&tag).cloned() else {
            return Vec::new();
        };
        match (&self.turn, &self.thread) {
            (Turn::Active(turn), Some(thread)) => {
                let params = params::turn_steer(thread, turn, &text, &params::client_id(tag));
                vec![self.request("turn/steer", params, Asked::Steer { tag })]
            }
            (Turn::Idle, Some(_)) if self.held.is_empty() => self.start_turn(Input {
                text,
                tag: Some(tag),
                sandbox: None,
            }),
            _ => {
                self.waiting.push(tag);
                Vec::new()
            }
        }
    }

    fn on_notification(&mut self, method: &str, params: &Value) -> Vec<Out> {
        match method {
            "turn/started" => match params["turn"]["id"].as_str() {
                Some(id) if self.turn != Turn::Idle => self.turn_began(id),
                _ => Vec::new(),
            },
            "item/started" => self.item_started(&params["item"]),
            "item/completed" => self.item_completed(&params["item"]),
            "thread/tokenUsage/updated" => self.usage(params),
            "turn/completed" => self.turn_completed(&params["turn"]),
            "model/rerouted" => {
                if let Some(to) = params["toModel"].as_str() {
                    self.model = Some(to.to_string());
                }
                Vec::new()
            }
            "account/rateLimits/updated" => {
                if let Some(until) = full_until(&params["rateLimits"]) {
                    self.full_until = Some(until);
                }
                Vec::new()
            }
            "error" => {
                if params["willRetry"] == true || self.interrupting {
                    return Vec::new();
                }
                let error = &params["error"];
                if error["codexErrorInfo"] == "usageLimitExceeded" && !self.failed {
                    // The turn fails next; the limit says why, not a failure.
                    self.failed = true;
                    return vec![Out::Emit(AgentEvent::LimitReached(Limit {
                        account: self.account(),
                        model: self.priced(),
                        until_ms: self.full_until,
                        reason: "usage_limit_reached".into(),
                    }))];
                }
                let mut why = error["message"]
                    .as_str()
                    .unwrap_or("codex reported an error")
                    .to_string();
                if let Some(more) = error["additionalDetails"].as_str() {
                    why = format!("{why} ({more})");
                }
                self.fail(why)
            }
            "warning" | "configWarning" | "deprecationNotice" => {
                tracing::debug!(%method, %params, "codex says");
                Vec::new()
            }
            "mcpServer/startupStatus/updated" if params["status"] == "failed" => {
                tracing::warn!(
                    server = %params["name"], error = %params["error"],
                    "an MCP server of the codex agent did not start"
                );
                Vec::new()
            }
            _ => Vec::new(),
        }
    }

    fn item_started(&mut self, item: &Value) -> Vec<Out> {
        let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
        let call =
            |name: String, input: String| vec![Out::Emit(AgentEvent::ToolCall { name, input })];
        match item["type"].as_str().unwrap_or_default() {
            "userMessage" => {
                if self.first_delivered(item) {
                    return vec![Out::Emit(AgentEvent::Delivered(FIRST_INPUT))];
                }
                // By the client id Codex echoes; by the text where it echoes none.
                let tag = item["clientId"]
                    .as_str()
                    .and_then(params::tag_of)
                    .or_else(|| {
                        let said = user_text(item);
                        self.undelivered
                            .iter()
                            .find(|(_, text)| **text == said)
                            .map(|(tag, _)| *tag)
                    });
                match tag {
                    Some(tag) if self.undelivered.remove(&tag).is_some() => {
                        self.waiting.retain(|t| *t != tag);
                        vec![Out::Emit(AgentEvent::Delivered(tag))]
                    }
                    _ => Vec::new(),
                }
            }
            "commandExecution" => call("command".into(), text(&item["command"])),
            "mcpToolCall" => call(
                format!("{}.{}", text(&item["server"]), text(&item["tool"])),
                item["arguments"].to_string(),
            ),
            "fileChange" => {
                let paths: Vec<String> = item["changes"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|c| text(&c["path"]))
                    .collect();
                call("file_change".into(), paths.join(", "))
            }
            "dynamicToolCall" => call(text(&item["tool"]), item["arguments"].to_string()),
            "webSearch" => call("web_search".into(), text(&item["query"])),
            _ => Vec::new(),
        }
    }

    /// Whether `item` (a `userMessage`) is the first turn's input, by the
    /// client id Codex echoes, or by its text where it echoes none. Only while
    /// a turn of ours runs: a resumed thread's old items are not ours.
    fn first_delivered(&mut self, item: &Value) -> bool {
        let Some((client, text)) = &self.first else {
            return false;
        };
        if self.turn == Turn::Idle {
            return false;
        }
        let matches = match item["clientId"].as_str() {
            Some(id) => id == client,
            None => user_text(item) == *text,
        };
        if matches {
            self.first = None;
        }
        matches
    }

    fn item_completed(&mut self, item: &Value) -> Vec<Out> {
        match item["type"].as_str().unwrap_or_default() {
            "agentMessage" => {
                let said = item["text"].as_str().unwrap_or_default().to_string();
                self.last_message = said.clone();
                if said.trim().is_empty() {
                    Vec::new()
                } else {
                    vec![Out::Emit(AgentEvent::Said(said))]
                }
            }
            "mcpToolCall"
                if item["server"] == params::MCP_NAME
                    && item["tool"] == params::SUBMIT_PLAN
                    && item["status"] == "completed" =>
            {
                self.plan_called = true;
                Vec::new()
            }
            _ => Vec::new(),
        }
    }

    fn usage(&mut self, params: &Value) -> Vec<Out> {
        let ours = params["turnId"]
            .as_str()
            .is_some_and(|t| self.ours.contains(t));
        if !ours {
            return Vec::new();
        }
        let mut out = vec![Out::Emit(AgentEvent::Usage(Usage {
            tokens: usage_of(&params["tokenUsage"]["last"]),
            model: self.priced(),
            subscription: self.chatgpt.then(|| CHATGPT.to_string()),
            // Whether the turn goes on is known only from its end.
            ends_turn: false,
        }))];
        self.rounds += 1;
        if self.rounds > self.setup.max_rounds && !self.failed {
            out.extend(self.interrupt());
            out.extend(self.fail(format!(
                "the agent used up its {} model calls (--max-rounds)",
                self.setup.max_rounds
            )));
        }
        out
    }

    fn turn_completed(&mut self, turn: &Value) -> Vec<Out> {
        let id = turn["id"].as_str().unwrap_or_default();
        let current = match &self.turn {
            Turn::Active(active) => active == id,
            Turn::Starting => self.ours.contains(id),
            Turn::Idle => false,
        };
        if !current {
            return Vec::new();
        }
        self.turn = Turn::Idle;
        match turn["status"].as_str().unwrap_or_default() {
            "completed" => {
                let answer = last_agent_message(turn).unwrap_or_else(|| self.last_message.clone());
                self.turn_ended(answer)
            }
            "interrupted" if self.interrupting || self.failed => Vec::new(),
            "interrupted" if self.cancelled => {
                // Our refusal ended the turn: the agent is told why, and plans on.
                self.cancelled = false;
                self.held.push_back(Input {
                    text: texts::REFUSED.into(),
                    tag: None,
                    sandbox: None,
                });
                self.turn_ended(String::new())
            }
            "interrupted" => self.fail("codex interrupted the turn".into()),
            _ => {
                let why = turn["error"]["message"]
                    .as_str()
                    .unwrap_or("the turn failed")
                    .to_string();
                self.fail(why)
            }
        }
    }

    /// A turn completed: the next one, or the end of the work.
    fn turn_ended(&mut self, answer: String) -> Vec<Out> {
        if self.failed || self.interrupting {
            return Vec::new();
        }
        if let Some(input) = self.held.pop_front() {
            return self.start_turn(input);
        }
        let in_flight = self
            .requests
            .pending()
            .any(|a| matches!(a, Asked::TurnStart | Asked::Steer { .. }));
        let ended = Out::Emit(AgentEvent::TurnEnded {
            answer: answer.clone(),
        });
        if in_flight {
            // Its answer starts the next turn, or sends it again.
            return vec![ended];
        }
        if let Some(tag) = self.undelivered.keys().next().copied() {
            // Accepted into a turn that ended without taking it: once more, in
            // a turn of its own; a second time would loop.
            if !self.retried.insert(tag) {
                return self.fail(format!(
                    "codex accepted a message twice but never put it in the conversation: {}",
                    self.undelivered
                        .get(&tag)
                        .map(String::as_str)
                        .unwrap_or_default()
                ));
            }
            self.waiting = self
                .undelivered
                .keys()
                .copied()
                .filter(|t| *t != tag)
                .collect();
            let mut out = vec![ended];
            out.extend(self.dispatch(tag));
            return out;
        }
        match self.gate {
            Gate::Open => vec![Out::Emit(AgentEvent::Idle { answer })],
            Gate::Submitted => Vec::new(),
            Gate::Planning => {
                self.gate = Gate::Submitted;
                if self.plan_called {
                    Vec::new()
                } else {
                    vec![Out::Emit(AgentEvent::PlanProposed(answer))]
                }
            }
        }
    }

    fn fail(&mut self, why: String) -> Vec<Out> {
        if self.failed {
            return Vec::new();
        }
        self.failed = true;
        vec![Out::Emit(AgentEvent::Failed(why))]
    }
}

/// The client id of a turn the runtime starts itself (`n` from 1).
fn runtime_client_id(n: u64) -> String {
    format!("teammated-runtime-{n}")
}

/// The text of a `userMessage` item, its text parts joined.
fn user_text(item: &Value) -> String {
    item["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|part| part["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The text of the last `agentMessage` among a turn's items.
fn last_agent_message(turn: &Value) -> Option<String> {
    turn["items"]
        .as_array()?
        .iter()
        .rev()
        .find(|i| i["type"] == "agentMessage")
        .and_then(|i| i["text"].as_str())
        .map(str::to_string)
}

/// When the window of `limits` (an `account/rateLimits/updated`'s
/// `rateLimits`) that is full resets, in ms since the epoch: the latest, if
/// both are.
pub fn full_until(limits: &Value) -> Option<i64> {
    ["primary", "secondary"]
        .iter()
        .map(|w| &limits[*w])
        .filter(|w| w["usedPercent"].as_i64().is_some_and(|p| p >= 100))
        .filter_map(|w| w["resetsAt"].as_i64())
        .max()
        .map(|secs| secs.saturating_mul(1000))
}

/// A model call's usage. Codex's `inputTokens` counts the whole prompt, the
/// cached part (`cachedInputTokens`) and any written to a cache
/// (`cacheWriteInputTokens`) included, as OpenAI counts it; the board's
/// `input` is the fresh part only.
pub fn usage_of(last: &Value) -> TokenUsage {
    let n = |k: &str| last[k].as_u64().unwrap_or(0);
    let cache_read = n("cachedInputTokens");
    let cache_write = n("cacheWriteInputTokens");
    TokenUsage {
        input: n("inputTokens")
            .saturating_sub(cache_read)
            .saturating_sub(cache_write),
        output: n("outputTokens"),
        cache_read,
        cache_write,
    }
}
