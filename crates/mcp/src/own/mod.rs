//! A person's own session on the board: `teamctl mcp --name me` outside a
//! teammate. The server is the member: it registers the name with a boardd
//! session of its own, takes a task with `get_task {claim: true}`, keeps its
//! lease, and ends it with `complete_task`/`fail_task`, telling the lead as a
//! teammate does. Messages for the member come with the next tool result.
//!
//! The session lives as long as the server: when the MCP client goes away,
//! [`OwnBoard::leave`] gives a held task back without using up an attempt.

mod conn;
mod held;
mod inbox;

use crate::board::{Answer, Board, Mode, bounded, no_answer, within};
use held::{Held, Shared};
use std::sync::Arc;
use std::time::Duration;
use teamboard_protocol::board_call::BoardCall;
use teamboard_protocol::member::{MemberCall, MemberReply};
use teamboard_protocol::request::{
    CompleteArgs, FailArgs, ListTasksArgs, SendArgs, SubmitPlanArgs, TaskRef,
};
use teamboard_protocol::worktree::MergeStyle;
use teamboard_protocol::{
    Client, ClientError, Endpoint, ErrorCode, LEAD, MemberStatus, MessageKind, Request, TaskId,
    TaskStatus,
};

/// Who the session is, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnConfig {
    /// boardd's socket, or its TLS listener (`teamctl --connect`).
    pub endpoint: Endpoint,
    pub team: String,
    /// Create `team` if no team has that name (`teamctl mcp --new-team`); else
    /// one that does not exist is refused.
    pub new_team: bool,
    pub name: String,
    pub role: String,
    /// `--timeout`: how long joining the board, a [`bounded`] call, the
    /// messages fetched with each answer and giving a task back at the end may
    /// wait for boardd; `None` waits for ever.
    pub timeout: Option<Duration>,
    /// The lead's credential, which vouches for the member's name: `teamctl
    /// mcp` runs as the person. Why it could not be read, if it could not: said
    /// when boardd refuses the member, so that a boardd that is not running is
    /// still named first.
    pub credential: Result<teamboard_protocol::Credential, String>,
}

/// The board of a person's own session.
pub struct OwnBoard {
    cfg: OwnConfig,
    conn: Option<conn::Conn>,
    held: Shared,
}

/// How the held task is to end.
enum Ending {
    Complete(String),
    Fail(String),
}

impl OwnBoard {
    pub fn new(cfg: OwnConfig) -> OwnBoard {
        OwnBoard {
            cfg,
            conn: None,
            held: Shared::default(),
        }
    }

    /// Connects and registers now, so that the member shows in `teamctl team`
    /// before its first call. `Err` says why not; the calls try again.
    pub async fn join(&mut self) -> Result<(), String> {
        self.connect().await.map(|_| ())
    }

    /// The task held, if any.
    pub fn held(&self) -> Option<TaskId> {
        held::current(&self.held).map(|h| h.id)
    }

    /// Ends the session: a held task goes back to the board without using up an
    /// attempt, with a note that says why.
    pub async fn leave(mut self) {
        let Some(conn) = self.conn.take() else { return };
        if let Some(h) = held::current(&self.held) {
            let note = format!(
                "{}'s session ended (its MCP client went away) before it finished",
                self.cfg.name
            );
            // boardd gives it back anyway once the session closes, with the
            // attempt that costs: a boardd that does not answer cannot hold
            // the exit up.
            match within(
                self.cfg.timeout,
                conn.client.release_task_with_note(h.id, h.epoch, &note),
            )
            .await
            {
                Some(Ok(_)) => {}
                Some(Err(e)) => {
                    tracing::warn!(task = h.id, error = %e, "cannot give the task back")
                }
                None => tracing::warn!(task = h.id, "boardd did not answer the release in time"),
            }
        }
        let _ = within(self.cfg.timeout, conn.client.close()).await;
    }

    /// The registered session, opened (again) when there is none.
    async fn connect(&mut self) -> Result<Arc<Client>, String> {
        if let Some(conn) = &self.conn
            && !conn.client.is_closed()
        {
            return Ok(conn.client.clone());
        }
        self.conn = None;
        let conn = conn::open(&self.cfg, &self.held).await?;
        let client = conn.client.clone();
        self.conn = Some(conn);
        Ok(client)
    }

    /// A claim boardd took back since the last call: forgotten, and said.
    fn take_lost(&self) -> Option<String> {
        let mut h = held::lock(&self.held);
        let why = h.as_ref()?.lost.clone()?;
        let lost = h.take()?;
        Some(format!(
            "Your claim on #{} ({}) is gone: {why}. Stop working on it.",
            lost.id, lost.subject
        ))
    }

    async fn carry_out(&self, client: &Client, call: BoardCall) -> MemberReply {
        match call {
            BoardCall::ListTasks { status } => {
                ask(
                    client,
                    Request::ListTasks(ListTasksArgs {
                        status,
                        landing: None,
                    }),
                )
                .await
            }
            BoardCall::GetTask { id, claim } => {
                if claim && let Err(refused) = self.claim(client, id).await {
                    return refused;
                }
                ask(client, Request::GetTask(TaskRef { id })).await
            }
            BoardCall::CreateTask(task) => ask(client, Request::AddTask(task)).await,
            BoardCall::SendMessage { to, text } => {
                let send = SendArgs {
                    to,
                    kind: MessageKind::Message,
                    content: text,
                    request_id: None,
                };
                ask(client, Request::Send(send)).await
            }
            BoardCall::CompleteTask { task, result } => {
                self.end(client, task, Ending::Complete(result)).await
            }
            BoardCall::FailTask { task, reason } => {
                self.end(client, task, Ending::Fail(reason)).await
            }
            BoardCall::SubmitPlan { task, plan } => {
                let h = match self.holding(task, "plan for") {
                    Ok(h) => h,
                    Err(refused) => return refused,
                };
                let args = SubmitPlanArgs {
                    id: h.id,
                    epoch: h.epoch,
                    plan,
                };
                match client.call_value(Request::SubmitPlan(args)).await {
                    Ok(value) => MemberReply::Ok { value },
                    Err(e) => self.claim_error(&h, e),
                }
            }
        }
    }

    /// Takes task `id` for the member, and opens its worktree when it has one.
    async fn claim(&self, client: &Client, id: TaskId) -> Result<(), MemberReply> {
        if let Some(h) = held::current(&self.held) {
            if h.id == id {
                return Ok(());
            }
            return Err(MemberReply::error(format!(
                "you already hold task #{} ({}); end it with complete_task or fail_task before \
                 you take another",
                h.id, h.subject
            )));
        }
        let claim = client.claim_task(id).await.map_err(refused)?;
        let epoch = claim.epoch;
        *held::lock(&self.held) = Some(Held::new(id, epoch, claim.task.subject.clone()));
        if claim.task.worktree.is_none() {
            return Ok(());
        }
        match client.open_worktree(id, epoch).await {
            Ok(opened) => {
                let tree = tree_of(client, Some(opened.target)).await;
                if let Some(h) = held::lock(&self.held).as_mut() {
                    h.tree = tree;
                }
                Ok(())
            }
            Err(e) => {
                let why = format!("its worktree could not be opened: {e}");
                if let Err(e) = client.release_task_with_note(id, epoch, &why).await {
                    tracing::warn!(task = id, error = %e, "cannot give the task back");
                }
                held::forget(&self.held, id, epoch);
                Err(MemberReply::Error {
                    code: e.code(),
                    message: format!("you claimed #{id}, but {why}; it is given back"),
                })
            }
        }
    }

    /// The held claim, when the call may act on it.
    fn holding(&self, named: Option<TaskId>, verb: &str) -> Result<Held, MemberReply> {
        match (held::current(&self.held), named) {
            (None, _) => Err(MemberReply::error(format!(
                "you hold no task, so there is nothing to {verb}; take one with get_task \
                 {{\"id\": N, \"claim\": true}}"
            ))),
            (Some(h), Some(named)) if h.id != named => Err(MemberReply::error(format!(
                "you hold task #{}, not #{named}; you can only {verb} the task you hold",
                h.id
            ))),
            (Some(h), _) => Ok(h),
        }
    }

    /// Completes or fails the held task. The completion gate's refusal keeps
    /// the claim and says what to do; a claim boardd no longer knows is let go.
    async fn end(&self, client: &Client, named: Option<TaskId>, ending: Ending) -> MemberReply {
        let verb = match ending {
            Ending::Complete(_) => "complete",
            Ending::Fail(_) => "fail",
        };
        let h = match self.holding(named, verb) {
            Ok(h) => h,
            Err(refused) => return refused,
        };
        let (id, epoch) = (h.id, h.epoch);
        let (request, text) = match ending {
            Ending::Complete(result) => (
                Request::CompleteTask(CompleteArgs {
                    id,
                    epoch,
                    result: result.clone(),
                }),
                result,
            ),
            Ending::Fail(reason) => (
                Request::FailTask(FailArgs {
                    id,
                    epoch,
                    error: reason.clone(),
                }),
                reason,
            ),
        };
        let value = match client.call_value(request).await {
            Ok(value) => value,
            Err(ClientError::Server(body))
                if let Some(text) = teamboard_protocol::refusal::refused_completion(
                    body.code,
                    &body.message,
                    h.tree.as_ref().map(|(t, m)| (t.as_str(), *m)),
                ) =>
            {
                return MemberReply::Error {
                    code: Some(body.code),
                    message: text,
                };
            }
            Err(e) => return self.claim_error(&h, e),
        };
        held::forget(&self.held, id, epoch);
        let status = value
            .get("status")
            .cloned()
            .and_then(|s| serde_json::from_value::<TaskStatus>(s).ok());
        let what = match (verb, status) {
            ("complete", _) => "completed",
            (_, Some(TaskStatus::Failed)) => "failed for good",
            _ => "failed (it will be retried)",
        };
        // As a teammate does: the lead hears every outcome as a `result`.
        let report = format!("#{id} {}: {what} by {}\n{text}", h.subject, self.cfg.name);
        if let Err(e) = client.send(LEAD, MessageKind::Result, &report, None).await {
            tracing::warn!(task = id, error = %e, "cannot tell the lead");
        }
        if let Err(e) = client.set_status(MemberStatus::Idle).await {
            tracing::warn!(error = %e, "cannot set the member idle");
        }
        MemberReply::Ok { value }
    }

    /// boardd's refusal of a call on the held claim: a claim it no longer knows
    /// is let go.
    fn claim_error(&self, h: &Held, e: ClientError) -> MemberReply {
        if matches!(e.code(), Some(ErrorCode::StaleEpoch | ErrorCode::NotFound)) {
            held::forget(&self.held, h.id, h.epoch);
            return MemberReply::Error {
                code: e.code(),
                message: format!("your claim on #{} is gone ({e}); stop working on it", h.id),
            };
        }
        refused(e)
    }
}

impl Board for OwnBoard {
    fn mode(&self) -> Mode {
        Mode::Own
    }

    async fn call(&mut self, call: MemberCall) -> Answer {
        let parsed = match BoardCall::parse(&call) {
            Ok(parsed) => parsed,
            Err(bad) => return Answer::from(MemberReply::error(bad.0)),
        };
        let client = match self.connect().await {
            Ok(client) => client,
            Err(why) => return Answer::from(MemberReply::error(why)),
        };
        let mut notes: Vec<String> = self.take_lost().into_iter().collect();
        let limit = self.cfg.timeout.filter(|_| bounded(&parsed));
        let Some(reply) = within(limit, self.carry_out(&client, parsed)).await else {
            let reply = no_answer("boardd", limit.unwrap_or_default());
            return Answer { reply, notes };
        };
        // The messages wait for the next answer when boardd is slow to give them.
        let messages = within(self.cfg.timeout, inbox::take(&client, &self.cfg.name)).await;
        notes.extend(messages.flatten());
        Answer { reply, notes }
    }
}

/// Sends `request`; boardd's answer as it came, as `teamctl ... --json` prints it.
async fn ask(client: &Client, request: Request) -> MemberReply {
    match client.call_value(request).await {
        Ok(value) => MemberReply::Ok { value },
        Err(e) => refused(e),
    }
}

fn refused(e: ClientError) -> MemberReply {
    let message = match &e {
        ClientError::Server(_) => format!("boardd refused: {e}"),
        ClientError::Closed(_) => format!("{e}; the next call connects again"),
        _ => e.to_string(),
    };
    MemberReply::Error {
        code: e.code(),
        message,
    }
}

/// The target branch (`target`, else the team's) and the merge style of the
/// team's repository, for the completion gate's refusal text.
async fn tree_of(client: &Client, target: Option<String>) -> Option<(String, MergeStyle)> {
    let repo = match client.get_repo().await {
        Ok(repo) => repo,
        Err(e) => {
            tracing::warn!(error = %e, "cannot read the team's repository");
            None
        }
    };
    let merge = repo.as_ref().map(|r| r.merge).unwrap_or_default();
    let target = target.or_else(|| repo.map(|r| r.branch))?;
    Some((target, merge))
}
