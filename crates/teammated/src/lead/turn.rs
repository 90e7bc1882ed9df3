//! One turn of the lead's model: rounds of the model loop until it answers in
//! text, with new events fed in between rounds.

use super::LeadConfig;
use super::events::Pending;
use super::ledger::{Cause, Ledger, usage_path};
use crate::context::Identity;
use crate::llm::{LlmError, StopReason};
use crate::model_loop::{ModelLoop, NoTurn, ToolHost};
use crate::tools::ToolOutput;
use crate::transcript::Transcript;
use serde_json::Value;
use std::io::Write as _;
use std::sync::Arc;
use teamboard_protocol::transcript::EntryKind;
use teamboard_protocol::{Client, ClientError, TaskId, TokenUsage};

/// The lead: its model loop, and the desk it works at.
pub struct Lead {
    pub(super) model: ModelLoop,
    pub(super) desk: Desk,
}

/// The lead's side of the model loop: the board through its session, its
/// transcript and its accounts.
pub struct Desk {
    pub(super) cfg: LeadConfig,
    pub(super) client: Arc<Client>,
    pub(super) transcript: Transcript,
    pub(super) ledger: Ledger,
    /// Inbox messages read and not yet in the context.
    pub(super) pending: Pending,
    /// What the turn under way is for: its tokens are charged to it.
    cause: Cause,
    /// Whether the person has said "start": until then the tools that change the
    /// board or the team are refused (see `tools`). Set by `drive`, never unset.
    pub(super) started: bool,
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
        model: ModelLoop,
        transcript: Transcript,
    ) -> Lead {
        let estimated = matches!(model.provider(), crate::llm::Provider::Scripted(_));
        let pending = Pending::new(cfg.review_plans == super::PlanReviewer::Person);
        Lead {
            model,
            desk: Desk {
                cfg,
                client,
                transcript,
                ledger: Ledger {
                    estimated,
                    ..Ledger::default()
                },
                pending,
                cause: Cause::Planning,
                started: false,
            },
        }
    }

    /// Reads the inbox into `pending`, looking up the plan requests it names.
    pub(super) async fn read_inbox(&mut self) -> Result<(), ClientError> {
        let desk = &mut self.desk;
        let inbox = desk.client.inbox().await?;
        if desk.pending.offer(inbox) == 0 {
            return Ok(());
        }
        for (message, request) in desk.pending.plan_ids_to_look_up() {
            // A plan whose request boardd cannot find any more is still shown; the
            // model's review_plan will hear why it cannot be decided.
            if let Ok(r) = desk.client.get_request(request).await {
                desk.pending.set_plan(message, r);
            }
        }
        Ok(())
    }

    /// Puts everything pending into the context, then acknowledges it. Prints a
    /// notice per event when `show` is set.
    pub(super) async fn deliver(&mut self, show: bool) -> Result<(), ClientError> {
        let Some(d) = self.desk.pending.take() else {
            return Ok(());
        };
        self.model.tell(&mut self.desk, &d.text);
        if show {
            for n in &d.notices {
                say(&format!("  · {n}"));
            }
        }
        // In the context first, acknowledged second: a crash in between shows the
        // messages again rather than losing them.
        self.desk.client.ack(d.ids).await?;
        Ok(())
    }

    /// Adds the person's words to the context.
    pub(super) fn push_person(&mut self, text: &str) {
        self.model.tell(&mut self.desk, text);
    }

    pub(super) fn log(&mut self, kind: EntryKind, text: &str) {
        self.desk.transcript.write(kind, None, None, false, text);
    }

    /// Runs the model until it answers in text; returns that text, which was also
    /// printed. Events that arrive meanwhile go in between rounds.
    pub(super) async fn turn(&mut self, cause: Cause) -> Result<String, TurnError> {
        self.desk.cause = cause;
        self.log(EntryKind::Lifecycle, &format!("turn: started ({cause})"));
        let mut rounds = 0u32;
        let text = loop {
            if rounds > 0 {
                self.read_inbox().await?;
                self.deliver(true).await?;
            }
            if rounds >= self.desk.cfg.max_rounds {
                let note = format!(
                    "(the turn stopped after {} model rounds; say what to do next)",
                    self.desk.cfg.max_rounds
                );
                say(&note);
                break note;
            }
            let turn = match self.model.ask(&mut self.desk).await {
                Ok(turn) => turn,
                Err(NoTurn::Failed(e)) => return Err(e.into()),
                // The lead is stopped by dropping its turn, never interrupted.
                Err(NoTurn::Interrupted(why)) => break why,
                // No call was made: the person hears why, and decides.
                Err(NoTurn::Budget(why)) => {
                    let note = format!("(no model call: budget exhausted: {why})");
                    say(&note);
                    break note;
                }
                Err(NoTurn::Board(why)) => {
                    let note = format!("(no model call: {why})");
                    say(&note);
                    break note;
                }
            };
            rounds += 1;
            if turn.uses.is_empty() {
                say(&turn.text);
                if turn.stop == StopReason::MaxTokens {
                    say("(the answer was cut off at the output limit; raise --max-tokens)");
                }
                break turn.text;
            }
            if !turn.text.trim().is_empty() {
                say(&turn.text);
            }
            self.model.run_tools(&mut self.desk, turn.uses).await;
        };
        let line = self.desk.ledger.line();
        self.log(EntryKind::Lifecycle, &format!("turn: ended; {line}"));
        Ok(text)
    }
}

impl ToolHost for Desk {
    fn task(&self) -> Option<TaskId> {
        None
    }

    fn transcript(&mut self) -> &mut Transcript {
        &mut self.transcript
    }

    fn identity(&self) -> Identity {
        lead_identity(&self.cfg.team)
    }

    fn interrupted(&self, _tool: Option<&str>) -> impl Future<Output = String> + Send + 'static {
        std::future::pending()
    }

    async fn spent(&mut self, usage: TokenUsage) {
        self.ledger.add(self.cause, usage);
        self.ledger
            .save(&usage_path(&self.cfg.state_dir, &self.cfg.team));
    }

    async fn run_tool(&mut self, name: &str, input: &Value) -> ToolOutput {
        let out = self.tool(name, input).await;
        say(&format!(
            "  {} {name}: {}",
            if out.is_error { "✗" } else { "→" },
            out.content.lines().next().unwrap_or_default()
        ));
        out
    }
}

/// Who the lead is, for its prompt and a compacted conversation.
pub(super) fn lead_identity(team: &str) -> Identity {
    Identity {
        name: teamboard_protocol::LEAD.to_string(),
        role: teamboard_protocol::LEAD.to_string(),
        team: team.to_string(),
        task: None,
        worktree: None,
        lead: true,
    }
}

/// Prints a line for the person. A closed stdout (the reader left) is not worth
/// stopping the lead for.
pub(super) fn say(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{text}");
    let _ = out.flush();
}
