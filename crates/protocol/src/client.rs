//! An async client for boardd.
//!
//! One [`Client`] is one connection and one session. Requests may be issued
//! concurrently from several tasks (`&self`); a background task routes each response
//! to its caller by request id and pushed events to [`Client::next_event`].

use crate::PROTOCOL_VERSION;
use crate::codec::response_codec;
use crate::endpoint::{self, Endpoint, Stream};
use crate::error::{ErrorBody, ErrorCode};
use crate::frame::{ClientFrame, Credential, Hello, ServerFrame, Welcome};
use crate::ids::{RequestId, TaskId};
use crate::request::*;
use crate::task_status::TaskStatus;
use crate::team_request::TeamRequest;
use crate::types::*;
use crate::worktree::*;
use bytes::Bytes;
use futures_util::SinkExt;
use futures_util::stream::{SplitSink, StreamExt};
use serde::de::DeserializeOwned;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::{mpsc, oneshot};
use tokio_util::codec::{Framed, LengthDelimitedCodec};

/// What can go wrong when talking to boardd.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("boardd is not running (nothing listens on {path}). {}", start_hint(.path))]
    NotRunning { path: PathBuf },
    /// The path exists but is a file or directory: no boardd will ever listen
    /// there, so waiting or retrying cannot help.
    #[error(
        "{path} is not a socket, so no boardd listens there; check --socket or \
         TEAMBOARD_SOCKET (boardd's default is {})",
        crate::paths::default_socket_path().display()
    )]
    NotASocket { path: PathBuf },
    #[error("cannot connect to boardd at {path}: {source}")]
    Connect {
        path: PathBuf,
        source: std::io::Error,
    },
    // `error`, not `source`: the message already says it, and a source
    // would be said twice by a chain printer (`{:#}`).
    #[error("cannot reach boardd at {server}: {error}")]
    Unreachable {
        server: String,
        error: std::io::Error,
    },
    #[error(
        "TLS with boardd at {server} failed: {error}. Its certificate must be for '{host}' and \
         signed by {trusted}"
    )]
    Tls {
        server: String,
        host: String,
        trusted: String,
        error: std::io::Error,
    },
    #[error(transparent)]
    TlsSetup(crate::tls::TlsError),
    #[error("boardd refused the connection: {0}")]
    Rejected(String),
    #[error("{0}")]
    Server(ErrorBody),
    #[error("the connection to boardd closed{0}")]
    Closed(String),
    #[error("unexpected answer from boardd: {0}")]
    Protocol(String),
}

/// How to start a boardd that listens on `path`: the user unit serves the default
/// socket only.
fn start_hint(path: &Path) -> String {
    if path == crate::paths::default_socket_path() {
        "Start it with `systemctl --user start boardd`, or run `boardd` in another terminal"
            .to_string()
    } else {
        format!(
            "Start one there with `boardd --socket {}` in another terminal",
            path.display()
        )
    }
}

impl ClientError {
    /// The server's error code, when the server answered with an error.
    pub fn code(&self) -> Option<ErrorCode> {
        match self {
            ClientError::Server(body) => Some(body.code),
            _ => None,
        }
    }
}

type Pending = Arc<Mutex<HashMap<u64, oneshot::Sender<Result<serde_json::Value, ClientError>>>>>;
type Sink = SplitSink<Framed<Stream, LengthDelimitedCodec>, Bytes>;

/// How long each of a list of endpoints has to open a session before the
/// next is tried: a host that is cut off answers nothing, and TCP alone would
/// wait minutes.
pub const ATTEMPT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(3);

/// Whether another boardd of the same board might let in a client that `e`
/// kept out: any failure but a refusal every one of them would give.
fn worth_another(e: &ClientError) -> bool {
    match e {
        ClientError::Rejected(_) | ClientError::Protocol(_) => false,
        ClientError::Server(body) => body.code == ErrorCode::ShuttingDown,
        _ => true,
    }
}

/// One session with boardd.
pub struct Client {
    sink: tokio::sync::Mutex<Sink>,
    pending: Pending,
    next_id: AtomicU64,
    events: tokio::sync::Mutex<mpsc::UnboundedReceiver<Event>>,
    welcome: Welcome,
    reader: tokio::task::JoinHandle<()>,
    /// Set by the reader when it stops: no answer will come any more, so calls made
    /// after that must fail at once rather than wait forever.
    closed: Arc<std::sync::atomic::AtomicBool>,
}

impl Drop for Client {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

impl Client {
    /// Connects and says hello as `name` in `team`, which boardd creates if no
    /// team has that name (the hello without `new_team`, for scripts and tests).
    /// A program a person names the team to uses [`Client::join`].
    ///
    /// `credential` vouches for `name`: the lead's (see [`crate::lead_key`]),
    /// or the one `register` gave the member. Without one, boardd answers
    /// every request `permission_denied`.
    pub async fn connect(
        socket: &Path,
        client: &str,
        name: &str,
        team: &str,
        credential: Option<&Credential>,
    ) -> Result<Client, ClientError> {
        Self::hello(socket, client, name, team, None, credential).await
    }

    /// [`Client::connect`], refused when no team has that name unless `create`
    /// says to create it (the hello's `new_team`): a mistyped team is named back
    /// with the teams there are instead of becoming a new one.
    pub async fn join(
        socket: &Path,
        client: &str,
        name: &str,
        team: &str,
        create: bool,
        credential: Option<&Credential>,
    ) -> Result<Client, ClientError> {
        Self::hello(socket, client, name, team, Some(create), credential).await
    }

    async fn hello(
        socket: &Path,
        client: &str,
        name: &str,
        team: &str,
        new_team: Option<bool>,
        credential: Option<&Credential>,
    ) -> Result<Client, ClientError> {
        let endpoint = Endpoint::Unix(socket.to_path_buf());
        Self::open(&endpoint, client, name, team, new_team, credential).await
    }

    /// [`Client::connect`] (`new_team: None`) or [`Client::join`] at any
    /// endpoint: the Unix socket, or boardd's TCP listener over TLS, where
    /// `credential` is a token from `teamctl token create`.
    ///
    /// Of a list of endpoints, each is tried in turn, each for at most
    /// [`ATTEMPT_TIMEOUT`], and the first session opened is kept. A boardd
    /// that cannot be reached, or answers that none decides just now
    /// (`shutting_down`), sends the client on to the next; a refusal any
    /// boardd of the board would give (a bad credential, an unknown team)
    /// ends the tries.
    pub async fn open(
        endpoint: &Endpoint,
        client: &str,
        name: &str,
        team: &str,
        new_team: Option<bool>,
        credential: Option<&Credential>,
    ) -> Result<Client, ClientError> {
        let hello = ClientFrame::Hello(Hello {
            protocol: PROTOCOL_VERSION,
            client: client.to_string(),
            name: name.to_string(),
            team: team.to_string(),
            new_team,
            credential: credential.cloned(),
        });
        let alternatives = endpoint.alternatives();
        if let [one] = alternatives {
            return Self::open_one(one, &hello).await;
        }
        let mut failed = Vec::new();
        for one in alternatives {
            let error =
                match tokio::time::timeout(ATTEMPT_TIMEOUT, Self::open_one(one, &hello)).await {
                    Ok(Ok(session)) => return Ok(session),
                    Ok(Err(e)) if !worth_another(&e) => return Err(e),
                    Ok(Err(e)) => e,
                    Err(_) => ClientError::Unreachable {
                        server: one.to_string(),
                        error: std::io::Error::new(
                            std::io::ErrorKind::TimedOut,
                            format!("no session within {ATTEMPT_TIMEOUT:?}"),
                        ),
                    },
                };
            tracing::debug!(endpoint = %one, %error, "trying the next endpoint");
            failed.push(error);
        }
        Err(endpoint::none_reachable(endpoint, failed))
    }

    /// Opens one endpoint (never a list) and says `hello` there.
    async fn open_one(endpoint: &Endpoint, hello: &ClientFrame) -> Result<Client, ClientError> {
        let stream = endpoint::open(endpoint).await?;
        // Requests are checked against the 1 MiB limit in `send_frame`; answers may be
        // larger.
        let mut framed = Framed::new(stream, response_codec());
        // boardd may refuse a connection before it reads the hello (another user,
        // no room for more connections) and close it: the hello then finds the
        // connection gone, but the `reject` that says why is waiting to be read.
        let sent = send_frame(&mut framed, hello).await;
        if let Err(e) = sent {
            return Err(match framed.next().await {
                Some(Ok(bytes)) => match serde_json::from_slice::<ServerFrame>(&bytes) {
                    Ok(ServerFrame::Reject { reason }) => ClientError::Rejected(reason),
                    _ => e,
                },
                _ => e,
            });
        }
        let welcome = match framed.next().await {
            Some(Ok(bytes)) => match serde_json::from_slice::<ServerFrame>(&bytes) {
                Ok(ServerFrame::Welcome(w)) => w,
                Ok(ServerFrame::Reject { reason }) => return Err(ClientError::Rejected(reason)),
                Ok(ServerFrame::Error { error }) => return Err(ClientError::Server(error)),
                Ok(other) => {
                    return Err(ClientError::Protocol(format!(
                        "expected welcome, got {other:?}"
                    )));
                }
                Err(e) => return Err(ClientError::Protocol(e.to_string())),
            },
            Some(Err(e)) => return Err(ClientError::Closed(format!(": {e}"))),
            None => return Err(ClientError::Closed(" during the handshake".into())),
        };
        let (sink, mut stream) = framed.split();
        let pending: Pending = Arc::default();
        let closed = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let reader_closed = closed.clone();
        let (events_tx, events_rx) = mpsc::unbounded_channel();
        let reader_pending = pending.clone();
        let reader = tokio::spawn(async move {
            let why = loop {
                let bytes = match stream.next().await {
                    Some(Ok(bytes)) => bytes,
                    Some(Err(e)) => break format!(": {e}"),
                    None => break String::new(),
                };
                match serde_json::from_slice::<ServerFrame>(&bytes) {
                    Ok(ServerFrame::Response { id, result, error }) => {
                        let waiter = lock(&reader_pending).remove(&id);
                        if let Some(tx) = waiter {
                            let answer = match error {
                                Some(err) => Err(ClientError::Server(err)),
                                None => Ok(result.unwrap_or(serde_json::Value::Null)),
                            };
                            let _ = tx.send(answer);
                        }
                    }
                    Ok(ServerFrame::Event { event }) => {
                        let _ = events_tx.send(event);
                    }
                    Ok(ServerFrame::Error { error }) => break format!(": {error}"),
                    Ok(other) => tracing::debug!(?other, "ignoring unexpected frame"),
                    Err(e) => break format!(": undecodable frame: {e}"),
                }
            };
            // Wake every caller still waiting: their answers will never come. The
            // flag is set under the same lock callers insert under, so a call either
            // sees it or is drained here.
            let mut pending = lock(&reader_pending);
            reader_closed.store(true, Ordering::SeqCst);
            for (_, tx) in pending.drain() {
                let _ = tx.send(Err(ClientError::Closed(why.clone())));
            }
        });
        Ok(Client {
            sink: tokio::sync::Mutex::new(sink),
            pending,
            next_id: AtomicU64::new(1),
            events: tokio::sync::Mutex::new(events_rx),
            welcome,
            reader,
            closed,
        })
    }

    /// The server's welcome: its version and this session's id.
    pub fn welcome(&self) -> &Welcome {
        &self.welcome
    }

    /// Sends a request and waits for its answer, decoded as `T`.
    pub async fn call<T: DeserializeOwned>(&self, request: Request) -> Result<T, ClientError> {
        let value = self.call_value(request).await?;
        serde_json::from_value(value).map_err(|e| ClientError::Protocol(e.to_string()))
    }

    /// Sends a request and waits for its answer as raw JSON.
    pub async fn call_value(&self, request: Request) -> Result<serde_json::Value, ClientError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        {
            let mut pending = lock(&self.pending);
            if self.closed.load(Ordering::SeqCst) {
                return Err(ClientError::Closed(" (no longer reading answers)".into()));
            }
            pending.insert(id, tx);
        }
        let frame = ClientFrame::Request { id, request };
        let sent = {
            let mut sink = self.sink.lock().await;
            send_frame(&mut *sink, &frame).await
        };
        if let Err(e) = sent {
            lock(&self.pending).remove(&id);
            return Err(e);
        }
        match rx.await {
            Ok(answer) => answer,
            Err(_) => Err(ClientError::Closed(String::new())),
        }
    }

    /// Closes the connection: boardd sees the session end (and returns its claims)
    /// even while other handles to this client are still alive.
    pub async fn close(&self) {
        let mut sink = self.sink.lock().await;
        let _ = sink.close().await;
    }

    /// Whether the connection is known to be gone.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    /// The next pushed event: after [`Client::subscribe`], every event of the team;
    /// without, only the event that ended a claim this connection held, when
    /// someone else ended it (protocol §6). `None` once the connection has closed.
    pub async fn next_event(&self) -> Option<Event> {
        self.events.lock().await.recv().await
    }

    pub async fn status(&self) -> Result<ServerStatus, ClientError> {
        self.call(Request::Status(NoArgs {})).await
    }

    pub async fn register(&self, role: &str, pid: Option<u32>) -> Result<Member, ClientError> {
        self.call(Request::Register(RegisterArgs {
            role: role.to_string(),
            pid,
            ..RegisterArgs::default()
        }))
        .await
    }

    /// Registers with every argument, `require_plan` and `runtime` among them;
    /// the answer carries the member's new credential, if boardd issued one.
    pub async fn register_with(&self, args: RegisterArgs) -> Result<Registered, ClientError> {
        self.call(Request::Register(args)).await
    }

    pub async fn set_status(&self, status: MemberStatus) -> Result<Member, ClientError> {
        self.call(Request::SetStatus(SetStatusArgs { status }))
            .await
    }

    pub async fn add_task(&self, task: NewTask) -> Result<Task, ClientError> {
        self.call(Request::AddTask(task)).await
    }

    pub async fn list_tasks(&self, status: Option<TaskStatus>) -> Result<Vec<Task>, ClientError> {
        self.call(Request::ListTasks(ListTasksArgs {
            status,
            landing: None,
        }))
        .await
    }

    /// The tasks whose completion waits for a person's review.
    pub async fn list_reviews(&self) -> Result<Vec<Task>, ClientError> {
        self.call(Request::ListTasks(ListTasksArgs {
            status: None,
            landing: Some(LandingStage::Review),
        }))
        .await
    }

    /// Lands a task that waits for review; answers once it landed.
    pub async fn merge_task(&self, id: TaskId) -> Result<Task, ClientError> {
        self.call(Request::MergeTask(TaskRef { id })).await
    }

    /// Returns a task that waits for review to its owner with `feedback`.
    /// Takes the checks proposed for task `id` into its checks, or drops them
    /// (`reject`). Lead only.
    pub async fn accept_checks(&self, id: TaskId, reject: bool) -> Result<Task, ClientError> {
        self.call(Request::AcceptChecks(AcceptChecksArgs { id, reject }))
            .await
    }

    pub async fn send_back(&self, id: TaskId, feedback: &str) -> Result<Task, ClientError> {
        let feedback = feedback.to_string();
        self.call(Request::SendBack(SendBackArgs { id, feedback }))
            .await
    }

    pub async fn get_task(&self, id: TaskId) -> Result<TaskDetail, ClientError> {
        self.call(Request::GetTask(TaskRef { id })).await
    }

    pub async fn add_dependency(&self, id: TaskId, on: Vec<TaskId>) -> Result<Task, ClientError> {
        self.call(Request::AddDependency(AddDependencyArgs { id, on }))
            .await
    }

    pub async fn edit_task(&self, args: EditTaskArgs) -> Result<Task, ClientError> {
        self.call(Request::EditTask(args)).await
    }

    /// Removes a pending task that nothing waits for; answers it as it was.
    pub async fn delete_task(&self, id: TaskId) -> Result<Task, ClientError> {
        self.call(Request::DeleteTask(TaskRef { id })).await
    }

    pub async fn cancel_task(&self, id: TaskId) -> Result<Task, ClientError> {
        self.call(Request::CancelTask(CancelArgs { id, discard: false }))
            .await
    }

    /// Cancels a task and marks its unmerged work as discardable by
    /// `prune_worktrees`.
    pub async fn cancel_task_discarding(&self, id: TaskId) -> Result<Task, ClientError> {
        self.call(Request::CancelTask(CancelArgs { id, discard: true }))
            .await
    }

    pub async fn set_repo(&self, args: SetRepoArgs) -> Result<Repo, ClientError> {
        self.call(Request::SetRepo(args)).await
    }

    pub async fn get_repo(&self) -> Result<Option<Repo>, ClientError> {
        self.call(Request::GetRepo(NoArgs {})).await
    }

    pub async fn open_worktree(
        &self,
        id: TaskId,
        epoch: u64,
    ) -> Result<OpenedWorktree, ClientError> {
        self.call(Request::OpenWorktree(ClaimRef { id, epoch }))
            .await
    }

    pub async fn list_worktrees(&self) -> Result<Vec<WorktreeEntry>, ClientError> {
        self.call(Request::ListWorktrees(NoArgs {})).await
    }

    pub async fn prune_worktrees(&self, dry_run: bool) -> Result<Pruned, ClientError> {
        self.call(Request::PruneWorktrees(PruneArgs { dry_run }))
            .await
    }

    pub async fn retry_task(&self, id: TaskId) -> Result<Task, ClientError> {
        self.call(Request::RetryTask(TaskRef { id })).await
    }

    pub async fn claim_task(&self, id: TaskId) -> Result<Claim, ClientError> {
        self.call(Request::ClaimTask(TaskRef { id })).await
    }

    pub async fn claim_next(&self) -> Result<Option<Claim>, ClientError> {
        self.call(Request::ClaimNext(NoArgs {})).await
    }

    pub async fn complete_task(
        &self,
        id: TaskId,
        epoch: u64,
        result: &str,
    ) -> Result<Task, ClientError> {
        self.call(Request::CompleteTask(CompleteArgs {
            id,
            epoch,
            result: result.to_string(),
        }))
        .await
    }

    pub async fn fail_task(
        &self,
        id: TaskId,
        epoch: u64,
        error: &str,
    ) -> Result<Task, ClientError> {
        self.call(Request::FailTask(FailArgs {
            id,
            epoch,
            error: error.to_string(),
        }))
        .await
    }

    pub async fn release_task(
        &self,
        id: TaskId,
        epoch: u64,
        error: Option<&str>,
    ) -> Result<Task, ClientError> {
        self.call(Request::ReleaseTask(ReleaseArgs {
            id,
            epoch,
            error: error.map(str::to_string),
            note: None,
            not_handoff: false,
        }))
        .await
    }

    /// Gives the task back without counting the attempt (it was not the task's
    /// fault), with `note` saying why in the task's history, and for its next
    /// owner (the task's `handoff`).
    pub async fn release_task_with_note(
        &self,
        id: TaskId,
        epoch: u64,
        note: &str,
    ) -> Result<Task, ClientError> {
        self.release_noted(id, epoch, note, false).await
    }

    /// [`Client::release_task_with_note`] for a note that says why the holder
    /// let the task go (its own setup failed), not how far the task got: it goes
    /// into the history only, never to the next owner.
    pub async fn release_task_aside(
        &self,
        id: TaskId,
        epoch: u64,
        note: &str,
    ) -> Result<Task, ClientError> {
        self.release_noted(id, epoch, note, true).await
    }

    async fn release_noted(
        &self,
        id: TaskId,
        epoch: u64,
        note: &str,
        not_handoff: bool,
    ) -> Result<Task, ClientError> {
        self.call(Request::ReleaseTask(ReleaseArgs {
            id,
            epoch,
            error: None,
            note: Some(note.to_string()),
            not_handoff,
        }))
        .await
    }

    pub async fn heartbeat(&self, id: TaskId, epoch: u64) -> Result<Task, ClientError> {
        self.call(Request::Heartbeat(ClaimRef { id, epoch })).await
    }

    /// Says the session is alive; see `RegisterArgs::beat_ms`.
    pub async fn ping(&self) -> Result<(), ClientError> {
        let _: serde_json::Value = self.call(Request::Ping(NoArgs {})).await?;
        Ok(())
    }

    pub async fn team(&self) -> Result<Vec<Member>, ClientError> {
        self.call(Request::Team(NoArgs {})).await
    }

    pub async fn send(
        &self,
        to: &str,
        kind: MessageKind,
        content: &str,
        request_id: Option<&str>,
    ) -> Result<Message, ClientError> {
        self.call(Request::Send(SendArgs {
            to: to.to_string(),
            kind,
            content: content.to_string(),
            request_id: request_id.map(str::to_string),
        }))
        .await
    }

    pub async fn broadcast(&self, content: &str) -> Result<Vec<Message>, ClientError> {
        self.call(Request::Broadcast(BroadcastArgs {
            content: content.to_string(),
        }))
        .await
    }

    pub async fn inbox(&self) -> Result<Vec<Message>, ClientError> {
        self.call(Request::Inbox(NoArgs {})).await
    }

    pub async fn ack(&self, ids: Vec<u64>) -> Result<Acked, ClientError> {
        self.call(Request::Ack(AckArgs { ids })).await
    }

    pub async fn wait_for_work(&self, timeout_ms: Option<u64>) -> Result<Work, ClientError> {
        self.call(Request::WaitForWork(WaitArgs { timeout_ms }))
            .await
    }

    pub async fn events(&self, args: EventsArgs) -> Result<Vec<Event>, ClientError> {
        self.call(Request::Events(args)).await
    }

    /// Subscribes to the team's event stream; read it with [`Client::next_event`].
    pub async fn subscribe(&self) -> Result<(), ClientError> {
        let _: serde_json::Value = self.call(Request::Subscribe(SubscribeArgs {})).await?;
        Ok(())
    }

    /// Takes the team's lead seat for this session (`take_lead`); refused while
    /// another lead of the team is connected.
    pub async fn take_lead(&self) -> Result<(), ClientError> {
        let _: serde_json::Value = self.call(Request::TakeLead(NoArgs {})).await?;
        Ok(())
    }

    /// Adds token use to the session's member and, if given, its task;
    /// `estimated`: the counts are the scripted model's estimates.
    pub async fn record_usage(
        &self,
        task: Option<TaskId>,
        tokens: TokenUsage,
        estimated: bool,
    ) -> Result<Member, ClientError> {
        let args = UsageArgs {
            task,
            tokens,
            estimated,
            ..UsageArgs::default()
        };
        self.call(Request::RecordUsage(args)).await
    }
}

/// Spend: reservations before model calls, their settlement, and budgets.
impl Client {
    /// Reserves a model call's worst case; answers once boardd granted it,
    /// which may wait for an account's capacity.
    pub async fn reserve_call(
        &self,
        args: ReserveArgs,
    ) -> Result<crate::spend::Reservation, ClientError> {
        self.call(Request::ReserveCall(args)).await
    }

    /// Records a call's usage and settles its reservation, if any.
    pub async fn settle_usage(
        &self,
        args: UsageArgs,
    ) -> Result<crate::spend::Settled, ClientError> {
        self.call(Request::SettleUsage(args)).await
    }

    pub async fn set_budget(
        &self,
        args: SetBudgetArgs,
    ) -> Result<crate::spend::Budget, ClientError> {
        self.call(Request::SetBudget(args)).await
    }

    pub async fn clear_budget(
        &self,
        args: ClearBudgetArgs,
    ) -> Result<crate::spend::Budget, ClientError> {
        self.call(Request::ClearBudget(args)).await
    }

    pub async fn budgets(&self) -> Result<crate::spend::BudgetReport, ClientError> {
        self.call(Request::Budgets(NoArgs {})).await
    }
}

/// The team protocols: shutdown and plan approval.
impl Client {
    pub async fn request_shutdown(&self, args: ShutdownArgs) -> Result<TeamRequest, ClientError> {
        self.call(Request::RequestShutdown(args)).await
    }

    pub async fn respond_shutdown(
        &self,
        request: RequestId,
        approve: bool,
        reason: Option<&str>,
    ) -> Result<TeamRequest, ClientError> {
        self.call(Request::RespondShutdown(RespondShutdownArgs {
            request,
            approve,
            reason: reason.map(str::to_string),
        }))
        .await
    }

    pub async fn submit_plan(
        &self,
        id: TaskId,
        epoch: u64,
        plan: &str,
    ) -> Result<TeamRequest, ClientError> {
        self.call(Request::SubmitPlan(SubmitPlanArgs {
            id,
            epoch,
            plan: plan.to_string(),
        }))
        .await
    }

    pub async fn review_plan(
        &self,
        request: RequestId,
        approve: bool,
        feedback: Option<&str>,
    ) -> Result<TeamRequest, ClientError> {
        self.call(Request::ReviewPlan(ReviewPlanArgs {
            request,
            approve,
            feedback: feedback.map(str::to_string),
        }))
        .await
    }

    pub async fn cancel_request(&self, request: RequestId) -> Result<TeamRequest, ClientError> {
        self.call(Request::CancelRequest(RequestRef { request }))
            .await
    }

    pub async fn get_request(&self, request: RequestId) -> Result<TeamRequest, ClientError> {
        self.call(Request::GetRequest(RequestRef { request })).await
    }

    pub async fn list_requests(
        &self,
        args: ListRequestsArgs,
    ) -> Result<Vec<TeamRequest>, ClientError> {
        self.call(Request::ListRequests(args)).await
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panic while holding this lock cannot leave the map inconsistent (each
    // operation is a single insert or remove), so a poisoned lock is still usable.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

async fn send_frame<S>(sink: &mut S, frame: &ClientFrame) -> Result<(), ClientError>
where
    S: futures_util::Sink<Bytes, Error = std::io::Error> + Unpin,
{
    let bytes = serde_json::to_vec(frame).map_err(|e| ClientError::Protocol(e.to_string()))?;
    if bytes.len() > crate::MAX_FRAME_LEN {
        return Err(ClientError::Server(ErrorBody::new(
            ErrorCode::FrameTooLarge,
            format!(
                "request is {} bytes; the limit is {} bytes",
                bytes.len(),
                crate::MAX_FRAME_LEN
            ),
        )));
    }
    sink.send(Bytes::from(bytes))
        .await
        .map_err(|e| ClientError::Closed(format!(": {e}")))
}
