//! `teamctl task complete | fail | submit-plan`: a teammate's own operations on
//! the task it holds, the twins of the MCP tools of the same names. They go
//! through the member socket to the teammate, as the MCP server does, and print
//! what the tool answers. A completion or a failure is taken, not yet carried
//! out: the teammate ends the task once its agent can no longer change it
//! (`teamboard_protocol::member::EndTaken`).

use super::Ctx;
use crate::cli::{SubmitPlanArgs, TaskCompleteArgs, TaskFailArgs, not_in_a_teammate};
use crate::render;
use serde::de::DeserializeOwned;
use teamboard_mcp::MemberClient;
use teamboard_protocol::TeamRequest;
use teamboard_protocol::board_call::BoardCall;
use teamboard_protocol::member::{EndTaken, MemberReply};

pub async fn complete(ctx: &Ctx, args: TaskCompleteArgs) -> anyhow::Result<()> {
    let (task, result) = (Some(args.id), args.result);
    end(
        ctx,
        BoardCall::CompleteTask { task, result },
        "task complete",
    )
    .await
}

pub async fn fail(ctx: &Ctx, args: TaskFailArgs) -> anyhow::Result<()> {
    let (task, reason) = (Some(args.id), args.reason);
    end(ctx, BoardCall::FailTask { task, reason }, "task fail").await
}

/// A completion or a failure: what the teammate will do next.
async fn end(ctx: &Ctx, call: BoardCall, command: &str) -> anyhow::Result<()> {
    if let Some(taken) = call_teammate::<EndTaken>(ctx, &call, command).await? {
        render::line(&taken.next)?;
    }
    Ok(())
}

pub async fn submit_plan(ctx: &Ctx, args: SubmitPlanArgs) -> anyhow::Result<()> {
    let call = BoardCall::SubmitPlan {
        task: Some(args.id),
        plan: args.plan,
    };
    if let Some(r) = call_teammate::<TeamRequest>(ctx, &call, "task submit-plan").await? {
        render::line(&format!(
            "plan for #{} is request r{} ({}); the lead's decision comes as a message",
            args.id, r.id, r.state
        ))?;
    }
    Ok(())
}

/// Carries `call` out through the teammate. Its refusal is the error; with
/// `--json` its value is printed as it came, otherwise given decoded.
async fn call_teammate<T: DeserializeOwned>(
    ctx: &Ctx,
    call: &BoardCall,
    command: &str,
) -> anyhow::Result<Option<T>> {
    let Some(mut client) = MemberClient::from_env() else {
        anyhow::bail!("{}", not_in_a_teammate(command));
    };
    match client.call(&call.to_call()).await? {
        MemberReply::Ok { value } if ctx.json => render::json(&value).map(|()| None),
        MemberReply::Ok { value } => super::decode(&value, call.tool()).map(Some),
        MemberReply::Error { message, .. } => Err(anyhow::anyhow!(message)),
    }
}
