//! How a held task is settled after an agent's phase.

use super::{AgentEnd, AgentRun, MAX_REFUSALS};
use crate::error::Error;
use crate::teammate::{Exit, Outcome, Teammate};

impl AgentRun {
    /// Settles the held task after the phase. `Some(exit)` when the teammate
    /// should stop.
    pub(super) async fn settle(
        &mut self,
        t: &mut Teammate,
        end: AgentEnd,
    ) -> Result<Option<Exit>, Error> {
        let kind: &str = self.spec.kind.into();
        match end {
            AgentEnd::Done => {
                t.lifecycle("work: ended");
            }
            AgentEnd::GaveUp(reason) => {
                // The agent has stopped: the task may go to its next owner.
                match Outcome::Fail(reason.clone()).end(t).await {
                    Ok((task, what)) => t.lifecycle(&format!(
                        "work: ended (the agent gave #{} up: {what})",
                        task.id
                    )),
                    Err(not) => {
                        t.lifecycle_error(&format!(
                            "work: ended (the agent gave the task up, but it could not be failed: {not})"
                        ));
                        if t.held().is_some() {
                            t.release(Some(&reason)).await;
                        }
                    }
                }
            }
            AgentEnd::Stop(exit) => return Ok(Some(exit)),
            AgentEnd::Leave { asked, session } => {
                let note = format!(
                    "interrupted by a shutdown request from {}; the agent's session {} is kept with {} for this task",
                    asked.from,
                    session.as_deref().unwrap_or("(none yet)"),
                    t.cfg().name
                );
                return Ok(Some(t.approve_shutdown(asked, &note).await));
            }
            AgentEnd::Lost => {
                let why = t.why_lost();
                t.lifecycle(&format!("work: ended (claim lost: {why})"));
                t.let_go();
            }
            AgentEnd::OverBudget(why) => {
                // Not the task's fault: it goes back without using up an
                // attempt, and boardd hands out no work the budget covers
                // until it has room. IDLE rests first all the same, for a
                // limit boardd cannot hold work back for (a dollar limit on
                // a model it has no price for).
                t.lifecycle(&format!("work: ended (budget exhausted: {why})"));
                t.release_with_note(&format!("budget exhausted: {why}"))
                    .await;
                t.failed();
                return Ok(None);
            }
            AgentEnd::LimitReached(limit) => {
                let note = super::spend::limit_note(&limit);
                t.lifecycle(&format!("work: ended ({note})"));
                t.release_with_note(&note).await;
                return Ok(super::spend::wait_out(t, &limit).await);
            }
            AgentEnd::Refused => {
                let last = t.held().and_then(|h| h.refused.clone()).unwrap_or_default();
                t.lifecycle_error(&format!(
                    "work: ended (the completion gate refused {MAX_REFUSALS} times, the last: {last})"
                ));
            }
            AgentEnd::StartFailed(e) => {
                let why = format!("the {kind} agent could not start: {e}");
                // Not the task's fault: give it back without using up an attempt.
                agent_failed(t, &why, why.clone(), "could not read its messages", false).await;
                return Ok(None);
            }
            AgentEnd::Failed(why) => {
                let told = format!("{kind} agent: {why}");
                agent_failed(t, &why, told, "could not answer", true).await;
                return Ok(None);
            }
        }
        // The agent worked: IDLE takes the next task without resting.
        t.worked();
        t.give_back_unfinished("the agent ended without a result the board took")
            .await;
        Ok(None)
    }
}

/// After an agent that failed: the held task goes back (using up an attempt
/// when `attempt` is set, else with `why` as a note), the lead is told
/// (`told`, or `idle` for what failed when no task was held), and the
/// next phase waits for the failures' rest.
async fn agent_failed(t: &mut Teammate, why: &str, told: String, idle: &str, attempt: bool) {
    t.lifecycle_error(&format!("work: ended ({why})"));
    t.work_failed(why, attempt, &told, idle).await;
    t.failed();
}
