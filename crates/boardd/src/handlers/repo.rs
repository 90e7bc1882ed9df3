//! The ops that need git: each checks what the board can check at once, then
//! hands a job to the repository's worker (`crate::repo`), whose answer
//! `repo_done` applies.

use super::Outcome;
use crate::info::DaemonInfo;
use crate::reply::Reply;
use crate::repo::{Job, Slot, worktrees_dir};
use teamboard_board::{Board, Completion, Ctx, Retried};
use teamboard_protocol::request::{CompleteArgs, SetRepoArgs};
use teamboard_protocol::{ErrorBody, ErrorCode, TaskId};

fn slot(ctx: &Ctx, id: u64) -> Slot {
    Slot {
        session: ctx.session,
        request: id,
        team: ctx.team.to_string(),
        actor: ctx.actor.to_string(),
    }
}

fn refuse(e: impl Into<ErrorBody>) -> Outcome {
    Outcome::Reply(Err(e.into()))
}

pub(super) fn set_repo(
    board: &Board,
    info: &DaemonInfo,
    ctx: Ctx,
    id: u64,
    args: SetRepoArgs,
) -> Outcome {
    if let Err(e) = board.may_set_repo(&ctx) {
        return refuse(e);
    }
    Outcome::Repo(Box::new(Job::SetRepo {
        slot: slot(&ctx, id),
        args,
        worktrees: worktrees_dir(&info.state_dir, ctx.team),
    }))
}

pub(super) fn open_worktree(board: &Board, ctx: Ctx, id: u64, task: u64, epoch: u64) -> Outcome {
    match board.open_job(&ctx, task, epoch) {
        Ok(job) => Outcome::Repo(Box::new(Job::Open {
            slot: slot(&ctx, id),
            job,
        })),
        Err(e) => refuse(e),
    }
}

pub(super) fn complete(board: &mut Board, ctx: Ctx, id: u64, a: CompleteArgs) -> Outcome {
    match board.begin_complete(ctx, a.id, a.epoch, a.result) {
        Ok(Completion::Done(task)) => Outcome::Reply(Ok(Reply::Task(Box::new(task)))),
        Ok(Completion::Gate(job)) => Outcome::Land {
            slot: slot(&ctx, id),
            task: a.id,
            epoch: a.epoch,
            gate: Some(Box::new(Job::Gate { job })),
        },
        Ok(Completion::Review(task)) => Outcome::Reply(Ok(Reply::Task(Box::new(task)))),
        Ok(Completion::Landing) => Outcome::Land {
            slot: slot(&ctx, id),
            task: a.id,
            epoch: a.epoch,
            gate: None,
        },
        Err(e) => refuse(e),
    }
}

/// A person merges a task that waits for review: it joins the merge queue,
/// and the request is answered when it landed or could not.
pub(super) fn merge(board: &mut Board, ctx: Ctx, id: u64, task: TaskId) -> Outcome {
    match board.merge_task(ctx, task) {
        Ok(job) => Outcome::Land {
            slot: slot(&ctx, id),
            task,
            epoch: job.epoch,
            gate: Some(Box::new(Job::Land { job })),
        },
        Err(e) => refuse(e),
    }
}

/// `retry_task`: a failed or cancelled task goes back to pending; a waiting
/// landing is tried again (answered at once, with the task as it is now).
pub(super) fn retry(board: &mut Board, ctx: Ctx, task: u64) -> Outcome {
    match board.retry_task_with(ctx, task) {
        Ok((task, job)) => {
            let reply = Ok(Reply::Task(Box::new(task)));
            let job = job.map(|j| match j {
                Retried::Land(job) => Job::Land { job },
                Retried::Gate(job) => Job::Gate { job },
            });
            match job {
                Some(job) => Outcome::ReplyAndRun(reply, Box::new(job)),
                None => Outcome::Reply(reply),
            }
        }
        Err(e) => refuse(e),
    }
}

pub(super) fn list(board: &Board, ctx: Ctx, id: u64) -> Outcome {
    let Some(repo) = board.repo(ctx.team).cloned() else {
        // A team without a repository has no worktrees: nothing to ask git.
        return Outcome::Reply(Ok(Reply::Worktrees(Vec::new())));
    };
    Outcome::Repo(Box::new(Job::List {
        slot: slot(&ctx, id),
        repo,
        entries: board.worktree_tasks(ctx.team),
    }))
}

pub(super) fn prune(board: &Board, ctx: Ctx, id: u64, dry_run: bool) -> Outcome {
    if ctx.actor != teamboard_protocol::LEAD {
        return refuse(ErrorBody::new(
            ErrorCode::PermissionDenied,
            format!(
                "only the lead may prune worktrees; '{}' is a teammate",
                ctx.actor
            ),
        ));
    }
    let Some(repo) = board.repo(ctx.team).cloned() else {
        return Outcome::Reply(Ok(Reply::Pruned(Box::default())));
    };
    Outcome::Repo(Box::new(Job::Prune {
        slot: slot(&ctx, id),
        repo,
        entries: board.worktree_tasks(ctx.team),
        dry_run,
    }))
}
