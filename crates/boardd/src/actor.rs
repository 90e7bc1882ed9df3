//! The single writer: one task owns the board and applies every command in order.
//!
//! Commands arrive on a channel from the connection tasks. The actor takes all that
//! are waiting, applies them to the in-memory board, serves parked waiters, and
//! hands the resulting changes and replies to the writer as one job. Under load the
//! writer thread commits, so a slow fsync delays acknowledgements but never the
//! processing of the next commands; only a daemon at rest commits on this task (see
//! `writer::INLINE_AFTER_REST`), when there is nothing else to process.

use crate::handlers;
use crate::outbox::Outbox;
use crate::reply::Reply;
use crate::writer::{CommitMode, Delivery, Job, Query, Writer};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::SystemTime;
use teamboard_board::{Board, Now, SessionId};
use teamboard_protocol::{ErrorBody, ErrorCode, Request, Work};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// A command for the actor.
#[derive(Debug)]
pub enum Cmd {
    /// A client request, with the session's identity.
    Request {
        session: SessionId,
        team: Arc<str>,
        name: Arc<str>,
        id: u64,
        request: Request,
        out: Outbox,
    },
    /// The session's connection closed.
    Disconnect { session: SessionId },
}

/// Facts about the running daemon, for `status`.
#[derive(Debug, Clone)]
pub struct DaemonInfo {
    pub started: std::time::Instant,
    pub socket: PathBuf,
    pub state_dir: PathBuf,
    /// Live connections, maintained by the listener.
    pub sessions: Arc<AtomicU64>,
}

impl DaemonInfo {
    pub fn live_sessions(&self) -> u64 {
        self.sessions.load(Ordering::Relaxed)
    }
}

/// The most commands applied before their changes are handed to the writer.
const MAX_BATCH: usize = 4096;

pub struct Actor {
    pub(crate) board: Board,
    pub(crate) writer: Writer,
    mode: CommitMode,
    pub(crate) info: DaemonInfo,
    /// Event subscribers per team.
    pub(crate) subscribers: HashMap<String, Vec<(SessionId, Outbox)>>,
    /// Parked `wait_for_work` requests by waiter token.
    pub(crate) waiters: HashMap<u64, (SessionId, Outbox, u64)>,
    pub(crate) next_token: u64,
    /// The job being assembled for the current batch.
    pub(crate) job: Job,
}

impl Actor {
    pub fn new(board: Board, writer: Writer, mode: CommitMode, info: DaemonInfo) -> Actor {
        Actor {
            board,
            writer,
            mode,
            info,
            subscribers: HashMap::new(),
            waiters: HashMap::new(),
            next_token: 1,
            job: Job::default(),
        }
    }

    /// The current time, for the board.
    pub fn now() -> Now {
        let wall_ms = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or(0);
        Now {
            mono: tokio::time::Instant::now().into_std(),
            wall_ms,
        }
    }

    /// Runs until `shutdown` is cancelled or every sender is gone, then applies
    /// what is still queued and waits for the writer to finish.
    pub async fn run(mut self, mut rx: mpsc::Receiver<Cmd>, shutdown: CancellationToken) {
        let mut buf = Vec::with_capacity(MAX_BATCH);
        loop {
            // Computed once per turn: nothing changes the board between here and
            // the branch that runs, so the expiry check below can reuse it.
            let next = self.board.next_deadline();
            let deadline = next.map(tokio::time::Instant::from_std);
            tokio::select! {
                biased;
                _ = shutdown.cancelled() => break,
                n = rx.recv_many(&mut buf, MAX_BATCH) => {
                    if n == 0 {
                        break;
                    }
                    // A lease that ran out before these commands arrived has expired
                    // for them, even if its timer has not fired yet.
                    self.expire_due(next);
                    for cmd in buf.drain(..) {
                        self.handle(cmd);
                        if self.mode == CommitMode::PerRequest {
                            self.flush(false);
                        }
                    }
                }
                _ = sleep_until(deadline) => self.expire_due(next),
            }
            self.flush(rx.is_empty());
        }
        // Finish what was already accepted; refuse what comes after.
        rx.close();
        while let Ok(cmd) = rx.try_recv() {
            self.handle(cmd);
        }
        // Through the job, not straight to the outbox, so that these answers come
        // after any earlier ones still waiting for their commit.
        let parked: Vec<_> = self.waiters.drain().collect();
        for (_, (_, out, id)) in parked {
            let error = ErrorBody::new(ErrorCode::ShuttingDown, "boardd is shutting down");
            self.reply(&out, id, Err(error));
        }
        self.flush(false);
        self.writer.finish();
    }

    /// Ends lapsed claims and answers timed-out waiters, if `next` (the board's
    /// earliest deadline) has passed.
    fn expire_due(&mut self, next: Option<std::time::Instant>) {
        let now = Self::now();
        if next.is_none_or(|d| d > now.mono) {
            return;
        }
        for token in self.board.expire(now) {
            if let Some((_, out, id)) = self.waiters.remove(&token) {
                self.reply(&out, id, Ok(Reply::Work(Box::new(Work::Timeout))));
            }
        }
    }

    fn handle(&mut self, cmd: Cmd) {
        match cmd {
            Cmd::Request {
                session,
                team,
                name,
                id,
                request,
                out,
            } => handlers::handle(self, session, &team, &name, id, request, out),
            Cmd::Disconnect { session } => {
                self.board.disconnect(session, Self::now());
                self.waiters.retain(|_, (s, _, _)| *s != session);
                for subs in self.subscribers.values_mut() {
                    subs.retain(|(s, _)| *s != session);
                }
            }
        }
    }

    /// Queues a reply to go out once the current batch is durable.
    pub(crate) fn reply(&mut self, to: &Outbox, id: u64, result: Result<Reply, ErrorBody>) {
        self.job.deliveries.push(Delivery::Reply {
            to: to.clone(),
            id,
            result,
        });
    }

    /// Queues a read that the writer answers after the current batch is durable.
    pub(crate) fn query(&mut self, to: &Outbox, id: u64, query: Query) {
        self.job.queries.push((to.clone(), id, query));
    }

    /// Serves waiters, collects the batch's changes and events, and hands the job
    /// to the writer. `quiet`: no further command is waiting.
    fn flush(&mut self, quiet: bool) {
        // Woken waiters are answered first, before the requests that woke them:
        // a parked teammate has been idle the longest and starts work on its
        // answer, while the request's sender (typically `teamctl`) only prints
        // it. Answers to different requests carry their ids, so their order on
        // the wire means nothing to clients.
        let mut woken = Vec::new();
        for (token, work) in self.board.dispatch(Self::now()) {
            if let Some((_, out, id)) = self.waiters.remove(&token) {
                woken.push(Delivery::Reply {
                    to: out,
                    id,
                    result: Ok(Reply::Work(Box::new(work))),
                });
            }
        }
        self.job.deliveries.splice(0..0, woken);
        let changes = self.board.take_changes();
        if changes.is_empty() && self.job.deliveries.is_empty() && self.job.queries.is_empty() {
            return;
        }
        for event in &changes.events {
            let Some(subs) = self.subscribers.get(&event.team) else {
                continue;
            };
            let event = Arc::new(event.clone());
            for (_, out) in subs {
                self.job.deliveries.push(Delivery::Event {
                    to: out.clone(),
                    event: event.clone(),
                });
            }
        }
        let mut job = std::mem::take(&mut self.job);
        job.changes = changes;
        self.writer.submit(job, quiet);
    }
}

async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}
