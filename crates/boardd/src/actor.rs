//! The single writer: one task owns the board and applies every command in order.
//!
//! Connections send commands on a channel. The actor takes all that are waiting,
//! has a handler apply each request to the board, and turns what the handler
//! decided (an [`Outcome`]) into bookkeeping: the reply or read queued on the
//! batch's job (charged on the connection's memory budget, see `outbox`), a
//! waiter left parked in the board, a subscription. A request from a connection
//! past its budget is answered `busy` and not handed to a handler. After the batch
//! it serves the waiters the batch woke, collects the board's changes, events and
//! notices, and hands everything to the writer as one job. Handlers never touch
//! the actor; the actor alone decides where things go.

use crate::auth::{Authority, Keys};
use crate::handlers::repo_done::{self, Effect, Held};
use crate::handlers::{self, Outcome};
use crate::info::DaemonInfo;
use crate::leads::LeadSeats;
use crate::outbox::Outbox;
use crate::procs::{Exited, Procs};
use crate::reply::Reply;
use crate::repo::{Done, Job, Repos};
use crate::writer::{AdmitTo, CommitMode, EventTo, Job as WriterJob, QueryTo, ReplyTo, Writer};
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::SystemTime;
use teamboard_board::{Board, Ctx, Now, SessionId, Waiting};
use teamboard_protocol::{Credential, ErrorBody, ErrorCode, Event, Request, Work};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

mod credentials;

/// A command for the actor. A connection sends `Admit` and `Open` once, then
/// its requests, then `Close`.
#[derive(Debug)]
pub enum Cmd {
    /// A hello names `team` and `name`: who vouches for the name (see
    /// `auth`), and may the session work in the team? `new_team` is the
    /// hello's (see `Board::admit`); a session nobody vouches for creates no
    /// team. The answer is the session's authority, or the refusal in words.
    /// A `network` session (TCP) that nobody vouches for is refused here: on
    /// the socket only the user's own processes connect, but anyone who can
    /// reach the port could otherwise hold sessions open up to the limit.
    Admit {
        team: Arc<str>,
        name: Arc<str>,
        credential: Option<Credential>,
        new_team: Option<bool>,
        network: bool,
        reply: tokio::sync::oneshot::Sender<Result<Authority, String>>,
    },
    /// A session said hello: who it is and where its frames go.
    Open {
        session: SessionId,
        /// The peer's pid as the kernel reported it, if it did.
        pid: Option<u32>,
        team: Arc<str>,
        name: Arc<str>,
        /// What its hello proved, as `Admit` answered.
        authority: Authority,
        out: Outbox,
    },
    /// A request of an open session.
    Request {
        session: SessionId,
        id: u64,
        request: Request,
    },
    /// The session's connection closed.
    Close { session: SessionId },
}

/// An open session: who it is and where its frames go.
struct Session {
    pid: Option<u32>,
    team: Arc<str>,
    name: Arc<str>,
    authority: Authority,
    out: Outbox,
}

/// The most commands applied before their changes are handed to the writer.
const MAX_BATCH: usize = 4096;

pub struct Actor {
    board: Board,
    writer: Writer,
    mode: CommitMode,
    info: DaemonInfo,
    /// Open sessions by id.
    sessions: HashMap<SessionId, Session>,
    /// Subscribed sessions per team.
    subscribers: HashMap<Arc<str>, BTreeSet<SessionId>>,
    /// The job being assembled for the current batch.
    job: WriterJob,
    /// The repository workers: git runs there, never here.
    repos: Repos,
    /// Their reports; taken by `run`.
    repo_done: Option<mpsc::UnboundedReceiver<Done>>,
    /// Owners' `complete_task`s waiting for their tasks to land.
    held: Held,
    /// Each team's connected LLM lead.
    leads: LeadSeats,
    /// Members' processes, watched for their exit.
    procs: Procs,
    /// Their reports; taken by `run`.
    exited: Option<mpsc::UnboundedReceiver<Exited>>,
    /// The credentials that vouch for sessions' names.
    keys: Keys,
}

impl Actor {
    pub fn new(
        board: Board,
        writer: Writer,
        mode: CommitMode,
        info: DaemonInfo,
        keys: Keys,
    ) -> Actor {
        let private = teamboard_sandbox::private_paths([info.state_dir.as_path()], &info.socket);
        let (repos, repo_done) = Repos::new(private);
        let (procs, exited) = Procs::new();
        Actor {
            board,
            writer,
            mode,
            info,
            sessions: HashMap::new(),
            subscribers: HashMap::new(),
            job: WriterJob::default(),
            repos,
            repo_done: Some(repo_done),
            held: Held::default(),
            leads: LeadSeats::default(),
            procs,
            exited: Some(exited),
            keys,
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
        let mut repo_done = self
            .repo_done
            .take()
            .unwrap_or_else(|| mpsc::unbounded_channel().1);
        let mut exited = self
            .exited
            .take()
            .unwrap_or_else(|| mpsc::unbounded_channel().1);
        // Tasks that were waiting in a merge queue when boardd stopped land
        // first, in the order they joined it.
        for job in self.board.queued_jobs() {
            self.repos.submit(Job::Land { job });
        }
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
                _ = sleep_until(self.repos.recheck_due()) => {
                    self.repos.rechecked();
                    for job in self.board.blocked_jobs() {
                        self.repos.recheck(job);
                    }
                }
                Some(done) = repo_done.recv() => self.repo_done(done),
                Some(gone) = exited.recv() => {
                    self.board.process_exited(&gone.team, &gone.name, gone.session, gone.exit);
                }
            }
            self.flush(rx.is_empty());
        }
        // Finish what was already accepted; refuse what comes after.
        rx.close();
        while let Ok(cmd) = rx.try_recv() {
            self.handle(cmd);
        }
        // Through the job, not straight to the outbox, so that these replies come
        // after any earlier ones still waiting for their commit.
        for waiting in self.board.drain_waiters() {
            let error = ErrorBody::new(ErrorCode::ShuttingDown, "boardd is shutting down");
            self.reply(waiting, Err(error));
        }
        self.flush(false);
        self.repos.shutdown();
        self.writer.finish();
    }

    /// Applies a repository worker's report and carries out what follows.
    fn repo_done(&mut self, done: Done) {
        let sessions = &self.sessions;
        let alive = |s: SessionId| sessions.contains_key(&s);
        self.repos.reported(&done);
        let effects = repo_done::apply(&mut self.board, &mut self.held, done, &alive, Self::now());
        for effect in effects {
            self.effect(effect);
        }
    }

    fn effect(&mut self, effect: Effect) {
        match effect {
            Effect::Reply(slot, result) => {
                let waiting = Waiting {
                    session: slot.session,
                    request: slot.request,
                };
                self.reply(waiting, result);
            }
            Effect::Submit(job) => self.repos.submit(*job),
            Effect::Recheck => self.repos.arm_recheck(),
        }
    }

    /// Ends lapsed claims and answers timed-out waiters, if `next` (the board's
    /// earliest deadline) has passed.
    fn expire_due(&mut self, next: Option<std::time::Instant>) {
        let now = Self::now();
        if next.is_none_or(|d| d > now.mono) {
            return;
        }
        for waiting in self.board.expire(now) {
            self.reply(waiting, Ok(Reply::Work(Box::new(Work::Timeout))));
        }
    }

    fn handle(&mut self, cmd: Cmd) {
        match cmd {
            // Answered with the batch, once it is durable: a team created
            // here is in it, and a welcome must not outlive a crash that
            // forgot the team.
            Cmd::Admit {
                team,
                name,
                credential,
                new_team,
                network,
                reply,
            } => {
                let authority = self.keys.authority(&team, &name, credential.as_ref());
                // On the socket, welcomed, to hear why each of its requests is
                // refused; but it changes nothing, not even by creating a team.
                if let Authority::Nobody { .. } = authority {
                    let answer = match self.keys.check(&authority, &team, &name) {
                        Err(refused) if network => Err(refused.message),
                        _ => Ok(authority),
                    };
                    let _ = reply.send(answer);
                    return;
                }
                match self.board.admit(&team, new_team) {
                    Ok(()) => self.job.admits.push(AdmitTo {
                        to: reply,
                        authority,
                    }),
                    Err(refused) => {
                        let _ = reply.send(Err(refused));
                    }
                }
            }
            Cmd::Open {
                session,
                pid,
                team,
                name,
                authority,
                out,
            } => {
                self.sessions.insert(
                    session,
                    Session {
                        pid,
                        team,
                        name,
                        authority,
                        out,
                    },
                );
            }
            Cmd::Request {
                session,
                id,
                request,
            } => self.request(session, id, request),
            Cmd::Close { session } => {
                if let Some(s) = self.sessions.get(&session) {
                    self.leads.closed(&s.team, session);
                }
                if let Some(s) = self.sessions.remove(&session)
                    && let Some(subs) = self.subscribers.get_mut(&s.team)
                {
                    subs.remove(&session);
                    if subs.is_empty() {
                        self.subscribers.remove(&s.team);
                    }
                }
                self.board.disconnect(session, Self::now());
            }
        }
    }

    /// Has the request's handler apply it, then carries out what it decided.
    fn request(&mut self, session: SessionId, id: u64, request: Request) {
        let Some(s) = self.sessions.get(&session) else {
            // Only a bug could send a request for a session that never opened:
            // there is no connection to answer on.
            tracing::error!(session, id, "request from a session that is not open");
            return;
        };
        let (team, name, out, pid) = (s.team.clone(), s.name.clone(), s.out.clone(), s.pid);
        let by_lead = s.authority == Authority::Lead;
        let registers = matches!(request, Request::Register(_));
        // Checked before anything is done: a reply once made is always sent, so
        // this is where the memory a client that does not read can take stops.
        if let Some(over) = out.over_budget() {
            tracing::debug!(session, id, over = over.describe(), "request refused: busy");
            let result = Err(over.refusal());
            self.job.replies.push(ReplyTo::new(out, id, result));
            return;
        }
        if let Err(denied) = self.keys.check(&s.authority, &team, &name) {
            tracing::debug!(
                session,
                id,
                op = request.op(),
                "request refused: no credential"
            );
            self.job.replies.push(ReplyTo::new(out, id, Err(denied)));
            return;
        }
        let ctx = Ctx {
            team: &team,
            actor: &name,
            session,
            now: Self::now(),
        };
        match handlers::handle(&mut self.board, &self.info, ctx, id, request) {
            Outcome::Reply(mut result) => {
                if registers && result.is_ok() {
                    if by_lead {
                        result = result.and_then(|r| self.issue(&team, &name, r));
                        self.unsubscribe_unvouched();
                    }
                    if let Some(pid) = pid {
                        self.procs.watch(team, name, session, pid);
                    }
                }
                self.job.replies.push(ReplyTo::new(out, id, result));
            }
            Outcome::Query(query) => self.job.queries.push(QueryTo::new(out, id, query)),
            Outcome::Parked => {}
            Outcome::Repo(job) => self.repos.submit(*job),
            Outcome::ReplyAndRun(result, job) => {
                self.job.replies.push(ReplyTo::new(out, id, result));
                self.repos.submit(*job);
            }
            Outcome::Land {
                slot,
                task,
                epoch,
                gate,
            } => {
                if let Some(effect) = self.held.hold(slot, task, epoch) {
                    self.effect(effect);
                }
                if let Some(job) = gate {
                    self.repos.submit(*job);
                }
            }
            Outcome::TakeLead => {
                let pid = self.sessions.get(&session).and_then(|s| s.pid);
                let result = self
                    .leads
                    .take(&team, session, pid, Self::now().wall_ms)
                    .map(|()| Reply::Done(crate::reply::Empty {}));
                self.job.replies.push(ReplyTo::new(out, id, result));
            }
            Outcome::Token(op) => {
                // A token, or a member credential, vouches for `lead` in its own
                // team only: another team's tokens take the lead's own key, or
                // a lead token of that team could mint itself every team.
                let result = if !by_lead && op.team() != &*team {
                    let why = format!(
                        "a token for the lead of '{team}' cannot touch the tokens of team '{}'; use that team's lead token or the lead's key",
                        op.team()
                    );
                    Err(ErrorBody::new(ErrorCode::PermissionDenied, why))
                } else {
                    self.token(op)
                };
                self.unsubscribe_unvouched();
                self.job.replies.push(ReplyTo::new(out, id, result));
            }
            Outcome::Subscribe => {
                // A set: subscribing twice on one connection must not double
                // every event.
                self.subscribers.entry(team).or_default().insert(session);
                let result = Ok(Reply::Done(crate::reply::Empty {}));
                self.job.replies.push(ReplyTo::new(out, id, result));
            }
        }
    }

    /// Queues a reply to a parked waiter, if its session is still open.
    fn reply(&mut self, waiting: Waiting, result: Result<Reply, ErrorBody>) {
        if let Some(s) = self.sessions.get(&waiting.session) {
            let reply = ReplyTo::new(s.out.clone(), waiting.request, result);
            self.job.replies.push(reply);
        }
    }

    /// Serves waiters, collects the batch's changes, events and notices, and hands
    /// the job to the writer. `quiet`: no further command is waiting.
    fn flush(&mut self, quiet: bool) {
        // Woken waiters are answered first, before the requests that woke them:
        // a parked teammate has been idle the longest and starts work on its
        // reply, while the request's sender (typically `teamctl`) only prints
        // it. Replies to different requests carry their ids, so their order on
        // the wire means nothing to clients.
        let handed = self.board.dispatch(Self::now());
        let mut woken = Vec::with_capacity(handed.len());
        for (waiting, work) in handed {
            if let Some(s) = self.sessions.get(&waiting.session) {
                let result = Ok(Reply::Work(Box::new(work)));
                woken.push(ReplyTo::new(s.out.clone(), waiting.request, result));
            }
        }
        // Reservations that waited for an account's capacity, or whose
        // budget's window rolled: after the requests of the batch, which may
        // have ended calls or raised a limit.
        self.board.serve_calls(Self::now());
        for (waiting, result) in self.board.take_call_answers() {
            if let Some(s) = self.sessions.get(&waiting.session) {
                let result = result.map(Reply::from).map_err(Into::into);
                woken.push(ReplyTo::new(s.out.clone(), waiting.request, result));
            }
        }
        self.job.replies.splice(0..0, woken);
        // Landings whose claims ended: their checks stop, and owners waiting in
        // the merge queue hear why.
        for dropped in self.board.take_dropped() {
            self.repos
                .interrupt(&dropped.team, dropped.task, dropped.epoch);
            if let Some(effect) = self.held.dropped(&dropped) {
                self.effect(effect);
            }
        }
        // Last, so that it sees every fact of the batch.
        self.board.settle_liveness(Self::now());
        let changes = self.board.take_changes();
        let notices = self.board.take_notices();
        let stops = self.board.take_stops();
        if changes.is_empty()
            && self.job.replies.is_empty()
            && self.job.queries.is_empty()
            && self.job.admits.is_empty()
        {
            return;
        }
        for event in &changes.events {
            let Some(subs) = self.subscribers.get(event.team.as_str()) else {
                continue;
            };
            let event = sized(event.clone());
            for session in subs {
                queue_event(&self.sessions, &mut self.job.events, *session, &event);
            }
        }
        for notice in notices {
            let subscribed = self
                .subscribers
                .get(notice.event.team.as_str())
                .is_some_and(|subs| subs.contains(&notice.session));
            if !subscribed {
                let event = sized(notice.event);
                queue_event(&self.sessions, &mut self.job.events, notice.session, &event);
            }
        }
        for stop in stops {
            let pid = self.sessions.get(&stop.session).and_then(|s| s.pid);
            self.job.stops.push(crate::stop::StopTo::new(stop, pid));
        }
        let mut job = std::mem::take(&mut self.job);
        job.changes = changes;
        self.writer.submit(job, quiet);
    }
}

/// An event to share among its connections, with its estimated frame size.
fn sized(event: Event) -> (Arc<Event>, usize) {
    let size = crate::approx::event_frame(&event);
    (Arc::new(event), size)
}

/// Queues an event for a session, if it is still open.
fn queue_event(
    sessions: &HashMap<SessionId, Session>,
    events: &mut Vec<EventTo>,
    session: SessionId,
    event: &(Arc<Event>, usize),
) {
    if let Some(s) = sessions.get(&session) {
        events.push(EventTo::new(s.out.clone(), event.0.clone(), event.1));
    }
}

async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}
