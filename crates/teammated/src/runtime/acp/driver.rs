//! The open session: one task owns the agent's process and maps what it says
//! onto [`AgentEvent`]s, and what teammated asks ([`Command`]) onto ACP.
//!
//! A task of its own, rather than work done inside `next_event`, so that a
//! line is always written whole: a `select!` in the caller that drops
//! `next_event` halfway through a write would otherwise leave half a JSON-RPC
//! message on the agent's stdin.
//!
//! Invariants:
//! - At most one `session/prompt` runs. ACP has no steering (a second prompt
//!   cancels the first), so input that comes while one runs waits in `queue` and
//!   goes out, all of it as one prompt, when the running one ends; `Delivered`
//!   is sent only then.
//! - `Idle` only when a prompt ended with nothing queued, else `TurnEnded`:
//!   its answer is the text the agent said in that prompt.
//! - Every request of the agent is answered, at once by the policy, or (the
//!   plan gate's `exit_plan_mode`) when the lead decides, or `cancelled` when
//!   the work stops.

use super::rpc::{Asked, Rpc, turn_away};
use super::wire::{self, Permission, Stop, Update};
use crate::runtime::handle::Command;
use crate::runtime::jsonrpc::{Incoming, RpcError};
use crate::runtime::{AgentEvent, AgentPolicy, FIRST_INPUT, PlanAnswer, approved_note};
use serde_json::{Value, json};
use std::collections::HashSet;
use std::time::Duration;
use tokio::sync::mpsc;

/// How long `stop` waits for the running prompt to end after `session/cancel`.
pub const CANCEL_WAIT: Duration = Duration::from_secs(2);
/// How long an exited agent's status is waited for once its output ended.
const EXIT_WAIT: Duration = Duration::from_secs(5);

pub struct Driver {
    pub rpc: Rpc,
    pub session: String,
    pub policy: AgentPolicy,
    /// The plan gate is closed: changes are refused, the plan exit is held.
    pub gated: bool,
    /// teammated put the session in plan mode (so leaves it on approval).
    pub plan_mode: bool,
    /// The most prompts this task may send.
    pub max_prompts: u32,
    pub events: mpsc::UnboundedSender<AgentEvent>,
    pub state: Turns,
}

/// Where the prompts are.
#[derive(Default)]
pub struct Turns {
    prompts: u32,
    /// A prompt runs (its answer has not come).
    running: bool,
    /// Input waiting for the turn boundary: its tag (none for teammated's own
    /// prompts) and text.
    queue: Vec<(Option<u64>, String)>,
    /// What the agent said in the running prompt, before its last tool call…
    said: Vec<String>,
    /// …and since.
    segment: String,
    tools: HashSet<String>,
    /// The paths the last tool call with any touched: where a plan was written.
    last_locations: Vec<String>,
    /// The plan exit held for the lead: its request id and params.
    held: Option<(Value, Value)>,
    /// The output has ended.
    exited: bool,
}

impl Driver {
    /// Sends the first prompt, then runs until stopped.
    pub async fn run(mut self, first: String, mut commands: mpsc::UnboundedReceiver<Command>) {
        self.prompt(vec![(Some(FIRST_INPUT), first)]).await;
        loop {
            if self.state.exited {
                // Only a stop matters now; input has nowhere to go.
                match commands.recv().await {
                    Some(Command::Stop(done)) => {
                        self.rpc.proc.stop().await;
                        let _ = done.send(());
                        return;
                    }
                    Some(_) => continue,
                    None => return,
                }
            }
            tokio::select! {
                msg = self.rpc.next() => match msg {
                    Some(msg) => self.on_message(msg).await,
                    None => self.on_exit().await,
                },
                cmd = commands.recv() => match cmd {
                    // The handle does not wait for `done` (`Intake::Queued`).
                    Some(Command::Send { tag, text, done: _ }) => self.input(Some(tag), text).await,
                    Some(Command::Plan { answer, done: _ }) => self.on_plan_answer(answer).await,
                    Some(Command::Stop(done)) => {
                        self.stop().await;
                        let _ = done.send(());
                        return;
                    }
                    // The `Agent` was dropped without `stop`.
                    None => {
                        self.stop().await;
                        return;
                    }
                },
            }
        }
    }

    fn emit(&self, ev: AgentEvent) {
        // The receiver is gone only when teammated no longer listens.
        let _ = self.events.send(ev);
    }

    async fn on_message(&mut self, msg: Incoming<Asked>) {
        match msg {
            Incoming::Response {
                asked: Asked::Prompt,
                result,
            } => {
                self.state.running = false;
                self.prompt_ended(result).await;
            }
            Incoming::Response { result, .. } => {
                if let Err(e) = result {
                    tracing::warn!(error = %e, "the agent refused a request");
                }
            }
            Incoming::Request { id, method, params } => {
                let answered = if method == "session/request_permission" {
                    self.on_permission(id, params).await
                } else {
                    self.rpc.refuse(&id, &method).await
                };
                if let Err(e) = answered {
                    tracing::debug!(error = %e, "cannot answer the agent");
                }
            }
            Incoming::Notification { method, params } => {
                if method == "session/update" && params["sessionId"] == self.session.as_str() {
                    self.on_update(wire::update(&params));
                }
            }
        }
    }

    fn on_update(&mut self, update: Update) {
        match update {
            Update::Text(text) => self.state.segment.push_str(&text),
            Update::Tool {
                id,
                name,
                input,
                locations,
            } => {
                if !locations.is_empty() {
                    self.state.last_locations = locations;
                }
                if self.state.tools.insert(id) {
                    self.flush_said();
                    self.emit(AgentEvent::ToolCall { name, input });
                }
            }
            Update::Other => {}
        }
    }

    /// What the agent said since its last tool call, for the transcript and
    /// the answer.
    fn flush_said(&mut self) {
        let text = std::mem::take(&mut self.state.segment);
        if !text.trim().is_empty() {
            self.emit(AgentEvent::Said(text.clone()));
            self.state.said.push(text);
        }
    }

    async fn prompt_ended(&mut self, result: Result<Value, RpcError>) {
        self.flush_said();
        let answer = std::mem::take(&mut self.state.said).join("\n\n");
        let result = match result {
            Ok(r) => r,
            Err(e) => {
                self.emit(AgentEvent::Failed(format!(
                    "the agent answered the prompt with an error: {e}"
                )));
                return;
            }
        };
        for usage in wire::usage(&result) {
            self.emit(AgentEvent::Usage(usage));
        }
        match wire::stop_reason(&result) {
            // A cancel teammated did not ask for (it asks only in `stop`): the
            // agent gave the turn up; what it said is its answer.
            Stop::EndTurn | Stop::Cancelled => {
                if self.state.queue.is_empty() {
                    self.emit(AgentEvent::Idle { answer });
                } else {
                    self.emit(AgentEvent::TurnEnded { answer });
                    let queued = std::mem::take(&mut self.state.queue);
                    self.prompt(queued).await;
                }
            }
            Stop::Error(why) => self.emit(AgentEvent::Failed(why)),
        }
    }

    /// Input for the agent: now when it waits, else at the turn boundary.
    async fn input(&mut self, tag: Option<u64>, text: String) {
        if self.state.running {
            self.state.queue.push((tag, text));
        } else {
            self.prompt(vec![(tag, text)]).await;
        }
    }

    /// Sends `inputs` as one `session/prompt`; each tagged one is delivered.
    async fn prompt(&mut self, inputs: Vec<(Option<u64>, String)>) {
        if self.state.prompts >= self.max_prompts {
            self.emit(AgentEvent::Failed(format!(
                "the agent used up its {} prompts for this task (--max-rounds)",
                self.max_prompts
            )));
            return;
        }
        let text = inputs
            .iter()
            .map(|(_, t)| t.as_str())
            .collect::<Vec<_>>()
            .join("\n\n");
        let params = json!({
            "sessionId": self.session,
            "prompt": [{"type": "text", "text": text}],
        });
        match self
            .rpc
            .request("session/prompt", params, Asked::Prompt)
            .await
        {
            Ok(()) => {
                self.state.prompts += 1;
                self.state.running = true;
                self.state.segment.clear();
                self.state.said.clear();
                for tag in inputs.into_iter().filter_map(|(tag, _)| tag) {
                    self.emit(AgentEvent::Delivered(tag));
                }
            }
            // The agent is gone: its exit comes from its output; the input is
            // not delivered, so its messages stay in the inbox.
            Err(e) => tracing::debug!(error = %e, "cannot prompt the agent"),
        }
    }

    async fn on_permission(
        &mut self,
        id: Value,
        params: Value,
    ) -> Result<(), crate::runtime::AgentError> {
        if let Update::Tool {
            id: call,
            name,
            input,
            locations,
        } = wire::tool(&params["toolCall"])
        {
            if !locations.is_empty() {
                self.state.last_locations = locations;
            }
            if !call.is_empty() && self.state.tools.insert(call) {
                self.flush_said();
                self.emit(AgentEvent::ToolCall { name, input });
            }
        }
        match wire::permission(&params, self.policy, self.gated) {
            Permission::Select(option) => self.rpc.respond(&id, wire::selected(&option)).await,
            Permission::Cancelled => self.rpc.respond(&id, wire::cancelled()).await,
            Permission::Hold => {
                let plan = self.plan_text(&params);
                if let Some((old, _)) = self.state.held.replace((id, params)) {
                    self.rpc.respond(&old, wire::cancelled()).await?;
                }
                self.emit(AgentEvent::PlanProposed(plan));
                Ok(())
            }
        }
    }

    /// The plan of a plan exit: the file it names, else the file the agent
    /// wrote last, else what the request itself says.
    fn plan_text(&self, params: &Value) -> String {
        let files = wire::plan_file(params)
            .into_iter()
            .chain(self.state.last_locations.iter().cloned());
        for file in files {
            match std::fs::read_to_string(&file) {
                Ok(text) if !text.trim().is_empty() => return text,
                Ok(_) => {}
                Err(e) => tracing::debug!(file, error = %e, "cannot read the agent's plan"),
            }
        }
        wire::plan_inline(params).unwrap_or_else(|| {
            params["toolCall"]["title"]
                .as_str()
                .unwrap_or("(the agent proposed a plan but its text could not be read)")
                .to_string()
        })
    }

    async fn on_plan_answer(&mut self, answer: PlanAnswer) {
        let held = self.state.held.take();
        let written = match (answer, held) {
            (PlanAnswer::Approved { feedback }, Some((id, params))) => {
                self.gated = false;
                let option = wire::option(&params, &["allow_once", "allow_always"]);
                let answer = option.map_or_else(wire::cancelled, |o| wire::selected(&o));
                let done = self.rpc.respond(&id, answer).await;
                if !feedback.trim().is_empty() {
                    self.input(None, approved_note(&feedback)).await;
                }
                done
            }
            (PlanAnswer::Rejected { feedback }, Some((id, params))) => {
                let option = wire::option(&params, &["reject_once", "reject_always"]);
                let answer = option.map_or_else(wire::cancelled, |o| wire::selected(&o));
                let done = self.rpc.respond(&id, answer).await;
                self.input(None, rejected_note(&feedback)).await;
                done
            }
            // No plan exit is held: the plan came another way (the board's
            // `submit_plan`), or the agent has no plan mode.
            (PlanAnswer::Approved { feedback }, None) => {
                self.gated = false;
                let mut done = Ok(());
                if self.plan_mode {
                    self.plan_mode = false;
                    let params = json!({"sessionId": self.session, "modeId": "default"});
                    done = self
                        .rpc
                        .request("session/set_mode", params, Asked::Other)
                        .await;
                }
                self.input(None, approved_note(&feedback)).await;
                done
            }
            (PlanAnswer::Rejected { feedback }, None) => {
                self.input(None, rejected_note(&feedback)).await;
                Ok(())
            }
        };
        if let Err(e) = written {
            tracing::debug!(error = %e, "cannot give the agent the plan decision");
        }
    }

    /// The output ended: the agent exited.
    async fn on_exit(&mut self) {
        self.state.exited = true;
        self.flush_said();
        let status = match tokio::time::timeout(EXIT_WAIT, self.rpc.proc.wait_exit()).await {
            Ok(how) => how,
            Err(_) => "its output closed, the process still runs".to_string(),
        };
        let stderr = self.rpc.proc.stderr_tail_at_end().await;
        self.emit(AgentEvent::Exited { status, stderr });
    }

    /// Interrupts the running prompt (bounded), then ends the process and all
    /// it started.
    async fn stop(&mut self) {
        if std::mem::take(&mut self.state.running) {
            let cancel = json!({"sessionId": self.session});
            if self.rpc.notify("session/cancel", cancel).await.is_ok() {
                // The prompt does not end while a permission request waits.
                if let Some((id, _)) = self.state.held.take() {
                    let _ = self.rpc.respond(&id, wire::cancelled()).await;
                }
                let _ = tokio::time::timeout(CANCEL_WAIT, self.until_prompt_answered()).await;
            }
        }
        let how = self.rpc.proc.stop().await;
        tracing::debug!(how, "the acp agent stopped");
    }

    /// Reads until the running prompt is answered, turning away what the
    /// agent asks meanwhile.
    async fn until_prompt_answered(&mut self) {
        while let Some(msg) = self.rpc.next().await {
            match msg {
                Incoming::Response {
                    asked: Asked::Prompt,
                    ..
                } => return,
                Incoming::Request { id, method, .. }
                    if turn_away(&mut self.rpc, &id, &method).await.is_err() =>
                {
                    return;
                }
                _ => {}
            }
        }
    }
}

fn rejected_note(feedback: &str) -> String {
    format!(
        "[Runtime] The lead rejected your plan: {}\nRevise the plan and propose it again.",
        feedback.trim()
    )
}
