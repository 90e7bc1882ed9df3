//! WORK: what a teammate does with the task it holds, or the messages that
//! woke it. The work is a value of its own, next to the teammate's board side
//! (`crate::teammate`), and owns what only it uses:
//!
//! - [`native`]: teammated's own model loop (`crate::model_loop`) with tools;
//! - [`agent`]: an agent runtime (Claude Code, Codex, an ACP agent) driven
//!   through its structured interface.
//!
//! Whatever happens, a phase leaves the held task completed, failed or given
//! back, never in progress.

pub(crate) mod agent;
pub(crate) mod native;

use crate::error::Error;
use crate::model_loop::ModelLoop;
use crate::teammate::{Exit, Intake, Teammate};
use agent::AgentRun;
use teamboard_protocol::Work;

/// A teammate's work.
#[allow(
    clippy::large_enum_variant,
    reason = "one for the teammate's whole life: boxing a variant would buy nothing"
)]
pub(crate) enum Worker {
    Native(ModelLoop),
    Agent(AgentRun),
}

impl Worker {
    /// Runs one WORK phase. `Some(exit)` when the teammate should stop afterwards.
    pub(crate) async fn work(&mut self, t: &mut Teammate) -> Result<Option<Exit>, Error> {
        match self {
            Worker::Native(model) => native::work(model, t).await,
            Worker::Agent(run) => run.work(t).await,
        }
    }
}

impl Intake for Worker {
    fn begin_task(&mut self, t: &mut Teammate, opening: &[String], fresh: bool) {
        match self {
            Worker::Native(model) => native::Feed(model).begin_task(t, opening, fresh),
            Worker::Agent(run) => run.begin_task(t, opening, fresh),
        }
    }

    fn hear(&mut self, texts: &[String], ordinary: &[u64]) -> bool {
        match self {
            Worker::Native(model) => native::Feed(model).hear(texts, ordinary),
            Worker::Agent(run) => run.hear(texts, ordinary),
        }
    }

    fn stashed(&mut self) -> Option<Work> {
        match self {
            Worker::Native(_) => None,
            Worker::Agent(run) => run.stashed(),
        }
    }
}
