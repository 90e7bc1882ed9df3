//! WORK: the model loop with tools.
//!
//! Each round asks the model for its next turn and runs the tools it asks for. Before
//! every round the runtime feeds in new inbox messages, so the model never polls. The
//! phase ends on a final answer, the `idle` tool, the round limit, an LLM error that
//! retries could not fix, a lost claim, or a shutdown request; whatever happens, a
//! task still held is completed, failed or released, never left in progress.

mod board_tools;

use crate::error::Error;
use crate::llm::{Block, CompletionRequest, StopReason};
use crate::teammate::{Exit, Teammate};
use crate::tools::{self, ToolOutput};
use teamboard_protocol::transcript::EntryKind;
use teamboard_protocol::{MemberStatus, MessageKind, TaskId, TaskStatus};

/// How a work phase ended.
#[derive(Debug)]
enum End {
    /// The model answered without asking for tools.
    Final(String),
    /// The model called `idle`.
    Idle,
    /// `--max-rounds` tool rounds passed.
    OutOfRounds,
    /// The model could not be reached, even after retries.
    LlmFailed(String),
    /// boardd took the claim back (lease expired, cancelled by the lead).
    Lost(TaskId),
    /// A shutdown request or a signal.
    Stop(Exit),
}

/// How a held task ends.
pub(crate) enum Outcome {
    Complete(String),
    Fail(String),
}

const OUTPUT_MAX_TOKENS_HINT: &str =
    "[Runtime] Your last answer was cut off at the output limit. Continue, in smaller steps.";

impl Teammate {
    /// Runs one WORK phase. `Some(exit)` when the teammate should stop afterwards.
    pub(crate) async fn work(&mut self) -> Result<Option<Exit>, Error> {
        self.set_status(MemberStatus::Working).await?;
        self.idle_requested = false;
        self.log(EntryKind::Lifecycle, None, false, "work: started");
        let mut rounds = 0u32;
        let mut last_text = String::new();
        let end = loop {
            if let Some(exit) = self.shutdown.clone() {
                break End::Stop(exit);
            }
            if self.cancel.is_cancelled() {
                break End::Stop(Exit::Terminated);
            }
            if let Some(h) = &self.held
                && h.heartbeat.lost.is_cancelled()
            {
                break End::Lost(h.id);
            }
            let inbox = self
                .session
                .call(|c| async move { c.inbox().await })
                .await?;
            if !inbox.is_empty()
                && let Some(exit) = self.take_messages(inbox).await?
            {
                break End::Stop(exit);
            }
            if rounds >= self.cfg.max_rounds {
                break End::OutOfRounds;
            }
            if self.ctx.over_budget() {
                self.compact().await;
            }
            let system = self.ctx.system();
            let request = CompletionRequest {
                system: &system,
                messages: &self.ctx.messages,
                tools: &self.specs,
                max_tokens: self.cfg.provider.max_tokens,
            };
            let completion = tokio::select! {
                _ = self.cancel.cancelled() => break End::Stop(Exit::Terminated),
                r = self.provider.complete(request) => r,
            };
            let completion = match completion {
                Ok(c) => c,
                Err(e) => {
                    tracing::error!(error = %e, "the model call failed");
                    break End::LlmFailed(e.to_string());
                }
            };
            self.record_usage(completion.usage).await;
            let mut uses = Vec::new();
            for block in &completion.content {
                match block {
                    Block::Text { text } if !text.trim().is_empty() => {
                        last_text = text.clone();
                        self.log(EntryKind::Assistant, None, false, text);
                    }
                    Block::ToolUse { id, name, input } => {
                        self.log(EntryKind::ToolUse, Some(name), false, &input.to_string());
                        uses.push((id.clone(), name.clone(), input.clone()));
                    }
                    _ => {}
                }
            }
            let truncated = completion.stop == StopReason::MaxTokens;
            self.ctx.push_assistant(completion.content);
            if uses.is_empty() {
                if truncated && rounds + 1 < self.cfg.max_rounds {
                    self.ctx.push_user_text(OUTPUT_MAX_TOKENS_HINT);
                    rounds += 1;
                    continue;
                }
                break End::Final(last_text.clone());
            }
            let mut results = Vec::with_capacity(uses.len());
            for (id, name, input) in uses {
                let out = self.run_tool(&name, &input).await;
                self.log(
                    EntryKind::ToolResult,
                    Some(&name),
                    out.is_error,
                    &out.content,
                );
                results.push(Block::ToolResult {
                    tool_use_id: id,
                    content: out.content,
                    is_error: out.is_error,
                });
            }
            self.ctx.push_tool_results(results);
            rounds += 1;
            if self.idle_requested {
                break End::Idle;
            }
        };
        self.end_work(end, last_text).await
    }

    async fn end_work(&mut self, end: End, last_text: String) -> Result<Option<Exit>, Error> {
        self.log(
            EntryKind::Lifecycle,
            None,
            false,
            &format!("work: ended ({end:?})"),
        );
        let mut exit = None;
        match end {
            End::Final(text) => {
                if self.held.is_some() {
                    let result = if text.trim().is_empty() {
                        "(the model gave no result text)".to_string()
                    } else {
                        text
                    };
                    self.finish(Outcome::Complete(result)).await;
                }
            }
            End::Idle => {
                if self.held.is_some() {
                    let result = if last_text.trim().is_empty() {
                        "(went idle without a result text)".to_string()
                    } else {
                        last_text
                    };
                    self.finish(Outcome::Complete(result)).await;
                }
            }
            End::OutOfRounds => {
                if self.held.is_some() {
                    let reason = format!(
                        "stopped after {} tool rounds without finishing (--max-rounds)",
                        self.cfg.max_rounds
                    );
                    self.finish(Outcome::Fail(reason)).await;
                }
            }
            End::LlmFailed(error) => {
                let what = match self.task_id() {
                    Some(id) => format!("released #{id}"),
                    None => "could not answer".to_string(),
                };
                if self.held.is_some() {
                    self.release(&format!("LLM error: {error}")).await;
                }
                self.tell_lead(
                    MessageKind::Error,
                    format!("{} {what}: LLM error: {error}", self.cfg.name),
                )
                .await;
            }
            End::Lost(id) => {
                self.held = None;
                self.ctx.identity.task = None;
                self.ctx.push_user_text(format!(
                    "[Runtime] Your claim on task #{id} was taken back by boardd (its lease \
                     expired or the lead cancelled it). Stop working on it."
                ));
            }
            End::Stop(e) => exit = Some(e),
        }
        Ok(exit)
    }

    /// Ends the held task and tells the lead. Returns what to tell the model.
    pub(crate) async fn finish(&mut self, outcome: Outcome) -> ToolOutput {
        let Some(held) = self.held.take() else {
            return ToolOutput::error("you hold no task; claim one first");
        };
        self.ctx.identity.task = None;
        let (id, epoch) = (held.id, held.epoch);
        drop(held.heartbeat);
        let answer = match &outcome {
            Outcome::Complete(result) => {
                self.session
                    .call(|c| async move { c.complete_task(id, epoch, result).await })
                    .await
            }
            Outcome::Fail(reason) => {
                self.session
                    .call(|c| async move { c.fail_task(id, epoch, reason).await })
                    .await
            }
        };
        match answer {
            Ok(task) => {
                let (what, text) = match (&outcome, task.status) {
                    (Outcome::Complete(r), _) => ("completed", r.as_str()),
                    (Outcome::Fail(r), TaskStatus::Failed) => ("failed for good", r.as_str()),
                    (Outcome::Fail(r), _) => ("failed (it will be retried)", r.as_str()),
                };
                let kind = match outcome {
                    Outcome::Complete(_) => MessageKind::Result,
                    Outcome::Fail(_) => MessageKind::Error,
                };
                self.tell_lead(
                    kind,
                    format!(
                        "#{id} {}: {what} by {}\n{text}",
                        held.subject, self.cfg.name
                    ),
                )
                .await;
                ToolOutput::ok(format!("task #{id} {what}"))
            }
            Err(e) => {
                tracing::warn!(task = id, error = %e, "boardd refused to end the task");
                ToolOutput::error(format!("boardd refused: {e}"))
            }
        }
    }

    /// Gives the held task back to the board, with the reason.
    pub(crate) async fn release(&mut self, why: &str) {
        let Some(held) = self.held.take() else { return };
        self.ctx.identity.task = None;
        let (id, epoch) = (held.id, held.epoch);
        drop(held.heartbeat);
        if let Err(e) = self
            .session
            .call(|c| async move { c.release_task(id, epoch, Some(why)).await })
            .await
        {
            tracing::warn!(task = id, error = %e, "cannot release the task");
        }
    }

    async fn record_usage(&self, usage: teamboard_protocol::TokenUsage) {
        if usage.total() == 0 {
            return;
        }
        let task = self.task_id();
        if let Err(e) = self
            .session
            .call(|c| async move { c.record_usage(task, usage).await })
            .await
        {
            tracing::warn!(error = %e, "cannot record token use");
        }
    }

    async fn compact(&mut self) {
        self.compactions += 1;
        let dir = teamboard_protocol::transcript::teammate_dir(
            &self.cfg.state_dir,
            &self.cfg.team,
            &self.cfg.name,
        );
        let archive = dir.join(format!(
            "context-{}-{}.json",
            crate::transcript::now_ms(),
            self.compactions
        ));
        let before = self.ctx.estimate();
        match self.ctx.compact(&self.provider, &archive).await {
            Ok(n) => {
                let text = format!(
                    "compacted: {n} messages summarised, about {before} -> {} tokens; full context saved to {}",
                    self.ctx.estimate(),
                    archive.display()
                );
                tracing::info!("{text}");
                self.log(EntryKind::Lifecycle, None, false, &text);
            }
            Err(e) => tracing::warn!(error = %e, "compaction failed; going on uncompacted"),
        }
    }

    async fn run_tool(&mut self, name: &str, input: &serde_json::Value) -> ToolOutput {
        if let Some(out) = tools::run_local(&self.local, name, input).await {
            return out;
        }
        match self.board_tool(name, input).await {
            Some(out) => out,
            None => ToolOutput::error(format!(
                "unknown tool '{name}'; the tools are: {}",
                self.specs
                    .iter()
                    .map(|s| s.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
    }
}
