//! The JSON routes: a snapshot, what the page re-reads when an event names a
//! task or a member, and the actions.
//!
//! Answers are boardd's JSON passed through untouched, so that fields this
//! server does not know (a member's liveness, a task's landing stage) reach the
//! page as boardd sent them.

use crate::board::Board;
use crate::{ops, task_diff, transcript};
use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::Arc;
use teamboard_protocol::request::{EventsArgs, ListRequestsArgs, ListTasksArgs, NoArgs, TaskRef};
use teamboard_protocol::{ClientError, ErrorCode, Request, RequestState, TaskId};

/// An error as the page shows it: `{"error": {"code", "message"}}`.
pub struct ApiError(StatusCode, Value);

impl ApiError {
    fn new(status: StatusCode, code: &str, message: impl Into<String>) -> ApiError {
        let message = message.into();
        ApiError(
            status,
            json!({ "error": { "code": code, "message": message } }),
        )
    }
}

impl From<ClientError> for ApiError {
    fn from(e: ClientError) -> ApiError {
        match e {
            ClientError::Server(body) => {
                let status = match body.code {
                    ErrorCode::NotFound | ErrorCode::UnknownRecipient => StatusCode::NOT_FOUND,
                    ErrorCode::InvalidArgs => StatusCode::BAD_REQUEST,
                    ErrorCode::PermissionDenied => StatusCode::FORBIDDEN,
                    _ => StatusCode::CONFLICT,
                };
                ApiError(status, json!({ "error": body }))
            }
            other => ApiError::new(StatusCode::BAD_GATEWAY, "boardd", other.to_string()),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.0, Json(self.1)).into_response()
    }
}

type Answer = Result<Json<Value>, ApiError>;

async fn call(board: &Board, request: Request) -> Result<Value, ApiError> {
    Ok(board.client().await?.call_value(request).await?)
}

/// Everything the page shows at first, with the `seq` of the newest event
/// before it was read: the stream starts after it, so an event that lands
/// while the snapshot is read is applied twice at worst, never missed.
pub async fn board(State(board): State<Arc<Board>>) -> Answer {
    let newest = call(
        &board,
        Request::Events(EventsArgs {
            since: None,
            task: None,
            limit: Some(1),
        }),
    )
    .await?;
    let seq = newest
        .as_array()
        .and_then(|events| events.last())
        .and_then(|e| e["seq"].as_u64())
        .unwrap_or(0);
    let tasks = call(&board, Request::ListTasks(ListTasksArgs::default())).await?;
    let team = call(&board, Request::Team(NoArgs {})).await?;
    let requests = call(&board, open_requests()).await?;
    let repo = call(&board, Request::GetRepo(NoArgs {})).await?;
    Ok(Json(json!({
        "team_name": board.team,
        "seq": seq,
        "tasks": tasks,
        "members": team,
        "requests": requests,
        "repo": repo,
    })))
}

fn open_requests() -> Request {
    Request::ListRequests(ListRequestsArgs {
        state: Some(RequestState::Pending),
        ..ListRequestsArgs::default()
    })
}

pub async fn team(State(board): State<Arc<Board>>) -> Answer {
    Ok(Json(call(&board, Request::Team(NoArgs {})).await?))
}

pub async fn requests(State(board): State<Arc<Board>>) -> Answer {
    Ok(Json(call(&board, open_requests()).await?))
}

/// One task with its history and plans.
pub async fn task(State(board): State<Arc<Board>>, Path(id): Path<TaskId>) -> Answer {
    Ok(Json(call(&board, Request::GetTask(TaskRef { id })).await?))
}

/// The task's change as `git diff` prints it, or why there is none.
pub async fn diff(State(board): State<Arc<Board>>, Path(id): Path<TaskId>) -> Answer {
    let client = board.client().await?;
    let task = client.get_task(id).await?.task;
    let repo = client.get_repo().await?;
    // git may take a while on a large worktree: off the async threads.
    let text = tokio::task::spawn_blocking(move || task_diff::text(&task, repo.as_ref()))
        .await
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", e.to_string()))?;
    Ok(Json(match text {
        Ok(diff) => json!({ "diff": cut(diff, id) }),
        Err(why) => json!({ "none": why.to_string() }),
    }))
}

/// The most of a diff the page shows: a browser chokes on a page of megabytes,
/// and a person reads such a diff with git anyway.
const MAX_DIFF: usize = 1024 * 1024;

fn cut(mut diff: String, id: TaskId) -> String {
    if diff.len() <= MAX_DIFF {
        return diff;
    }
    let mut end = MAX_DIFF;
    while !diff.is_char_boundary(end) {
        end -= 1;
    }
    diff.truncate(end);
    diff.push_str(&format!(
        "\n… cut at {} kB; `teamctl task diff {id}` shows it whole\n",
        MAX_DIFF / 1024
    ));
    diff
}

#[derive(Deserialize)]
pub struct Lines {
    lines: Option<usize>,
}

/// The last entries of a teammate's transcript.
pub async fn transcript(
    State(board): State<Arc<Board>>,
    Path(name): Path<String>,
    Query(q): Query<Lines>,
) -> Answer {
    teamboard_protocol::names::validate_name(&name)
        .map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, "invalid_args", e.to_string()))?;
    let path =
        teamboard_protocol::transcript::transcript_path(&board.state_dir, &board.team, &name);
    let lines = q.lines.unwrap_or(50).min(1000);
    let entries = tokio::task::spawn_blocking(move || transcript::tail(&path, lines))
        .await
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", e.to_string()))?;
    Ok(Json(json!({ "entries": entries })))
}

#[derive(Deserialize)]
pub struct Op {
    op: String,
    #[serde(default)]
    args: Option<Value>,
}

/// An action from the page: one op of [`ops::PAGE_OPS`], as the lead.
pub async fn op(State(board): State<Arc<Board>>, Json(op): Json<Op>) -> Answer {
    if !ops::allowed(&op.op) {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "permission_denied",
            format!("the page does not send '{}'", op.op),
        ));
    }
    let request = Request::parse(&op.op, op.args)
        .map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, "invalid_args", e.to_string()))?;
    Ok(Json(call(&board, request).await?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_diffs_are_cut_on_a_character_boundary_and_say_so() {
        assert_eq!(cut("+a\n".into(), 3), "+a\n");
        let long = "é".repeat(MAX_DIFF);
        let shown = cut(long, 3);
        assert!(shown.len() < MAX_DIFF + 100);
        assert!(
            shown.ends_with("`teamctl task diff 3` shows it whole\n"),
            "{}",
            &shown[shown.len() - 80..]
        );
    }
}
