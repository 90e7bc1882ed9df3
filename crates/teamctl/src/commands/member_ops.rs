//! `teamctl task complete | fail | submit-plan`: a teammate's own operations on
//! the task it holds, the twins of the MCP tools of the same names. They go
//! through the member socket to the teammate, as the MCP server does, and print
//! what the tool answers. A completion or a failure is taken, not yet carried
//! out: the teammate ends the task once its agent can no longer change it
//! (`teamboard_protocol::member::EndTaken`).

use super::Ctx;
use crate::cli::{SubmitPlanArgs, TaskCompleteArgs, TaskFailArgs, not_in_a_teammate};
use crate::render;
use teamboard_mcp::MemberClient;
use teamboard_protocol::TeamRequest;
use teamboard_protocol::board_call::BoardCall;
use teamboard_protocol::member::{EndTaken, MemberReply};

pub async fn complete(ctx: &Ctx, args: TaskCompleteArgs) -> anyhow::Result<()> {
    let call = BoardCall::CompleteTask {
        task: Some(args.id),
        result: args.result,
    };
    let value = call_teammate(&call, "task complete").await?;
    if ctx.json {
        return render::json(&value);
    }
    let taken: EndTaken = super::decode(&value, "complete_task")?;
    render::line(&taken.next)?;
    Ok(())
}

pub async fn fail(ctx: &Ctx, args: TaskFailArgs) -> anyhow::Result<()> {
    let call = BoardCall::FailTask {
        task: Some(args.id),
        reason: args.reason,
    };
    let value = call_teammate(&call, "task fail").await?;
    if ctx.json {
        return render::json(&value);
    }
    let taken: EndTaken = super::decode(&value, "fail_task")?;
    render::line(&taken.next)?;
    Ok(())
}

pub async fn submit_plan(ctx: &Ctx, args: SubmitPlanArgs) -> anyhow::Result<()> {
    let call = BoardCall::SubmitPlan {
        task: Some(args.id),
        plan: args.plan,
    };
    let value = call_teammate(&call, "task submit-plan").await?;
    if ctx.json {
        return render::json(&value);
    }
    let r: TeamRequest = super::decode(&value, "submit_plan")?;
    render::line(&format!(
        "plan for #{} is request r{} ({}); the lead's decision comes as a message",
        args.id, r.id, r.state
    ))?;
    Ok(())
}

/// Carries `call` out through the teammate: its value, or its refusal as the
/// error.
async fn call_teammate(call: &BoardCall, command: &str) -> anyhow::Result<serde_json::Value> {
    let Some(mut client) = MemberClient::from_env() else {
        anyhow::bail!("{}", not_in_a_teammate(command));
    };
    match client.call(&call.to_call()).await? {
        MemberReply::Ok { value } => Ok(value),
        MemberReply::Error { message, .. } => Err(anyhow::anyhow!(message)),
    }
}
