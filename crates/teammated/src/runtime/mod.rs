//! Runtimes: what carries out a teammate's WORK phase.
//!
//! The `native` runtime is teammated's own model loop (`crate::work`). The others
//! drive an agent people already use, through its structured interface, never a
//! terminal: Claude Code's JSON streams ([`claude`]), Codex's app-server
//! ([`codex`]) and any Agent Client Protocol agent ([`acp`]). The board side of
//! the teammate (claims, leases, the inbox, plans, shutdown, results) stays
//! teammated's in every runtime: `crate::work::agent` maps board events onto an
//! [`Agent`] and its [`AgentEvent`]s back onto the board. `docs/runtimes.md` has
//! the mapping for users; `docs/design/runtimes.md` says why it is built this way.
//!
//! Data flows one way: `work::agent` owns an [`Agent`], calls its methods for what
//! the board says, and reads [`AgentEvent`]s from it. A driver never touches the
//! board. [`Agent`] is the same handle for every runtime (`handle.rs`); each
//! runtime's `start` puts its own driver task behind it.

pub mod acp;
pub mod claude;
pub mod codex;
mod error;
mod handle;
pub mod jail;
pub mod jsonrpc;
pub mod process;
pub mod sessions;

pub use error::AgentError;
pub use handle::Agent;
use process::Launch;
use std::path::PathBuf;
use teamboard_protocol::TokenUsage;
use teamboard_protocol::spend::MicroUsd;
pub use teamboard_protocol::{AgentPolicy, RuntimeKind};

/// How to start a teammate's agent: the same for every task.
#[derive(Debug, Clone)]
pub struct AgentSpec {
    pub kind: RuntimeKind,
    /// The program: `--agent-cmd`, or the runtime's default looked up on PATH.
    pub program: PathBuf,
    /// `--agent-arg`s, after the arguments teammated passes itself.
    pub extra_args: Vec<String>,
    /// `--max-rounds`: Claude Code's `--max-turns`, and the bound on turns for the
    /// others.
    pub max_turns: u32,
    /// `--agent-model`, when given: passed to the agent as its model (Claude
    /// Code's `--model`, Codex's thread `model`; ACP has no way to pass one).
    /// Never the native loop's `--model`: an agent keeps its own default.
    pub model: Option<String>,
    pub policy: AgentPolicy,
    /// Extra environment for the agent: its API key, base URLs, the board's
    /// variables (`TEAMBOARD_MEMBER_SOCKET`, ...). Added to teammated's own.
    pub env: Vec<(String, String)>,
    /// teammated's process guard (`tools::guard::program`), or `None` in a test
    /// binary: the agent then gets only its own process group and PDEATHSIG.
    pub guard: Option<PathBuf>,
    /// The teammate's sandbox, which the whole agent process runs in
    /// ([`jail::for_agent`]); `None`: unconfined.
    pub jail: Option<teamboard_sandbox::Jail>,
}

impl AgentSpec {
    /// How to start the program for `brief`: the runtime's own `args` and
    /// `env` first, then the user's (`--agent-arg`s, the spec's environment),
    /// in the task's cwd, under the guard.
    fn launch(&self, brief: &Brief, args: Vec<String>, env: Vec<(String, String)>) -> Launch {
        let mut launch = Launch {
            program: self.program.clone(),
            args,
            cwd: brief.cwd.clone(),
            env,
            env_remove: Vec::new(),
            guard: self.guard.clone(),
            jail: None,
        };
        launch.args.extend(self.extra_args.iter().cloned());
        launch.env.extend(self.env.iter().cloned());
        launch.jail = self
            .jail
            .as_ref()
            .map(|j| jail::for_agent(j, &brief.cwd, &launch.env));
        launch
    }
}

/// The board's MCP server, as the agent is to start it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpServer {
    pub command: PathBuf,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
}

/// What one task brings to an agent.
#[derive(Debug, Clone)]
pub struct Brief {
    /// The task's id, to name things after.
    pub task: u64,
    /// Where the agent works: the task's worktree, or the teammate's workdir.
    pub cwd: PathBuf,
    /// The session to resume, if this task had one with this teammate.
    pub resume: Option<String>,
    /// Who the agent is and how the board works: a system prompt where the
    /// agent takes one (Claude Code's `--append-system-prompt`, Codex's
    /// `developerInstructions`), else the head of the first turn.
    pub identity: String,
    /// The first user turn: the task, or, on a resume, what happened since.
    pub prompt: String,
    /// The claim needs an approved plan before anything changes.
    pub plan_first: bool,
    /// The board's MCP server, for the agent's configuration.
    pub mcp: Option<McpServer>,
    /// Dollars left under the tightest dollar limit that covers the work, for
    /// an agent that keeps a spend cap of its own (Claude Code's
    /// `--max-budget-usd`, on an API key).
    pub usd_cap: Option<MicroUsd>,
}

/// The tag of the first input, the brief's prompt: its
/// [`AgentEvent::Delivered`] comes once the agent took it, as for an input sent
/// with [`Agent::send`] (whose tags start at 1).
pub const FIRST_INPUT: u64 = 0;

/// What an agent reports. Drivers send these in order; nothing is lost when
/// the reader is slow.
#[derive(Debug, Clone, PartialEq)]
pub enum AgentEvent {
    /// The session is open: its id, and whether it was resumed (false: a new
    /// one, `why_new` says why when a resume was asked for and failed).
    Session {
        id: String,
        resumed: bool,
        why_new: Option<String>,
    },
    /// Text the agent said, for the transcript.
    Said(String),
    /// The agent called a tool, for the transcript.
    ToolCall { name: String, input: String },
    /// Input sent with [`Agent::send`] (its tag), or the first input
    /// ([`FIRST_INPUT`]), is now in the agent's conversation: the messages it
    /// carries can be acknowledged.
    Delivered(u64),
    /// Tokens used since the last report: one model call's where the agent
    /// says them as it goes, else a turn's.
    Usage(Usage),
    /// The account the agent runs on reached a usage limit: no call on it
    /// before the reset. The turn fails next; this comes first.
    LimitReached(Limit),
    /// The agent stopped itself at the spend cap it was given (Claude Code's
    /// `--max-budget-usd`), saying this.
    OverBudget(String),
    /// The agent asks the lead to approve this plan and waits for
    /// [`Agent::answer_plan`].
    PlanProposed(String),
    /// A turn ended, and nothing sent to the agent is pending: `answer` is its
    /// final answer.
    Idle { answer: String },
    /// A turn ended with input waiting for the next turn (a message that came
    /// while it ran): its final answer, which stays the task's result if the
    /// turns after it only answer messages. No `Idle` for it.
    TurnEnded { answer: String },
    /// The agent reported an error that ends its work: an API error, its turn
    /// limit, a refusal. The process may still run; the caller stops it.
    Failed(String),
    /// The process ended. `status`: how (an exit code or a signal);
    /// `stderr`: its last lines.
    Exited { status: String, stderr: String },
}

/// Usage an agent reported, as the ledger wants it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Usage {
    pub tokens: TokenUsage,
    /// The model, named as the price table names it (`anthropic/MODEL` for
    /// Claude Code, `openai/MODEL` for Codex, an ACP agent's as it gave it),
    /// when the agent said.
    pub model: Option<String>,
    /// The subscription login it ran on (`claude-subscription`,
    /// `codex-chatgpt`): its tokens count and its reset windows hold, but a
    /// call costs nothing by itself. `None`: paid per call (an API key).
    pub subscription: Option<String>,
    /// The agent's turn ends with this call (its answer comes next): a
    /// budget it exhausts has no more calls of the turn to stop.
    pub ends_turn: bool,
}

/// A usage limit an agent's account reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limit {
    /// The account, named for the login (`claude-subscription`,
    /// `codex-chatgpt`): its block is shared by every teammate that names it.
    pub account: String,
    /// The model it was calling, as [`Usage::model`] names it.
    pub model: Option<String>,
    /// When it resets, in ms since the epoch, if the agent said.
    pub until_ms: Option<i64>,
    /// Which limit, in the agent's words (`five_hour`, `usage_limit_reached`).
    pub reason: String,
}

/// `why` an agent failed, with its last stderr lines when it said anything.
pub fn with_tail(why: String, stderr: &str) -> String {
    match stderr.trim() {
        "" => why,
        tail => format!("{why}; its last stderr lines:\n{tail}"),
    }
}

/// The lead's approval as the agent's next input, where the runtime has no
/// answer of its own to give it (Claude Code and ACP agents).
pub fn approved_note(feedback: &str) -> String {
    match feedback.trim() {
        "" => "[Runtime] The lead approved your plan. Carry it out now.".to_string(),
        note => format!("[Runtime] The lead approved your plan, with this note: {note}"),
    }
}

/// The lead's decision on a plan the agent proposed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlanAnswer {
    Approved { feedback: String },
    Rejected { feedback: String },
}

impl Agent {
    /// Starts the agent for a task: spawns it under the guard and opens (or
    /// resumes) the task's session with `brief.prompt` as its first input. The
    /// session id comes as the first [`AgentEvent::Session`].
    pub async fn start(spec: &AgentSpec, brief: Brief) -> Result<Agent, AgentError> {
        match spec.kind {
            RuntimeKind::Claude => claude::start(spec, brief).await,
            RuntimeKind::Codex => codex::start(spec, brief).await,
            RuntimeKind::Acp => acp::start(spec, brief).await,
            RuntimeKind::Native => Err(AgentError::Start(
                "the native runtime runs no agent process".into(),
            )),
        }
    }
}
