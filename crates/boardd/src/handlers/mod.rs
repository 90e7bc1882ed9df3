//! Request handlers: one `match` that maps each op onto the board, with the ops that
//! need more than a board call in files of their own.

mod status;
mod subscribe;
mod wait;

use crate::actor::Actor;
use crate::outbox::Outbox;
use crate::reply::{Empty, Reply};
use crate::store::HistoryQuery;
use crate::writer::Query;
use teamboard_board::{Ctx, SessionId};
use teamboard_protocol::{Acked, ErrorBody, Request};

/// The default and largest number of events `events` returns.
const EVENTS_LIMIT: u64 = 1000;
const EVENTS_MAX: u64 = 100_000;

/// Applies one request. The reply is queued on the actor's current job, so it goes
/// out only once the batch is durable.
pub(crate) fn handle(
    actor: &mut Actor,
    session: SessionId,
    team: &str,
    name: &str,
    id: u64,
    request: Request,
    out: Outbox,
) {
    let now = Actor::now();
    let ctx = Ctx {
        team,
        actor: name,
        session,
        now,
    };
    actor.board.touch(team, name, now);
    let board = &mut actor.board;
    let result = match request {
        Request::Status(_) => Ok(Reply::Status(Box::new(status::status(actor)))),
        Request::Register(a) => board
            .register(ctx, &a.role, a.pid)
            .map(|x| Reply::Member(Box::new(x))),
        Request::SetStatus(a) => board
            .set_status(ctx, a.status)
            .map(|x| Reply::Member(Box::new(x))),
        Request::AddTask(new) => board.add_task(ctx, new).map(|x| Reply::Task(Box::new(x))),
        Request::ListTasks(a) => Ok(Reply::Tasks(board.tasks(team, a.status))),
        Request::GetTask(r) => match board.task(team, r.id) {
            Ok(task) => {
                let query = Query::Task {
                    task: task.clone(),
                    team: team.to_string(),
                };
                actor.query(&out, id, query);
                return;
            }
            Err(e) => Err(e),
        },
        Request::AddDependency(a) => board
            .add_dependency(ctx, a.id, &a.on)
            .map(|x| Reply::Task(Box::new(x))),
        Request::CancelTask(r) => board
            .cancel_task(ctx, r.id)
            .map(|x| Reply::Task(Box::new(x))),
        Request::RetryTask(r) => board
            .retry_task(ctx, r.id)
            .map(|x| Reply::Task(Box::new(x))),
        Request::ClaimTask(r) => board
            .claim_task(ctx, r.id)
            .map(|x| Reply::Claim(Box::new(x))),
        Request::ClaimNext(_) => board
            .claim_next(ctx)
            .map(|c| Reply::MaybeClaim(c.map(Box::new))),
        Request::CompleteTask(a) => board
            .complete_task(ctx, a.id, a.epoch, a.result)
            .map(|x| Reply::Task(Box::new(x))),
        Request::FailTask(a) => board
            .fail_task(ctx, a.id, a.epoch, a.error)
            .map(|x| Reply::Task(Box::new(x))),
        Request::ReleaseTask(a) => board
            .release_task(ctx, a.id, a.epoch, a.error)
            .map(|x| Reply::Task(Box::new(x))),
        Request::Heartbeat(a) => board
            .heartbeat(ctx, a.id, a.epoch)
            .map(|x| Reply::Task(Box::new(x))),
        Request::Team(_) => Ok(Reply::Members(board.members(team))),
        Request::Send(a) => board
            .send(ctx, &a.to, a.kind, a.content, a.request_id)
            .map(|x| Reply::Message(Box::new(x))),
        Request::Broadcast(a) => board.broadcast(ctx, a.content).map(Reply::Messages),
        Request::Inbox(_) => Ok(Reply::Messages(board.inbox(team, name))),
        Request::Ack(a) => Ok(Reply::Acked(Acked {
            acked: board.ack(ctx, &a.ids),
        })),
        Request::WaitForWork(a) => return wait::wait(actor, ctx, id, a, out),
        Request::Events(a) => {
            let query = Query::Events(HistoryQuery {
                team: team.to_string(),
                since: a.since,
                task: a.task,
                limit: a.limit.unwrap_or(EVENTS_LIMIT).min(EVENTS_MAX),
            });
            actor.query(&out, id, query);
            return;
        }
        Request::Subscribe(_) => {
            subscribe::subscribe(actor, session, team, &out);
            Ok(Reply::Done(Empty {}))
        }
        Request::RecordUsage(a) => board
            .record_usage(ctx, a.task, a.tokens)
            .map(|x| Reply::Member(Box::new(x))),
    };
    actor.reply(&out, id, result.map_err(ErrorBody::from));
}
