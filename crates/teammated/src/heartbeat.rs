//! Keeping a claim's lease alive while the teammate works.
//!
//! boardd takes a claim back when its lease runs out, so that a hung teammate cannot
//! sit on a task. A teammate that is merely busy (a long tool call, a slow model)
//! renews the lease from a task of its own, at a third of the lease, so two missed
//! beats still leave it the claim.

use crate::session::{Session, is_claim_gone};
use teamboard_protocol::TaskId;
use tokio_util::sync::CancellationToken;

/// The running heartbeat of one claim. Dropping it stops the beats.
pub struct Heartbeat {
    task: tokio::task::JoinHandle<()>,
    /// Cancelled when boardd says the claim is no longer ours.
    pub lost: CancellationToken,
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
        let flag = lost.clone();
        let task = tokio::spawn(async move {
            loop {
                tokio::time::sleep(every).await;
                match session
                    .call(|c| async move { c.heartbeat(id, epoch).await })
                    .await
                {
                    Ok(_) => {}
                    Err(e) if is_claim_gone(&e) => {
                        tracing::warn!(task = id, error = %e, "lost the claim");
                        flag.cancel();
                        return;
                    }
                    Err(e) => tracing::warn!(task = id, error = %e, "heartbeat failed"),
                }
            }
        });
        Heartbeat { task, lost }
    }
}
