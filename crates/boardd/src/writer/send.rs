//! Sending what a job owes its clients once its changes are durable: replies,
//! events, and the replies to reads of history. A job whose commit failed gets
//! `storage` errors instead, and its events are dropped: nothing that was not
//! persisted is ever reported.

use super::{Job, Query};
use crate::approx::ApproxLen;
use crate::reply::Reply;
use crate::store::{HistoryQuery, Store};
use teamboard_protocol::{ErrorBody, ErrorCode, TaskDetail};

/// How replies reach the socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Path {
    /// Written by this thread where nothing is queued before them: for a job
    /// answered on the actor's thread (see `outbox`).
    Direct,
    /// Through the connections' write tasks: for the writer thread, which under
    /// load would otherwise hold up the next commit with a write per client.
    Queued,
}

/// Sends a job's replies, events and the replies to its reads. `failure` is why its commit
/// failed, if it did.
pub fn send(store: &mut Store, job: Job, failure: Option<&str>, path: Path) {
    for r in job.replies {
        let result = match failure {
            None => r.result,
            Some(why) => Err(storage_error(Some(why))),
        };
        match path {
            Path::Direct => r.to.reply_direct(r.id, result, r.charge),
            Path::Queued => r.to.reply(r.id, result, r.charge),
        }
    }
    for a in job.admits {
        a.answer(failure.map(|why| storage_error(Some(why)).message));
    }
    // Events dropped here give their charges back as they go.
    if failure.is_none() {
        for e in job.events {
            e.to.event(e.event, e.charge);
        }
        for s in job.stops {
            s.carry_out();
        }
    }
    for q in job.queries {
        let result = match failure {
            None => read(store, q.query),
            Some(why) => Err(storage_error(Some(why))),
        };
        let mut charge = q.charge;
        charge.resize(result.approx_len());
        q.to.reply(q.id, result, charge);
    }
}

/// Answers a job that the writer thread will never see, because it is gone
/// (which only happens after a fatal error).
pub fn refuse(job: Job) {
    for r in job.replies {
        r.to.reply(r.id, Err(storage_error(None)), r.charge);
    }
    for a in job.admits {
        a.answer(Some(storage_error(None).message));
    }
    for q in job.queries {
        q.to.reply(q.id, Err(storage_error(None)), q.charge);
    }
}

fn read(store: &mut Store, query: Query) -> Result<Reply, ErrorBody> {
    let result = match query {
        Query::Task { task, plans, team } => store
            .history(&HistoryQuery {
                team,
                since: None,
                task: Some(task.id),
                limit: u64::MAX,
            })
            .map(|history| {
                Reply::Detail(Box::new(TaskDetail {
                    task: *task,
                    history,
                    plans,
                }))
            }),
        Query::Events(q) => store.history(&q).map(Reply::Events),
    };
    result.map_err(|e| ErrorBody::new(ErrorCode::Storage, e.to_string()))
}

pub fn storage_error(failure: Option<&str>) -> ErrorBody {
    ErrorBody::new(
        ErrorCode::Storage,
        format!(
            "boardd could not persist this change and is stopping; nothing was acknowledged. Cause: {}",
            failure.unwrap_or("an earlier write failed")
        ),
    )
}
