//! The guards of finished commands whose processes may still run.
//!
//! A `bash` command that ends can leave background jobs behind (`server &`); its
//! guard ([`super::guard`]) stays with them. teammated keeps those guards here so
//! that it can end the jobs when they must not outlive something: a claim given up
//! or lost (someone else may run the task next), and teammated itself.
//!
//! Invariant: a guard is kept unreaped until it is known to have exited, so its
//! pid cannot be reused and signalling it can never hit another process.

use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::process::Child;

/// Shared by every clone; cheap to clone.
#[derive(Clone, Default)]
pub struct Guards {
    kept: Arc<Mutex<Vec<Child>>>,
}

impl std::fmt::Debug for Guards {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Guards")
            .field("kept", &self.lock().len())
            .finish()
    }
}

impl Guards {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Child>> {
        self.kept.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Keeps a command's guard, and drops (reaps) those that have exited.
    pub(crate) fn keep(&self, child: Child) {
        let mut kept = self.lock();
        kept.retain_mut(running);
        kept.push(child);
    }

    /// Whether `other` keeps the same guards (is a clone of this one).
    #[cfg(test)]
    pub(crate) fn same_as(&self, other: &Guards) -> bool {
        Arc::ptr_eq(&self.kept, &other.kept)
    }

    /// Tells every kept guard to kill its processes; returns without waiting.
    pub fn kill_all(&self) {
        let mut kept = self.lock();
        kept.retain_mut(running);
        for child in kept.iter() {
            if let Some(pid) = child.id().and_then(|p| libc::pid_t::try_from(p).ok()) {
                // SAFETY: kill(2) on a child we have not reaped, so the pid is ours.
                unsafe { libc::kill(pid, libc::SIGTERM) };
            }
        }
    }

    /// [`Guards::kill_all`], then waits up to `limit` for the guards to be done, so
    /// that nothing is left when teammated exits.
    pub async fn stop_all(&self, limit: Duration) {
        self.kill_all();
        let kept = std::mem::take(&mut *self.lock());
        let deadline = tokio::time::Instant::now() + limit;
        for mut child in kept {
            if tokio::time::timeout_at(deadline, child.wait())
                .await
                .is_err()
            {
                tracing::warn!(pid = ?child.id(), "a tool guard did not finish in time");
            }
        }
    }
}

/// Whether a guard still runs; reaps it if it has exited.
fn running(child: &mut Child) -> bool {
    matches!(child.try_wait(), Ok(None))
}
