//! The writer thread: group commit.
//!
//! While one transaction is being fsynced, further jobs queue up on the channel;
//! the next transaction takes all of them at once, so one fsync acknowledges
//! everything that arrived during the previous one. Commit and fsync run in turn
//! on this one thread (`docs/design/group-commit.md` says why the designs that
//! overlap them lost). Reads of history run here too, after the commits queued
//! before them, so they see every change acknowledged before they were asked.

use super::commit::{CHECKPOINT_QUIET, Committer};
use super::send::{Path, send};
use super::{CommitMode, Job};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};

/// Runs until every sender of `rx` is gone and the queue is empty.
pub fn run(
    committer: Arc<Mutex<Committer>>,
    mode: CommitMode,
    rx: Receiver<Job>,
    queued: Arc<AtomicUsize>,
) {
    // Set while a checkpoint is due: the thread then waits for CHECKPOINT_QUIET
    // without a job before it runs the checkpoint, so that the checkpoint does not
    // compete with the replies just sent, nor delay a request that follows them.
    let mut checkpoint_pending = false;
    loop {
        let next = if checkpoint_pending {
            rx.recv_timeout(CHECKPOINT_QUIET)
        } else {
            rx.recv().map_err(|_| RecvTimeoutError::Disconnected)
        };
        let first = match next {
            Ok(job) => job,
            Err(RecvTimeoutError::Timeout) => {
                let mut c = lock(&committer);
                if c.checkpoint_due() {
                    c.checkpoint();
                }
                checkpoint_pending = false;
                continue;
            }
            Err(RecvTimeoutError::Disconnected) => break,
        };
        let mut group = vec![first];
        if mode == CommitMode::Group {
            while let Ok(more) = rx.try_recv() {
                group.push(more);
            }
        }
        let mut c = lock(&committer);
        c.commit(&group);
        for job in group {
            let (store, failure) = c.parts();
            send(store, job, failure, Path::Queued);
            queued.fetch_sub(1, Ordering::AcqRel);
        }
        if c.checkpoint_overdue() {
            c.checkpoint();
        }
        checkpoint_pending = c.checkpoint_due();
    }
}

/// Poisoned only if a commit panicked; the store itself is still usable and any
/// half-done transaction was rolled back when it was dropped.
pub fn lock(committer: &Mutex<Committer>) -> std::sync::MutexGuard<'_, Committer> {
    committer.lock().unwrap_or_else(|p| p.into_inner())
}
