//! What the agent reports, onto the board: its session, transcript, usage
//! (see `spend`), plan and final answer.

use super::{AgentEnd, AgentRun, MAX_REFUSALS, Phase};
use crate::runtime::{AgentEvent, FIRST_INPUT, PlanAnswer, with_tail};
use crate::teammate::{Outcome, PlanState, Teammate};
use teamboard_protocol::refusal::AGAIN;
use teamboard_protocol::transcript::EntryKind;

impl AgentRun {
    pub(super) async fn on_event(
        &mut self,
        t: &mut Teammate,
        ev: AgentEvent,
        phase: &mut Phase,
    ) -> Option<AgentEnd> {
        match ev {
            AgentEvent::Session {
                id,
                resumed,
                why_new,
            } => {
                let kind = self.spec.kind;
                let counted =
                    self.sessions
                        .started(phase.key, kind, &id, resumed, super::brief::now_ms());
                if let Err(e) = counted {
                    tracing::warn!(error = %e, "cannot record the agent's session");
                }
                let what = if resumed { "resumed" } else { "started" };
                let why = why_new
                    .map(|w| format!(" (the old one could not be resumed: {w})"))
                    .unwrap_or_default();
                let pid = phase
                    .agent
                    .pid()
                    .map(|p| format!(", pid {p}"))
                    .unwrap_or_default();
                t.lifecycle(&format!("agent: {kind} session {id} {what}{pid}{why}"));
                None
            }
            AgentEvent::Said(text) => {
                t.log(EntryKind::Assistant, None, false, &text);
                None
            }
            AgentEvent::ToolCall { name, input } => {
                t.log(EntryKind::ToolUse, Some(&name), false, &input);
                None
            }
            AgentEvent::Delivered(tag) => {
                let ids = phase.pending.remove(&tag);
                let message = tag != FIRST_INPUT && ids.as_ref().is_some_and(|i| !i.is_empty());
                phase.only_messages = Some(message && phase.only_messages != Some(false));
                if let Some(ids) = ids
                    && let Err(e) = t.ack(ids).await
                {
                    tracing::warn!(error = %e, "cannot acknowledge messages the agent took");
                }
                None
            }
            AgentEvent::Usage(usage) => {
                let ends_turn = usage.ends_turn;
                let why = super::spend::settle(t, usage).await?;
                if ends_turn {
                    phase.over_budget = Some(why);
                    None
                } else {
                    Some(AgentEnd::OverBudget(why))
                }
            }
            AgentEvent::LimitReached(limit) => {
                super::spend::block(t, &limit).await;
                Some(AgentEnd::LimitReached(limit))
            }
            AgentEvent::OverBudget(why) => Some(AgentEnd::OverBudget(why)),
            AgentEvent::PlanProposed(plan) => {
                proposed(t, plan, phase).await;
                None
            }
            AgentEvent::Idle { answer } => answered(t, answer, phase).await,
            AgentEvent::TurnEnded { answer } => {
                turn_ended(phase, answer);
                // Input waits for the next turn, which a spent budget stops.
                phase.over_budget.take().map(AgentEnd::OverBudget)
            }
            AgentEvent::Failed(why) => Some(AgentEnd::Failed(why)),
            AgentEvent::Exited { status, stderr } => Some(AgentEnd::Failed(with_tail(
                format!("the agent exited ({status}) before it finished"),
                &stderr,
            ))),
        }
    }
}

/// A turn ended with `answer`: the work's answer, unless the turn only
/// answered messages.
fn turn_ended(phase: &mut Phase, answer: String) {
    if phase.only_messages.take() != Some(true) {
        phase.answer = Some(answer);
    }
}

/// The agent's turn ended with nothing it has not answered: the task
/// completes, with the result the agent gave `complete_task` or else the
/// work's answer. A refusal of the completion gate goes back to the agent as
/// its next input.
pub(super) async fn answered(
    t: &mut Teammate,
    answer: String,
    phase: &mut Phase,
) -> Option<AgentEnd> {
    turn_ended(phase, answer);
    // A turn that ended took the first input, whether or not the driver
    // saw it taken: its messages must not stay unacknowledged, or every
    // wake-up would bring them back for another conversation.
    if let Some(ids) = phase.pending.remove(&FIRST_INPUT)
        && let Err(e) = t.ack(ids).await
    {
        tracing::warn!(error = %e, "cannot acknowledge messages the agent took");
    }
    // Trap: the end of a turn and a send cross. The driver reported this
    // turn's end before it took input the loop sent since (a message, a
    // refusal of the gate); that input starts another turn, whose answer is
    // the one that counts. Every driver reports a send taken (`Delivered`)
    // or fails, so the wait ends.
    if let Some(tag) = phase.pending.keys().find(|&&t| t != FIRST_INPUT) {
        tracing::info!(
            tag,
            "a turn ended before the agent took the newest input; waiting for its answer to it"
        );
        return phase.over_budget.take().map(AgentEnd::OverBudget);
    }
    let Some(held) = t.held() else {
        // A conversation about messages alone, or a task the agent ended
        // itself through the board.
        return Some(AgentEnd::Done);
    };
    if let PlanState::Pending { id, .. } = &held.plan {
        // The agent submitted its plan with the board's `submit_plan` and
        // ended its turn to wait: its answer is not a result (boardd would
        // refuse it, and the refusals would give the task up). The lead's
        // decision starts its next turn (see `on_messages`).
        let text = format!(
            "the agent waits for the lead's decision on its plan (request r{id}); its answer is not the task's result"
        );
        t.lifecycle(&text);
        return phase.over_budget.take().map(AgentEnd::OverBudget);
    }
    // What the agent gave `complete_task` in this turn (or an earlier one
    // since the last refusal) comes before the turn's last words.
    let result = match (phase.result.take(), &phase.answer) {
        (Some(result), _) => result,
        (None, Some(answer)) if !answer.trim().is_empty() => answer.clone(),
        _ => "(the agent gave no result text)".to_string(),
    };
    let out = Outcome::Complete(result).report(t).await;
    if t.held().is_none() {
        return Some(AgentEnd::Done);
    }
    phase.refusals += 1;
    if phase.refusals >= MAX_REFUSALS {
        // Not for the agent: `settle` gives the task back with boardd's words.
        return Some(AgentEnd::Refused);
    }
    if let Some(why) = phase.over_budget.take() {
        // The refusal would start a turn the budget has no room for.
        return Some(AgentEnd::OverBudget(why));
    }
    // The refusal starts the agent's next turn. Trap: `AGAIN` asks for a call
    // in the turn that ended; the agent is told to end the new one instead.
    let name = &t.cfg().name;
    let text = match out.content.strip_suffix(AGAIN) {
        Some(head) => format!(
            "{head}end your turn: {name} completes the task again when it ends, with \
             the result you give complete_task or else your final answer."
        ),
        None => out.content,
    };
    t.log(EntryKind::User, None, false, &text);
    match phase.agent.send(&text).await {
        Ok(tag) => {
            phase.pending.insert(tag, Vec::new());
            None
        }
        Err(e) => Some(AgentEnd::Failed(format!(
            "cannot give the agent the gate's refusal: {e}"
        ))),
    }
}

/// The agent asks for its plan to be approved: it becomes the claim's plan
/// request; the answer comes with the lead's decision (see `on_messages`).
async fn proposed(t: &mut Teammate, plan: String, phase: &mut Phase) {
    let Some(held) = t.held() else {
        let _ = phase
            .agent
            .answer_plan(PlanAnswer::Rejected {
                feedback: "there is no task to plan for".into(),
            })
            .await;
        return;
    };
    let (id, epoch) = (held.id, held.epoch);
    let text = plan.trim();
    let text = if text.is_empty() {
        "(the agent proposed an empty plan)"
    } else {
        text
    };
    match t
        .session()
        .call(|c| async move { c.submit_plan(id, epoch, text).await })
        .await
    {
        Ok(req) => t.plan_submitted(req.id, text.to_string(), "the agent waits"),
        Err(e) => {
            let _ = phase
                .agent
                .answer_plan(PlanAnswer::Rejected {
                    feedback: format!("the plan could not be submitted: {e}"),
                })
                .await;
        }
    }
}
