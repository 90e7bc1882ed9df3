//! IDLE: wait on boardd for messages or a task, spending no tokens.
//!
//! One `wait_for_work` call parks on the daemon, which answers the moment there is a
//! message for us (inbox first) or a ready task we may take, claimed for us
//! atomically. The wait is renewed every `--poll-interval` only as a safety net; the
//! wake-up itself is pushed.

use crate::error::Error;
use crate::teammate::{Exit, Teammate};
use teamboard_protocol::transcript::EntryKind;
use teamboard_protocol::{MemberStatus, Message, MessageKind, Work};
use tokio::time::Instant;

impl Teammate {
    /// Waits until there is work. `Some(exit)` when the teammate should stop instead.
    pub(crate) async fn idle(&mut self) -> Result<Option<Exit>, Error> {
        self.set_status(MemberStatus::Idle).await?;
        // One notification per transition into IDLE, never one per wait.
        self.tell_lead(
            MessageKind::IdleNotification,
            format!("{} is idle and waiting for work", self.cfg.name),
        )
        .await;
        self.log(
            EntryKind::Lifecycle,
            None,
            false,
            "idle: waiting for messages or a ready task",
        );
        let since = Instant::now();
        loop {
            let wait = match self.cfg.idle_timeout {
                Some(limit) => {
                    let left = limit.saturating_sub(since.elapsed());
                    if left.is_zero() {
                        return Ok(Some(Exit::IdleTimeout));
                    }
                    left.min(self.cfg.poll_interval)
                }
                None => self.cfg.poll_interval,
            };
            let ms = wait.as_millis().max(1) as u64;
            let work = tokio::select! {
                _ = self.cancel.cancelled() => return Ok(Some(Exit::Terminated)),
                w = self.session.call(|c| async move { c.wait_for_work(Some(ms)).await }) => w?,
            };
            match work {
                // The safety-net renewal: nothing was lost, there is just nothing
                // to do. The loop re-checks the idle limit.
                Work::Timeout => {}
                Work::Messages { messages } => {
                    if let Some(exit) = self.take_messages(messages).await? {
                        return Ok(Some(exit));
                    }
                    return Ok(None);
                }
                Work::Task { claim } => {
                    tracing::info!(task = claim.task.id, subject = %claim.task.subject, "claimed a task");
                    self.hold(claim, "Auto-claimed").await;
                    return Ok(None);
                }
            }
        }
    }

    /// Puts messages into the context, answers shutdown requests, then acknowledges
    /// them all. Acknowledging only after the messages are in the context is what
    /// makes delivery at-least-once: if we die before the ack, boardd keeps them.
    pub(crate) async fn take_messages(
        &mut self,
        messages: Vec<Message>,
    ) -> Result<Option<Exit>, Error> {
        let mut exit = None;
        let ids: Vec<u64> = messages.iter().map(|m| m.id).collect();
        for m in messages {
            if m.kind == MessageKind::ShutdownRequest {
                let reply = format!("{} is shutting down", self.cfg.name);
                let (to, rid) = (&m.from, m.request_id.as_deref());
                self.session
                    .call(|c| {
                        let reply = &reply;
                        async move { c.send(to, MessageKind::ShutdownResponse, reply, rid).await }
                    })
                    .await?;
                self.log(
                    EntryKind::Lifecycle,
                    None,
                    false,
                    &format!(
                        "shutdown requested by {} (request {:?}); answered",
                        m.from, m.request_id
                    ),
                );
                exit = Some(Exit::ShutdownRequested { by: m.from });
                continue;
            }
            let text = format!(
                "[Message #{} from {} ({})] {}",
                m.id,
                m.from,
                m.kind.as_str(),
                m.content
            );
            self.ctx.push_user_text(text.clone());
            self.log(EntryKind::User, None, false, &text);
        }
        self.session
            .call(|c| {
                let ids = ids.clone();
                async move { c.ack(ids).await }
            })
            .await?;
        if exit.is_some() {
            self.shutdown = exit.clone();
        }
        Ok(exit)
    }
}
