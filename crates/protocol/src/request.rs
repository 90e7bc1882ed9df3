//! Requests a client can send, with their arguments.
//!
//! On the wire a request is `{"type":"request","id":N,"op":"<name>","args":{...}}`.
//! `args` may be omitted for ops whose arguments are all optional.

use crate::ids::{RequestId, TaskId};
use crate::spend::{AccountRef, BudgetScope, Limits, RateSnapshot};
use crate::task_status::TaskStatus;
use crate::team_request::{RequestKind, RequestState};
use crate::token::{CreateTokenArgs, ListTokensArgs, TokenRef};
use crate::types::{MemberStatus, MessageKind, TokenUsage};
use serde::{Deserialize, Serialize};

/// Every operation boardd understands. The variant name in snake_case is the `op`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", content = "args", rename_all = "snake_case")]
pub enum Request {
    /// The daemon's version, uptime and per-team counts. Answer: `ServerStatus`.
    Status(NoArgs),
    /// Join the team's roster as a teammate under the session's name, which makes the
    /// session a claimant. Answer: `Member`.
    Register(RegisterArgs),
    /// Set the registered member's status. Answer: `Member`.
    SetStatus(SetStatusArgs),
    /// Create a task. Answer: `Task`.
    AddTask(NewTask),
    /// List tasks, optionally only those of one status. Answer: `[Task]`, by id.
    ListTasks(ListTasksArgs),
    /// One task with its history. Answer: `TaskDetail`.
    GetTask(TaskRef),
    /// Make a task wait for others. A cycle is refused. Answer: `Task`.
    AddDependency(AddDependencyArgs),
    /// Withdraw a task (lead). Answer: `Task`.
    CancelTask(CancelArgs),
    /// Change a pending task's subject, description, priority or role (lead).
    /// Answer: `Task`.
    EditTask(EditTaskArgs),
    /// Remove a pending task that nothing waits for and no one worked on (lead).
    /// Answer: `Task`, as it was.
    DeleteTask(TaskRef),
    /// Put a failed or cancelled task back to pending with a fresh attempt count.
    /// Answer: `Task`.
    RetryTask(TaskRef),
    /// Claim one specific ready task. Answer: `Claim`.
    ClaimTask(TaskRef),
    /// Claim the best ready task for the session's role. Answer: `Claim` or `null`.
    ClaimNext(NoArgs),
    /// Finish a claimed task. Answer: `Task`.
    CompleteTask(CompleteArgs),
    /// Report a failed attempt. The task is retried until its attempts run out.
    /// Answer: `Task`.
    FailTask(FailArgs),
    /// Give a claimed task back to pending. Answer: `Task`.
    ReleaseTask(ReleaseArgs),
    /// Extend the claim's lease. Answer: `Task`.
    Heartbeat(ClaimRef),
    /// Say the session is alive, with nothing else to say (a registered member
    /// keeps the `beat_ms` it declared with it). Answer: `{}`.
    Ping(NoArgs),
    /// The team's roster. Answer: `[Member]`, by name.
    Team(NoArgs),
    /// Send a message to one member (or `lead`). Answer: `Message`.
    Send(SendArgs),
    /// Send a message to every member but the sender. Answer: `[Message]`.
    Broadcast(BroadcastArgs),
    /// The session's unacknowledged messages, oldest first. Answer: `[Message]`.
    Inbox(NoArgs),
    /// Acknowledge messages, removing them from the inbox. Answer: `Acked`.
    Ack(AckArgs),
    /// Park until there is a message for the session or a task it may claim; a task is
    /// claimed for it atomically. Answer: `Work`.
    WaitForWork(WaitArgs),
    /// Read the history. Answer: `[Event]`, oldest first.
    Events(EventsArgs),
    /// Start receiving every new event of the session's team as `event` frames.
    /// Answer: `{}` once subscribed; events follow.
    Subscribe(SubscribeArgs),
    /// Take the team's lead seat for this session: one LLM lead (`teamctl lead`)
    /// per team at a time. Refused (`already_connected`) while another open
    /// session holds it; the seat is free again when that session closes.
    /// Answer: `{}`.
    TakeLead(NoArgs),
    /// Add LLM token use to a member and, optionally, a task. Answer: `Member`.
    /// `settle_usage` does the same and says where the budgets stand.
    RecordUsage(UsageArgs),
    /// Before a model call: reserve its worst case against every budget that
    /// covers it, and wait for capacity on the first account of the chain that
    /// is not blocked. Refused (`budget_exhausted`) when a budget has no room
    /// for it. Answer: `Reservation`, once granted.
    ReserveCall(ReserveArgs),
    /// After a model call (or as an agent reports usage): record what it used,
    /// settle its reservation, and tell boardd what the provider said of the
    /// account's limits. With a reservation and no tokens, withdraws it.
    /// Answer: `Settled`.
    SettleUsage(UsageArgs),
    /// Set a spend limit on the team, a teammate or a task (lead only).
    /// Answer: `Budget`.
    SetBudget(SetBudgetArgs),
    /// Remove a spend limit (lead only). Answer: `Budget`, as it was.
    ClearBudget(ClearBudgetArgs),
    /// Each limit with what is spent, reserved and left, and the accounts'
    /// rate limits. Answer: `BudgetReport`.
    Budgets(NoArgs),
    /// Ask a connected teammate to shut down (lead only). Answer: `TeamRequest`.
    RequestShutdown(ShutdownArgs),
    /// Answer the shutdown request addressed to the session. Approving needs the
    /// task given back first. Answer: `TeamRequest`.
    RespondShutdown(RespondShutdownArgs),
    /// Ask the lead to approve a plan for the task the session holds.
    /// Answer: `TeamRequest`.
    SubmitPlan(SubmitPlanArgs),
    /// Approve or reject a pending plan (lead only). Answer: `TeamRequest`.
    ReviewPlan(ReviewPlanArgs),
    /// Withdraw a pending request (lead only). Answer: `TeamRequest`.
    CancelRequest(RequestRef),
    /// One request. Answer: `TeamRequest`.
    GetRequest(RequestRef),
    /// The team's requests, oldest first, optionally filtered. Answer: `[TeamRequest]`.
    ListRequests(ListRequestsArgs),
    /// Attach a git repository and a target branch to the team (lead only).
    /// Answer: `Repo`.
    SetRepo(SetRepoArgs),
    /// The team's repository. Answer: `Repo` or `null`.
    GetRepo(NoArgs),
    /// Create (or reopen) the worktree of the task the session holds.
    /// Answer: `OpenedWorktree`.
    OpenWorktree(ClaimRef),
    /// Every task worktree of the team, with its state and size.
    /// Answer: `[WorktreeEntry]`, by task.
    ListWorktrees(NoArgs),
    /// Remove the worktrees whose work is merged or was discarded (lead only).
    /// Answer: `Pruned`.
    PruneWorktrees(PruneArgs),
    /// Land a task that waits for review through the merge queue (lead only).
    /// Answer: `Task`, once it landed.
    MergeTask(TaskRef),
    /// Return a task that waits for review to its owner with feedback (lead
    /// only). Answer: `Task`.
    SendBack(SendBackArgs),
    /// Take the checks a teammate proposed for a task into its checks, or
    /// (`reject`) drop them (lead only). Answer: `Task`.
    AcceptChecks(AcceptChecksArgs),
    /// Issue a token that vouches for a name, replacing the one it had (lead
    /// only). Answer: `IssuedToken`, the only time the secret is shown.
    CreateToken(CreateTokenArgs),
    /// Revoke a name's token; sessions open with it are refused from their next
    /// request (lead only). Answer: `TokenEntry`, as it was.
    RevokeToken(TokenRef),
    /// The team's tokens, without their secrets (lead only). Answer:
    /// `[TokenEntry]`, by name.
    ListTokens(ListTokensArgs),
}

/// Why a `request` frame's op and args do not make a [`Request`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    #[error("unknown op '{0}'")]
    UnknownOp(String),
    #[error("invalid args for '{op}': {message}")]
    InvalidArgs { op: String, message: String },
}

impl Request {
    /// The wire name of every op, as [`Request::op`] gives them. A test keeps the
    /// two in step.
    pub const OPS: &[&str] = &[
        "status",
        "register",
        "set_status",
        "add_task",
        "list_tasks",
        "get_task",
        "add_dependency",
        "edit_task",
        "delete_task",
        "cancel_task",
        "retry_task",
        "claim_task",
        "claim_next",
        "complete_task",
        "fail_task",
        "release_task",
        "heartbeat",
        "ping",
        "team",
        "send",
        "broadcast",
        "inbox",
        "ack",
        "wait_for_work",
        "events",
        "subscribe",
        "take_lead",
        "record_usage",
        "reserve_call",
        "settle_usage",
        "set_budget",
        "clear_budget",
        "budgets",
        "request_shutdown",
        "respond_shutdown",
        "submit_plan",
        "review_plan",
        "cancel_request",
        "get_request",
        "list_requests",
        "set_repo",
        "get_repo",
        "open_worktree",
        "list_worktrees",
        "prune_worktrees",
        "merge_task",
        "send_back",
        "accept_checks",
        "create_token",
        "revoke_token",
        "list_tokens",
    ];

    /// Whether `op` names a request this version knows, whatever its arguments.
    pub fn is_known_op(op: &str) -> bool {
        Self::OPS.contains(&op)
    }

    /// The request named `op` with its `args`; missing args count as `{}`.
    pub fn parse(op: &str, args: Option<serde_json::Value>) -> Result<Request, RequestError> {
        if !Self::is_known_op(op) {
            return Err(RequestError::UnknownOp(op.to_string()));
        }
        let args = args.unwrap_or_else(|| serde_json::Value::Object(Default::default()));
        let value = serde_json::json!({ "op": op, "args": args });
        serde_json::from_value(value).map_err(|e| RequestError::InvalidArgs {
            op: op.to_string(),
            message: e.to_string(),
        })
    }

    /// The wire name of the op.
    pub fn op(&self) -> &'static str {
        match self {
            Request::Status(_) => "status",
            Request::Register(_) => "register",
            Request::SetStatus(_) => "set_status",
            Request::AddTask(_) => "add_task",
            Request::ListTasks(_) => "list_tasks",
            Request::GetTask(_) => "get_task",
            Request::AddDependency(_) => "add_dependency",
            Request::CancelTask(_) => "cancel_task",
            Request::EditTask(_) => "edit_task",
            Request::DeleteTask(_) => "delete_task",
            Request::RetryTask(_) => "retry_task",
            Request::ClaimTask(_) => "claim_task",
            Request::ClaimNext(_) => "claim_next",
            Request::CompleteTask(_) => "complete_task",
            Request::FailTask(_) => "fail_task",
            Request::ReleaseTask(_) => "release_task",
            Request::Heartbeat(_) => "heartbeat",
            Request::Ping(_) => "ping",
            Request::Team(_) => "team",
            Request::Send(_) => "send",
            Request::Broadcast(_) => "broadcast",
            Request::Inbox(_) => "inbox",
            Request::Ack(_) => "ack",
            Request::WaitForWork(_) => "wait_for_work",
            Request::Events(_) => "events",
            Request::Subscribe(_) => "subscribe",
            Request::TakeLead(_) => "take_lead",
            Request::RecordUsage(_) => "record_usage",
            Request::ReserveCall(_) => "reserve_call",
            Request::SettleUsage(_) => "settle_usage",
            Request::SetBudget(_) => "set_budget",
            Request::ClearBudget(_) => "clear_budget",
            Request::Budgets(_) => "budgets",
            Request::RequestShutdown(_) => "request_shutdown",
            Request::RespondShutdown(_) => "respond_shutdown",
            Request::SubmitPlan(_) => "submit_plan",
            Request::ReviewPlan(_) => "review_plan",
            Request::CancelRequest(_) => "cancel_request",
            Request::GetRequest(_) => "get_request",
            Request::ListRequests(_) => "list_requests",
            Request::SetRepo(_) => "set_repo",
            Request::GetRepo(_) => "get_repo",
            Request::OpenWorktree(_) => "open_worktree",
            Request::ListWorktrees(_) => "list_worktrees",
            Request::PruneWorktrees(_) => "prune_worktrees",
            Request::MergeTask(_) => "merge_task",
            Request::SendBack(_) => "send_back",
            Request::AcceptChecks(_) => "accept_checks",
            Request::CreateToken(_) => "create_token",
            Request::RevokeToken(_) => "revoke_token",
            Request::ListTokens(_) => "list_tokens",
        }
    }
}

/// For ops without arguments. Any fields sent are ignored.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NoArgs {}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RegisterArgs {
    pub role: String,
    #[serde(default)]
    pub pid: Option<u32>,
    /// Every task this teammate claims needs an approved plan.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub require_plan: bool,
    /// What does the teammate's work (`claude`, `codex`, `acp`, ...; see
    /// `docs/runtimes.md`). `None`, or `native`, is teammated's own loop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<String>,
    /// The native loop's model: `scripted`, or `PROVIDER/MODEL`
    /// (`anthropic/claude-sonnet-4-5`). Shown on the roster; see `Member::model`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The member promises to be heard from (any request; `ping` when it has
    /// nothing else to say) at least this often, in ms. boardd calls it
    /// `stalled` once twice this passes in silence. Without it (an older
    /// client), only an expired lease makes it `stalled`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub beat_ms: Option<u64>,
    /// The sandbox its commands run in. `None`: a teammated older than the
    /// sandbox, whose commands run unconfined.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<crate::Sandbox>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SetStatusArgs {
    pub status: MemberStatus,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewTask {
    pub subject: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub blocked_by: Vec<TaskId>,
    #[serde(default)]
    pub priority: i64,
    #[serde(default)]
    pub role: Option<String>,
    /// Whoever claims it must have a plan approved before changing anything.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub require_plan: bool,
    /// Commands that must pass in the task's worktree before it may complete.
    /// The lead's are the task's checks; a teammate's are only proposed
    /// (`Task::proposed_checks`) until the lead accepts them (`accept_checks`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<String>,
    /// Work in the team's directory instead of a worktree of its own (for a task
    /// that only reads, such as a summary).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_worktree: bool,
    /// Once its checks pass, its completion waits for a person's review
    /// (`merge_task` or `send_back`) instead of landing at once.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub review: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListTasksArgs {
    #[serde(default)]
    pub status: Option<TaskStatus>,
    /// Only tasks whose completion is at this stage (`review`: what waits for
    /// a person).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub landing: Option<crate::worktree::LandingStage>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskRef {
    pub id: TaskId,
}

/// `edit_task`: the fields to change; those left out keep their value.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EditTaskArgs {
    pub id: TaskId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i64>,
    /// The role a claimant needs; an empty string lets anyone claim it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CancelArgs {
    pub id: TaskId,
    /// The task's unmerged work may go: `prune_worktrees` removes its worktree and
    /// branch. Without it, they are kept.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub discard: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SetRepoArgs {
    /// A directory inside the repository; boardd resolves its top level.
    pub path: String,
    /// The target branch. It has no default: boardd refuses a request without
    /// it, naming the branch checked out at `path`. boardd moves it without a
    /// checkout, so it must not be checked out anywhere when work lands (detach
    /// it first); `docs/design/worktrees.md` says why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// Default `rebase`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merge: Option<crate::worktree::MergeStyle>,
    /// The team's default checks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<String>,
    /// Default 10 minutes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check_timeout_ms: Option<u64>,
    /// Every completion whose checks pass waits for a person's review.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub review: bool,
}

/// `send_back`: the task, and what its owner should change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SendBackArgs {
    pub id: TaskId,
    pub feedback: String,
}

/// `accept_checks`: the task whose proposed checks the lead decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct AcceptChecksArgs {
    pub id: TaskId,
    /// Drop the proposed checks instead of taking them.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reject: bool,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PruneArgs {
    /// Say what would be removed, and remove nothing.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dry_run: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClaimRef {
    pub id: TaskId,
    pub epoch: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AddDependencyArgs {
    pub id: TaskId,
    pub on: Vec<TaskId>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompleteArgs {
    pub id: TaskId,
    pub epoch: u64,
    #[serde(default)]
    pub result: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailArgs {
    pub id: TaskId,
    pub epoch: u64,
    pub error: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReleaseArgs {
    pub id: TaskId,
    pub epoch: u64,
    /// The attempt went wrong: it counts, and this becomes the task's last error.
    #[serde(default)]
    pub error: Option<String>,
    /// Without `error`: why the task is given back, for its history (the
    /// `task_released` event). The attempt does not count and the last error
    /// stays. Ignored when `error` is given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The note says why the holder gave the task back (its own setup failed),
    /// not how far the task got: it goes into the history only, and does not
    /// become the task's `handoff` for the next owner.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub not_handoff: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SendArgs {
    pub to: String,
    #[serde(default = "default_kind")]
    pub kind: MessageKind,
    pub content: String,
    #[serde(default)]
    pub request_id: Option<String>,
}

fn default_kind() -> MessageKind {
    MessageKind::Message
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BroadcastArgs {
    pub content: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AckArgs {
    pub ids: Vec<u64>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WaitArgs {
    /// Give up after this long and answer `timeout`. None waits until work arrives.
    #[serde(default)]
    pub timeout_ms: Option<u64>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventsArgs {
    /// Only events with a larger `seq`. With `since`, the answer is the *oldest*
    /// `limit` such events, so repeated calls page forward without gaps.
    #[serde(default)]
    pub since: Option<u64>,
    /// Only events of this task.
    #[serde(default)]
    pub task: Option<TaskId>,
    /// At most this many: the newest ones without `since`, the oldest ones after
    /// `since` with it. Default 1,000, at most 100,000.
    #[serde(default)]
    pub limit: Option<u64>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubscribeArgs {}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UsageArgs {
    #[serde(default)]
    pub task: Option<TaskId>,
    pub tokens: TokenUsage,
    /// The counts are estimates (the scripted model's), not a provider's: the
    /// member's `tokens_estimated` is set.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub estimated: bool,
    /// The reservation this call was made under (`reserve_call`'s `id`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reservation: Option<u64>,
    /// The model, as `provider/model`, to price usage made without a
    /// reservation (an agent's). A reservation's model is its account's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The account the call went to, to learn its limits from `rate`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account: Option<String>,
    /// What the provider said of the account's limits with this answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<RateSnapshot>,
    /// A subscription login: the usage costs nothing by itself.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub subscription: bool,
}

/// `reserve_call`'s arguments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReserveArgs {
    /// Chosen by the caller, unique for the member: `settle_usage` names it,
    /// also to withdraw a reservation the caller stopped waiting for.
    pub id: u64,
    /// The task the call works on.
    #[serde(default)]
    pub task: Option<TaskId>,
    /// Input tokens of the prompt about to be sent (an estimate).
    pub input: u64,
    /// The call's output limit.
    pub output: u64,
    /// The accounts to try, in order; the first one that is not blocked is
    /// used. At least one.
    pub chain: Vec<AccountRef>,
}

/// `set_budget`'s arguments: the amounts to set; those left out keep their
/// value on a budget that exists.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SetBudgetArgs {
    #[serde(flatten)]
    pub scope: BudgetScope,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_ms: Option<u64>,
    pub limits: Limits,
}

/// `clear_budget`'s arguments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClearBudgetArgs {
    #[serde(flatten)]
    pub scope: BudgetScope,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_ms: Option<u64>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShutdownArgs {
    pub to: String,
    /// Why, for the teammate (and its model) to weigh.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// How long the teammate has to answer before boardd stops its processes.
    /// Default 120 s; from 1 s to 24 h, or refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// Stop the teammate's processes now, without asking.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub force: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RespondShutdownArgs {
    pub request: RequestId,
    pub approve: bool,
    /// Why a shutdown is refused (required to reject), or a last word on approval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubmitPlanArgs {
    /// The task the session holds.
    pub id: TaskId,
    /// The claim's epoch.
    pub epoch: u64,
    pub plan: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewPlanArgs {
    pub request: RequestId,
    pub approve: bool,
    /// What the teammate should know; required to reject.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feedback: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestRef {
    pub request: RequestId,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListRequestsArgs {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<RequestState>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<RequestKind>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskId>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_ops_are_told_from_unknown_ones() {
        let all = [
            Request::Status(NoArgs {}),
            Request::ClaimNext(NoArgs {}),
            Request::ListTasks(ListTasksArgs::default()),
            Request::Send(SendArgs {
                to: "a".into(),
                kind: MessageKind::Message,
                content: String::new(),
                request_id: None,
            }),
        ];
        for r in all {
            assert!(Request::is_known_op(r.op()), "{}", r.op());
        }
        assert!(!Request::is_known_op("frobnicate"));
        assert!(!Request::is_known_op(""));
    }

    /// Every name in `OPS` is a variant serde knows, and `op()` gives it back, so
    /// the list and the enum cannot drift apart unnoticed.
    #[test]
    fn the_list_of_ops_matches_the_enum() {
        let mut seen = std::collections::BTreeSet::new();
        for op in Request::OPS {
            assert!(seen.insert(*op), "{op} listed twice");
            let probe = serde_json::json!({ "op": op, "args": null });
            match serde_json::from_value::<Request>(probe) {
                Ok(r) => assert_eq!(r.op(), *op),
                Err(e) => assert!(
                    !e.to_string().starts_with("unknown variant"),
                    "{op} is not a variant: {e}"
                ),
            }
        }
        // And nothing is missing: serde names every variant when it refuses one.
        let probe = serde_json::json!({ "op": "frobnicate", "args": null });
        let e = serde_json::from_value::<Request>(probe).expect_err("unknown");
        let listed = e.to_string();
        for op in Request::OPS {
            assert!(listed.contains(&format!("`{op}`")), "{listed}");
        }
        assert_eq!(
            listed.matches('`').count() / 2,
            Request::OPS.len() + 1,
            "{listed}"
        );
    }

    #[test]
    fn parse_tells_an_unknown_op_from_bad_args() {
        assert_eq!(
            Request::parse("frobnicate", None),
            Err(RequestError::UnknownOp("frobnicate".into()))
        );
        let bad = Request::parse("get_task", Some(serde_json::json!({"id": "7"})));
        assert!(
            matches!(&bad, Err(RequestError::InvalidArgs { op, .. }) if op == "get_task"),
            "{bad:?}"
        );
        assert_eq!(
            Request::parse("claim_next", None),
            Ok(Request::ClaimNext(NoArgs {}))
        );
    }
}
