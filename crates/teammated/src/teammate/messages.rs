//! The messages that reach a teammate, and the protocol requests among them.
//!
//! Ordinary messages go into the model's context as they are. The protocol kinds
//! never do: boardd alone writes them (`send` refuses their kinds), as the side
//! effect of a tracked request, and the runtime acts on the request itself, read
//! back from boardd, since a message may be older than its request's state:
//!
//! - a `shutdown_request` to a teammate that holds no task is approved at once,
//!   and the teammate leaves; to one that holds a task, it becomes a runtime note
//!   asking the model to answer with `respond_shutdown` at its next tool round;
//! - a `plan_approval_response` settles the plan gate of the claim it belongs to,
//!   and the model is told the decision and the feedback;
//! - anything else of those kinds (a stale request, a kind meant for the lead) is
//!   acknowledged and logged, and the model never sees it;
//! - a shutdown request whose request boardd cannot give (it answers, but with
//!   an error) is read again after pauses, and then left unacknowledged: the
//!   next read takes it up again. Dropped, it would wait for its deadline.

use super::{AskedToLeave, Exit, Intake, PlanState, Teammate};
use crate::error::Error;
use teamboard_protocol::transcript::EntryKind;
use teamboard_protocol::{
    ClientError, ErrorCode, LEAD, Message, MessageKind, RequestId, RequestKind, TeamRequest,
};

/// The first pause before a shutdown request that boardd could not give is
/// read again; each next pause doubles, up to [`REREAD_MAX`]. boardd answered,
/// so this is no lost connection (the session waits those out); and a message
/// left unacknowledged comes back at once, which must not be a busy loop.
const REREAD_AFTER: std::time::Duration = std::time::Duration::from_secs(1);
const REREAD_MAX: std::time::Duration = std::time::Duration::from_secs(8);

/// What the runtime made of a batch of messages.
#[derive(Debug, Default)]
pub struct Read {
    /// Text for the model, one entry per message it is to see.
    pub texts: Vec<String>,
    /// The messages handled: acknowledge them once `texts` are in the context.
    pub ids: Vec<u64>,
    /// The teammate is to leave: a shutdown it approved on its own.
    /// The teammate is to leave, at the request of this sender: a shutdown it
    /// approved on its own. (A name, not an `Exit`: this module's own items do
    /// not name the teammate's, which keeps the module graph one way.)
    pub leave_for: Option<String>,
    /// The plan decision that arrived, if any.
    pub decided: Option<RequestId>,
}

impl Teammate {
    /// Hands messages to the work and acknowledges them. Acknowledging only once
    /// the messages are in the model's context is what makes delivery
    /// at-least-once: if we die before the ack, boardd keeps them. An agent
    /// runtime acknowledges the ordinary ones itself, once its agent took them.
    ///
    /// A shutdown approved here ends the teammate; the messages that came with it
    /// stay in the inbox unread, for whoever runs under this name next.
    pub(crate) async fn take_messages(
        &mut self,
        messages: Vec<Message>,
        intake: &mut impl Intake,
    ) -> Result<Option<Exit>, Error> {
        let ordinary: Vec<u64> = messages
            .iter()
            .filter(|m| !is_protocol(m.kind))
            .map(|m| m.id)
            .collect();
        let read = read_messages(self, messages).await?;
        let mut ids = read.ids;
        if read.leave_for.is_none() && intake.hear(&read.texts, &ordinary) {
            ids.retain(|id| !ordinary.contains(id));
        }
        for text in &read.texts {
            self.log(EntryKind::User, None, false, text);
        }
        let acked = self.ack(ids).await;
        let Some(by) = read.leave_for else {
            return acked.map(|()| None);
        };
        // Leaving: the session no longer waits for a lost boardd, and an
        // unacknowledged request is read as settled by the next of this name.
        if let Err(e) = acked {
            tracing::warn!(error = %e, "cannot acknowledge the shutdown request; leaving all the same");
        }
        Ok(Some(self.leave(by)))
    }

    pub(crate) async fn ack(&self, ids: Vec<u64>) -> Result<(), Error> {
        if ids.is_empty() {
            return Ok(());
        }
        let ids = &ids;
        self.session
            .call(|c| async move { c.ack(ids.clone()).await })
            .await?;
        Ok(())
    }
}

/// Sorts a batch of messages into what the model sees and what the runtime
/// handles. Nothing is acknowledged here.
pub(crate) async fn read_messages(t: &mut Teammate, messages: Vec<Message>) -> Result<Read, Error> {
    let mut read = Read::default();
    for m in messages {
        match m.kind {
            MessageKind::ShutdownRequest => {
                let req = match shutdown_request_of(t, &m).await {
                    Ok(req) => req,
                    // Left unacknowledged, so the next read takes it again;
                    // acknowledged, the request would wait unanswered for
                    // its deadline and a forced stop.
                    Err(e) => {
                        tracing::warn!(id = m.id, error = %e, "cannot read a shutdown request; it stays in the inbox");
                        continue;
                    }
                };
                if let Some(by) = on_shutdown_request(t, req, &mut read).await? {
                    // Only the request is taken: the rest stays for the next
                    // teammate of this name.
                    read.texts.clear();
                    read.ids = vec![m.id];
                    read.leave_for = Some(by);
                    return Ok(read);
                }
            }
            MessageKind::PlanApprovalResponse => on_plan_decision(t, &m, &mut read).await,
            MessageKind::ShutdownResponse | MessageKind::PlanApprovalRequest => {
                tracing::warn!(
                    id = m.id,
                    kind = %m.kind,
                    from = %m.from,
                    "a message meant for the lead reached a teammate; ignored"
                );
            }
            _ => read.texts.push(message_text(&m)),
        }
        read.ids.push(m.id);
    }
    Ok(read)
}

/// An ordinary message as the model (or the agent) reads it.
pub(crate) fn message_text(m: &Message) -> String {
    format!(
        "[Message #{} from {} ({})] {}",
        m.id, m.from, m.kind, m.content
    )
}

/// Whether the runtime handles a message of this kind itself (a request, or a
/// kind meant for the lead), rather than give it to the model as it is.
pub(crate) fn is_protocol(kind: MessageKind) -> bool {
    matches!(
        kind,
        MessageKind::ShutdownRequest
            | MessageKind::PlanApprovalResponse
            | MessageKind::ShutdownResponse
            | MessageKind::PlanApprovalRequest
    )
}

/// The request a protocol message names, if it names one boardd knows; `Err`
/// when boardd could not say.
async fn request_of(t: &Teammate, m: &Message) -> Result<Option<TeamRequest>, ClientError> {
    let Some(id) = m.request_id.as_deref().and_then(|r| r.parse().ok()) else {
        return Ok(None);
    };
    match t
        .session
        .call(|c| async move { c.get_request(id).await })
        .await
    {
        Ok(r) => Ok(Some(r)),
        Err(e) if e.code() == Some(ErrorCode::NotFound) => Ok(None),
        Err(e) => Err(e),
    }
}

/// [`request_of`] for a shutdown request, read again after pauses while
/// boardd cannot give it.
async fn shutdown_request_of(
    t: &Teammate,
    m: &Message,
) -> Result<Option<TeamRequest>, ClientError> {
    let mut pause = REREAD_AFTER;
    loop {
        match request_of(t, m).await {
            Err(e) if pause <= REREAD_MAX => {
                tracing::warn!(id = m.id, error = %e, "cannot read a shutdown request; trying again");
                tokio::time::sleep(pause).await;
                pause *= 2;
            }
            read => return read,
        }
    }
}

/// `Some(who asked)` when the teammate approved and is to leave now.
async fn on_shutdown_request(
    t: &mut Teammate,
    req: Option<TeamRequest>,
    read: &mut Read,
) -> Result<Option<String>, Error> {
    let Some(req) = req else {
        return Ok(None);
    };
    if req.kind != RequestKind::Shutdown || req.to != t.cfg.name || !req.is_pending() {
        let text = format!(
            "ignored shutdown request r{} from {}: it is {}",
            req.id, req.from, req.state
        );
        t.lifecycle(&text);
        return Ok(None);
    }
    let reason = req.reason.clone().unwrap_or_default();
    if t.held.is_none() {
        let id = req.id;
        if let Err(e) = t.answer_shutdown(id, true, None).await {
            // Still leave: the request is clear, and a teammate that stays
            // would only be stopped at the deadline.
            tracing::warn!(error = %e, request = id, "cannot answer the shutdown request");
        }
        let text = format!(
            "shutdown requested by {} (request r{id}); approved: no task held",
            req.from
        );
        t.lifecycle(&text);
        return Ok(Some(req.from));
    }
    let secs = req
        .deadline
        .map(|d| ((d - teamboard_protocol::now_ms()).max(0) / 1000).to_string())
        .unwrap_or_else(|| "?".into());
    let why = if reason.is_empty() {
        String::new()
    } else {
        format!(": {reason}")
    };
    read.texts.push(format!(
        "[Runtime] {} asks you to shut down (request r{}){why}. Answer it now with \
         respond_shutdown, within about {secs} s or your processes are stopped: \
         approve=true with a note saying what you got done and what is left (the \
         task is given back with that note, for its next owner), or approve=false \
         with the reason to keep working.",
        req.from, req.id
    ));
    t.asked_to_leave = Some(AskedToLeave {
        id: req.id,
        from: req.from,
    });
    Ok(None)
}

async fn on_plan_decision(t: &mut Teammate, m: &Message, read: &mut Read) {
    match request_of(t, m).await {
        Ok(Some(req)) => plan_decided(t, req, read),
        Ok(None) => {}
        // The plan's wait reads the request again at its next renewal.
        Err(e) => tracing::warn!(id = m.id, error = %e, "cannot read the request of a message"),
    }
}

/// Settles the plan gate with `req` when it is the held claim's plan and no
/// longer pending, and tells the model. Also for a plan the lead withdrew, which
/// comes with no message.
pub(crate) fn plan_decided(t: &mut Teammate, req: TeamRequest, read: &mut Read) {
    let Some(held) = t.held.as_mut() else {
        return;
    };
    let ours = req.kind == RequestKind::Plan
        && req.from == t.cfg.name
        && req.task == Some(held.id)
        && req.epoch == Some(held.epoch);
    if !ours || req.is_pending() {
        return;
    }
    let feedback = req.feedback.clone().unwrap_or_default();
    let by = req.answered_by.as_deref().unwrap_or(LEAD);
    let text = match req.state {
        teamboard_protocol::RequestState::Approved => {
            held.plan = PlanState::Approved { id: req.id };
            let tail = if feedback.is_empty() {
                String::new()
            } else {
                format!(" Feedback: {feedback}")
            };
            format!(
                "[Runtime] {by} approved your plan for #{} (request r{}). bash, write_file and edit_file are open; carry it out.{tail}",
                held.id, req.id
            )
        }
        teamboard_protocol::RequestState::Rejected => {
            held.plan = PlanState::Rejected {
                id: req.id,
                feedback: feedback.clone(),
            };
            format!(
                "[Runtime] {by} rejected your plan for #{} (request r{}): {feedback}\nRevise it and call submit_plan again.",
                held.id, req.id
            )
        }
        other => {
            held.plan = PlanState::None;
            format!(
                "[Runtime] Your plan for #{} (request r{}) was {} by {by}: {feedback}. Submit a plan again if you still need one.",
                held.id, req.id, other
            )
        }
    };
    read.texts.push(text);
    read.decided = Some(req.id);
}
