//! The writer: persists each actor batch and then sends what it owes its clients.
//!
//! - [`Writer`] (this file) is the actor's handle. It decides where each job goes
//!   ([`route`]) and takes it there.
//! - [`thread`] is the writer thread's loop: group commit.
//! - [`commit`] commits a group in one transaction, and decides when to checkpoint.
//! - [`send`] sends replies, events and the replies to reads once their commit is durable.
//!
//! Nothing is sent before the changes it reports, or any change made before it,
//! is on disk.

mod commit;
mod route;
mod send;
mod thread;

pub use commit::Counters;
#[cfg(test)]
pub use commit::{CHECKPOINT_PAGES, CHECKPOINT_PAGES_MAX};

use crate::approx::ApproxLen;
use crate::auth::Authority;
use crate::outbox::{Charge, Outbox};
use crate::reply::Reply;
use crate::store::{HistoryQuery, Store};
use commit::Committer;
use route::{INLINE_AFTER_REST, Moment, Route};
use send::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use teamboard_board::Changes;
use teamboard_protocol::{ErrorBody, Event, Task};
use tokio_util::sync::CancellationToken;

/// How the writer groups transactions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CommitMode {
    /// Everything queued during one fsync goes into the next transaction.
    #[default]
    Group,
    /// One transaction per request: the baseline the benchmark compares against.
    PerRequest,
}

/// One actor batch: what to persist, and what may go out only once it is durable.
#[derive(Debug, Default)]
pub struct Job {
    pub changes: Changes,
    /// Replies to this batch's requests, in the order they go out.
    pub replies: Vec<ReplyTo>,
    /// Events for subscribers, and notices for claim holders; after the replies.
    pub events: Vec<EventTo>,
    /// Reads of history, answered after the commit.
    pub queries: Vec<QueryTo>,
    /// Teammates' processes to stop, once the request that decided it is durable.
    pub stops: Vec<crate::stop::StopTo>,
    /// Hellos admitted to their team, answered once it is durable: a hello may
    /// have created the team, and its welcome must not outlive a crash that
    /// forgot it.
    pub admits: Vec<AdmitTo>,
    /// Members' credentials issued by this batch's registrations.
    pub credentials: Vec<crate::store::CredentialRow>,
    /// Tokens issued and revoked by this batch's requests, in order.
    pub tokens: Vec<crate::store::TokenChange>,
}

impl Job {
    /// Whether the job has anything to persist.
    pub fn writes(&self) -> bool {
        !self.changes.is_empty() || !self.credentials.is_empty() || !self.tokens.is_empty()
    }
}

/// An admitted hello's answer, and the connection waiting to welcome it.
#[derive(Debug)]
pub struct AdmitTo {
    pub to: tokio::sync::oneshot::Sender<Result<Authority, String>>,
    pub authority: Authority,
}

impl AdmitTo {
    /// Answers the hello: welcomed with its authority, or refused with `failure`.
    pub fn answer(self, failure: Option<String>) {
        let _ = self.to.send(match failure {
            None => Ok(self.authority),
            Some(why) => Err(why),
        });
    }
}

/// A reply, the connection it goes to, and its charge on that connection's
/// budget.
#[derive(Debug)]
pub struct ReplyTo {
    pub to: Outbox,
    pub id: u64,
    pub result: Result<Reply, ErrorBody>,
    pub charge: Charge,
}

/// An event, the connection it goes to, and its charge there.
#[derive(Debug)]
pub struct EventTo {
    pub to: Outbox,
    pub event: Arc<Event>,
    pub charge: Charge,
}

/// A read of history, the connection its reply goes to, and a charge for the
/// reply estimated before the read, which the read corrects.
#[derive(Debug)]
pub struct QueryTo {
    pub to: Outbox,
    pub id: u64,
    pub query: Query,
    pub charge: Charge,
}

impl ReplyTo {
    /// A reply for `to`, charged on its budget.
    pub fn new(to: Outbox, id: u64, result: Result<Reply, ErrorBody>) -> ReplyTo {
        let charge = to.charge(result.approx_len());
        ReplyTo {
            to,
            id,
            result,
            charge,
        }
    }
}

impl EventTo {
    /// An event for `to`, charged `size` (its `approx::event_frame`, worked
    /// out once for all its subscribers) on its budget.
    pub fn new(to: Outbox, event: Arc<Event>, size: usize) -> EventTo {
        let charge = to.charge(size);
        EventTo { to, event, charge }
    }
}

impl QueryTo {
    /// A read for `to`, its reply charged on its budget at [`Query::estimate`].
    pub fn new(to: Outbox, id: u64, query: Query) -> QueryTo {
        let charge = to.charge(query.estimate());
        QueryTo {
            to,
            id,
            query,
            charge,
        }
    }
}

/// A read that needs the store.
#[derive(Debug)]
pub enum Query {
    /// `get_task`: the task and its plan requests as the actor saw them, plus its
    /// history.
    Task {
        task: Box<Task>,
        plans: Vec<teamboard_protocol::TeamRequest>,
        team: String,
    },
    /// `events`.
    Events(HistoryQuery),
}

impl Query {
    /// The size of the reply, guessed on the high side before the read: the
    /// writer corrects it once the reply exists, and until then a connection
    /// that asks for much history cannot ask for more.
    pub fn estimate(&self) -> usize {
        /// An event in a reply, generously: most are 200 to 300 bytes.
        const EVENT: usize = 512;
        /// A task's history, generously: a task has a few dozen events.
        const HISTORY: usize = 16 << 10;
        match self {
            Query::Task { task, plans, .. } => {
                let plans: usize = plans
                    .iter()
                    .map(|p| p.plan.as_ref().map_or(0, String::len) + 512)
                    .sum();
                task.approx_len() + HISTORY + plans
            }
            Query::Events(q) => {
                let limit = usize::try_from(q.limit).unwrap_or(usize::MAX);
                limit.saturating_mul(EVENT)
            }
        }
    }
}

/// The actor's handle on the writer.
pub struct Writer {
    inner: Inner,
    /// Shared with whichever thread commits.
    counters: Arc<Counters>,
}

enum Inner {
    Thread {
        tx: Option<Sender<Job>>,
        thread: Option<std::thread::JoinHandle<()>>,
        /// Jobs handed to the thread and not yet answered.
        queued: Arc<AtomicUsize>,
        /// Shared with the thread, so that a job at rest can be committed here
        /// without waking it.
        committer: Arc<Mutex<Committer>>,
        /// When the actor last handed over a job.
        last_submit: Instant,
    },
    /// Commits on the caller's thread. For tests under tokio's paused clock, where
    /// a commit on another thread looks like an idle runtime and lets the clock
    /// jump.
    Inline { committer: Box<Committer> },
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
        let (tx, rx) = mpsc::channel::<Job>();
        let queued = Arc::new(AtomicUsize::new(0));
        let counters = Arc::new(Counters::default());
        let committer = Arc::new(Mutex::new(Committer::new(store, counters.clone(), fatal)));
        let thread = std::thread::Builder::new()
            .name("boardd-writer".into())
            .spawn({
                let committer = committer.clone();
                let queued = queued.clone();
                move || thread::run(committer, mode, rx, queued)
            })?;
        Ok(Writer {
            inner: Inner::Thread {
                tx: Some(tx),
                thread: Some(thread),
                queued,
                committer,
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
                committer: Box::new(Committer::new(store, counters.clone(), fatal)),
            },
            counters,
        }
    }

    /// The commit counters, for `status`.
    pub fn counters(&self) -> Arc<Counters> {
        self.counters.clone()
    }

    /// Takes a job where [`route::route`] says. `quiet`: no other command is
    /// waiting for the actor.
    pub fn submit(&mut self, job: Job, quiet: bool) {
        match &mut self.inner {
            Inner::Thread {
                tx,
                queued,
                committer,
                last_submit,
                ..
            } => {
                let now = Instant::now();
                let moment = Moment {
                    quiet,
                    rested: now.duration_since(*last_submit) >= INLINE_AFTER_REST,
                    idle: queued.load(Ordering::Acquire) == 0,
                    writes: job.writes(),
                    reads_store: !job.queries.is_empty(),
                };
                *last_submit = now;
                let job = match route::route(moment) {
                    Route::Now => return send_now(job),
                    // `idle` means every earlier job is answered, so order is kept
                    // and the lock is uncontended.
                    Route::Here => match committer.try_lock() {
                        Ok(mut c) => {
                            c.commit(std::slice::from_ref(&job));
                            let due = c.checkpoint_due();
                            let (store, failure) = c.parts();
                            send::send(store, job, failure, Path::Direct);
                            if !due {
                                return;
                            }
                            // The checkpoint is the writer thread's: here it would
                            // hold up the runtime worker that has the replies just
                            // queued. An empty job wakes the thread, which
                            // checkpoints once boardd has been quiet for a moment.
                            Job::default()
                        }
                        Err(_) => job,
                    },
                    Route::Thread => job,
                };
                queued.fetch_add(1, Ordering::AcqRel);
                let sent = match tx {
                    Some(tx) => tx.send(job).map_err(|e| e.0),
                    None => Err(job),
                };
                if let Err(job) = sent {
                    // The thread is gone, which only happens after a fatal error.
                    queued.fetch_sub(1, Ordering::AcqRel);
                    send::refuse(job);
                }
            }
            Inner::Inline { committer } => {
                committer.commit(std::slice::from_ref(&job));
                let (store, failure) = committer.parts();
                send::send(store, job, failure, Path::Direct);
                if committer.checkpoint_due() {
                    committer.checkpoint();
                }
            }
        }
    }

    /// Pages in the WAL now.
    #[cfg(test)]
    pub fn wal_pages(&self) -> u32 {
        match &self.inner {
            Inner::Thread { committer, .. } => thread::lock(committer).store.wal_pages(),
            Inner::Inline { committer } => committer.store.wal_pages(),
        }
    }

    /// Waits until every queued job is written and answered.
    pub fn finish(mut self) {
        if let Inner::Thread { tx, thread, .. } = &mut self.inner {
            drop(tx.take());
            if let Some(t) = thread.take() {
                let _ = t.join();
            }
        }
    }
}

/// Sends the replies of a job that wrote nothing and read nothing.
fn send_now(job: Job) {
    // `route` sends only such jobs here; an event or a read would be lost.
    debug_assert!(job.events.is_empty() && job.queries.is_empty());
    for r in job.replies {
        r.to.reply_direct(r.id, r.result, r.charge);
    }
    for a in job.admits {
        a.answer(None);
    }
}

#[cfg(test)]
mod tests;
