//! The task that owns one Claude Code process for its whole life: it reads the
//! CLI's lines, answers its control requests, writes what the caller sends, and
//! reports events on a channel.
//!
//! Why a task of its own: writes to the CLI must never be cut in the middle. A
//! line half written by a future that a `select!` dropped would be glued to the
//! next one, and Claude Code dies of a line that is not JSON. Here every write
//! is awaited to its end, and the caller's `next_event` is a plain channel
//! receive, which is cancel-safe.
//!
//! Data flows one way: commands in ([`Command`]), events out, in the order the CLI
//! printed them. When the handle is dropped without `stop`, the command channel
//! closes and the driver stops the process all the same.

use super::args::{self, SessionArg};
use super::stream::{Action, Stream};
use crate::runtime::handle::{Command, Pid};
use crate::runtime::process::{AgentProcess, Line};
use crate::runtime::{
    AgentError, AgentEvent, AgentSpec, Brief, FIRST_INPUT, PlanAnswer, with_tail,
};
use std::time::Duration;
use tokio::sync::mpsc;

/// How long `stop` waits for the `result` of an interrupted turn before it
/// closes the CLI's input and ends the process anyway.
const INTERRUPT_WAIT: Duration = Duration::from_secs(2);

pub(super) struct Driver {
    pub spec: AgentSpec,
    pub brief: Brief,
    pub proc: AgentProcess,
    pub stream: Stream,
    pub events: mpsc::UnboundedSender<AgentEvent>,
    /// The process's pid, for the handle.
    pub pid: Pid,
    /// Its output has ended and its exit has been reported.
    pub exited: bool,
}

impl Driver {
    pub async fn run(mut self, mut cmds: mpsc::UnboundedReceiver<Command>) {
        loop {
            tokio::select! {
                line = self.proc.next_line(), if !self.exited => self.on_output(line).await,
                cmd = cmds.recv() => match cmd {
                    None => {
                        self.stop().await;
                        return;
                    }
                    Some(Command::Stop(done)) => {
                        self.stop().await;
                        let _ = done.send(());
                        return;
                    }
                    Some(Command::Send { tag, text, done }) => {
                        let sent = self.send(tag, &text).await;
                        let _ = done.send(sent);
                    }
                    Some(Command::Plan { answer, done }) => {
                        let answered = self.answer_plan(answer).await;
                        let _ = done.send(answered);
                    }
                },
            }
        }
    }

    async fn send(&mut self, tag: u64, text: &str) -> Result<(), AgentError> {
        if self.exited {
            return Err(AgentError::Gone);
        }
        let line = self.stream.user_line(Some(tag), text);
        self.proc.write(&line).await
    }

    async fn answer_plan(&mut self, answer: PlanAnswer) -> Result<(), AgentError> {
        if self.exited {
            return Err(AgentError::Gone);
        }
        for line in self.stream.answer_plan(answer) {
            self.proc.write(&line).await?;
        }
        Ok(())
    }

    async fn on_output(&mut self, line: Option<Line>) {
        match line {
            Some(Line::Json(v)) => {
                for action in self.stream.on_line(&v) {
                    self.act(action).await;
                }
            }
            Some(Line::Text(text)) => {
                tracing::debug!(%text, "claude printed a line that is not JSON")
            }
            None if self.stream.resuming() => {
                let tail = self.proc.stderr_tail_at_end().await;
                let why = if tail.is_empty() {
                    "it exited before the session opened".to_string()
                } else {
                    format!("it exited before the session opened: {tail}")
                };
                self.new_session(why).await;
            }
            None => {
                let status = self.proc.wait_exit().await;
                let stderr = self.proc.stderr_tail_at_end().await;
                tracing::info!(%status, "claude exited");
                self.exited = true;
                self.pid.set(None);
                let _ = self.events.send(AgentEvent::Exited { status, stderr });
            }
        }
    }

    async fn act(&mut self, action: Action) {
        match action {
            Action::Emit(event) => {
                let _ = self.events.send(event);
            }
            Action::Write(line) => {
                if let Err(e) = self.proc.write(&line).await {
                    // The process is gone: its end comes as the end of its output.
                    tracing::warn!(error = %e, "cannot answer claude");
                }
            }
            Action::Fail(why) => {
                let why = with_tail(why, &self.proc.stderr_tail());
                let _ = self.events.send(AgentEvent::Failed(why));
            }
            Action::ResumeFailed(why) => self.new_session(why).await,
        }
    }

    /// The task's session could not be resumed: a new process with a new
    /// session takes over, with the lines the old one never took.
    async fn new_session(&mut self, why: String) {
        tracing::warn!(%why, "claude could not resume the task's session; starting a new one");
        let how = self.proc.stop().await;
        tracing::debug!(%how, "the process that could not resume ended");
        let id = args::new_session_id();
        let pending = self.stream.restart_new(why);
        let launch = args::launch(
            &self.spec,
            &self.brief,
            &SessionArg::New(id.clone()),
            self.stream.gate_closed(),
        );
        self.proc = match AgentProcess::spawn(&launch) {
            Ok(p) => p,
            Err(e) => {
                self.exited = true;
                self.pid.set(None);
                let _ = self.events.send(AgentEvent::Exited {
                    status: e.to_string(),
                    stderr: String::new(),
                });
                return;
            }
        };
        self.pid.set(self.proc.pid());
        tracing::info!(session = %id, pid = ?self.proc.pid(), "claude started anew");
        for p in pending {
            // The first line told the agent it was back on the task; it is not.
            let text = match p.tag {
                Some(FIRST_INPUT) => p
                    .text
                    .strip_prefix(crate::prompts::agent::RESUMED)
                    .map(|t| t.trim_start().to_string())
                    .unwrap_or(p.text),
                _ => p.text,
            };
            let line = self.stream.user_line(p.tag, &text);
            if let Err(e) = self.proc.write(&line).await {
                tracing::warn!(error = %e, "cannot give the new claude session its input");
                return;
            }
        }
    }

    /// Interrupts a running turn (waiting a bounded time for its `result`),
    /// then ends the process and everything it started.
    async fn stop(&mut self) {
        if !self.exited && self.stream.busy() {
            let interrupt = self.stream.interrupt();
            if self.proc.write(&interrupt).await.is_ok() {
                let proc = &mut self.proc;
                let ended = tokio::time::timeout(INTERRUPT_WAIT, async {
                    while let Some(line) = proc.next_line().await {
                        if matches!(&line, Line::Json(v) if v["type"] == "result") {
                            return true;
                        }
                    }
                    false
                })
                .await;
                tracing::debug!(?ended, "claude interrupted");
            }
        }
        let how = self.proc.stop().await;
        self.pid.set(None);
        tracing::info!(%how, "claude stopped");
    }
}
