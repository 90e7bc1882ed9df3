//! One teammate: its state, and the WORK/IDLE lifecycle that drives it.

use crate::board_text;
use crate::config::Config;
use crate::context::{self, Context, Identity};
use crate::error::Error;
use crate::heartbeat::Heartbeat;
use crate::llm::{self, ChatMessage, Probe, Provider, ToolSpec};
use crate::session::{self, Session};
use crate::tools::{self, LocalEnv};
use crate::transcript::Transcript;
use crate::worktree::TaskTree;
use teamboard_protocol::transcript::{EntryKind, transcript_path};
use teamboard_protocol::{
    Claim, ClientError, LEAD, MemberStatus, MessageKind, RequestId, TaskId, TaskStatus,
};
use tokio_util::sync::CancellationToken;

/// Why a teammate ended on its own terms. Every one of these exits 0.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Exit {
    /// Idle for `--idle-timeout` with nothing to do.
    IdleTimeout,
    /// A `shutdown_request` arrived and was answered.
    ShutdownRequested { by: String },
    /// The process was asked to stop (SIGTERM, SIGINT).
    Terminated,
}

/// Plain words for the transcript and logs (`Debug` is for developers).
impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Exit::IdleTimeout => f.write_str("idle timeout"),
            Exit::ShutdownRequested { by } => write!(f, "shutdown requested by {by}"),
            Exit::Terminated => f.write_str("terminated by a signal"),
        }
    }
}

/// How a task comes before the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Opening {
    /// Taken between work phases: a conversation of its own, unless the teammate
    /// runs with `--carry-context`.
    NewPhase,
    /// Taken at the start of a round within a work phase: added to the
    /// conversation the phase is having.
    InPhase,
    /// Taken by the model's own `claim_task` call: the caller puts the text into
    /// the tool's result. As a user turn of its own it would come between the call
    /// and its result, and both APIs refuse a conversation like that.
    ToolResult,
}

/// Where the plan of the held claim stands, as far as this teammate knows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlanState {
    /// No plan submitted for this claim.
    None,
    /// Submitted as request `id`; the lead has not decided.
    Pending {
        id: RequestId,
        plan: String,
    },
    Approved {
        id: RequestId,
    },
    Rejected {
        id: RequestId,
        feedback: String,
    },
}

/// A shutdown request the model is to answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AskedToLeave {
    pub id: RequestId,
    pub from: String,
}

/// The task the teammate holds.
pub struct Held {
    pub id: TaskId,
    pub epoch: u64,
    pub subject: String,
    pub heartbeat: Heartbeat,
    /// The claim needs an approved plan before bash, write_file and edit_file
    /// open: the task or the teammate was created with `--require-plan`.
    pub needs_plan: bool,
    pub plan: PlanState,
    /// The task's git worktree, once opened: where its tools work.
    pub tree: Option<TaskTree>,
    /// Why boardd last refused to end the task (a failed check, a conflict),
    /// for the history if the teammate gives it back without finishing.
    pub refused: Option<String>,
    /// The text that opened the task (the task, the plan note, the worktree, the
    /// previous owner's note): an agent runtime's first turn.
    pub opening: String,
}

pub struct Teammate {
    pub(crate) cfg: Config,
    pub(crate) session: Session,
    pub(crate) provider: Provider,
    pub(crate) ctx: Context,
    pub(crate) transcript: Transcript,
    /// The tools' environment now: the held task's worktree, or `home`.
    pub(crate) local: LocalEnv,
    /// The tools in the teammate's own `--workdir`, for everything but a task
    /// with a worktree. `local` goes back to it whenever a task ends.
    pub(crate) home: LocalEnv,
    pub(crate) specs: Vec<ToolSpec>,
    pub(crate) held: Option<Held>,
    /// Set when a shutdown request has been answered: the teammate finishes its
    /// current round, gives back its task and exits.
    pub(crate) shutdown: Option<Exit>,
    /// A shutdown request the model has been asked to answer.
    pub(crate) asked_to_leave: Option<AskedToLeave>,
    /// Set by the `idle` tool: the work phase ends after this round.
    pub(crate) idle_requested: bool,
    pub(crate) cancel: CancellationToken,
    /// Compactions so far, to name their archives.
    pub(crate) compactions: u32,
    /// The context length after a compaction that left it over budget.
    pub(crate) compacted_at: Option<usize>,
    /// Work phases in a row that ended in an LLM error; IDLE waits longer before
    /// taking more work after each, so a broken model does not burn the board.
    pub(crate) llm_failures: u32,
    /// Whether going idle next is news for the lead: true at start and once a
    /// task has been held, false once the lead was told. A work phase for a
    /// message alone leaves it false, so answering the lead never makes the
    /// teammate announce again that it is idle.
    pub(crate) announce_idle: bool,
    /// The agent runtime, when the teammate has one (`None`: the native loop).
    pub(crate) agent: Option<crate::work::agent::AgentSetup>,
    /// Messages read while idle, for the agent's next phase.
    pub(crate) agent_inbox: Vec<String>,
    /// The ids of those messages: acknowledged only once the agent took them
    /// (`work::agent`), so that an agent that cannot start loses none.
    pub(crate) agent_unacked: Vec<u64>,
    /// What a wait parked during an agent's phase brought after the phase ended:
    /// IDLE takes it before it waits again.
    pub(crate) stashed: Option<teamboard_protocol::Work>,
    /// Agent phases in a row that failed; IDLE rests longer after each.
    pub(crate) agent_failures: u32,
}

/// Runs a teammate until it exits: registers, then alternates IDLE and WORK.
pub async fn run(cfg: Config, cancel: CancellationToken) -> Result<Exit, Error> {
    let Some((mut teammate, adopted)) = open(cfg, cancel).await? else {
        return Ok(Exit::Terminated);
    };
    // After a boardd restart, the claim our name still holds comes back to us.
    let result = match adopted {
        Some(id) => teammate.resume(id, Opening::NewPhase).await,
        None => Ok(()),
    };
    let result = match result {
        Ok(()) => teammate.lifecycle().await,
        Err(e) => Err(e),
    };
    // However it ends, nothing the tools started outlives the teammate. (On a
    // crash or `kill -9` the guards see to it themselves.)
    teammate.local.guards.stop_all(STOP_TOOLS_WITHIN).await;
    result
}

/// Checks the setup, registers with boardd and builds the teammate, with the
/// task boardd says its name still holds (after a boardd restart). `None` when
/// it was cancelled first.
pub(crate) async fn open(
    cfg: Config,
    cancel: CancellationToken,
) -> Result<Option<(Teammate, Option<TaskId>)>, Error> {
    let workdir = std::fs::canonicalize(&cfg.workdir).map_err(|e| Error::Workdir {
        path: cfg.workdir.display().to_string(),
        message: e.to_string(),
    })?;
    if !workdir.is_dir() {
        return Err(Error::Workdir {
            path: workdir.display().to_string(),
            message: "not a directory".into(),
        });
    }
    let provider = llm::build(&cfg.provider)?;
    // An agent that cannot start stops the teammate here, as a bad model
    // setting does, so `teamctl spawn` fails with the reason.
    let agent = crate::work::agent::setup(&cfg)?;
    // Before registering: a key the server refuses stops the teammate here (the
    // rest of the check is advice, see `llm::probe`), so `teamctl spawn` (which
    // waits for it to connect) fails with the reason instead of a task failing
    // later. An agent runtime does not use the native model.
    let probe = if agent.is_some() {
        Probe::Skipped
    } else {
        tokio::select! {
            _ = cancel.cancelled() => return Ok(None),
            probe = provider.probe() => probe?,
        }
    };
    match &probe {
        Probe::Listed { url } => tracing::info!(%url, "the model API answered"),
        Probe::Unsure(why) => tracing::warn!("{why}"),
        Probe::Skipped => {}
    }
    let who = session::Identity {
        name: cfg.name.clone(),
        role: cfg.role.clone(),
        team: cfg.team.clone(),
        require_plan: cfg.require_plan,
        runtime: (cfg.runtime.kind != crate::runtime::RuntimeKind::Native)
            .then(|| cfg.runtime.kind.to_string()),
    };
    let (session, member) = Session::open(
        cfg.socket.clone(),
        who,
        cfg.reconnect_timeout,
        cancel.clone(),
    )
    .await?;
    tracing::info!(
        name = %cfg.name, role = %cfg.role, team = %cfg.team, provider = provider.name(),
        workdir = %workdir.display(), "registered with boardd"
    );
    let identity = Identity {
        name: cfg.name.clone(),
        role: cfg.role.clone(),
        team: cfg.team.clone(),
        task: None,
        worktree: None,
        lead: false,
    };
    let mut transcript = Transcript::open(transcript_path(&cfg.state_dir, &cfg.team, &cfg.name));
    let started = match &agent {
        Some(a) => format!(
            "started: pid {}, role {}, runtime {} ({}), policy {}, workdir {}",
            std::process::id(),
            cfg.role,
            a.spec.kind,
            a.spec.program.display(),
            a.spec.policy,
            workdir.display()
        ),
        None => format!(
            "started: pid {}, role {}, provider {}, context budget {} tokens, {}, workdir {}",
            std::process::id(),
            cfg.role,
            provider.describe(),
            cfg.context_budget,
            if cfg.carry_context {
                "carried from task to task"
            } else {
                "fresh for each task"
            },
            workdir.display()
        ),
    };
    transcript.write(EntryKind::Lifecycle, None, None, false, &started);
    if let Probe::Unsure(why) = &probe {
        transcript.write(
            EntryKind::Lifecycle,
            None,
            None,
            false,
            &format!("model: {why}"),
        );
    }
    let home = LocalEnv::new(workdir, cfg.shell_timeout);
    let teammate = Teammate {
        local: home.clone(),
        home,
        ctx: Context::new(identity, cfg.context_budget),
        specs: tools::specs::all(),
        cfg,
        session,
        provider,
        transcript,
        held: None,
        shutdown: None,
        asked_to_leave: None,
        idle_requested: false,
        cancel,
        compactions: 0,
        compacted_at: None,
        llm_failures: 0,
        announce_idle: true,
        agent,
        agent_inbox: Vec::new(),
        agent_unacked: Vec::new(),
        stashed: None,
        agent_failures: 0,
    };
    Ok(Some((teammate, member.task)))
}

/// What a teammate is told with a task that needs a plan. The scripted model
/// looks for it.
pub const PLAN_FIRST: &str = "[Runtime] This task needs a plan approved by the lead before \
     you change anything: bash, write_file and edit_file stay closed until then. Look \
     around with read_file and glob, then call submit_plan with your plan; it waits for \
     the lead's decision.";

/// How long teammated waits, on its way out, for its tool commands to be killed.
const STOP_TOOLS_WITHIN: std::time::Duration = std::time::Duration::from_secs(5);

impl Teammate {
    async fn lifecycle(&mut self) -> Result<Exit, Error> {
        loop {
            if let Some(exit) = self.leave_if_free().await {
                return self.exit(exit).await;
            }
            if self.held.is_none()
                && let Some(exit) = self.idle().await?
            {
                return self.exit(exit).await;
            }
            if let Some(exit) = self.work().await? {
                return self.exit(exit).await;
            }
        }
    }

    /// Handles a claim boardd gave back when the session reconnected after a
    /// restart: ours already, or one we never heard of because its answer was lost
    /// in the crash.
    pub(crate) async fn check_adopted(&mut self) -> Result<(), Error> {
        let Some(id) = self.session.take_adopted() else {
            return Ok(());
        };
        match self.task_id() {
            Some(held) if held == id => Ok(()),
            Some(held) => {
                tracing::warn!(
                    held,
                    adopted = id,
                    "boardd gave back a claim we do not hold"
                );
                Ok(())
            }
            // Between two rounds of a work phase.
            None => self.resume(id, Opening::InPhase).await,
        }
    }

    /// Takes over a claim boardd kept for our name across its restart, unless it
    /// has ended since boardd handed it back (the lead cancelled it meanwhile).
    pub(crate) async fn resume(&mut self, id: TaskId, opening: Opening) -> Result<(), Error> {
        let detail = self
            .session
            .call(|c| async move { c.get_task(id).await })
            .await?;
        if detail.task.status != TaskStatus::InProgress
            || detail.task.owner.as_deref() != Some(self.cfg.name.as_str())
        {
            tracing::info!(
                task = id,
                status = %detail.task.status,
                "the claim boardd gave back has ended since; not resuming it"
            );
            return Ok(());
        }
        let claim = Claim {
            epoch: detail.task.epoch,
            task: detail.task,
        };
        if let Err(why) = self.hold(claim, "Claimed", opening).await {
            tracing::warn!(task = id, "not resuming: {why}");
        }
        Ok(())
    }

    /// Takes a claim: starts its heartbeat, opens the task's worktree if it has
    /// one (its tools work there from now on) and puts the task before the model
    /// as `opening` says. Returns the text that opens the task, for a caller that
    /// puts it into a tool's result; `Err` when the task could not be taken up
    /// (its worktree did not open) and is settled already, with what happened.
    pub(crate) async fn hold(
        &mut self,
        claim: Claim,
        how: &str,
        opening: Opening,
    ) -> Result<String, String> {
        let task = claim.task;
        let heartbeat = Heartbeat::start(self.session.clone(), task.id, claim.epoch).await;
        self.announce_idle = true;
        let needs_plan = task.require_plan || self.cfg.require_plan;
        // Held before the worktree opens, which may take a while: the heartbeat
        // keeps the lease, and a failure gives the task back like any other.
        self.held = Some(Held {
            id: task.id,
            epoch: claim.epoch,
            subject: task.subject.clone(),
            heartbeat,
            needs_plan,
            plan: PlanState::None,
            tree: None,
            refused: None,
            opening: String::new(),
        });
        let tree = self.open_tree(&task, claim.epoch).await?;
        let mut blocks = context::task_opening(how, &task);
        if needs_plan && let Some(task_text) = blocks.first_mut() {
            let note = match self.agent {
                Some(_) => crate::prompts::agent::PLAN_FIRST,
                None => PLAN_FIRST,
            };
            task_text.push_str(&format!("\n\n{note}"));
        }
        if let Some(tree) = &tree {
            // Right under the task, before a previous owner's note.
            blocks.insert(1, tree.opening());
            self.local = tree.env(&self.home);
        }
        match opening {
            Opening::ToolResult => {
                self.ctx.begin_task(&task, &[], false);
            }
            Opening::NewPhase | Opening::InPhase => {
                let afresh = opening == Opening::NewPhase && !self.cfg.carry_context;
                let before = self.ctx.begin_task(&task, &blocks, afresh);
                if afresh {
                    self.archive_conversation(task.id, &before);
                }
                for text in &blocks {
                    self.transcript
                        .write(EntryKind::User, None, Some(task.id), false, text);
                }
            }
        }
        self.ctx.identity.worktree = tree.as_ref().map(TaskTree::identity_line);
        if let Some(held) = self.held.as_mut() {
            held.tree = tree;
        }
        let opening = blocks.join("\n\n");
        if let Some(held) = self.held.as_mut() {
            held.opening = opening.clone();
        }
        Ok(opening)
    }

    /// Saves the conversation a new task does not carry on, as compaction saves
    /// the part it summarises, and says so in the transcript. A conversation that
    /// cannot be saved is dropped all the same: the transcript has every turn of
    /// it, and carrying it on would cost every call of the task.
    fn archive_conversation(&mut self, task: TaskId, before: &[ChatMessage]) {
        // Compaction measures its progress in this conversation's length.
        self.compacted_at = None;
        if before.is_empty() {
            return;
        }
        let dir = teamboard_protocol::transcript::teammate_dir(
            &self.cfg.state_dir,
            &self.cfg.team,
            &self.cfg.name,
        );
        let archive = dir.join(format!(
            "context-{}-before-task-{task}.json",
            teamboard_protocol::now_ms()
        ));
        let text = match context::save_archive(&archive, &self.ctx.system(), before) {
            Ok(()) => format!(
                "context: task #{task} starts afresh; the previous conversation ({} messages) is saved in {}",
                before.len(),
                archive.display()
            ),
            Err(e) => {
                tracing::warn!(error = %e, "cannot save the previous conversation");
                format!(
                    "context: task #{task} starts afresh; the previous conversation ({} messages) \
                     could not be saved ({e}) and is in this transcript only",
                    before.len()
                )
            }
        };
        self.transcript
            .write(EntryKind::Lifecycle, None, Some(task), false, &text);
    }

    pub(crate) fn task_id(&self) -> Option<TaskId> {
        self.held.as_ref().map(|h| h.id)
    }

    pub(crate) fn log(&mut self, kind: EntryKind, tool: Option<&str>, is_error: bool, text: &str) {
        let task = self.task_id();
        self.transcript.write(kind, tool, task, is_error, text);
    }

    pub(crate) async fn set_status(&self, status: MemberStatus) -> Result<(), ClientError> {
        self.session
            .call(|c| async move { c.set_status(status).await })
            .await
            .map(|_| ())
    }

    /// Tells the lead something. The lead is always a valid recipient, so a failure
    /// here is the connection, which `call` already retried; log it and go on.
    pub(crate) async fn tell_lead(&self, kind: MessageKind, content: String) {
        let content = &board_text::cap(&content);
        if let Err(e) = self
            .session
            .call(|c| async move { c.send(LEAD, kind, content, None).await })
            .await
        {
            tracing::warn!(error = %e, kind = %kind, "cannot message the lead");
        }
    }

    /// Leaves cleanly: gives back a task still held, marks the member `shutdown`.
    async fn exit(&mut self, exit: Exit) -> Result<Exit, Error> {
        // Leaving is not the task's fault: give it back without using up an attempt.
        self.release(None).await;
        let text = match &exit {
            Exit::IdleTimeout => format!(
                "idle for {}s with nothing to do; shutting down",
                self.cfg.idle_timeout.map(|d| d.as_secs()).unwrap_or(0)
            ),
            Exit::ShutdownRequested { by } => format!("shutting down at {by}'s request"),
            Exit::Terminated => "terminated by a signal; shutting down".to_string(),
        };
        tracing::info!("{text}");
        self.log(EntryKind::Lifecycle, None, false, &text);
        if let Err(e) = self.set_status(MemberStatus::Shutdown).await {
            tracing::warn!(error = %e, "cannot set the status to shutdown");
        }
        Ok(exit)
    }
}
