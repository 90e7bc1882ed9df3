//! Keeping a claim's lease alive while the teammate works, and noticing at once
//! when the claim is gone.
//!
//! boardd takes a claim back when its lease runs out, so that a hung teammate cannot
//! sit on a task. A teammate that is merely busy (a long tool call, a slow model)
//! renews the lease from a task of its own, at a third of the lease, so two missed
//! beats still leave it the claim.
//!
//! When someone else ends the claim (the lead cancels the task, the lease ran out),
//! boardd pushes the event that ended it to the holder's connection (protocol §6).
//! The same task reads those pushes: one about the held task triggers a beat at
//! once, and boardd's fencing answers it. A refused beat is what declares the claim
//! lost, whether it came on schedule or because of a push. So a push about an
//! earlier claim on the same task (read late, after the task came back to us) costs
//! one beat and nothing else: the epoch check stays with boardd.

use crate::session::{Session, is_claim_gone};
use std::sync::{Arc, Mutex};
use teamboard_protocol::{Event, EventKind, TaskId};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// The running heartbeat of one claim. Dropping it stops the beats.
pub struct Heartbeat {
    task: tokio::task::JoinHandle<()>,
    /// Cancelled when boardd says the claim is no longer ours.
    pub lost: CancellationToken,
    /// Why, for a person, once `lost` is cancelled.
    why: Arc<Mutex<Option<String>>>,
}

impl Drop for Heartbeat {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Heartbeat {
    pub async fn start(session: Session, id: TaskId, epoch: u64) -> Heartbeat {
        let every = session.lease_ttl().await / 3;
        let lost = CancellationToken::new();
        let why = Arc::new(Mutex::new(None));
        let (flag, reason) = (lost.clone(), why.clone());
        let task = tokio::spawn(async move {
            let mut next = Instant::now() + every;
            loop {
                let pushed = tokio::select! {
                    () = tokio::time::sleep_until(next) => None,
                    event = session.next_event() => Some(event),
                };
                if pushed.as_ref().is_some_and(|e| e.task != Some(id)) {
                    continue;
                }
                next = Instant::now() + every;
                match session
                    .call(|c| async move { c.heartbeat(id, epoch).await })
                    .await
                {
                    Ok(_) => {}
                    Err(e) if is_claim_gone(&e) => {
                        let text = match &pushed {
                            Some(event) => describe(id, event),
                            None => format!("boardd refused the heartbeat for #{id}: {e}"),
                        };
                        tracing::warn!(task = id, error = %e, "lost the claim: {text}");
                        *reason.lock().unwrap_or_else(|p| p.into_inner()) = Some(text);
                        flag.cancel();
                        return;
                    }
                    Err(e) => tracing::warn!(task = id, error = %e, "heartbeat failed"),
                }
            }
        });
        Heartbeat { task, lost, why }
    }

    /// Stops beating, as dropping it does: for a claim on its way back to
    /// boardd, whose heartbeat must not find it gone and call it lost.
    pub fn stop(&self) {
        self.task.abort();
    }

    /// Why the claim was lost, once it has been.
    pub fn why_lost(&self) -> Option<String> {
        self.why.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// What ended the claim on task `id`, for the transcript: "#3 cancelled by lead".
fn describe(id: TaskId, event: &Event) -> String {
    match event.kind {
        EventKind::TaskCancelled => format!("#{id} cancelled by {}", event.actor),
        _ => event.detail.clone(),
    }
}
