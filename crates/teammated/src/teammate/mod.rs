//! One teammate's board side: its session with boardd, the task it holds, what
//! the team asks of it, and its transcript.
//!
//! [`Teammate`] is what every kind of work shares: the native model loop and an
//! agent runtime (`crate::work`) both take a task from here, report through
//! here, and are told here what the team wants. Its fields are this module's
//! own; the work reaches them through the methods below, and hands what it is
//! given (a task, messages) to an [`Intake`]. Imports run one way: the work
//! knows the board side; the board side knows the work only as an `Intake`.
//!
//! - [`held`]: taking a claim, its worktree ([`tree`]), and letting it go;
//! - [`end`]: ending the held task on the board;
//! - [`idle`]: IDLE, waiting on boardd for messages or a task;
//! - [`messages`]: what the team's messages ask, shutdown and plan requests;
//! - [`plan`]: the plan gate, `submit_plan`'s wait, answering a shutdown;
//! - [`board`]: the native loop's board tools, carried out;
//! - [`member`]: an agent's board calls on the member socket, carried out.

mod agent_spend;
mod board;
mod end;
mod held;
mod idle;
mod member;
mod messages;
mod plan;
#[cfg(test)]
mod tests;
mod tree;

pub(crate) use end::Outcome;
pub use held::{Held, PlanState};
pub(crate) use messages::{is_protocol, message_text, read_messages};

use crate::board_text;
use crate::config::Config;
use crate::context::Identity;
use crate::error::Error;
use crate::session::{self, Session};
use crate::tools::LocalEnv;
use crate::transcript::Transcript;
use std::path::PathBuf;
use teamboard_protocol::transcript::{EntryKind, transcript_path};
use teamboard_protocol::{ClientError, LEAD, MemberStatus, MessageKind, RequestId, TaskId, Work};
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

/// A shutdown request the model is to answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AskedToLeave {
    pub id: RequestId,
    pub from: String,
}

/// Where the work takes what the board side hands it: a task just taken, the
/// messages read for it. The native loop's context takes them at once; an agent
/// runtime keeps them for its next phase.
pub(crate) trait Intake {
    /// A task was taken: `opening` is its text, block by block. `fresh`: taken
    /// between work phases, rather than within one.
    fn begin_task(&mut self, t: &mut Teammate, opening: &[String], fresh: bool);

    /// The texts of messages read for the model. `ordinary` are the ids of the
    /// ordinary messages among them: `true` when the work acknowledges those
    /// itself, once it has them (until then a crash delivers them again).
    fn hear(&mut self, texts: &[String], ordinary: &[u64]) -> bool;

    /// What a wait parked during the last work phase brought after it ended,
    /// for IDLE to take before it waits again.
    fn stashed(&mut self) -> Option<Work>;
}

/// A teammate's board side.
pub struct Teammate {
    /// What it was started with: its name, team, limits and paths.
    cfg: Config,
    /// The session with boardd, kept open across boardd's restarts.
    session: Session,
    /// `teamctl logs NAME`: the lifecycle, and what the work logs through it.
    transcript: Transcript,
    /// The tools in the teammate's own `--workdir`: where a task without a
    /// worktree of its own works.
    home: LocalEnv,
    /// The task held, with its fence (the claim's epoch), heartbeat, plan and
    /// worktree.
    held: Option<Held>,
    /// A shutdown request the model is asked to answer.
    asked_to_leave: Option<AskedToLeave>,
    /// Set once a shutdown request has been answered: the teammate finishes its
    /// round, gives back its task and exits.
    shutdown: Option<Exit>,
    /// Cancelled when the process is asked to stop.
    cancel: CancellationToken,
    /// Whether going idle next is news for the lead: true at start and once a
    /// task has been held, false once the lead was told. A work phase for a
    /// message alone leaves it false, so answering the lead never makes the
    /// teammate announce again that it is idle.
    announce_idle: bool,
    /// Work phases in a row that failed (the model, the agent); IDLE waits
    /// longer before taking more work after each, so that a broken model does
    /// not burn the board.
    failures: u32,
}

/// How long teammated waits, on its way out, for its tool commands to be killed.
const STOP_TOOLS_WITHIN: std::time::Duration = std::time::Duration::from_secs(5);

impl Teammate {
    /// Registers with boardd and writes `started` (and `unsure`, a doubt about
    /// the model) as the transcript's first lines. Also returns the task boardd
    /// says the name still holds (after a boardd restart).
    pub(crate) async fn open(
        mut cfg: Config,
        workdir: PathBuf,
        cancel: CancellationToken,
        started: &str,
        unsure: Option<&str>,
    ) -> Result<(Teammate, Option<TaskId>), Error> {
        let native = cfg.runtime.kind == crate::runtime::RuntimeKind::Native;
        let who = session::Identity {
            name: cfg.name.clone(),
            role: cfg.role.clone(),
            team: cfg.team.clone(),
            require_plan: cfg.require_plan,
            runtime: (!native).then(|| cfg.runtime.kind.to_string()),
            model: native.then(|| crate::llm::model_label(&cfg.provider)),
            sandbox: cfg.sandbox,
        };
        let endpoint = (cfg.connect.clone())
            .unwrap_or_else(|| teamboard_protocol::Endpoint::Unix(cfg.socket.clone()));
        let (session, member) = Session::open(
            endpoint,
            who,
            cfg.lead_key.take(),
            cfg.reconnect_timeout,
            cancel.clone(),
        )
        .await?;
        tracing::info!(
            name = %cfg.name, role = %cfg.role, team = %cfg.team,
            workdir = %workdir.display(), "registered with boardd"
        );
        let mut transcript =
            Transcript::open(transcript_path(&cfg.state_dir, &cfg.team, &cfg.name));
        transcript.write(EntryKind::Lifecycle, None, None, false, started);
        if let Some(why) = unsure {
            transcript.write(
                EntryKind::Lifecycle,
                None,
                None,
                false,
                &format!("model: {why}"),
            );
        }
        let jail = crate::sandbox::jail(&cfg, &workdir, &session).await?;
        let teammate = Teammate {
            home: LocalEnv::new(workdir, cfg.shell_timeout).sandboxed(&jail),
            cfg,
            session,
            transcript,
            held: None,
            asked_to_leave: None,
            shutdown: None,
            cancel,
            announce_idle: true,
            failures: 0,
        };
        Ok((teammate, member.task))
    }

    /// The sandbox of the teammate's commands, in its own workdir.
    pub(crate) fn jail(&self) -> &teamboard_sandbox::Jail {
        &self.home.jail
    }

    pub(crate) fn cfg(&self) -> &Config {
        &self.cfg
    }

    pub(crate) fn session(&self) -> &Session {
        &self.session
    }

    pub(crate) fn cancel(&self) -> &CancellationToken {
        &self.cancel
    }

    pub(crate) fn transcript(&mut self) -> &mut Transcript {
        &mut self.transcript
    }

    pub(crate) fn held(&self) -> Option<&Held> {
        self.held.as_ref()
    }

    pub(crate) fn task_id(&self) -> Option<TaskId> {
        self.held.as_ref().map(|h| h.id)
    }

    /// The shutdown decided, if one was: the teammate is to leave.
    pub(crate) fn shutdown(&self) -> Option<Exit> {
        self.shutdown.clone()
    }

    /// The tools' environment now: the held task's worktree, or the teammate's
    /// own directory.
    pub(crate) fn env(&self) -> LocalEnv {
        match self.held.as_ref().and_then(|h| h.tree.as_ref()) {
            Some(tree) => tree.env(&self.home),
            None => self.home.clone(),
        }
    }

    /// Who the teammate is and what it works on, for a compacted conversation.
    pub(crate) fn identity(&self) -> Identity {
        Identity {
            name: self.cfg.name.clone(),
            role: self.cfg.role.clone(),
            team: self.cfg.team.clone(),
            task: self
                .held
                .as_ref()
                .map(|h| (h.id, h.subject.clone(), h.description.clone())),
            worktree: self.worktree_line(),
            lead: false,
        }
    }

    /// Where the held task works, in a line for the model, when it has a
    /// worktree of its own.
    pub(crate) fn worktree_line(&self) -> Option<String> {
        let tree = self.held.as_ref()?.tree.as_ref()?;
        Some(tree.identity_line())
    }

    pub(crate) fn log(&mut self, kind: EntryKind, tool: Option<&str>, is_error: bool, text: &str) {
        let task = self.task_id();
        self.transcript.write(kind, tool, task, is_error, text);
    }

    /// A lifecycle line of the transcript: what the runtime did, no tool's.
    pub(crate) fn lifecycle(&mut self, text: &str) {
        self.log(EntryKind::Lifecycle, None, false, text);
    }

    /// [`Teammate::lifecycle`], marked as an error.
    pub(crate) fn lifecycle_error(&mut self, text: &str) {
        self.log(EntryKind::Lifecycle, None, true, text);
    }

    /// A work phase went wrong; IDLE rests longer before the next.
    pub(crate) fn failed(&mut self) {
        self.failures += 1;
    }

    /// The work did what it was asked (a model call answered, an agent
    /// finished): IDLE takes the next task without resting.
    pub(crate) fn worked(&mut self) {
        self.failures = 0;
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
    pub(crate) async fn exit(&mut self, exit: Exit) -> Result<Exit, Error> {
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
        self.lifecycle(&text);
        if let Err(e) = self.set_status(MemberStatus::Shutdown).await {
            tracing::warn!(error = %e, "cannot set the status to shutdown");
        }
        Ok(exit)
    }

    /// Stops whatever the tools started, however the teammate ends. (On a crash
    /// or `kill -9` the guards see to it themselves.)
    pub(crate) async fn stop_tools(&self) {
        self.home.guards.stop_all(STOP_TOOLS_WITHIN).await;
    }
}
