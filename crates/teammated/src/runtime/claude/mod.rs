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
// Public for the fuzz targets (`crates/fuzz-entry`) only.
#[doc(hidden)]
pub mod stream;

use crate::runtime::handle::{Intake, Pid};
use crate::runtime::process::AgentProcess;
use crate::runtime::{Agent, AgentError, AgentSpec, Brief, FIRST_INPUT};
use args::SessionArg;
use driver::Driver;
use stream::Stream;
use tracing::Instrument as _;

/// Starts Claude Code for `brief` and gives it the task as its first user
/// turn. Fails only when the program cannot be started; a CLI that dies at
/// once reports its exit as an event, with its stderr.
///
/// Each input is written as a user line when it is sent ([`Intake::Written`]):
/// steered into the running turn at its next tool result, or the next turn;
/// [`crate::runtime::AgentEvent::Delivered`] follows once the CLI took it. A
/// plan answer answers the held `ExitPlanMode` request: allowed (and out of
/// plan mode) or denied with the lead's feedback. A stop interrupts the running
/// turn (bounded), closes the CLI's input, then ends its process and
/// everything it started.
pub async fn start(spec: &AgentSpec, brief: Brief) -> Result<Agent, AgentError> {
    let session = match &brief.resume {
        Some(id) => SessionArg::Resume(id.clone()),
        None => SessionArg::New(args::new_session_id()),
    };
    let launch = args::launch(spec, &brief, &session, brief.plan_first);
    let mut proc = AgentProcess::spawn(&launch)?;
    let mut stream = Stream::new(spec.policy, brief.plan_first, brief.resume.is_some())
        .with_other_credentials(args::other_credentials(spec));
    let first = stream.user_line(Some(FIRST_INPUT), &brief.prompt);
    if let Err(e) = proc.write(&first).await {
        let how = proc.stop().await;
        return Err(AgentError::Start(format!(
            "claude took no input ({e}; {how}): {}",
            proc.stderr_tail_at_end().await
        )));
    }
    let pid = Pid::new(proc.pid());
    let span = tracing::info_span!("claude", task = brief.task);
    span.in_scope(|| {
        tracing::info!(pid = ?proc.pid(), session = ?session, cwd = %brief.cwd.display(), "claude started");
    });
    let spec = spec.clone();
    let driver_pid = pid.clone();
    Ok(Agent::spawn(
        Intake::Written,
        pid,
        None,
        |commands, events| {
            let driver = Driver {
                spec,
                brief,
                proc,
                stream,
                events,
                pid: driver_pid,
                exited: false,
            };
            driver.run(commands).instrument(span)
        },
    ))
}
