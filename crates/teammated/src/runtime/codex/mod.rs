//! The `codex` runtime: Codex driven through `codex app-server`, JSON-RPC over
//! stdio. See `docs/runtimes.md` for the mapping of board events.
//!
//! - [`params`]: what teammated asks of the app-server, and the texts it adds;
//! - [`answers`]: how it answers the agent's approval requests;
//! - [`state`]: the session as a state machine over the lines (no I/O);
//! - [`actor`]: the task that owns the process and moves the lines.
//!
//! The agent keeps the user's configuration (`$CODEX_HOME`, default
//! `~/.codex`): teammated writes none and sets no `CODEX_HOME` of its own. A
//! teammate meant to run apart sets `CODEX_HOME` in its environment, and keeps
//! it across restarts, or its threads cannot be resumed.
//!
//! The program is the native `codex` binary: the npm package's Node wrapper
//! would leave the real process behind when it is killed.

mod actor;
mod answers;
mod params;
mod state;
#[cfg(test)]
mod tests;

use crate::runtime::process::{AgentProcess, Launch};
use crate::runtime::{AgentError, AgentEvent, AgentSpec, Brief, PlanAnswer};
use actor::Command;
use std::collections::VecDeque;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tracing::Instrument as _;

/// How long the app-server may take to initialise and open the task's thread.
/// It takes well under a second; the bound is for a CLI that hangs.
pub const START_TIMEOUT: Duration = Duration::from_secs(60);

/// A running codex agent for one task.
pub struct Codex {
    session: Option<String>,
    pid: Option<u32>,
    commands: mpsc::UnboundedSender<Command>,
    events: mpsc::UnboundedReceiver<AgentEvent>,
    /// Events read while the session opened, given out first.
    backlog: VecDeque<AgentEvent>,
    next_tag: u64,
    task: JoinHandle<()>,
}

impl Codex {
    /// Starts `codex app-server` under the guard and opens (or resumes) the
    /// task's thread. Returns once the thread is open, with its
    /// [`AgentEvent::Session`] as the first event; fails with the agent's
    /// error (and its last stderr lines) when it cannot be opened.
    pub async fn start(spec: &AgentSpec, brief: Brief) -> Result<Codex, AgentError> {
        let mut args = params::args();
        args.extend(spec.extra_args.iter().cloned());
        let launch = Launch {
            program: spec.program.clone(),
            args,
            cwd: brief.cwd.clone(),
            env: spec.env.clone(),
            env_remove: Vec::new(),
            guard: spec.guard.clone(),
        };
        let process = AgentProcess::spawn(&launch)?;
        let pid = process.pid();
        let span = tracing::info_span!("codex", task = brief.task, pid);
        let core = state::Core::new(state::Setup {
            cwd: brief.cwd,
            identity: brief.identity,
            prompt: brief.prompt,
            resume: brief.resume,
            model: spec.model.clone(),
            mcp: brief.mcp,
            policy: spec.policy,
            plan_first: brief.plan_first,
            max_rounds: spec.max_turns,
        });
        let (commands, command_rx) = mpsc::unbounded_channel();
        let (event_tx, events) = mpsc::unbounded_channel();
        let task = tokio::spawn(actor::run(process, core, command_rx, event_tx).instrument(span));
        let mut codex = Codex {
            session: None,
            pid,
            commands,
            events,
            backlog: VecDeque::new(),
            next_tag: 0,
            task,
        };
        match tokio::time::timeout(START_TIMEOUT, codex.opened()).await {
            Ok(Ok(())) => Ok(codex),
            Ok(Err(why)) => {
                codex.stop().await;
                Err(AgentError::Start(why))
            }
            Err(_) => {
                codex.stop().await;
                Err(AgentError::Start(format!(
                    "codex app-server opened no thread within {} s",
                    START_TIMEOUT.as_secs()
                )))
            }
        }
    }

    /// Reads events until the session is open; what came before it is kept.
    async fn opened(&mut self) -> Result<(), String> {
        loop {
            match self.events.recv().await {
                Some(AgentEvent::Session {
                    id,
                    resumed,
                    why_new,
                }) => {
                    self.session = Some(id.clone());
                    self.backlog.push_front(AgentEvent::Session {
                        id,
                        resumed,
                        why_new,
                    });
                    return Ok(());
                }
                Some(AgentEvent::Failed(why)) => return Err(why),
                Some(AgentEvent::Exited { status, stderr }) => {
                    let mut why = format!("codex exited ({status}) before its thread opened");
                    if !stderr.trim().is_empty() {
                        why = format!("{why}; its last stderr lines:\n{}", stderr.trim());
                    }
                    return Err(why);
                }
                Some(other) => self.backlog.push_back(other),
                None => return Err("the codex session ended before its thread opened".into()),
            }
        }
    }

    /// Steers `text` into the running turn, or starts a turn with it.
    pub async fn send(&mut self, text: &str) -> Result<u64, AgentError> {
        self.next_tag += 1;
        let tag = self.next_tag;
        self.commands
            .send(Command::Send {
                tag,
                text: text.to_string(),
            })
            .map_err(|_| AgentError::Gone)?;
        Ok(tag)
    }

    pub async fn answer_plan(&mut self, answer: PlanAnswer) -> Result<(), AgentError> {
        self.commands
            .send(Command::AnswerPlan(answer))
            .map_err(|_| AgentError::Gone)
    }

    /// The next event; cancel-safe. After the session's task has ended, waits
    /// forever.
    pub async fn next_event(&mut self) -> AgentEvent {
        let event = match self.backlog.pop_front() {
            Some(e) => e,
            None => match self.events.recv().await {
                Some(e) => e,
                None => std::future::pending().await,
            },
        };
        if let AgentEvent::Session { id, .. } = &event {
            self.session = Some(id.clone());
        }
        event
    }

    /// Interrupts the running turn (bounded by [`actor::INTERRUPT_GRACE`]),
    /// then ends the process group and everything in it.
    pub async fn stop(self) {
        let (done, stopped) = oneshot::channel();
        if self.commands.send(Command::Stop(done)).is_ok() {
            let _ = stopped.await;
        }
        let _ = self.task.await;
    }

    pub fn session(&self) -> Option<&str> {
        self.session.as_deref()
    }

    pub fn pid(&self) -> Option<u32> {
        self.pid
    }
}
