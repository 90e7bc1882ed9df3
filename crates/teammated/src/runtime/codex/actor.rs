//! The task that runs one Codex session: it owns the agent's process, feeds
//! what the agent writes and what the WORK loop asks into the [`Core`], and
//! carries out what the core wants (lines to write, events to send).
//!
//! A task of its own, because a line must never be half written: the WORK
//! loop waits on [`crate::runtime::Agent::next_event`] in a `select!` that drops the
//! future whenever something else happens first, and a write inside that
//! future could be cut in the middle. Here nothing is ever dropped mid-way;
//! the handle only exchanges messages with this task over channels, which is
//! cancel-safe.

use super::state::{Core, Out};
use crate::runtime::AgentEvent;
use crate::runtime::handle::Command;
use crate::runtime::process::{AgentProcess, Line, STOP_GRACE};
use std::time::Duration;
use tokio::sync::mpsc;

/// How long a stop waits for the interrupted turn to end before it stops the
/// process: far more than Codex needs (docs/design/runtime-codex-acp.md §3.6),
/// a bound for a hung one.
pub const INTERRUPT_GRACE: Duration = Duration::from_secs(3);

struct Io {
    process: AgentProcess,
    events: mpsc::UnboundedSender<AgentEvent>,
    /// stdout has ended.
    ended: bool,
}

impl Io {
    async fn apply(&mut self, out: Vec<Out>) {
        for o in out {
            match o {
                Out::Write(line) => {
                    if let Err(e) = self.process.write(&line).await {
                        // Its exit shows as the end of its output.
                        tracing::debug!(error = %e, "cannot write to codex");
                    }
                }
                Out::Emit(event) => {
                    let _ = self.events.send(event);
                }
            }
        }
    }

    /// stdout ended: the process is gone, or going.
    async fn exited(&mut self) {
        self.ended = true;
        let status = match tokio::time::timeout(STOP_GRACE, self.process.wait_exit()).await {
            Ok(how) => how,
            Err(_) => "its output ended, and it still runs".to_string(),
        };
        let stderr = self.process.stderr_tail_at_end().await;
        tracing::debug!(%status, "codex exited");
        let _ = self.events.send(AgentEvent::Exited { status, stderr });
    }
}

/// Runs the session until the handle stops it (or is dropped).
pub async fn run(
    process: AgentProcess,
    mut core: Core,
    mut commands: mpsc::UnboundedReceiver<Command>,
    events: mpsc::UnboundedSender<AgentEvent>,
) {
    let mut io = Io {
        process,
        events,
        ended: false,
    };
    let first = core.begin();
    io.apply(first).await;
    let done = loop {
        tokio::select! {
            command = commands.recv() => match command {
                // The handle does not wait for `done` (`Intake::Queued`).
                Some(Command::Send { tag, text, done: _ }) => {
                    let out = core.send(tag, &text);
                    io.apply(out).await;
                }
                Some(Command::Plan { answer, done: _ }) => {
                    let out = core.answer_plan(answer);
                    io.apply(out).await;
                }
                Some(Command::Stop(done)) => break Some(done),
                None => break None,
            },
            line = io.process.next_line(), if !io.ended => match line {
                Some(Line::Json(value)) => {
                    tracing::trace!(%value, "from codex");
                    let out = core.on_line(value);
                    io.apply(out).await;
                }
                Some(Line::Text(text)) => tracing::debug!(%text, "codex wrote a line that is not JSON"),
                None => io.exited().await,
            },
        }
    };
    stop(&mut io, &mut core).await;
    if let Some(done) = done {
        let _ = done.send(());
    }
}

/// Interrupts the running turn (bounded), then ends the process group.
async fn stop(io: &mut Io, core: &mut Core) {
    if !io.ended && !core.turn_over() {
        let out = core.interrupt();
        io.apply(out).await;
        let settled = tokio::time::timeout(INTERRUPT_GRACE, async {
            while !core.turn_over() {
                match io.process.next_line().await {
                    Some(Line::Json(value)) => {
                        let out = core.on_line(value);
                        io.apply(out).await;
                    }
                    Some(Line::Text(_)) => {}
                    None => break,
                }
            }
        })
        .await;
        if settled.is_err() {
            tracing::debug!("the interrupted codex turn did not end in time");
        }
    }
    let how = io.process.stop().await;
    tracing::debug!(%how, "codex stopped");
}
