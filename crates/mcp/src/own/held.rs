//! The task a person's session holds, and the lease kept on it for as long as
//! the server runs.
//!
//! The lease is the server's to keep, not the model's: a model does not
//! heartbeat, and a person may think for longer than a lease lives. A claim
//! that boardd takes back (the lead cancelled the task, the lease ran out while
//! the process was stopped) is marked lost here, and the next call says so.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use teamboard_protocol::worktree::MergeStyle;
use teamboard_protocol::{Client, ClientError, ErrorCode, TaskId};

/// The held claim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Held {
    pub id: TaskId,
    pub epoch: u64,
    pub subject: String,
    /// The worktree's target branch and merge style, for the completion gate's
    /// refusal text; `None` for a task without a worktree.
    pub tree: Option<(String, MergeStyle)>,
    /// Set when boardd took the claim back: why.
    pub lost: Option<String>,
}

impl Held {
    pub fn new(id: TaskId, epoch: u64, subject: String) -> Held {
        Held {
            id,
            epoch,
            subject,
            tree: None,
            lost: None,
        }
    }
}

/// The held claim, shared with the lease keeper.
pub(super) type Shared = Arc<Mutex<Option<Held>>>;

pub(super) fn lock(held: &Shared) -> MutexGuard<'_, Option<Held>> {
    // Every change is one assignment: a poisoned lock holds a whole value.
    held.lock().unwrap_or_else(|p| p.into_inner())
}

/// The claim, unless there is none or it is lost.
pub(super) fn current(held: &Shared) -> Option<Held> {
    lock(held).clone().filter(|h| h.lost.is_none())
}

/// Forgets the claim `id`/`epoch`, if it is still the one held.
pub(super) fn forget(held: &Shared, id: TaskId, epoch: u64) {
    let mut h = lock(held);
    if h.as_ref().is_some_and(|h| h.id == id && h.epoch == epoch) {
        *h = None;
    }
}

/// Marks the claim `id`/`epoch` lost, if it is still the one held.
pub(super) fn mark_lost(held: &Shared, id: TaskId, epoch: u64, why: String) {
    let mut h = lock(held);
    if let Some(h) = h.as_mut().filter(|h| h.id == id && h.epoch == epoch) {
        h.lost.get_or_insert(why);
    }
}

/// Heartbeats the held claim every third of the lease boardd announced, on
/// `client`'s connection, until that connection closes (the next call opens a
/// new one, with a keeper of its own).
pub(super) fn keep_lease(client: Arc<Client>, held: Shared) -> tokio::task::JoinHandle<()> {
    let every = Duration::from_millis((client.welcome().lease_ttl_ms / 3).max(1));
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let Some(h) = current(&held) else { continue };
            match client.heartbeat(h.id, h.epoch).await {
                Ok(_) => {}
                Err(ClientError::Closed(_)) => return,
                Err(e) if matches!(e.code(), Some(ErrorCode::StaleEpoch | ErrorCode::NotFound)) => {
                    tracing::info!(task = h.id, error = %e, "the claim is gone");
                    mark_lost(&held, h.id, h.epoch, format!("boardd took it back ({e})"));
                }
                Err(e) => tracing::warn!(task = h.id, error = %e, "a heartbeat failed"),
            }
        }
    })
}
