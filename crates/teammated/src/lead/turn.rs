//! One turn of the lead's model: rounds of model calls and tools until it answers
//! in text, with new events fed in between rounds.

use super::LeadConfig;
use super::events::Pending;
use super::ledger::{Cause, Ledger, usage_path};
use crate::context::Context;
use crate::llm::{Block, CompletionRequest, LlmError, Provider, StopReason, ToolSpec};
use crate::transcript::{self, Transcript};
use std::io::Write as _;
use std::sync::Arc;
use teamboard_protocol::transcript::EntryKind;
use teamboard_protocol::{Client, ClientError};

/// The lead's model side: its context, provider, tools and accounts.
pub struct Lead {
    pub(super) cfg: LeadConfig,
    pub(super) client: Arc<Client>,
    pub(super) provider: Provider,
    pub(super) ctx: Context,
    pub(super) transcript: Transcript,
    pub(super) specs: Vec<ToolSpec>,
    pub(super) ledger: Ledger,
    /// Inbox messages read and not yet in the context.
    pub(super) pending: Pending,
    compactions: u32,
    compacted_at: Option<usize>,
}

/// Why a turn could not run to its end.
#[derive(Debug, thiserror::Error)]
pub enum TurnError {
    #[error("the model call failed: {0}")]
    Llm(#[from] LlmError),
    #[error(transparent)]
    Boardd(#[from] ClientError),
}

impl Lead {
    pub(super) fn new(
        cfg: LeadConfig,
        client: Arc<Client>,
        provider: Provider,
        ctx: Context,
        transcript: Transcript,
    ) -> Lead {
        Lead {
            cfg,
            client,
            provider,
            ctx,
            transcript,
            specs: teamboard_protocol::board_call::Front::Lead.specs(),
            ledger: Ledger::default(),
            pending: Pending::default(),
            compactions: 0,
            compacted_at: None,
        }
    }

    pub(super) fn log(&mut self, kind: EntryKind, tool: Option<&str>, is_error: bool, text: &str) {
        self.transcript.write(kind, tool, None, is_error, text);
    }

    /// Reads the inbox into `pending`, looking up the plan requests it names.
    pub(super) async fn read_inbox(&mut self) -> Result<(), ClientError> {
        let inbox = self.client.inbox().await?;
        if self.pending.offer(inbox) == 0 {
            return Ok(());
        }
        for (message, request) in self.pending.plan_ids_to_look_up() {
            // A plan whose request boardd cannot find any more is still shown; the
            // model's review_plan will hear why it cannot be decided.
            if let Ok(r) = self.client.get_request(request).await {
                self.pending.set_plan(message, r);
            }
        }
        Ok(())
    }

    /// Puts everything pending into the context, then acknowledges it. Prints a
    /// notice per event when `show` is set.
    pub(super) async fn deliver(&mut self, show: bool) -> Result<(), ClientError> {
        let Some(d) = self.pending.take() else {
            return Ok(());
        };
        self.ctx.push_user_text(d.text.clone());
        self.log(EntryKind::User, None, false, &d.text);
        if show {
            for n in &d.notices {
                say(&format!("  · {n}"));
            }
        }
        // In the context first, acknowledged second: a crash in between shows the
        // messages again rather than losing them.
        self.client.ack(d.ids).await?;
        Ok(())
    }

    /// Adds the person's words to the context.
    pub(super) fn push_person(&mut self, text: &str) {
        self.ctx.push_user_text(text.to_string());
        self.log(EntryKind::User, None, false, text);
    }

    /// Runs the model until it answers in text; returns that text, which was also
    /// printed. Events that arrive meanwhile go in between rounds.
    pub(super) async fn turn(&mut self, cause: Cause) -> Result<String, TurnError> {
        self.log(
            EntryKind::Lifecycle,
            None,
            false,
            &format!("turn: started ({})", cause.as_str()),
        );
        let mut rounds = 0u32;
        let text = loop {
            if rounds > 0 {
                self.read_inbox().await?;
                self.deliver(true).await?;
            }
            if rounds >= self.cfg.max_rounds {
                let note = format!(
                    "(the turn stopped after {} model rounds; say what to do next)",
                    self.cfg.max_rounds
                );
                say(&note);
                break note;
            }
            if self.ctx.over_budget() {
                self.compact(cause).await;
            }
            let system = self.ctx.system();
            let (on_retry, mut retries) = transcript::retry_notices();
            let request = CompletionRequest {
                system: &system,
                messages: &self.ctx.messages,
                tools: &self.specs,
                max_tokens: self.cfg.provider.max_tokens,
                on_retry: Some(&on_retry),
            };
            let call = self.provider.complete(request);
            let completion = self
                .transcript
                .write_while(None, &mut retries, call)
                .await?;
            self.ledger.add(cause, completion.usage);
            self.ledger
                .save(&usage_path(&self.cfg.state_dir, &self.cfg.team));
            let (text, uses) = self.transcript.record_turn(None, &completion.content);
            self.ctx.push_assistant(completion.content);
            rounds += 1;
            if uses.is_empty() {
                if completion.stop == StopReason::MaxTokens {
                    say(&text);
                    say("(the answer was cut off at the output limit; raise --max-tokens)");
                } else {
                    say(&text);
                }
                break text;
            }
            if !text.trim().is_empty() {
                say(&text);
            }
            let mut results = Vec::with_capacity(uses.len());
            for (id, name, input) in uses {
                let out = self.run_tool(&name, &input).await;
                say(&format!(
                    "  {} {name}: {}",
                    if out.is_error { "✗" } else { "→" },
                    out.content.lines().next().unwrap_or_default()
                ));
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
        };
        self.log(
            EntryKind::Lifecycle,
            None,
            false,
            &format!("turn: ended; {}", self.ledger.line()),
        );
        Ok(text)
    }

    async fn compact(&mut self, cause: Cause) {
        if self
            .compacted_at
            .is_some_and(|len| self.ctx.messages.len() < len + 4)
        {
            return;
        }
        self.compactions += 1;
        let archive = teamboard_protocol::transcript::teammate_dir(
            &self.cfg.state_dir,
            &self.cfg.team,
            teamboard_protocol::LEAD,
        )
        .join(format!(
            "context-{}-{}.json",
            crate::transcript::now_ms(),
            self.compactions
        ));
        let (on_retry, mut retries) = transcript::retry_notices();
        let compacted = self.ctx.compact(&self.provider, &archive, Some(&on_retry));
        match self
            .transcript
            .write_while(None, &mut retries, compacted)
            .await
        {
            Ok(done) => {
                self.ledger.add(cause, done.usage);
                self.compacted_at = self.ctx.over_budget().then_some(self.ctx.messages.len());
                let text = format!(
                    "compacted: {} messages summarised; full context saved to {}",
                    done.summarised,
                    archive.display()
                );
                self.log(EntryKind::Lifecycle, None, false, &text);
                self.log(EntryKind::User, None, false, &done.put_back);
            }
            Err(e) => {
                self.compacted_at = Some(self.ctx.messages.len());
                tracing::warn!(error = %e, "compaction failed; going on uncompacted");
            }
        }
    }
}

/// Prints a line for the person. A closed stdout (the reader left) is not worth
/// stopping the lead for.
pub(super) fn say(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{text}");
    let _ = out.flush();
}
