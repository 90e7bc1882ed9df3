//! IDLE: wait on boardd for messages or a task, spending no tokens.
//!
//! One `wait_for_work` call parks on the daemon, which answers the moment there is a
//! message for us (inbox first) or a ready task we may take, claimed for us
//! atomically. The wait is renewed every `--poll-interval` only as a safety net; the
//! wake-up itself is pushed.

use super::{Exit, Intake, Teammate};
use crate::error::Error;
use std::time::Duration;
use teamboard_protocol::{Claim, MemberStatus, MessageKind, TaskId, Work};
use tokio::time::Instant;

/// The longest pause before taking more work after model failures.
const COOLDOWN_MAX: Duration = Duration::from_secs(60);

/// What one wait brought.
#[allow(
    clippy::large_enum_variant,
    reason = "one is built per wake-up, so boxing the work would buy nothing but noise"
)]
enum Woken {
    Work(Work),
    /// boardd gave back a claim on reconnecting (see `Session::take_adopted`).
    Adopted(TaskId),
}

impl Teammate {
    /// Waits until there is work. `Some(exit)` when the teammate should stop instead.
    ///
    /// The teammate becomes idle only when there is nothing to do: the first wait
    /// only looks (a zero timeout), so that work already waiting is taken without
    /// a word, as after a spawn onto a board with a ready task. The lead hears of
    /// it (one `idle_notification`) only on a transition; see `become_idle`.
    pub(crate) async fn idle(&mut self, intake: &mut impl Intake) -> Result<Option<Exit>, Error> {
        let mut since = None;
        if self.failures > 0 {
            // Resting after model failures is idle from the start.
            self.become_idle().await?;
            since = Some(Instant::now());
            if let Some(exit) = self.cool_down().await {
                return Ok(Some(exit));
            }
        }
        loop {
            let ms = match since {
                // Only look: nothing has shown yet that there is no work.
                None => 0,
                Some(since) => {
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
                    wait.as_millis().clamp(1, u64::MAX as u128) as u64
                }
            };
            // What a wait parked during an agent's phase brought after it ended.
            if let Some(work) = intake.stashed() {
                match work {
                    Work::Messages { messages } => {
                        return self.take_messages(messages, intake).await;
                    }
                    Work::Task { claim } => {
                        if self.take_claimed(claim, intake).await {
                            return Ok(None);
                        }
                    }
                    Work::Timeout => {}
                }
                continue;
            }
            let session = self.session.clone();
            let woken = self.session.call(move |c| {
                let session = session.clone();
                async move {
                    // Checked on every (re)try: a reconnect may have handed us back a
                    // claim, and boardd does not claim more for a holder.
                    if let Some(id) = session.take_adopted() {
                        return Ok(Woken::Adopted(id));
                    }
                    c.wait_for_work(Some(ms)).await.map(Woken::Work)
                }
            });
            let woken = tokio::select! {
                _ = self.cancel.cancelled() => return Ok(Some(Exit::Terminated)),
                w = woken => w?,
            };
            match woken {
                // Nothing to do: the first time, that is the transition into IDLE;
                // after that, the safety-net renewal, where nothing was lost. The
                // loop re-checks the idle limit.
                Woken::Work(Work::Timeout) => match since {
                    None => {
                        self.become_idle().await?;
                        since = Some(Instant::now());
                    }
                    // Silent but for this line: no status, no message, no model call.
                    Some(_) => {
                        tracing::debug!("no work within the poll interval; renewing the wait")
                    }
                },
                Woken::Work(Work::Messages { messages }) if messages.is_empty() => {}
                Woken::Work(Work::Messages { messages }) => {
                    return self.take_messages(messages, intake).await;
                }
                Woken::Work(Work::Task { claim }) => {
                    if self.take_claimed(claim, intake).await {
                        return Ok(None);
                    }
                }
                Woken::Adopted(id) => {
                    self.resume(id, true, intake).await?;
                    if self.held.is_some() {
                        return Ok(None);
                    }
                }
            }
        }
    }

    /// Takes up a task boardd claimed for us. `false` when its worktree did not
    /// open: the task is settled already, and the wait goes on.
    async fn take_claimed(&mut self, claim: Claim, intake: &mut impl Intake) -> bool {
        tracing::info!(task = claim.task.id, subject = %claim.task.subject, "claimed a task");
        let taken = self.take_up(claim, "Auto-claimed", true, intake).await;
        taken.is_ok()
    }

    /// Back to waiting: the status, a line in the transcript and, only on a
    /// transition into IDLE (the first time, or after holding a task), one
    /// notification to the lead. Never once per wait, and never after a work
    /// phase that only answered messages: the lead's own message must not earn
    /// it a notification to read.
    async fn become_idle(&mut self) -> Result<(), Error> {
        self.set_status(MemberStatus::Idle).await?;
        if std::mem::take(&mut self.announce_idle) {
            self.tell_lead(
                MessageKind::IdleNotification,
                format!("{} is idle and waiting for work", self.cfg.name),
            )
            .await;
        }
        self.lifecycle("idle: waiting for messages or a ready task");
        Ok(())
    }

    /// After work phases that failed (a model error, an agent that failed),
    /// waits before taking more work (1 s, 2 s, 4 s... up to a minute), so a model
    /// that is down does not run every ready task through its attempts in
    /// seconds. `Some` when told to stop meanwhile.
    async fn cool_down(&mut self) -> Option<Exit> {
        if self.failures == 0 {
            return None;
        }
        let pause = Duration::from_secs(1u64 << (self.failures - 1).min(6)).min(COOLDOWN_MAX);
        tracing::warn!(
            failures = self.failures,
            "the model failed; waiting {pause:?} before taking more work"
        );
        tokio::select! {
            _ = self.cancel.cancelled() => Some(Exit::Terminated),
            _ = tokio::time::sleep(pause) => None,
        }
    }
}
