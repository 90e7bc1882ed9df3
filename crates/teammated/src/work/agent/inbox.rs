//! What arrives for the teammate while its agent works: messages for the
//! agent, plan decisions and shutdown requests for the runtime.

use super::{AgentEnd, AgentRun, Phase};
use crate::error::Error;
use crate::runtime::PlanAnswer;
use crate::teammate::{Exit, PlanState, Teammate};
use crate::teammate::{is_protocol, message_text, read_messages};
use teamboard_protocol::transcript::EntryKind;
use teamboard_protocol::{ClientError, Message, Work};

impl AgentRun {
    pub(super) async fn on_woken(
        &mut self,
        t: &mut Teammate,
        woken: Result<Work, ClientError>,
        phase: &mut Phase,
    ) -> Result<Option<AgentEnd>, Error> {
        match woken? {
            Work::Timeout => Ok(None),
            Work::Messages { messages } => on_messages(t, messages, phase).await,
            Work::Task { claim } => {
                // boardd claims only for a teammate that holds no task: ours
                // ended on the board meanwhile (the lead cancelled it, and the
                // heartbeat has not told us yet). The claim is IDLE's.
                self.stashed = Some(Work::Task { claim });
                Ok(Some(AgentEnd::Done))
            }
        }
    }
}

/// Messages that arrived while the agent works: ordinary ones go to the
/// agent and are acknowledged once it took them; plan decisions and
/// shutdown requests are the runtime's, acknowledged at once.
pub(super) async fn on_messages(
    t: &mut Teammate,
    messages: Vec<Message>,
    phase: &mut Phase,
) -> Result<Option<AgentEnd>, Error> {
    // Whichever way they came (a parked wait, a poll of the inbox), messages
    // the agent already has are not handed over again: they stay unacked
    // only until it takes them.
    let messages: Vec<Message> = messages
        .into_iter()
        .filter(|m| !phase.handed.contains(&m.id))
        .collect();
    if messages.is_empty() {
        return Ok(None);
    }
    let (protocol, ordinary): (Vec<Message>, Vec<Message>) =
        messages.into_iter().partition(|m| is_protocol(m.kind));
    if !ordinary.is_empty() {
        let ids: Vec<u64> = ordinary.iter().map(|m| m.id).collect();
        let text = ordinary
            .iter()
            .map(message_text)
            .collect::<Vec<_>>()
            .join("\n\n");
        for m in &ordinary {
            t.log(EntryKind::User, None, false, &message_text(m));
        }
        phase.handed.extend(ids.iter().copied());
        match phase.agent.send(&text).await {
            Ok(tag) => {
                phase.pending.insert(tag, ids);
            }
            // The agent is gone; its exit comes as an event. The messages stay
            // in the inbox for the next session.
            Err(e) => tracing::warn!(error = %e, "cannot give messages to the agent"),
        }
    }
    if protocol.is_empty() {
        return Ok(None);
    }
    let plan_before = t.held().map(|h| h.plan.clone());
    let read = read_messages(t, protocol).await?;
    t.ack(read.ids).await?;
    if let Some(by) = read.leave_for {
        return Ok(Some(AgentEnd::Stop(Exit::ShutdownRequested { by })));
    }
    if let Some(asked) = t.take_asked_to_leave() {
        // The agent has no tool to answer it: the teammate approves for it,
        // once the agent has stopped (see `settle_agent`).
        return Ok(Some(AgentEnd::Leave {
            asked,
            session: phase.agent.session().map(str::to_string),
        }));
    }
    if read.decided.is_some() {
        let plan_now = t.held().map(|h| h.plan.clone());
        if plan_now != plan_before {
            let answer = match plan_now {
                Some(PlanState::Approved { .. }) => PlanAnswer::Approved {
                    feedback: String::new(),
                },
                Some(PlanState::Rejected { feedback, .. }) => PlanAnswer::Rejected { feedback },
                _ => PlanAnswer::Rejected {
                    feedback: "the plan request was withdrawn; plan again".into(),
                },
            };
            for text in &read.texts {
                t.log(EntryKind::User, None, false, text);
            }
            if let Err(e) = phase.agent.answer_plan(answer).await {
                tracing::warn!(error = %e, "cannot give the agent the plan decision");
            }
        }
    }
    Ok(None)
}
