//! Completion checks: a shell command run in a task's worktree with a time
//! limit, whose verdict and output tail become the task's evidence.
//!
//! Not git, but here because boardd runs it from the same plain threads as the
//! git work, and the same rule holds: nothing a check does may leave boardd
//! waiting forever. A check and everything it starts run in one process group,
//! which is what gets stopped. Output is read from one pipe that every process
//! of the check shares, by the calling thread itself: it polls the pipe, the
//! shell, the clock and the interrupt flag in one loop (no reader thread to
//! hand the tail back from), and stops reading shortly after the group is gone.

use crate::group::Group;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::ExitStatus;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How long a stopped check gets between SIGTERM and SIGKILL.
const GRACE: Duration = Duration::from_secs(2);
/// How often the runner looks at the clock and the interrupt flag while no
/// output arrives: the latency of a timeout or an interrupt.
const TICK: Duration = Duration::from_millis(20);
/// How long output is still read once the check's group is gone, for what a
/// process that escaped the group (setsid) keeps writing.
const DRAIN: Duration = Duration::from_millis(300);

/// One check to run.
#[derive(Debug, Clone, Copy)]
pub struct CheckSpec<'a> {
    /// Run as `sh -c COMMAND`.
    pub command: &'a str,
    pub cwd: &'a Path,
    pub timeout: Duration,
    /// Added to the inherited environment.
    pub env: &'a [(String, String)],
    /// The shell to run it with, with what goes before it: `["sh"]`, or a
    /// sandbox's command line that ends with `sh` (`bwrap ... -- sh`).
    pub shell: &'a [std::ffi::OsString],
}

/// The verdict on a check. Only `Passed` lets a completion through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckOutcome {
    /// Exited with status 0 by itself.
    Passed,
    /// Exited non-zero, was killed by a signal we did not send, or could not start.
    Failed,
    /// Ran past its time limit and was stopped.
    TimedOut,
    /// Stopped through its [`Interrupt`].
    Interrupted,
}

/// How a check went: the evidence a refused completion carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckResult {
    pub outcome: CheckOutcome,
    /// The shell's exit code; `None` when it ended by a signal or never started.
    pub exit_code: Option<i32>,
    /// The last [`crate::TAIL_BYTES`] of its stdout and stderr, interleaved as
    /// written, starting with "…" when cut. A last line in brackets says how
    /// the check was ended when it did not exit by itself.
    pub tail: String,
    pub duration: Duration,
}

/// Stops the checks run with it, from any thread. Sticky: once interrupted,
/// a check started with it stops at once (make a new one per attempt).
#[derive(Debug, Clone, Default)]
pub struct Interrupt(Arc<AtomicBool>);

impl Interrupt {
    pub fn new() -> Self {
        Self::default()
    }

    /// Stops the running check (its whole process group: SIGTERM, SIGKILL
    /// after 2 s) within a few milliseconds; its outcome is `Interrupted`.
    pub fn interrupt(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    pub fn is_interrupted(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// Runs a check to its end and says how it went; never waits longer than its
/// timeout plus the 2 s grace and a fraction of a second of reading.
///
/// `sh -c COMMAND` runs in a process group of its own, which dies, all of it,
/// with the thread that started it (`PR_SET_PDEATHSIG` on the group's leader,
/// which then kills the group). On timeout or interrupt the group
/// gets SIGTERM, then SIGKILL after 2 s. When the shell exits by itself,
/// whatever it left running in its group is killed too: a check is over when
/// its shell is. A timed-out or interrupted check is never `Passed`, even if
/// its shell then exits 0.
pub fn run_check(spec: &CheckSpec, interrupt: &Interrupt) -> CheckResult {
    let started = Instant::now();
    let finish = |outcome, exit_code, tail: String| CheckResult {
        outcome,
        exit_code,
        tail,
        duration: started.elapsed(),
    };
    if interrupt.is_interrupted() {
        return finish(
            CheckOutcome::Interrupted,
            None,
            "[interrupted before it started]".into(),
        );
    }
    let mut group = match Group::start(spec) {
        Ok(group) => group,
        Err(e) => {
            let tail = format!("[could not start `sh -c` in {}: {e}]", spec.cwd.display());
            return finish(CheckOutcome::Failed, None, tail);
        }
    };
    // A limit past the end of the clock is no limit (and not a panic, which
    // would also leave the group running unwatched).
    let deadline = started.checked_add(spec.timeout);
    // Set once we start stopping the check: why, and when SIGTERM went out.
    let mut stopping: Option<(CheckOutcome, Instant)> = None;
    loop {
        group.read_for(TICK);
        if group.leader_exited() {
            break;
        }
        let now = Instant::now();
        match stopping {
            None if interrupt.is_interrupted() || deadline.is_some_and(|d| now >= d) => {
                let why = if interrupt.is_interrupted() {
                    CheckOutcome::Interrupted
                } else {
                    CheckOutcome::TimedOut
                };
                group.signal(libc::SIGTERM);
                stopping = Some((why, now));
            }
            Some((_, sent)) if now >= sent + GRACE => break,
            _ => {}
        }
    }
    // The leader has exited (still unreaped) or outlived its grace: kill what
    // is left of the group while its id is still certainly ours.
    group.signal(libc::SIGKILL);
    group.drain(DRAIN);
    let (status, tail) = group.reap();
    let (outcome, exit_code, note) = verdict(stopping.map(|(why, _)| why), status, spec.timeout);
    let mut text = tail.text();
    if let Some(note) = note {
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&note);
    }
    finish(outcome, exit_code, text)
}

/// The outcome, exit code and closing note of a check that was `stopped` for
/// a reason, or not, and ended with `status`. A stopped check keeps the
/// reason it was stopped for, whatever its exit status says.
fn verdict(
    stopped: Option<CheckOutcome>,
    status: std::io::Result<ExitStatus>,
    timeout: Duration,
) -> (CheckOutcome, Option<i32>, Option<String>) {
    let code = status.as_ref().ok().and_then(|s| s.code());
    match (stopped, status) {
        (Some(CheckOutcome::TimedOut), _) => (
            CheckOutcome::TimedOut,
            code,
            Some(format!("[timed out after {timeout:?}; stopped]")),
        ),
        (Some(why), _) => (why, code, Some("[interrupted; stopped]".into())),
        (None, Ok(status)) => match (status.code(), status.signal()) {
            (Some(0), _) => (CheckOutcome::Passed, code, None),
            (Some(_), _) => (CheckOutcome::Failed, code, None),
            (None, signal) => (
                CheckOutcome::Failed,
                None,
                Some(format!("[killed by signal {}]", signal_name(signal))),
            ),
        },
        (None, Err(e)) => (
            CheckOutcome::Failed,
            None,
            Some(format!("[could not learn how it ended: {e}]")),
        ),
    }
}

/// "9 (SIGKILL)" for the signals a check commonly dies of.
fn signal_name(signal: Option<i32>) -> String {
    let Some(signal) = signal else {
        return "(unknown)".into();
    };
    let name = match signal {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        _ => return signal.to_string(),
    };
    format!("{signal} ({name})")
}
