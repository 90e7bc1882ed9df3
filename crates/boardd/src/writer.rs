//! The writer thread: group commit.
//!
//! The actor does not wait for the disk while there is other work. It hands each
//! batch of changes, with the replies that must not leave before those changes are
//! durable, to this thread. While one transaction is being fsynced, further batches
//! queue up; the next transaction takes all of them at once. That is group commit:
//! one fsync acknowledges everything that arrived during the previous one.
//!
//! The commit and its fsync run in turn on this one thread. Handing the fsync to a
//! second thread, so that the next group's SQL overlaps the disk flush, was tried
//! (SQLite at `synchronous=NORMAL`, boardd calling fdatasync on the WAL itself
//! before answering): on the 2-core VM the 16-client rate fell by 6-20% in three
//! alternating pairs, because commits then start as soon as anything is queued,
//! and smaller groups meant more fsyncs for the same answers.
//!
//! Two more ways to overlap were measured on 2026-12-01, in alternating runs
//! against this design, and not kept. Both ran SQLite at `synchronous=NORMAL`
//! and had boardd fdatasync the WAL through a descriptor of its own, which keeps
//! what an acknowledgement promises.
//! - A pool of writer threads, each syncing its own group, so that several syncs
//!   are in flight (the kernel folds concurrent fdatasyncs of one file into
//!   shared flushes: four loops reach about 3x one loop's rate). Groups shrank to
//!   4.0-4.5 answers per fsync, and 16 clients fell to 10.6k cycles/s with four
//!   threads (13.9k for this design in the paired run) and 11.5k with two
//!   (13.4k): boardd was CPU-bound, and more, smaller transactions cost more CPU
//!   per answer.
//! - The actor applying each batch to an open transaction while a syncer thread
//!   synced the previous group, then committed what was open. The cycle shrank
//!   from about 280 to 220 µs, but fewer clients made each commit (6.0 against
//!   7.3 answers per fsync) and the 16-client rate stayed level (12.8k / 13.9k
//!   against 13.4k / 13.2k).
//!
//! A trap for whoever tries again: do not `stat` the WAL (`std::fs::metadata`)
//! between commits. With multigrain timestamps (the development VM runs Linux
//! 6.18) a file whose timestamps were read gets a fine-grained mtime at its next
//! write, so each fdatasync then writes the inode block too. An identity check
//! after every sync that did so showed as twice the metadata writes in a block
//! trace and cost one client about a fifth of its rate; asking `statx` for
//! `STATX_INO` alone, which does not read the timestamps, removed the loss.
//!
//! The one exception is a daemon at rest: a lone job after a quiet millisecond is
//! committed on the actor's own thread (see [`INLINE_AFTER_REST`]).
//!
//! Reads of history also run here, after the commits queued before them, so they
//! see every change that was acknowledged before they were asked.
//!
//! So do WAL checkpoints, once no job has come for [`CHECKPOINT_QUIET`] (see
//! [`crate::store::CHECKPOINT_PAGES`]).

use crate::outbox::Outbox;
use crate::reply::Reply;
use crate::store::{CHECKPOINT_PAGES, CHECKPOINT_PAGES_MAX, HistoryQuery, Store};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc as std_mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use teamboard_board::Changes;
use teamboard_protocol::{CommitStats, ErrorBody, ErrorCode, Event, Task, TaskDetail};
use tokio_util::sync::CancellationToken;

/// How long the actor must have handed over nothing before a job is committed on
/// its own thread instead of the writer thread.
///
/// The writer thread lets the actor go on with the next commands while an fsync
/// runs, which is what group commit under load needs. A request that finds boardd
/// at rest has nothing to overlap with: the typical case is a task added while
/// teammates sit parked in `wait_for_work`. Handing its job over would only add two
/// wake-ups of sleeping threads (the writer's and, after the commit, the runtime's)
/// to the one fsync the waiter is waiting for, and on a virtual machine each costs
/// 50-300 µs, more at the tail. Committing inline then halves the overhead around
/// the fsync (`cargo xtask bench`, wake-up phase). Under a stream of requests,
/// even from one client (a round trip every ~0.3 ms), jobs keep going to the
/// thread: committing inline there blocks the actor and cost the 16-client phase
/// about a fifth of its throughput. One millisecond is far above those gaps and
/// far below the seconds an idle teammate waits. An inline commit blocks the
/// actor's runtime worker for one fsync; the other worker goes on reading
/// connections, and their commands are handled once it returns. Its answers are
/// written from the same thread, for the same reason (see `outbox`).
const INLINE_AFTER_REST: Duration = Duration::from_millis(1);

/// How long the writer waits without a job before it runs a due WAL checkpoint.
/// A checkpoint takes 1.5-10 ms on the development VM (every page written back,
/// then an fdatasync of the database file), and a request arriving meanwhile
/// waits for it, so it goes where the daemon is most likely to stay quiet a
/// little longer.
const CHECKPOINT_QUIET: Duration = Duration::from_millis(1);

/// How the writer groups transactions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CommitMode {
    /// Everything queued during one fsync goes into the next transaction.
    #[default]
    Group,
    /// One transaction per request: the baseline the benchmark compares against.
    PerRequest,
}

/// A reply or event to send once the batch it belongs to is durable.
#[derive(Debug)]
pub enum Delivery {
    Reply {
        to: Outbox,
        id: u64,
        result: Result<Reply, ErrorBody>,
    },
    Event {
        to: Outbox,
        event: Arc<Event>,
    },
}

/// A read that needs the store.
#[derive(Debug)]
pub enum Query {
    /// `get_task`: the task as the actor saw it, plus its history.
    Task { task: Task, team: String },
    /// `events`.
    Events(HistoryQuery),
}

/// One unit of work for the writer.
#[derive(Debug, Default)]
pub struct Job {
    pub changes: Changes,
    pub deliveries: Vec<Delivery>,
    pub queries: Vec<(Outbox, u64, Query)>,
}

/// The handle the actor sends jobs through.
pub struct Writer {
    inner: Inner,
    /// Shared with whichever thread commits, so that `status` reads them without
    /// waiting for a commit to finish.
    counters: Arc<Counters>,
}

/// What [`CommitStats`] reports, counted as each transaction commits.
#[derive(Debug, Default)]
struct Counters {
    transactions: AtomicU64,
    requests: AtomicU64,
}

enum Inner {
    Thread {
        tx: std_mpsc::Sender<Job>,
        thread: Option<std::thread::JoinHandle<()>>,
        /// Jobs handed to the thread and not yet answered.
        queued: Arc<AtomicUsize>,
        /// The store, shared with the thread so that a quiet daemon can commit
        /// without waking it (see [`Writer::submit`]).
        shared: Arc<Mutex<Shared>>,
        fatal: CancellationToken,
        /// When the actor last handed over a job, to tell a daemon at rest from
        /// one under a stream of requests.
        last_submit: Instant,
    },
    /// Commits on the caller's thread. Used under tokio's paused clock, where a
    /// commit on another thread looks like an idle runtime and lets the clock jump.
    Inline {
        shared: Box<Shared>,
        fatal: CancellationToken,
    },
}

/// The store and whether a write to it has failed.
struct Shared {
    store: Store,
    failed: Option<String>,
    /// WAL pages at which the next checkpoint is due. Raised past the current size
    /// when a checkpoint fails, so that a failing one is retried every
    /// [`CHECKPOINT_PAGES`] rather than after every commit.
    checkpoint_at: u32,
    counters: Arc<Counters>,
}

impl Shared {
    fn new(store: Store, counters: Arc<Counters>) -> Shared {
        Shared {
            store,
            failed: None,
            checkpoint_at: CHECKPOINT_PAGES,
            counters,
        }
    }

    fn checkpoint_due(&self) -> bool {
        self.failed.is_none() && self.store.wal_pages() >= self.checkpoint_at
    }

    /// Whether the WAL is so large that the checkpoint may not wait for a quiet
    /// moment any longer.
    fn checkpoint_overdue(&self) -> bool {
        self.checkpoint_due() && self.store.wal_pages() >= CHECKPOINT_PAGES_MAX
    }

    fn checkpoint(&mut self) {
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

    /// Commits a group of jobs in one transaction; false if it (or an earlier
    /// one) failed.
    fn commit_group(&mut self, group: &[Job], fatal: &CancellationToken) -> bool {
        if self.failed.is_some() {
            return false;
        }
        if group.iter().all(|j| j.changes.is_empty()) {
            return true;
        }
        // A job holds every command of one actor batch; each of its answers waited
        // for this fsync, reads included.
        let requests: usize = group
            .iter()
            .flat_map(|j| &j.deliveries)
            .filter(|d| matches!(d, Delivery::Reply { .. }))
            .count();
        let changes = group.iter().map(|j| &j.changes).filter(|c| !c.is_empty());
        match self.store.commit(changes) {
            Ok(()) => {
                let c = &self.counters;
                c.transactions.fetch_add(1, Ordering::Relaxed);
                c.requests.fetch_add(requests as u64, Ordering::Relaxed);
                true
            }
            Err(e) => {
                tracing::error!(error = %e, "commit failed; boardd stops so that nothing unpersisted is acknowledged");
                self.failed = Some(e.to_string());
                fatal.cancel();
                false
            }
        }
    }

    /// Commits one job on the calling thread and sends its answers.
    fn commit_here(&mut self, job: Job, fatal: &CancellationToken) {
        let ok = self.commit_group(std::slice::from_ref(&job), fatal);
        deliver(&self.store, job, self.failed.as_deref(), ok, Answer::Now);
    }
}

impl Writer {
    /// Starts the writer thread. On a storage failure it answers the affected
    /// requests with `storage` errors and cancels `fatal`: boardd stops rather than
    /// acknowledge anything it could not persist, and recovers from disk on restart.
    pub fn spawn(
        store: Store,
        mode: CommitMode,
        fatal: CancellationToken,
    ) -> std::io::Result<Writer> {
        let (tx, rx) = std_mpsc::channel::<Job>();
        let queued = Arc::new(AtomicUsize::new(0));
        let counters = Arc::new(Counters::default());
        let shared = Arc::new(Mutex::new(Shared::new(store, counters.clone())));
        let thread_queued = queued.clone();
        let thread_shared = shared.clone();
        let thread = std::thread::Builder::new()
            .name("boardd-writer".into())
            .spawn({
                let fatal = fatal.clone();
                move || run(thread_shared, mode, rx, fatal, thread_queued)
            })?;
        Ok(Writer {
            inner: Inner::Thread {
                tx,
                thread: Some(thread),
                queued,
                shared,
                fatal,
                last_submit: Instant::now(),
            },
            counters,
        })
    }

    /// A writer that commits synchronously inside [`Writer::submit`].
    pub fn inline(store: Store, fatal: CancellationToken) -> Writer {
        let counters = Arc::new(Counters::default());
        Writer {
            inner: Inner::Inline {
                shared: Box::new(Shared::new(store, counters.clone())),
                fatal,
            },
            counters,
        }
    }

    /// Transactions committed so far, and the answers that waited for them.
    pub fn stats(&self) -> CommitStats {
        CommitStats {
            transactions: self.counters.transactions.load(Ordering::Relaxed),
            requests: self.counters.requests.load(Ordering::Relaxed),
        }
    }

    /// Queues a job. `quiet` says that no other command is waiting for the actor.
    pub fn submit(&mut self, job: Job, quiet: bool) {
        match &mut self.inner {
            Inner::Thread {
                tx,
                queued,
                shared,
                fatal,
                last_submit,
                ..
            } => {
                let now = Instant::now();
                let rested = now.duration_since(*last_submit) >= INLINE_AFTER_REST;
                *last_submit = now;
                let idle = queued.load(Ordering::Acquire) == 0;
                // A job that writes nothing, behind no unanswered job, observed only
                // durable state: it can be answered now, without a trip through
                // the writer thread (a third of a `status` round trip).
                let read_only = job.changes.is_empty() && job.queries.is_empty();
                if read_only && idle {
                    answer_now(job);
                    return;
                }
                // A daemon at rest commits right here; see INLINE_AFTER_REST.
                // `idle` means every earlier job is answered, so order is kept and
                // the lock is uncontended. History reads stay on the thread: a
                // large one would hold up the actor, and nobody is parked on it.
                let job = if quiet
                    && rested
                    && idle
                    && job.queries.is_empty()
                    && let Ok(mut guard) = shared.try_lock()
                {
                    guard.commit_here(job, fatal);
                    if !guard.checkpoint_due() {
                        return;
                    }
                    // The checkpoint is the writer thread's: here it would hold
                    // up the runtime worker that has the answers just queued.
                    // An empty job wakes the thread, which checkpoints once boardd
                    // has been quiet for CHECKPOINT_QUIET.
                    Job::default()
                } else {
                    job
                };
                queued.fetch_add(1, Ordering::AcqRel);
                if let Err(std_mpsc::SendError(job)) = tx.send(job) {
                    // The thread is gone, which only happens after a fatal error.
                    for d in job.deliveries {
                        if let Delivery::Reply { to, id, .. } = d {
                            to.respond(id, Err(storage_error(None)));
                        }
                    }
                }
            }
            Inner::Inline { shared, fatal } => {
                shared.commit_here(job, fatal);
                if shared.checkpoint_due() {
                    shared.checkpoint();
                }
            }
        }
    }

    /// Pages in the WAL now.
    #[cfg(test)]
    pub fn wal_pages(&self) -> u32 {
        match &self.inner {
            Inner::Thread { shared, .. } => shared
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .store
                .wal_pages(),
            Inner::Inline { shared, .. } => shared.store.wal_pages(),
        }
    }

    /// Waits until every queued job is written and answered.
    pub fn finish(self) {
        if let Inner::Thread { tx, thread, .. } = self.inner {
            drop(tx);
            if let Some(t) = thread {
                let _ = t.join();
            }
        }
    }
}

fn run(
    shared: Arc<Mutex<Shared>>,
    mode: CommitMode,
    rx: std_mpsc::Receiver<Job>,
    fatal: CancellationToken,
    queued: Arc<AtomicUsize>,
) {
    // Set while a checkpoint is due: the thread then waits for CHECKPOINT_QUIET
    // without a job before it runs the checkpoint, so that the checkpoint does not
    // compete with the answers just sent, nor delay a request that follows them.
    let mut checkpoint_pending = false;
    loop {
        let next = if checkpoint_pending {
            rx.recv_timeout(CHECKPOINT_QUIET)
        } else {
            rx.recv()
                .map_err(|_| std_mpsc::RecvTimeoutError::Disconnected)
        };
        let first = match next {
            Ok(job) => job,
            Err(std_mpsc::RecvTimeoutError::Timeout) => {
                let mut guard = shared.lock().unwrap_or_else(|p| p.into_inner());
                if guard.checkpoint_due() {
                    guard.checkpoint();
                }
                checkpoint_pending = false;
                continue;
            }
            Err(std_mpsc::RecvTimeoutError::Disconnected) => break,
        };
        let mut group = vec![first];
        if mode == CommitMode::Group {
            while let Ok(more) = rx.try_recv() {
                group.push(more);
            }
        }
        // Poisoned only if a commit panicked; the store itself is still usable
        // and any half-done transaction was rolled back when it was dropped.
        let mut guard = shared.lock().unwrap_or_else(|p| p.into_inner());
        let state = &mut *guard;
        let ok = state.commit_group(&group, &fatal);
        for job in group {
            deliver(
                &state.store,
                job,
                state.failed.as_deref(),
                ok,
                Answer::Queued,
            );
            queued.fetch_sub(1, Ordering::AcqRel);
        }
        if state.checkpoint_overdue() {
            state.checkpoint();
        }
        checkpoint_pending = state.checkpoint_due();
    }
}

/// Sends the replies of a job that wrote nothing and queried nothing.
fn answer_now(job: Job) {
    for d in job.deliveries {
        if let Delivery::Reply { to, id, result } = d {
            to.respond_now(id, result);
        }
    }
}

/// How a committed job's replies reach their connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Answer {
    /// Written to the socket by this thread where nothing is queued before them:
    /// for a commit on the actor's thread, at rest (see `outbox`).
    Now,
    /// Through the write tasks: for the writer thread, which under load would
    /// otherwise hold up the next commit with a write per client.
    Queued,
}

fn deliver(store: &Store, job: Job, failure: Option<&str>, committed: bool, answer: Answer) {
    for d in job.deliveries {
        match d {
            Delivery::Reply { to, id, result } => {
                let result = if committed {
                    result
                } else {
                    Err(storage_error(failure))
                };
                match answer {
                    Answer::Now => to.respond_now(id, result),
                    Answer::Queued => to.respond(id, result),
                }
            }
            Delivery::Event { to, event } => {
                if committed && !to.event(event) {
                    to.close(ErrorBody::new(
                        ErrorCode::Busy,
                        "event subscriber fell too far behind; reconnect and read history with `events --since`",
                    ));
                }
            }
        }
    }
    for (to, id, query) in job.queries {
        if !committed {
            to.respond(id, Err(storage_error(failure)));
            continue;
        }
        let result = match query {
            Query::Task { task, team } => store
                .history(&HistoryQuery {
                    team,
                    since: None,
                    task: Some(task.id),
                    limit: u64::MAX,
                })
                .map(|history| Reply::Detail(Box::new(TaskDetail { task, history }))),
            Query::Events(q) => store.history(&q).map(Reply::Events),
        };
        to.respond(
            id,
            result.map_err(|e| ErrorBody::new(ErrorCode::Storage, e.to_string())),
        );
    }
}

fn storage_error(failure: Option<&str>) -> ErrorBody {
    ErrorBody::new(
        ErrorCode::Storage,
        format!(
            "boardd could not persist this change and is stopping; nothing was acknowledged. Cause: {}",
            failure.unwrap_or("an earlier write failed")
        ),
    )
}
