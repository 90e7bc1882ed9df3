//! Request handlers: one `match` that maps each op onto the board, with the ops
//! that need more than a board call in files of their own.
//!
//! A handler gets what it reads (the board, the daemon's facts, the request) and
//! returns an [`Outcome`]; the actor carries it out. No handler reaches back into
//! the actor.

mod repo;
pub mod repo_done;

use crate::info::DaemonInfo;
use crate::reply::Reply;
use crate::store::HistoryQuery;
use crate::writer::Query;
use std::time::Duration;
use teamboard_board::{Board, Ctx};
use teamboard_protocol::names::validate_name;
use teamboard_protocol::{
    Acked, ErrorBody, ErrorCode, LEAD, PROTOCOL_VERSION, Request, ServerStatus,
};

/// The default and largest number of events `events` returns.
const EVENTS_LIMIT: u64 = 1000;
const EVENTS_MAX: u64 = 100_000;

/// What the actor is to do with a request once its handler has run.
#[derive(Debug)]
pub enum Outcome {
    /// Reply once the batch is durable.
    Reply(Result<Reply, ErrorBody>),
    /// Reply with a read of the store, made after the batch is durable.
    Query(Query),
    /// The request waits in the board; a later dispatch or timeout answers it.
    Parked,
    /// Subscribe the session to its team's events, then reply `{}`.
    Subscribe,
    /// Give the session its team's lead seat, if no other open session has it.
    TakeLead,
    /// Run a job on a repository's worker; its report answers the request.
    Repo(Box<crate::repo::Job>),
    /// Reply once the batch is durable, and run a job whose report answers
    /// nobody (a retried landing).
    ReplyAndRun(Result<Reply, ErrorBody>, Box<crate::repo::Job>),
    /// A completion that lands: hold the request until the landing ends (see
    /// `repo_done::Held`), starting its job if there is one to start (the
    /// gate of a completion, the landing of a merged review).
    Land {
        slot: crate::repo::Slot,
        task: teamboard_protocol::TaskId,
        epoch: u64,
        gate: Option<Box<crate::repo::Job>>,
    },
    /// A lead's request about tokens, which the actor's keys answer.
    Token(TokenOp),
}

/// What a lead asks of the tokens, with the team resolved.
#[derive(Debug)]
pub enum TokenOp {
    Create { team: String, name: String },
    Revoke { team: String, name: String },
    List { team: String },
}

impl TokenOp {
    /// The team whose tokens it touches.
    pub fn team(&self) -> &str {
        match self {
            TokenOp::Create { team, .. }
            | TokenOp::Revoke { team, .. }
            | TokenOp::List { team } => team,
        }
    }
}

/// Applies one request to the board.
pub fn handle(
    board: &mut Board,
    info: &DaemonInfo,
    ctx: Ctx,
    id: u64,
    request: Request,
) -> Outcome {
    let team = ctx.team;
    board.touch(&ctx);
    let result = match request {
        Request::Status(_) => Ok(Reply::Status(Box::new(status(board, info)))),
        Request::Register(a) => board.register_with(ctx, &a).map(Reply::from),
        Request::SetStatus(a) => board.set_status(ctx, a.status).map(Reply::from),
        Request::AddTask(new) => board.add_task(ctx, new).map(Reply::from),
        Request::ListTasks(a) => {
            let mut tasks = board.tasks(team, a.status);
            if let Some(stage) = a.landing {
                tasks.retain(|t| t.landing.as_ref().is_some_and(|l| l.stage == stage));
            }
            Ok(Reply::Tasks(tasks))
        }
        Request::GetTask(r) => {
            return match board.task(team, r.id) {
                Ok(task) => Outcome::Query(Query::Task {
                    task: Box::new(task.clone()),
                    plans: board.plans_of(team, r.id),
                    team: team.to_string(),
                }),
                Err(e) => Outcome::Reply(Err(e.into())),
            };
        }
        Request::AddDependency(a) => board.add_dependency(ctx, a.id, &a.on).map(Reply::from),
        Request::EditTask(a) => board.edit_task(ctx, a).map(Reply::from),
        Request::DeleteTask(r) => board.delete_task(ctx, r.id).map(Reply::from),
        Request::CancelTask(r) => board
            .cancel_task_with(ctx, r.id, r.discard)
            .map(Reply::from),
        Request::RetryTask(r) => return repo::retry(board, ctx, r.id),
        Request::ClaimTask(r) => board.claim_task(ctx, r.id).map(Reply::from),
        Request::ClaimNext(_) => board
            .claim_next(ctx)
            .map(|c| Reply::MaybeClaim(c.map(Box::new))),
        Request::CompleteTask(a) => return repo::complete(board, ctx, id, a),
        Request::FailTask(a) => board
            .fail_task(ctx, a.id, a.epoch, a.error)
            .map(Reply::from),
        Request::ReleaseTask(a) => board.release(ctx, a).map(Reply::from),
        Request::Heartbeat(a) => board.heartbeat(ctx, a.id, a.epoch).map(Reply::from),
        // Heard by the `touch` above; nothing else to do.
        Request::Ping(_) => Ok(Reply::Done(crate::reply::Empty {})),
        Request::Team(_) => Ok(Reply::Members(board.members(team))),
        Request::Send(a) => board
            .send(ctx, &a.to, a.kind, a.content, a.request_id)
            .map(Reply::from),
        Request::Broadcast(a) => board.broadcast(ctx, a.content).map(Reply::Messages),
        Request::Inbox(_) => Ok(Reply::Messages(board.inbox(team, ctx.actor))),
        Request::Ack(a) => Ok(Reply::Acked(Acked {
            acked: board.ack(ctx, &a.ids),
        })),
        Request::WaitForWork(a) => {
            // Answered now if there is work, else parked in the board until there
            // is. A deadline past what the monotonic clock can represent means
            // "wait until work arrives".
            let deadline =
                (a.timeout_ms).and_then(|ms| ctx.now.mono.checked_add(Duration::from_millis(ms)));
            match board.park(ctx, id, deadline) {
                Ok(Some(work)) => Ok(Reply::Work(Box::new(work))),
                Ok(None) => return Outcome::Parked,
                Err(e) => Err(e),
            }
        }
        Request::Events(a) => {
            return Outcome::Query(Query::Events(HistoryQuery {
                team: team.to_string(),
                since: a.since,
                task: a.task,
                limit: a.limit.unwrap_or(EVENTS_LIMIT).min(EVENTS_MAX),
            }));
        }
        Request::Subscribe(_) => return Outcome::Subscribe,
        Request::TakeLead(_) if ctx.actor == LEAD => return Outcome::TakeLead,
        Request::TakeLead(_) => {
            return Outcome::Reply(Err(ErrorBody::new(
                ErrorCode::PermissionDenied,
                format!(
                    "only the lead takes the lead seat; '{}' is a teammate",
                    ctx.actor
                ),
            )));
        }
        Request::RecordUsage(a) => board
            .record_usage(ctx, a.task, a.tokens, a.estimated)
            .map(Reply::from),
        Request::ReserveCall(a) => match board.reserve_call(ctx, id, a) {
            Ok(Some(granted)) => Ok(Reply::from(granted)),
            Ok(None) => return Outcome::Parked,
            Err(e) => Err(e),
        },
        Request::SettleUsage(a) => board.settle_usage(ctx, a).map(Reply::from),
        Request::SetBudget(a) => board.set_budget(ctx, a).map(Reply::from),
        Request::ClearBudget(a) => board.clear_budget(ctx, a).map(Reply::from),
        Request::Budgets(_) => Ok(Reply::from(board.budget_report(team, ctx.now))),
        Request::RequestShutdown(a) => board.request_shutdown(ctx, a).map(Reply::from),
        Request::RespondShutdown(a) => board
            .respond_shutdown(ctx, a.request, a.approve, a.reason)
            .map(Reply::from),
        Request::SubmitPlan(a) => board
            .submit_plan(ctx, a.id, a.epoch, a.plan)
            .map(Reply::from),
        Request::ReviewPlan(a) => board
            .review_plan(ctx, a.request, a.approve, a.feedback)
            .map(Reply::from),
        Request::CancelRequest(r) => board.cancel_request(ctx, r.request).map(Reply::from),
        Request::GetRequest(r) => board.request(team, r.request).map(Reply::from),
        Request::ListRequests(a) => Ok(Reply::Requests(
            board.requests(team, a.state, a.kind, a.task),
        )),
        Request::SetRepo(a) => return repo::set_repo(board, info, ctx, id, a),
        Request::GetRepo(_) => Ok(Reply::MaybeRepo(board.repo(team).cloned().map(Box::new))),
        Request::OpenWorktree(a) => return repo::open_worktree(board, ctx, id, a.id, a.epoch),
        Request::ListWorktrees(_) => return repo::list(board, ctx, id),
        Request::PruneWorktrees(a) => return repo::prune(board, ctx, id, a.dry_run),
        Request::MergeTask(r) => return repo::merge(board, ctx, id, r.id),
        Request::SendBack(a) => board.send_back(ctx, a.id, &a.feedback).map(Reply::from),
        Request::AcceptChecks(a) => board.accept_checks(ctx, a.id, a.reject).map(Reply::from),
        Request::CreateToken(a) => {
            return token(ctx, a.team, |team| TokenOp::Create { team, name: a.name });
        }
        Request::RevokeToken(a) => {
            return token(ctx, a.team, |team| TokenOp::Revoke { team, name: a.name });
        }
        Request::ListTokens(a) => return token(ctx, a.team, |team| TokenOp::List { team }),
    };
    Outcome::Reply(result.map_err(ErrorBody::from))
}

/// A token request, from the lead only; `team` is the session's own when absent.
fn token(ctx: Ctx, team: Option<String>, op: impl FnOnce(String) -> TokenOp) -> Outcome {
    if ctx.actor != LEAD {
        let why = format!(
            "only the lead may issue, revoke or list tokens; '{}' is a teammate",
            ctx.actor
        );
        return Outcome::Reply(Err(ErrorBody::new(ErrorCode::PermissionDenied, why)));
    }
    let team = team.unwrap_or_else(|| ctx.team.to_string());
    if let Err(e) = validate_name(&team) {
        let why = format!("bad team: {e}");
        return Outcome::Reply(Err(ErrorBody::new(ErrorCode::InvalidArgs, why)));
    }
    let op = op(team);
    if let TokenOp::Create { name, .. } | TokenOp::Revoke { name, .. } = &op
        && let Err(e) = validate_name(name)
    {
        let why = format!("bad name: {e}");
        return Outcome::Reply(Err(ErrorBody::new(ErrorCode::InvalidArgs, why)));
    }
    Outcome::Token(op)
}

/// `status`: the daemon's version, uptime and per-team counts.
fn status(board: &Board, info: &DaemonInfo) -> ServerStatus {
    ServerStatus {
        version: env!("CARGO_PKG_VERSION").to_string(),
        protocol: PROTOCOL_VERSION,
        pid: std::process::id(),
        uptime_ms: info.started.elapsed().as_millis() as u64,
        socket: info.socket.display().to_string(),
        state_dir: info.state_dir.display().to_string(),
        sessions: info.live.load(std::sync::atomic::Ordering::Relaxed),
        teams: board
            .team_names()
            .iter()
            .map(|t| board.summary(t))
            .collect(),
        commits: info.commits.stats(),
    }
}
