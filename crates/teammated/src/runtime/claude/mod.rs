//! The `claude` runtime: Claude Code driven through its JSON streams
//! (`claude -p --input-format stream-json --output-format stream-json`), one
//! process per task phase, under teammated's process guard.
//!
//! `docs/runtimes.md` has the mapping of board events for users, and
//! `docs/design/runtime-claude.md` the survey of the CLI it rests on. Here:
//!
//! - [`args`]: the command line and environment of one process, and the id of
//!   a new session;
//! - [`stream`]: what each line means, both ways (pure, tested on lines captured
//!   from the real CLI);
//! - [`driver`]: the task that owns the process and does the I/O.
//!
//! Sessions: a new task's session gets an id chosen here (`--session-id`), so
//! that it is known and recorded before anything can go wrong; every later
//! start for the task resumes it (`--resume`). A resume that fails (the CLI lost
//! the session) starts a new session at once, and the first
//! [`AgentEvent::Session`] says why.

mod args;
mod driver;
mod stream;

use crate::runtime::process::AgentProcess;
use crate::runtime::{AgentError, AgentEvent, AgentSpec, Brief, FIRST_INPUT, PlanAnswer};
use args::SessionArg;
use driver::{Cmd, Driver};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use stream::Stream;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tracing::Instrument as _;

/// A running claude agent for one task.
pub struct Claude {
    cmds: mpsc::UnboundedSender<Cmd>,
    events: mpsc::UnboundedReceiver<AgentEvent>,
    session: Option<String>,
    pid: Arc<AtomicU32>,
    next_tag: u64,
    driver: JoinHandle<()>,
}

impl Claude {
    /// Starts Claude Code for `brief` and gives it the task as its first user
    /// turn. Fails only when the program cannot be started; a CLI that dies at
    /// once reports its exit as an event, with its stderr.
    pub async fn start(spec: &AgentSpec, brief: Brief) -> Result<Claude, AgentError> {
        let session = match &brief.resume {
            Some(id) => SessionArg::Resume(id.clone()),
            None => SessionArg::New(args::new_session_id()),
        };
        let launch = args::launch(spec, &brief, &session, brief.plan_first);
        let mut proc = AgentProcess::spawn(&launch)?;
        let mut stream = Stream::new(spec.policy, brief.plan_first, brief.resume.is_some());
        let first = stream.user_line(Some(FIRST_INPUT), &brief.prompt);
        if let Err(e) = proc.write(&first).await {
            let how = proc.stop().await;
            return Err(AgentError::Start(format!(
                "claude took no input ({e}; {how}): {}",
                proc.stderr_tail_at_end().await
            )));
        }
        let pid = Arc::new(AtomicU32::new(proc.pid().unwrap_or(0)));
        let span = tracing::info_span!("claude", task = brief.task);
        span.in_scope(|| {
            tracing::info!(pid = ?proc.pid(), session = ?session, cwd = %brief.cwd.display(), "claude started");
        });
        let (cmds, cmd_rx) = mpsc::unbounded_channel();
        let (events_tx, events) = mpsc::unbounded_channel();
        let driver = Driver {
            spec: spec.clone(),
            brief,
            proc,
            stream,
            events: events_tx,
            pid: pid.clone(),
            exited: false,
        };
        let driver = tokio::spawn(driver.run(cmd_rx).instrument(span));
        Ok(Claude {
            cmds,
            events,
            session: None,
            pid,
            next_tag: 0,
            driver,
        })
    }

    /// Writes `text` as a user line: steered into the running turn at its next
    /// tool result, or the next turn. [`AgentEvent::Delivered`] with the tag
    /// follows once the CLI took it.
    pub async fn send(&mut self, text: &str) -> Result<u64, AgentError> {
        self.next_tag += 1;
        let tag = self.next_tag;
        let (done, answer) = oneshot::channel();
        self.cmds
            .send(Cmd::Send {
                tag,
                text: text.to_string(),
                done,
            })
            .map_err(|_| AgentError::Gone)?;
        answer.await.map_err(|_| AgentError::Gone)??;
        Ok(tag)
    }

    /// Answers the held `ExitPlanMode` request: allowed (and out of plan mode)
    /// or denied with the lead's feedback.
    pub async fn answer_plan(&mut self, answer: PlanAnswer) -> Result<(), AgentError> {
        let (done, answered) = oneshot::channel();
        self.cmds
            .send(Cmd::Plan { answer, done })
            .map_err(|_| AgentError::Gone)?;
        answered.await.map_err(|_| AgentError::Gone)?
    }

    /// The next event; cancel-safe. After [`AgentEvent::Exited`], waits forever.
    pub async fn next_event(&mut self) -> AgentEvent {
        match self.events.recv().await {
            Some(event) => {
                if let AgentEvent::Session { id, .. } = &event {
                    self.session = Some(id.clone());
                }
                event
            }
            None => std::future::pending().await,
        }
    }

    /// Interrupts the running turn (bounded), closes the CLI's input, then ends
    /// its process and everything it started.
    pub async fn stop(self) {
        let (done, stopped) = oneshot::channel();
        if self.cmds.send(Cmd::Stop { done }).is_ok() {
            let _ = stopped.await;
        }
        let _ = self.driver.await;
    }

    pub fn session(&self) -> Option<&str> {
        self.session.as_deref()
    }

    pub fn pid(&self) -> Option<u32> {
        match self.pid.load(Ordering::Relaxed) {
            0 => None,
            pid => Some(pid),
        }
    }
}
