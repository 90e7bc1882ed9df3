//! Committing groups of jobs, and when to checkpoint the WAL.
//!
//! SQLite's automatic checkpoint is off (see `store`): it runs inside the
//! `COMMIT` that crosses its threshold, so whichever request committed then would
//! wait for every page to be written back too. boardd checkpoints itself, on the
//! writer thread, once the replies of a commit are out and no job has come for
//! [`CHECKPOINT_QUIET`]; only a WAL past [`CHECKPOINT_PAGES_MAX`] is checkpointed
//! regardless, so that a daemon under endless load still bounds it.
//!
//! A failed commit is final: the committer refuses everything after it, and the
//! daemon stops rather than acknowledge anything it could not persist.

use super::Job;
use crate::store::Store;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use teamboard_protocol::CommitStats;
use tokio_util::sync::CancellationToken;

/// WAL pages after which a checkpoint is due, at the writer's next quiet moment
/// (SQLite's own default threshold).
pub const CHECKPOINT_PAGES: u32 = 1000;

/// Past this many WAL pages the checkpoint runs even when jobs are waiting
/// (16 MiB with 4 KiB pages).
pub const CHECKPOINT_PAGES_MAX: u32 = 4 * CHECKPOINT_PAGES;

/// How long the writer waits without a job before it runs a due checkpoint. A
/// request arriving during a checkpoint waits for it, so it goes where the daemon
/// is most likely to stay quiet a little longer.
pub const CHECKPOINT_QUIET: Duration = Duration::from_millis(1);

/// What [`CommitStats`] reports, counted as each transaction commits. Shared with
/// `status`, which reads it without waiting for a commit to finish.
#[derive(Debug, Default)]
pub struct Counters {
    transactions: AtomicU64,
    requests: AtomicU64,
}

impl Counters {
    pub fn stats(&self) -> CommitStats {
        CommitStats {
            transactions: self.transactions.load(Ordering::Relaxed),
            requests: self.requests.load(Ordering::Relaxed),
        }
    }
}

/// The store, whether a write to it has failed, and the checkpoint policy's state.
pub struct Committer {
    pub(super) store: Store,
    /// Why the first failed commit failed; every later job is refused with it.
    failed: Option<String>,
    /// WAL pages at which the next checkpoint is due. Raised past the current size
    /// when a checkpoint fails, so that a failing one is retried every
    /// [`CHECKPOINT_PAGES`] rather than after every commit.
    checkpoint_at: u32,
    counters: Arc<Counters>,
    /// Cancelled on the first failed commit: boardd stops.
    fatal: CancellationToken,
}

impl Committer {
    pub fn new(store: Store, counters: Arc<Counters>, fatal: CancellationToken) -> Committer {
        Committer {
            store,
            failed: None,
            checkpoint_at: CHECKPOINT_PAGES,
            counters,
            fatal,
        }
    }

    /// Commits a group of jobs in one transaction. Afterwards [`Committer::parts`]
    /// says whether their replies may go out.
    pub fn commit(&mut self, group: &[Job]) {
        if self.failed.is_some() || !group.iter().any(Job::writes) {
            return;
        }
        // A job holds every command of one actor batch; each of its replies waited
        // for this fsync, reads included.
        let requests: usize = group.iter().map(|j| j.replies.len()).sum();
        let changes = group.iter().map(|j| &j.changes).filter(|c| !c.is_empty());
        let credentials = group.iter().flat_map(|j| &j.credentials);
        let tokens = group.iter().flat_map(|j| &j.tokens);
        match self.store.commit(changes, credentials, tokens) {
            Ok(()) => {
                let c = &self.counters;
                c.transactions.fetch_add(1, Ordering::Relaxed);
                c.requests.fetch_add(requests as u64, Ordering::Relaxed);
            }
            Err(e) => {
                tracing::error!(error = %e, "commit failed; boardd stops so that nothing unpersisted is acknowledged");
                self.failed = Some(e.to_string());
                self.fatal.cancel();
            }
        }
    }

    /// The store, for reads, and why commits fail, once one has: nothing may
    /// be acknowledged any more.
    pub fn parts(&mut self) -> (&mut Store, Option<&str>) {
        (&mut self.store, self.failed.as_deref())
    }

    pub fn checkpoint_due(&self) -> bool {
        self.failed.is_none() && self.store.wal_pages() >= self.checkpoint_at
    }

    /// Whether the WAL is so large that the checkpoint may not wait for a quiet
    /// moment any longer.
    pub fn checkpoint_overdue(&self) -> bool {
        self.checkpoint_due() && self.store.wal_pages() >= CHECKPOINT_PAGES_MAX
    }

    pub fn checkpoint(&mut self) {
        let pages = self.store.wal_pages();
        match self.store.checkpoint() {
            Ok(()) => self.checkpoint_at = CHECKPOINT_PAGES,
            // Nothing is lost: every commit is in the WAL, and a restart replays
            // it. Only the WAL keeps growing until a checkpoint succeeds.
            Err(e) => {
                tracing::warn!(error = %e, wal_pages = pages, "WAL checkpoint failed; will retry");
                self.checkpoint_at = pages.saturating_add(CHECKPOINT_PAGES);
            }
        }
    }
}
