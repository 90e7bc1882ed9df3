//! The protocol tools (`submit_plan`, `respond_shutdown`) and the plan gate.
//!
//! The gate sits where tools are dispatched, not in the prompt: until the lead
//! approves the plan of a claim that needs one, `bash`, `write_file` and
//! `edit_file` answer with a tool error that says what to do. Reading stays open,
//! so that a teammate can look before it plans. boardd holds the same line at
//! the end: it refuses to complete such a claim.
//!
//! `submit_plan` waits for the decision inside the tool call, parked on boardd
//! like an idle teammate (no model call, the claim kept alive by its
//! heartbeat). The alternative, returning at once and leaving the model to wait,
//! lost: a model has no way to wait but to call tools, and every such call is a
//! round of tokens spent on nothing.

use super::messages::{Read, plan_decided, read_messages};
use super::{AskedToLeave, Exit, PlanState, Teammate};
use crate::tools::ToolOutput;
use teamboard_protocol::{ClientError, ErrorCode, RequestId, Work};

/// The longest single park of `submit_plan`'s wait: how late a claim lost
/// meanwhile is noticed (see `wait_for_decision`).
const DECISION_PARK: std::time::Duration = std::time::Duration::from_secs(1);

/// The tools that change things, closed until a needed plan is approved.
pub const GATED: [&str; 3] = ["bash", "write_file", "edit_file"];

impl Teammate {
    /// The refusal for `tool` while the held claim's plan is not approved.
    pub(crate) fn plan_gate(&self, tool: &str) -> Option<ToolOutput> {
        let held = self.held.as_ref()?;
        if !held.needs_plan || !GATED.contains(&tool) {
            return None;
        }
        let why = match &held.plan {
            PlanState::Approved { .. } => return None,
            PlanState::None => format!(
                "{tool} is closed: task #{} needs a plan approved by the lead before you change \
                 anything. Look around with read_file and glob, then call submit_plan with \
                 your plan; it waits for the decision.",
                held.id
            ),
            PlanState::Pending { id, .. } => format!(
                "{tool} is closed: your plan (request r{id}) is waiting for the lead's \
                 decision. Call submit_plan with the same plan to wait for it."
            ),
            PlanState::Rejected { id, feedback } => format!(
                "{tool} is closed: your plan (request r{id}) was rejected ({feedback}). \
                 Revise it and call submit_plan again."
            ),
        };
        Some(ToolOutput::error(why))
    }

    /// `submit_plan`: submits the plan (or, for the plan already pending, only
    /// waits) and returns the lead's decision.
    pub(super) async fn submit_plan(&mut self, plan: String) -> ToolOutput {
        let plan = plan.trim().to_string();
        let Some(held) = &self.held else {
            return ToolOutput::error("you hold no task, so there is nothing to plan");
        };
        let (task, epoch) = (held.id, held.epoch);
        let id = match &held.plan {
            PlanState::Pending { id, plan: pending } if *pending == plan => *id,
            PlanState::Approved { id } => {
                return ToolOutput::ok(format!(
                    "your plan for #{task} (request r{id}) is already approved; carry it out"
                ));
            }
            _ => {
                let text = &plan;
                match self
                    .session
                    .call(|c| async move { c.submit_plan(task, epoch, text).await })
                    .await
                {
                    Ok(req) => req.id,
                    Err(e) if e.code() == Some(ErrorCode::StaleEpoch) => {
                        return ToolOutput::error(format!(
                            "your claim on #{task} is gone ({e}); stop working on it"
                        ));
                    }
                    Err(e) => return ToolOutput::error(format!("boardd refused the plan: {e}")),
                }
            }
        };
        self.plan_submitted(id, plan, "waiting");
        self.wait_for_decision(id).await
    }

    /// Parks on boardd until the plan's decision arrives, and returns it with
    /// whatever else arrived meanwhile. A shutdown request, a lost claim or a
    /// signal end the wait early.
    ///
    /// Trap: a parked `wait_for_work` cannot be withdrawn, only answered. Dropped
    /// while parked, it stays in boardd: the teammate's next wait on the
    /// connection is refused (`invalid_state`, which ended the teammate), and
    /// once the claim is gone boardd may claim a task for it that nobody reads.
    /// So a lost claim is acted on only after the parked call returns, which
    /// [`DECISION_PARK`] keeps short, and the work loop does not drop this call.
    async fn wait_for_decision(&mut self, id: u64) -> ToolOutput {
        let mut texts: Vec<String> = Vec::new();
        let park = self
            .cfg
            .poll_interval
            .min(DECISION_PARK)
            .as_millis()
            .clamp(1, u64::MAX as u128) as u64;
        loop {
            let lost = self.lost_token();
            let wait = self
                .session
                .call(|c| async move { c.wait_for_work(Some(park)).await });
            let work = tokio::select! {
                // The process exits: its connection, and the parked call, close.
                _ = self.cancel.cancelled() => {
                    return ToolOutput::error("stopped: the teammate is shutting down");
                }
                w = wait => w,
            };
            if lost.is_cancelled() {
                if let Ok(Work::Task { claim }) = work {
                    self.give_back_stray(claim.task.id, claim.epoch).await;
                }
                // Messages that came with this answer stay in the inbox, unread.
                texts.push("stopped: the claim on the task is gone".into());
                return ToolOutput::error(texts.join("\n\n"));
            }
            let read = match work {
                Ok(Work::Messages { messages }) => match read_messages(self, messages).await {
                    Ok(r) => r,
                    Err(e) => return ToolOutput::error(format!("cannot read messages: {e}")),
                },
                // The safety net also looks at the request: the lead may have
                // withdrawn it (`cancel_request`), which sends no message, and
                // waiting on would park the claim for good.
                Ok(Work::Timeout) => {
                    let mut read = Read::default();
                    match self
                        .session
                        .call(|c| async move { c.get_request(id).await })
                        .await
                    {
                        Ok(req) => plan_decided(self, req, &mut read),
                        Err(e) => tracing::warn!(request = id, error = %e, "cannot read the plan"),
                    }
                    // Nothing arrived: only a settled plan ends the wait.
                    if read.decided != Some(id) {
                        continue;
                    }
                    read
                }
                Ok(Work::Task { claim }) => {
                    // boardd does not claim for a holder; if it ever did, the
                    // task must not be stranded in progress.
                    tracing::error!(task = claim.task.id, "boardd claimed a task for a holder");
                    self.give_back_stray(claim.task.id, claim.epoch).await;
                    continue;
                }
                Err(e) => return ToolOutput::error(format!("cannot wait for the decision: {e}")),
            };
            texts.extend(read.texts);
            // The texts go into the context with this tool result, right after.
            if let Err(e) = self.ack(read.ids).await {
                tracing::warn!(error = %e, "cannot acknowledge messages");
            }
            if let Some(by) = read.leave_for {
                self.leave(by);
                texts.push("[Runtime] Shutting down.".into());
                return ToolOutput::error(texts.join("\n\n"));
            }
            let decided = read.decided == Some(id);
            let interrupted = self.asked_to_leave.is_some();
            if decided || interrupted {
                let approved = matches!(
                    self.held.as_ref().map(|h| &h.plan),
                    Some(PlanState::Approved { .. })
                );
                let text = texts.join("\n\n");
                return if approved {
                    ToolOutput::ok(text)
                } else {
                    ToolOutput::error(text)
                };
            }
        }
    }

    /// Gives back a claim boardd made for a wait that was not looking for a
    /// task, so that it is not stranded in progress.
    async fn give_back_stray(&self, task: u64, epoch: u64) {
        if let Err(e) = self
            .session
            .call(|c| async move { c.release_task(task, epoch, None).await })
            .await
        {
            tracing::warn!(task, error = %e, "cannot give back a claim made for the plan wait");
        }
    }

    /// `respond_shutdown`: approves (giving the held task back with the note
    /// first) or rejects the shutdown request the model was asked to answer.
    pub(super) async fn respond_shutdown(&mut self, approve: bool, note: String) -> ToolOutput {
        let Some(asked) = self.asked_to_leave.clone() else {
            return ToolOutput::error("no shutdown request is waiting for your answer");
        };
        let note = note.trim().to_string();
        let id = asked.id;
        if !approve {
            if note.is_empty() {
                return ToolOutput::error(
                    "to reject, give the reason to keep working in note; the lead reads it",
                );
            }
            return match self.answer_shutdown(id, false, Some(&note)).await {
                Ok(_) => {
                    self.asked_to_leave = None;
                    ToolOutput::ok("rejected; the lead is told why. Go on with your task.")
                }
                Err(e) => self.answer_refused(id, e).await,
            };
        }
        if let Some(held) = &self.held {
            if note.is_empty() {
                return ToolOutput::error(format!(
                    "to approve, say in note what you got done on #{} and what is left: the \
                     task is given back with it, for its next owner",
                    held.id
                ));
            }
            // Refused, the task is still held, so boardd would refuse the
            // approval too: the request waits for another answer.
            if let Err(e) = self.try_release_with_note(&note).await {
                return ToolOutput::error(format!(
                    "boardd refused to take the task back ({e}); you still hold it, and \
                     shutdown request r{id} still waits for your answer"
                ));
            }
        }
        match self.answer_shutdown(id, true, None).await {
            Ok(()) => {
                self.asked_to_leave = None;
                self.leave(asked.from);
                ToolOutput::ok("approved; the task is given back and you stop after this round")
            }
            Err(e) => self.answer_refused(id, e).await,
        }
    }

    /// Approves the shutdown the model was asked to answer once no task is held
    /// any more, as for a teammate asked while holding none: a model that
    /// finished (or lost) its task without calling `respond_shutdown` must not
    /// leave the request pending until boardd stops the teammate at the
    /// deadline. `Some` when the teammate is to leave now.
    pub(crate) async fn leave_if_free(&mut self) -> Option<Exit> {
        if self.held.is_some() {
            return None;
        }
        let asked = self.asked_to_leave.take()?;
        let id = asked.id;
        match self.answer_shutdown(id, true, None).await {
            Ok(()) => {}
            // Settled meanwhile: withdrawn by the lead, so stay; or expired, and
            // boardd stops the teammate itself.
            Err(e) if e.code() == Some(ErrorCode::InvalidState) => {
                let text = format!("shutdown request r{id} was settled before the answer ({e})");
                self.lifecycle(&text);
                return None;
            }
            // Still leave, as when asked while holding nothing: the request is
            // clear, and staying would only end at the deadline.
            Err(e) => {
                tracing::warn!(error = %e, request = id, "cannot answer the shutdown request")
            }
        }
        let text = format!(
            "shutdown requested by {} (request r{id}); approved: the task is no longer held",
            asked.from
        );
        self.lifecycle(&text);
        Some(self.leave(asked.from))
    }

    /// boardd refused the answer to request `id`. The model may answer again
    /// while the request is pending (a refusal may be about the answer: a task
    /// still held); once boardd says it is settled (expired, withdrawn), there
    /// is nothing left to answer.
    async fn answer_refused(&mut self, id: RequestId, e: ClientError) -> ToolOutput {
        let read = self
            .session
            .call(|c| async move { c.get_request(id).await })
            .await;
        let settled = match read {
            Ok(req) => !req.is_pending(),
            Err(e) => e.code() == Some(ErrorCode::NotFound),
        };
        if settled {
            self.asked_to_leave = None;
            return ToolOutput::error(format!("boardd refused the answer: {e}"));
        }
        ToolOutput::error(format!(
            "boardd refused the answer: {e}. Request r{id} still waits for your answer."
        ))
    }

    /// Answers shutdown request `id`.
    pub(super) async fn answer_shutdown(
        &self,
        id: RequestId,
        approve: bool,
        reason: Option<&str>,
    ) -> Result<(), ClientError> {
        // An approval also ends the session's waiting for boardd: the
        // teammate is leaving, and a boardd that stops right after must not
        // hold it up for the reconnect time.
        if approve {
            return self.session.approve_shutdown(id).await.map(|_| ());
        }
        let answer = self
            .session
            .call(|c| async move { c.respond_shutdown(id, approve, reason).await });
        answer.await.map(|_| ())
    }

    /// The teammate is to leave at `by`'s request, once this round is over.
    pub(super) fn leave(&mut self, by: String) -> Exit {
        let exit = Exit::ShutdownRequested { by };
        self.shutdown = Some(exit.clone());
        exit
    }

    /// The shutdown request the model was asked to answer, which the runtime
    /// answers itself instead (an agent has no tool for it).
    pub(crate) fn take_asked_to_leave(&mut self) -> Option<AskedToLeave> {
        self.asked_to_leave.take()
    }

    /// Approves `asked` for the work, which has stopped: the held task goes
    /// back without using up an attempt, and `note` goes into the transcript.
    pub(crate) async fn approve_shutdown(&mut self, asked: AskedToLeave, note: &str) -> Exit {
        self.release(None).await;
        if let Err(e) = self.answer_shutdown(asked.id, true, None).await {
            tracing::warn!(error = %e, request = asked.id, "cannot answer the shutdown request");
        }
        self.lifecycle(note);
        self.leave(asked.from)
    }
}
