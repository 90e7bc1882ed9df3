//! The board tools an agent calls through the member socket, carried out with
//! the teammate's session and claim. Each answers with the JSON its `teamctl`
//! twin prints with `--json` (docs/runtimes.md lists the twins): boardd's answer
//! as it came, or, for the calls that end the held task, the task as boardd
//! ended it.
//!
//! `complete_task` and `fail_task` do not end the held task here: the agent that
//! calls them still runs, and a task that ended could land, or go to its next
//! owner, while the agent writes on in its worktree. They answer what the
//! teammate will do ([`EndTaken`]) and hand the end to the work loop
//! ([`Answered::ends`]), which carries it out through [`Outcome::end`], exactly as
//! the native loop's tools do (the same completion gate, the same refusal text,
//! the same result for the lead): a completion once the agent's turn has ended,
//! a failure once the agent has been stopped.
//!
//! `submit_plan` submits and returns the plan request at once. It must not wait
//! for the decision as the native tool does: the work loop is the one that reads
//! the inbox, and it is blocked while a call is carried out. The decision comes
//! to the agent from the work loop (`Agent::answer_plan`).

use super::{Outcome, PlanState, Teammate};
use teamboard_protocol::board_call::BoardCall;
use teamboard_protocol::member::{EndTaken, MemberCall, MemberReply, TaskEnd};
use teamboard_protocol::request::{ListTasksArgs, RequestRef, SendArgs, SubmitPlanArgs, TaskRef};
use teamboard_protocol::transcript::EntryKind;
use teamboard_protocol::{ClientError, ErrorCode, MessageKind, Request, TaskId, TeamRequest};

/// How many bytes of an answer go into the transcript.
const LOGGED: usize = 2000;

/// A call carried out for the agent.
pub(crate) struct Answered {
    /// For the agent.
    pub reply: MemberReply,
    /// The end of the held task the agent asked for, for the work loop to
    /// carry out once the agent can no longer change the task.
    pub ends: Option<Outcome>,
}

impl From<MemberReply> for Answered {
    fn from(reply: MemberReply) -> Answered {
        Answered { reply, ends: None }
    }
}

impl Teammate {
    /// Carries out one call, and writes its outcome into the transcript.
    pub(crate) async fn member_call(&mut self, call: MemberCall) -> Answered {
        let task = self.task_id();
        let answered = match BoardCall::parse(&call) {
            Ok(parsed) => self.board_call(parsed).await,
            Err(bad) => MemberReply::error(bad.0).into(),
        };
        let (is_error, text) = match &answered.reply {
            MemberReply::Ok { value } => (
                false,
                teamboard_protocol::text::byte_prefix_with_ellipsis(&value.to_string(), LOGGED),
            ),
            MemberReply::Error { message, .. } => (true, message.clone()),
        };
        self.transcript.write(
            EntryKind::ToolResult,
            Some(&call.tool),
            task,
            is_error,
            &text,
        );
        answered
    }

    async fn board_call(&mut self, call: BoardCall) -> Answered {
        let reply = match call {
            BoardCall::ListTasks { status } => {
                self.ask(Request::ListTasks(ListTasksArgs {
                    status,
                    landing: None,
                }))
                .await
            }
            BoardCall::GetTask { id, claim } => {
                if claim && self.task_id() != Some(id) {
                    return MemberReply::error(self.no_claiming(id)).into();
                }
                self.ask(Request::GetTask(TaskRef { id })).await
            }
            BoardCall::CreateTask(task) => self.ask(Request::AddTask(task)).await,
            BoardCall::SendMessage { to, text } => {
                self.ask(Request::Send(SendArgs {
                    to,
                    kind: MessageKind::Message,
                    content: text,
                    request_id: None,
                }))
                .await
            }
            BoardCall::CompleteTask { task, result } => {
                if let Some(refused) = self.not_held(task, "complete") {
                    return refused.into();
                }
                if let Some(refused) = self.plan_not_approved() {
                    return refused.into();
                }
                return self.end_taken(Outcome::Complete(result));
            }
            BoardCall::FailTask { task, reason } => {
                if let Some(refused) = self.not_held(task, "fail") {
                    return refused.into();
                }
                return self.end_taken(Outcome::Fail(reason));
            }
            BoardCall::SubmitPlan { task, plan } => {
                if let Some(refused) = self.not_held(task, "plan for") {
                    return refused.into();
                }
                self.submit_plan_now(plan).await
            }
        };
        reply.into()
    }

    /// The answer to `complete_task` or `fail_task` of the held task: the end,
    /// taken for the work loop.
    fn end_taken(&self, outcome: Outcome) -> Answered {
        let task = self.task_id().unwrap_or_default();
        let (end, next) = match &outcome {
            Outcome::Complete(_) => (
                TaskEnd::Complete,
                format!(
                    "{} completes task #{task} with this result when your turn ends: end it \
                     now. If the completion gate refuses (a check fails, the branch \
                     conflicts), the refusal starts your next turn: fix that and end \
                     it.",
                    self.cfg.name
                ),
            ),
            Outcome::Fail(_) => (
                TaskEnd::Fail,
                format!(
                    "{} stops you now and then gives task #{task} up with this reason.",
                    self.cfg.name
                ),
            ),
        };
        let taken = EndTaken { task, end, next };
        let reply = match serde_json::to_value(&taken) {
            Ok(value) => MemberReply::Ok { value },
            Err(e) => return MemberReply::error(format!("cannot answer: {e}")).into(),
        };
        Answered {
            reply,
            ends: Some(outcome),
        }
    }

    /// The refusal of a completion while the claim's plan is not approved, as
    /// far as this teammate knows (boardd checks again when the task ends).
    fn plan_not_approved(&self) -> Option<MemberReply> {
        let held = self.held.as_ref()?;
        let why = match &held.plan {
            _ if !held.needs_plan => return None,
            PlanState::Approved { .. } => return None,
            PlanState::None => "no plan has been submitted; submit_plan first".to_string(),
            PlanState::Pending { id, .. } => {
                format!("the plan (request r{id}) is still pending; wait for the lead's decision")
            }
            PlanState::Rejected { id, feedback } => {
                format!("the plan (request r{id}) was rejected ({feedback}); submit a new plan")
            }
        };
        Some(MemberReply::error(format!(
            "task #{} needs an approved plan before it completes: {why}",
            held.id
        )))
    }

    /// Sends `request` with the teammate's session; boardd's answer as it came.
    async fn ask(&self, request: Request) -> MemberReply {
        let request = &request;
        match self
            .session
            .call(|c| async move { c.call_value(request.clone()).await })
            .await
        {
            Ok(value) => MemberReply::Ok { value },
            Err(e) => refused(e),
        }
    }

    /// The refusal when the call names a task other than the held one, or none
    /// is held.
    fn not_held(&self, named: Option<TaskId>, verb: &str) -> Option<MemberReply> {
        match (self.task_id(), named) {
            (None, _) => Some(MemberReply::error(format!(
                "you hold no task, so there is nothing to {verb}: {} has ended it, or is \
                 not working on one (see list_tasks)",
                self.cfg.name
            ))),
            (Some(held), Some(named)) if held != named => Some(MemberReply::error(format!(
                "you hold task #{held}, not #{named}; you can only {verb} the task you hold"
            ))),
            _ => None,
        }
    }

    /// Why `get_task` with `claim` is refused: the teammate claims for its agent.
    fn no_claiming(&self, id: TaskId) -> String {
        let now = match self.task_id() {
            Some(held) => {
                format!("you work on #{held}; finish it with complete_task or fail_task first")
            }
            None => "it takes the next ready task when it is free".to_string(),
        };
        format!(
            "cannot claim #{id}: {} claims tasks for you, one at a time ({now}). claim is for \
             a person's own session.",
            self.cfg.name
        )
    }

    /// Submits the plan of the held claim and returns the request without
    /// waiting for the decision. The plan already pending, or an approved one,
    /// is answered with its request rather than submitted again.
    async fn submit_plan_now(&mut self, plan: String) -> MemberReply {
        let Some(held) = &self.held else {
            return MemberReply::error("you hold no task, so there is nothing to plan");
        };
        let (task, epoch) = (held.id, held.epoch);
        let plan = plan.trim().to_string();
        let known = match &held.plan {
            PlanState::Pending { id, plan: pending } if *pending == plan => Some(*id),
            PlanState::Approved { id } => Some(*id),
            _ => None,
        };
        if let Some(request) = known {
            return self.ask(Request::GetRequest(RequestRef { request })).await;
        }
        let args = &SubmitPlanArgs {
            id: task,
            epoch,
            plan: plan.clone(),
        };
        let value = match self
            .session
            .call(|c| async move { c.call_value(Request::SubmitPlan(args.clone())).await })
            .await
        {
            Ok(value) => value,
            Err(e) if e.code() == Some(ErrorCode::StaleEpoch) => {
                return MemberReply::Error {
                    code: e.code(),
                    message: format!("your claim on #{task} is gone ({e}); stop working on it"),
                };
            }
            Err(e) => return refused(e),
        };
        match serde_json::from_value::<TeamRequest>(value.clone()) {
            Ok(req) => self.plan_submitted(req.id, plan, "the agent waits"),
            Err(e) => tracing::warn!(error = %e, "boardd's answer to submit_plan is not a request"),
        }
        MemberReply::Ok { value }
    }
}

/// boardd's refusal, with its code.
fn refused(e: ClientError) -> MemberReply {
    MemberReply::Error {
        code: e.code(),
        message: format!("boardd refused: {e}"),
    }
}

#[cfg(test)]
mod tests;
