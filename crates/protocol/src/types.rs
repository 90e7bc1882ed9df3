//! The board's nouns as they appear on the wire: tasks, members, messages, events.
//!
//! Timestamps are milliseconds since the Unix epoch (UTC). Unknown fields are ignored
//! when decoding, so newer servers can add fields without breaking older clients.

use crate::ids::TaskId;
use crate::task_status::TaskStatus;
use crate::team_request::TeamRequest;
use crate::worktree::{CheckRun, Landing, Worktree};
use serde::{Deserialize, Serialize};

/// Tokens spent on LLM calls.
///
/// Input comes in three kinds, because providers bill them differently: `input` is
/// fresh input (neither read from nor written to a prompt cache), `cache_read` is
/// input served from the provider's prompt cache, and `cache_write` is input the
/// provider wrote to its cache on this call. Their sum is everything the model read.
/// Records written before the cache fields existed decode with them at 0.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenUsage {
    /// Fresh (uncached) input tokens.
    #[serde(default)]
    pub input: u64,
    #[serde(default)]
    pub output: u64,
    /// Input tokens read from the prompt cache.
    #[serde(default)]
    pub cache_read: u64,
    /// Input tokens written to the prompt cache.
    #[serde(default)]
    pub cache_write: u64,
}

impl TokenUsage {
    /// Every input token the model read: fresh, read from the cache and written
    /// to it.
    pub fn all_input(&self) -> u64 {
        self.input
            .saturating_add(self.cache_read)
            .saturating_add(self.cache_write)
    }

    /// Input tokens served from or put into the prompt cache.
    pub fn cached(&self) -> u64 {
        self.cache_read.saturating_add(self.cache_write)
    }

    pub fn total(&self) -> u64 {
        self.all_input().saturating_add(self.output)
    }

    pub fn add(&mut self, other: TokenUsage) {
        self.input = self.input.saturating_add(other.input);
        self.output = self.output.saturating_add(other.output);
        self.cache_read = self.cache_read.saturating_add(other.cache_read);
        self.cache_write = self.cache_write.saturating_add(other.cache_write);
    }
}

/// A unit of work on the board.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Task {
    pub id: TaskId,
    pub subject: String,
    #[serde(default)]
    pub description: String,
    pub status: TaskStatus,
    /// The claimant while in progress; after completion, who completed it.
    #[serde(default)]
    pub owner: Option<String>,
    /// Tasks that must be completed before this one is ready.
    #[serde(default)]
    pub blocked_by: Vec<TaskId>,
    /// Higher runs first. Ties go to the lower id.
    #[serde(default)]
    pub priority: i64,
    /// When set, only claimants of this role may claim the task.
    #[serde(default)]
    pub role: Option<String>,
    /// How many times the task has been claimed.
    #[serde(default)]
    pub attempts: u32,
    /// The completion result.
    #[serde(default)]
    pub result: Option<String>,
    /// The error of the last failed or abandoned attempt.
    #[serde(default)]
    pub last_error: Option<String>,
    /// The fencing token of the current (or last) claim. Complete, fail, release and
    /// heartbeat must quote it.
    #[serde(default)]
    pub epoch: u64,
    /// Tokens spent on this task.
    #[serde(default)]
    pub tokens: TokenUsage,
    /// What they cost.
    #[serde(default, skip_serializing_if = "crate::spend::Cost::is_zero")]
    pub cost: crate::spend::Cost,
    pub created_at: i64,
    pub updated_at: i64,
    /// Whether the task can be claimed now: pending, without an owner, and every
    /// blocker completed. boardd decides it; clients show it and need not work it
    /// out again. The copy in boardd's database is not read back: a restart
    /// computes it afresh.
    #[serde(default)]
    pub ready: bool,
    /// Whoever claims the task must have a plan approved by the lead before it may
    /// change anything, and before the task may complete.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub require_plan: bool,
    /// The note of the last release that gave one: what the previous owner got done
    /// and where it stopped, for the next owner. Cleared when the task completes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handoff: Option<String>,
    /// The task works in the team's directory, not a worktree of its own (a team
    /// with a repository only).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_worktree: bool,
    /// Its worktree and branch, once a claim reserved them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worktree: Option<Worktree>,
    /// Commands that must pass in the worktree before the task may complete,
    /// after the team's own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<String>,
    /// Checks a teammate asked for when it created the task. boardd runs
    /// them as `sh -c` commands, so only the lead decides: they do not run
    /// until the lead accepts them (`accept_checks`), which moves them to
    /// `checks`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub proposed_checks: Vec<String>,
    /// The last run of each check, in the order they ran.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub check_runs: Vec<CheckRun>,
    /// A completion on its way to the target branch: checks running, waiting
    /// for review, or queued.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub landing: Option<Landing>,
    /// Its completion waits for a person's review once its checks pass, even
    /// if the team's repository does not ask for one.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub review: bool,
}

/// A teammate's state as the roster shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[derive(strum::Display, strum::IntoStaticStr)]
#[strum(serialize_all = "snake_case")]
#[cfg_attr(test, derive(strum::VariantArray))]
pub enum MemberStatus {
    Working,
    Idle,
    Offline,
    Shutdown,
}

/// `register`'s answer: the member, and the credential that vouches for it
/// from now on when the session registered with the lead's credential.
/// Absent when the member registered with its own credential, which stays
/// valid, or from a boardd older than credentials.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Registered {
    #[serde(flatten)]
    pub member: Member,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credential: Option<crate::frame::Credential>,
}

/// A teammate on a team's roster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Member {
    pub name: String,
    pub role: String,
    pub status: MemberStatus,
    /// When boardd last heard from the member.
    pub last_seen: i64,
    /// The teammate's process id, as it reported when it registered.
    #[serde(default)]
    pub pid: Option<u32>,
    /// The task it holds, if any.
    #[serde(default)]
    pub task: Option<TaskId>,
    #[serde(default)]
    pub tokens: TokenUsage,
    /// What they cost.
    #[serde(default, skip_serializing_if = "crate::spend::Cost::is_zero")]
    pub cost: crate::spend::Cost,
    /// Why it waits instead of working: a rate limit, a budget. Known to the
    /// running boardd only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting: Option<crate::spend::MemberWait>,
    /// Whether a session is connected for it right now.
    #[serde(default)]
    pub connected: bool,
    pub joined_at: i64,
    /// Every task this teammate claims needs an approved plan (spawned with
    /// `--require-plan`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub require_plan: bool,
    /// The runtime it registered with (`claude`, `codex`, `acp`, ...). `None` is
    /// teammated's own loop, `native`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<String>,
    /// The native loop's model as it registered: `scripted` (the offline
    /// stand-in), or provider and model (`anthropic/claude-sonnet-4-5`).
    /// `None` for an agent, whose model is its own, or an older teammated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Some of `tokens` are estimates, not a provider's count: the scripted model
    /// counts its text, it is billed nothing.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub tokens_estimated: bool,
    /// What boardd knows of its process, as opposed to `status`, the member's
    /// own word. Absent from a boardd that predates it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub liveness: Option<crate::Liveness>,
    /// The sandbox its commands (and its tasks' checks) run in, as it
    /// registered. `None`: a teammated older than the sandbox, unconfined.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<crate::Sandbox>,
}

/// What a message is for. The kinds follow the reference design's protocols.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[derive(strum::Display, strum::IntoStaticStr, strum::EnumString, strum::VariantArray)]
#[strum(serialize_all = "snake_case")]
pub enum MessageKind {
    Message,
    Broadcast,
    ShutdownRequest,
    ShutdownResponse,
    PlanApprovalRequest,
    PlanApprovalResponse,
    IdleNotification,
    Result,
    Error,
}

/// A message in an inbox. It stays there until its recipient acknowledges it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    /// Unique across the whole daemon, never reused.
    pub id: u64,
    pub from: String,
    pub to: String,
    pub kind: MessageKind,
    pub content: String,
    /// Ties a response to its request (shutdown and plan approval).
    #[serde(default)]
    pub request_id: Option<String>,
    pub at: i64,
}

/// A claim handed to a claimant: the task and the epoch to quote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claim {
    pub task: Task,
    pub epoch: u64,
}

/// The answer to `wait_for_work`.
#[allow(
    clippy::large_enum_variant,
    reason = "one is built per wake-up, so boxing the claim would buy nothing but noise"
)]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Work {
    /// Unacknowledged messages for the waiter, oldest first. Inbox comes before tasks.
    Messages { messages: Vec<Message> },
    /// A task boardd claimed for the waiter.
    Task { claim: Claim },
    /// The wait's timeout passed with nothing to do.
    Timeout,
}

/// What changed, in the history and the event stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[derive(strum::Display, strum::IntoStaticStr)]
#[strum(serialize_all = "snake_case")]
#[cfg_attr(test, derive(strum::VariantArray))]
pub enum EventKind {
    TaskCreated,
    DependencyAdded,
    TaskClaimed,
    TaskCompleted,
    /// An attempt ended without completing, and the task went back to pending.
    TaskReleased,
    TaskFailed,
    TaskCancelled,
    TaskRetried,
    /// `edit_task` changed a pending task, or a release that came after boardd
    /// stopped its holder left its note (`release_task`).
    TaskEdited,
    /// `delete_task` removed a pending task; its history stays.
    TaskDeleted,
    MemberRegistered,
    MemberStatus,
    MessageSent,
    MessageAcked,
    UsageRecorded,
    /// The lead set or cleared a spend limit.
    BudgetChanged,
    /// A shutdown or plan request was made.
    RequestOpened,
    /// A request left `pending`: approved, rejected, expired or cancelled.
    RequestSettled,
    /// The lead attached a git repository to the team.
    RepoSet,
    /// A task's worktree was created, or reopened by a new owner.
    WorktreeOpened,
    /// A completion's checks failed (or it could not be committed or updated):
    /// the task stays with its owner.
    ChecksFailed,
    /// A completion passed its checks and joined the merge queue (or a person
    /// merged one that waited for review).
    MergeQueued,
    /// A completion passed its checks and waits for a person's review.
    ReviewRequested,
    /// A person sent a completion that waited for review back to its owner,
    /// with feedback.
    SentBack,
    /// Landing a task met a conflict with the target branch: the task's landing
    /// is `conflict` (or it went back to pending, if its owner was gone).
    MergeConflict,
    /// A queued landing waits for the person's checkout of the target to be
    /// clean (`landing: blocked`).
    LandingBlocked,
    /// `prune_worktrees` removed a task's worktree and branch.
    WorktreePruned,
}

/// One entry of the history: what changed, who did it, and when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Event {
    /// Position in the daemon-wide log; strictly increasing, never reused.
    pub seq: u64,
    pub team: String,
    pub at: i64,
    /// Who caused it: a teammate's name, `lead`, or `boardd` for the daemon itself
    /// (lease expiry, a dropped connection, restart recovery).
    pub actor: String,
    pub kind: EventKind,
    #[serde(default)]
    pub task: Option<TaskId>,
    #[serde(default)]
    pub member: Option<String>,
    #[serde(default)]
    pub message: Option<u64>,
    /// The protocol request it is about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<u64>,
    /// One line for a person.
    pub detail: String,
}

/// A task with its history, as `get_task` returns it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskDetail {
    #[serde(flatten)]
    pub task: Task,
    pub history: Vec<Event>,
    /// The plan requests made for this task, oldest first, whatever their state.
    #[serde(default)]
    pub plans: Vec<TeamRequest>,
}

/// Counts of a team's tasks and members, for `status`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TeamSummary {
    pub name: String,
    pub pending: u64,
    pub ready: u64,
    pub in_progress: u64,
    pub completed: u64,
    pub failed: u64,
    pub cancelled: u64,
    pub members: u64,
    pub connected: u64,
    pub unread_messages: u64,
}

/// The daemon's own state, for `status`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerStatus {
    pub version: String,
    pub protocol: u32,
    pub pid: u32,
    pub uptime_ms: u64,
    pub socket: String,
    pub state_dir: String,
    pub sessions: u64,
    pub teams: Vec<TeamSummary>,
    /// Group commit at work since boardd started. Absent from boardd versions
    /// before it was added, hence the default.
    #[serde(default)]
    pub commits: CommitStats,
}

/// How much group commit has shared out fsyncs, for `status`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommitStats {
    /// Durable transactions committed since boardd started: one fsync each.
    pub transactions: u64,
    /// Requests answered once those transactions were durable (every answer that
    /// waited for one). `requests / transactions` is how many requests one fsync
    /// acknowledged on average: 1 for a lone client, more under load.
    pub requests: u64,
}

/// The answer to `ack`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Acked {
    /// How many of the given ids were removed from the inbox. Already-acknowledged
    /// ids are not an error, so acknowledging twice is safe.
    pub acked: u64,
}

#[cfg(test)]
mod tests {
    use super::TokenUsage;

    #[test]
    fn token_usage_from_before_the_cache_fields_still_decodes() {
        let old: TokenUsage = serde_json::from_str(r#"{"input": 7, "output": 3}"#).unwrap();
        assert_eq!(
            old,
            TokenUsage {
                input: 7,
                output: 3,
                ..TokenUsage::default()
            }
        );
        let none: TokenUsage = serde_json::from_str("{}").unwrap();
        assert_eq!(none, TokenUsage::default());
        let new = serde_json::to_value(TokenUsage {
            input: 1,
            output: 2,
            cache_read: 3,
            cache_write: 4,
        })
        .unwrap();
        assert_eq!(
            new,
            serde_json::json!({"input": 1, "output": 2, "cache_read": 3, "cache_write": 4})
        );
    }

    #[test]
    fn totals_and_sums_count_cached_input() {
        let mut u = TokenUsage {
            input: 10,
            output: 5,
            cache_read: 100,
            cache_write: 20,
        };
        assert_eq!(u.all_input(), 130);
        assert_eq!(u.cached(), 120);
        assert_eq!(u.total(), 135);
        u.add(TokenUsage {
            input: 1,
            output: 2,
            cache_read: 3,
            cache_write: 4,
        });
        assert_eq!(
            u,
            TokenUsage {
                input: 11,
                output: 7,
                cache_read: 103,
                cache_write: 24,
            }
        );
        u.add(TokenUsage {
            cache_read: u64::MAX,
            ..TokenUsage::default()
        });
        assert_eq!(u.cache_read, u64::MAX, "sums saturate");
        assert_eq!(u.total(), u64::MAX);
    }
}
