//! Ending the held task on the board: completed with a result, or failed with
//! a reason, and the lead told. The native loop's `complete_task` and
//! `fail_task`, an agent's (once it can no longer change the task), and an
//! agent's final answer all end a task here: the same completion gate, the same
//! refusal text, the same result for the lead.

use super::Teammate;
use crate::board_text;
use crate::session::is_claim_gone;
use crate::tools::ToolOutput;
use teamboard_protocol::{ClientError, LandingStage, MessageKind, Task, TaskStatus};

/// How a held task ends.
pub(crate) enum Outcome {
    Complete(String),
    Fail(String),
}

impl Outcome {
    /// Ends the held task and tells the lead. Returns what to tell the model; see
    /// [`Outcome::end`].
    pub(crate) async fn report(self, t: &mut Teammate) -> ToolOutput {
        match self.end(t).await {
            Ok((task, what)) if task.landing.is_some() => ToolOutput::ok(format!(
                "task #{} {what}; nothing more to do on it now. If it is sent back, it comes back to you with the feedback",
                task.id
            )),
            Ok((task, what)) => ToolOutput::ok(format!("task #{} {what}", task.id)),
            Err(not) => ToolOutput::error(not),
        }
    }

    /// Ends the held task and tells the lead: the task as boardd ended it, and how
    /// in words; or why it could not be ended, for the model. The claim is kept
    /// when boardd refuses the request itself, so the model can try again; it is
    /// dropped only once boardd has ended it or says it is gone.
    pub(crate) async fn end(self, t: &mut Teammate) -> Result<(Task, &'static str), String> {
        let outcome = self;
        let Some(held) = &t.held else {
            return Err("you hold no task; claim one first".to_string());
        };
        let (id, epoch, subject) = (held.id, held.epoch, held.subject.clone());
        let (completing, text) = match &outcome {
            Outcome::Complete(r) => (true, board_text::cap(r)),
            Outcome::Fail(r) => (false, board_text::cap(r)),
        };
        let text = &text;
        if !completing {
            // A failed attempt may go to someone else at once; see `give_back`.
            t.stop_background().await;
        }
        let answer = if completing {
            t.session
                .call(|c| async move { c.complete_task(id, epoch, text).await })
                .await
        } else {
            t.session
                .call(|c| async move { c.fail_task(id, epoch, text).await })
                .await
        };
        let task = match answer {
            Ok(task) => task,
            Err(e) if is_claim_gone(&e) => {
                // If our first request went through and only its answer was lost
                // with the connection, the repeat is refused: the board knows.
                let now = t
                    .session
                    .call(|c| async move { c.get_task(id).await })
                    .await
                    .ok()
                    .map(|d| d.task);
                let me = t.cfg.name.as_str();
                match now {
                    Some(t)
                        if t.epoch == epoch
                            && t.status != TaskStatus::InProgress
                            && (!completing
                                || (t.status == TaskStatus::Completed
                                    && t.owner.as_deref() == Some(me))) =>
                    {
                        t
                    }
                    _ => {
                        t.let_go();
                        tracing::warn!(task = id, error = %e, "the claim is gone");
                        return Err(format!(
                            "your claim on task #{id} is gone ({e}); stop working on it"
                        ));
                    }
                }
            }
            Err(e) => {
                // The completion gate: a check failed or the branch conflicts. The
                // claim stays ours; the heartbeat kept it while the checks ran.
                if let ClientError::Server(body) = &e
                    && let Some(text) = crate::worktree::text::refused_completion(
                        body.code,
                        &body.message,
                        t.held.as_ref().and_then(|h| h.tree.as_ref()),
                    )
                {
                    tracing::info!(
                        task = id,
                        code = %body.code,
                        "the completion gate refused"
                    );
                    if let Some(h) = t.held.as_mut() {
                        h.refused = Some(body.message.clone());
                    }
                    return Err(text);
                }
                tracing::warn!(task = id, error = %e, "boardd refused to end the task");
                if let Some(h) = t.held.as_mut() {
                    h.refused = Some(e.to_string());
                }
                return Err(format!("boardd refused: {e}"));
            }
        };
        if completing {
            t.drop_held();
        } else {
            t.let_go();
        }
        // A completion that waits for a person's review: the claim stays ours
        // on the board, but there is nothing to do on it until it is merged or
        // comes back with feedback (through `wait_for_work`, like a claim).
        let review = task
            .landing
            .as_ref()
            .is_some_and(|l| l.stage == LandingStage::Review);
        let what = match (completing, task.status) {
            (true, _) if review => "passed its checks and waits for a person's review",
            (true, _) => "completed",
            (false, TaskStatus::Failed) => "failed for good",
            (false, _) => "failed (it will be retried)",
        };
        // Completed or failed, the lead gets the outcome as a `result`.
        t.tell_lead(
            MessageKind::Result,
            format!("#{id} {subject}: {what} by {}\n{text}", t.cfg.name),
        )
        .await;
        Ok((task, what))
    }
}
