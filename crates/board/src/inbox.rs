//! Inboxes: messages stay until their recipient acknowledges them.

use crate::About;
use crate::error::{BoardError, Result};
use crate::{Board, Ctx, Now};
use teamboard_protocol::{ErrorCode, EventKind, LEAD, Message, MessageKind};

impl Board {
    /// Sends a message to one member of the team, or to `lead`. A name that is not
    /// on the roster is an error: a typo must not create a silent new inbox.
    pub fn send(
        &mut self,
        ctx: Ctx,
        to: &str,
        kind: MessageKind,
        content: String,
        request_id: Option<String>,
    ) -> Result<Message> {
        if to == ctx.actor {
            // A teammate's own writes must never wake it: a note to itself would
            // answer its next `wait_for_work` and start a work phase (model calls)
            // for nothing.
            return Err(BoardError::invalid(format!(
                "'{to}' cannot send a message to itself; keep notes in the task or a file instead"
            )));
        }
        if let Some(op) = protocol_op(kind) {
            // Only boardd writes these, as the side effect of the request ops, so
            // that a runtime can trust them and nobody can forge an answer.
            return Err(BoardError::invalid(format!(
                "'{}' messages belong to a tracked request; use {op} instead of send",
                kind
            )));
        }
        if to != LEAD && !self.is_member(ctx.team, to) {
            return Err(self.unknown_recipient(ctx.team, to));
        }
        self.check_content(&content)?;
        Ok(self.deliver(ctx, to, kind, content, request_id))
    }

    /// The error for a message to a name that is not on the roster.
    pub(crate) fn unknown_recipient(&self, team: &str, to: &str) -> BoardError {
        let known = self.members(team);
        let names: Vec<&str> = known.iter().map(|m| m.name.as_str()).collect();
        BoardError::new(
            ErrorCode::UnknownRecipient,
            format!(
                "no teammate named '{to}' in team '{team}' (known: {})",
                if names.is_empty() {
                    "none yet; spawn one first".to_string()
                } else {
                    format!("lead, {}", names.join(", "))
                }
            ),
        )
    }

    /// Sends a message to every member but the sender.
    pub fn broadcast(&mut self, ctx: Ctx, content: String) -> Result<Vec<Message>> {
        self.check_content(&content)?;
        let recipients: Vec<String> = self
            .members(ctx.team)
            .into_iter()
            .map(|m| m.name)
            .filter(|n| n != ctx.actor)
            .collect();
        Ok(recipients
            .iter()
            .map(|to| self.deliver(ctx, to, MessageKind::Broadcast, content.clone(), None))
            .collect())
    }

    fn check_content(&self, content: &str) -> Result<()> {
        if content.len() > self.config.max_message_len {
            return Err(BoardError::invalid(format!(
                "the message is {} bytes; the limit is {} bytes. Put large content in a file and send its path",
                content.len(),
                self.config.max_message_len
            )));
        }
        Ok(())
    }

    pub(crate) fn deliver(
        &mut self,
        ctx: Ctx,
        to: &str,
        kind: MessageKind,
        content: String,
        request_id: Option<String>,
    ) -> Message {
        let id = self.next_message_id;
        self.next_message_id += 1;
        let msg = Message {
            id,
            from: ctx.actor.to_string(),
            to: to.to_string(),
            kind,
            content,
            request_id,
            at: ctx.now.wall_ms,
        };
        self.team_mut(ctx.team)
            .inboxes
            .entry(to.to_string())
            .or_default()
            .insert(id, msg.clone());
        self.dirty.messages_added.insert((ctx.team.to_string(), id));
        self.wake.insert(ctx.team.to_string());
        self.emit_as(
            &ctx,
            EventKind::MessageSent,
            About::member(to).with_message(id),
            // "message N", not "#N": in event lines "#N" is a task.
            format!("{} → {to}: {} (message {id})", ctx.actor, kind),
        );
        msg
    }

    /// A name's unacknowledged messages, oldest first.
    pub fn inbox(&self, team: &str, name: &str) -> Vec<Message> {
        self.team(team)
            .and_then(|t| t.inboxes.get(name))
            .map(|i| i.values().cloned().collect())
            .unwrap_or_default()
    }

    /// Removes the shutdown requests still waiting for `name`: they were meant for
    /// a session that has ended, and must not stop the next one. Recorded as
    /// acknowledged by boardd.
    pub(crate) fn drop_stale_shutdowns(&mut self, team: &str, name: &str, now: Now) {
        let stale: Vec<u64> = (self.inbox(team, name).into_iter())
            .filter(|m| m.kind == MessageKind::ShutdownRequest)
            .map(|m| m.id)
            .collect();
        self.take_messages(team, name, &stale, "boardd", now, |id| {
            format!("dropped shutdown request (message {id}): {name}'s session ended")
        });
    }

    /// Acknowledges messages addressed to the session's name. Ids that are not in
    /// its inbox (already acknowledged, or someone else's) are skipped, so a retried
    /// ack is harmless.
    pub fn ack(&mut self, ctx: Ctx, ids: &[u64]) -> u64 {
        self.take_messages(ctx.team, ctx.actor, ids, ctx.actor, ctx.now, |id| {
            format!("{} acknowledged message {id}", ctx.actor)
        })
    }

    /// Takes `ids` out of `name`'s inbox in their order, skipping those not in it
    /// (an emptied inbox goes too), and records each as acknowledged by `by`.
    /// Answers how many were taken.
    fn take_messages(
        &mut self,
        team: &str,
        name: &str,
        ids: &[u64],
        by: &str,
        now: Now,
        detail: impl Fn(u64) -> String,
    ) -> u64 {
        let Some(t) = self.teams.get_mut(team) else {
            return 0;
        };
        let Some(inbox) = t.inboxes.get_mut(name) else {
            return 0;
        };
        let removed: Vec<u64> = ids
            .iter()
            .filter(|id| inbox.remove(id).is_some())
            .copied()
            .collect();
        if inbox.is_empty() {
            t.inboxes.remove(name);
        }
        for &id in &removed {
            self.dirty.messages_acked.insert(id);
            let about = About::member(name).with_message(id);
            self.emit(
                team,
                by,
                now.wall_ms,
                EventKind::MessageAcked,
                about,
                detail(id),
            );
        }
        removed.len() as u64
    }
}

/// The op that makes messages of a protocol kind, which `send` refuses.
fn protocol_op(kind: MessageKind) -> Option<&'static str> {
    match kind {
        MessageKind::ShutdownRequest => Some("request_shutdown"),
        MessageKind::ShutdownResponse => Some("respond_shutdown"),
        MessageKind::PlanApprovalRequest => Some("submit_plan"),
        MessageKind::PlanApprovalResponse => Some("review_plan"),
        _ => None,
    }
}
