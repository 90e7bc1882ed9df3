//! An agent's process: started under teammated's guard, written to and read from
//! line by line, stopped with everything it started.
//!
//! Every runtime speaks newline-delimited JSON on the agent's stdin and stdout
//! (Claude Code's stream-json, Codex's and ACP's JSON-RPC). This module owns the
//! pipes and the process; the drivers own the meaning of the lines.
//!
//! - **stdout** is read by a task of its own into a channel, so that reading is
//!   cancel-safe for the drivers' `select!`s and a slow driver never makes the
//!   agent block on a full pipe for long. A line longer than [`MAX_LINE`] is cut
//!   and reported as not JSON rather than grow without bound.
//! - **stderr** is kept as a tail of its last lines ([`TAIL_BYTES`]), for the
//!   error that reports a crash. Trap: the exit of the agent (or the end of its
//!   stdout) may be seen before the stderr reader has read the agent's last
//!   lines, which are the ones that say why; a dead agent's tail is taken with
//!   [`AgentProcess::stderr_tail_at_end`], which waits for the reader to reach
//!   the end of the pipe, bounded by [`STDERR_END_WAIT`] because a process the
//!   agent left may hold the pipe open.
//! - **The process** is the guard (`teammated __agent-guard PID PROGRAM ARGS`)
//!   when teammated's binary runs, so that `kill -9` of teammated still ends the
//!   agent and every process it started (Claude Code puts its Bash commands in
//!   sessions of their own, which a process-group kill misses). In a test binary,
//!   which cannot serve as the guard, the agent leads its own process group with
//!   PDEATHSIG, and stopping kills the group.

use crate::runtime::AgentError;
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt as _, AsyncRead, AsyncReadExt as _, AsyncWriteExt as _};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::{mpsc, watch};

/// The longest stdout line kept whole. Agents' lines carry tool output and
/// whole file contents; 16 MiB is far above what they send and far below what
/// would hurt.
pub const MAX_LINE: usize = 16 << 20;
/// How much of the end of stderr is kept.
pub const TAIL_BYTES: usize = 4096;
/// How long `stop` waits for the agent after closing its input, and again after
/// SIGTERM, before it kills.
pub const STOP_GRACE: Duration = Duration::from_secs(3);

/// How long a dead agent's stderr is waited for to reach its end. Its last
/// lines are in the pipe by then and take a moment to read; only a process
/// that still holds the pipe keeps it open longer: one the agent left where no
/// guard ends them (a test, a library user), or an agent still running after
/// its output ended.
pub const STDERR_END_WAIT: Duration = Duration::from_secs(1);

/// One line of the agent's stdout.
#[derive(Debug, Clone, PartialEq)]
pub enum Line {
    Json(serde_json::Value),
    /// Not JSON (a banner, a log line), or cut at [`MAX_LINE`]: the drivers log
    /// it and go on.
    Text(String),
}

impl Line {
    /// One whole line as read, its newline included or not; `None` for a blank
    /// one, which the drivers never see.
    pub fn read(buf: &[u8]) -> Option<Line> {
        let text = String::from_utf8_lossy(buf);
        let text = text.trim_end_matches(['\n', '\r']);
        if text.trim().is_empty() {
            return None;
        }
        Some(match serde_json::from_str::<serde_json::Value>(text) {
            Ok(v) => Line::Json(v),
            Err(_) => Line::Text(text.to_string()),
        })
    }
}

/// How to start the agent's program.
#[derive(Debug, Clone)]
pub struct Launch {
    pub program: PathBuf,
    pub args: Vec<String>,
    pub cwd: PathBuf,
    /// Added to teammated's environment.
    pub env: Vec<(String, String)>,
    /// Taken out of teammated's environment.
    pub env_remove: Vec<String>,
    /// The guard program (`tools::guard::program()`), if this binary serves it.
    pub guard: Option<PathBuf>,
    /// The sandbox the agent runs in (the guard starts bubblewrap around it);
    /// `None`: unconfined.
    pub jail: Option<teamboard_sandbox::Jail>,
}

/// A running agent process.
pub struct AgentProcess {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<Line>,
    tail: Arc<Mutex<Tail>>,
    /// Becomes true when the stderr reader reached the end of the pipe (or its
    /// sender is dropped: there was no pipe, or the reader stopped).
    stderr_ended: watch::Receiver<bool>,
    /// The exit, once seen: (how it ended, for people).
    exited: Option<String>,
    guarded: bool,
}

impl AgentProcess {
    /// Starts the program. Fails when it cannot be started at all (not found);
    /// a program that starts and dies at once shows as an early end of its
    /// output instead, with its stderr.
    pub fn spawn(launch: &Launch) -> Result<AgentProcess, AgentError> {
        let program = resolve(&launch.program).ok_or_else(|| {
            AgentError::Start(format!(
                "'{}' is not found on PATH or is not executable; install it or name it with --agent-cmd",
                launch.program.display()
            ))
        })?;
        let args = launch.args.iter().map(Into::into);
        let (wrapped, args) = match &launch.jail {
            Some(jail) => jail.wrap(&program, args),
            None => (program.clone().into_os_string(), args.collect()),
        };
        let mut cmd = match &launch.guard {
            Some(guard) => {
                let mut cmd = Command::new(guard);
                cmd.arg(crate::tools::guard::AGENT_ARG)
                    .arg(std::process::id().to_string())
                    .arg(&wrapped);
                cmd
            }
            None => {
                let mut cmd = Command::new(&wrapped);
                // Without a guard: the agent dies with the thread that started it, at least.
                teamboard_process::die_with_parent(cmd.as_std_mut(), libc::SIGKILL);
                cmd
            }
        };
        cmd.args(&args)
            .current_dir(&launch.cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        for var in &launch.env_remove {
            cmd.env_remove(var);
        }
        for (k, v) in &launch.env {
            cmd.env(k, v);
        }
        let mut child = cmd
            .spawn()
            .map_err(|e| AgentError::Start(format!("cannot start {}: {e}", program.display())))?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take();
        let stderr = child.stderr.take();
        let (tx, lines) = mpsc::channel(1024);
        if let Some(out) = stdout {
            tokio::spawn(read_lines(out, tx));
        }
        let tail = Arc::new(Mutex::new(Tail::default()));
        let (ended, stderr_ended) = watch::channel(false);
        if let Some(err) = stderr {
            tokio::spawn(read_tail(err, tail.clone(), ended));
        }
        Ok(AgentProcess {
            child,
            stdin,
            lines,
            tail,
            stderr_ended,
            exited: None,
            guarded: launch.guard.is_some(),
        })
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// Writes one JSON value as a line. Only values this process serialised itself
    /// are ever written: Claude Code dies of a line that is not JSON.
    pub async fn write(&mut self, value: &serde_json::Value) -> Result<(), AgentError> {
        let stdin = self.stdin.as_mut().ok_or(AgentError::Gone)?;
        let mut line = serde_json::to_vec(value)
            .map_err(|e| AgentError::Protocol(format!("cannot serialise a line: {e}")))?;
        line.push(b'\n');
        let written = async {
            stdin.write_all(&line).await?;
            stdin.flush().await
        };
        match written.await {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                self.stdin = None;
                Err(AgentError::Gone)
            }
            Err(e) => Err(AgentError::Io(e)),
        }
    }

    /// Closes the agent's input. For Claude Code that is "finish the turn and
    /// exit"; for the JSON-RPC agents, "exit".
    pub fn close_input(&mut self) {
        self.stdin = None;
    }

    /// The next line of output; `None` once stdout has ended. Cancel-safe.
    pub async fn next_line(&mut self) -> Option<Line> {
        self.lines.recv().await
    }

    /// Waits for the process to end and says how, once stdout has ended. Returns
    /// at once the second time.
    pub async fn wait_exit(&mut self) -> String {
        if let Some(how) = &self.exited {
            return how.clone();
        }
        let how = match self.child.wait().await {
            Ok(status) => describe(status, self.guarded),
            Err(e) => format!("cannot wait for it: {e}"),
        };
        self.exited = Some(how.clone());
        how
    }

    /// The last lines of stderr read so far, trimmed; empty when it said
    /// nothing. For an agent that still runs; a dead one's are
    /// [`AgentProcess::stderr_tail_at_end`].
    pub fn stderr_tail(&self) -> String {
        self.tail
            .lock()
            .map(|t| t.text())
            .unwrap_or_else(|p| p.into_inner().text())
    }

    /// The last lines of stderr of an agent that has exited (or was stopped),
    /// once the reader has reached the end of the pipe, waiting for that at
    /// most [`STDERR_END_WAIT`].
    pub async fn stderr_tail_at_end(&self) -> String {
        let mut ended = self.stderr_ended.clone();
        // An error: the reader is gone, so it has read all it will.
        let reached = tokio::time::timeout(STDERR_END_WAIT, ended.wait_for(|end| *end)).await;
        if reached.is_err() {
            tracing::debug!(
                "the agent's stderr is still open (a process it left holds it); reporting what was read"
            );
        }
        self.stderr_tail()
    }

    /// Ends the process and everything it started: closes its input and gives it
    /// [`STOP_GRACE`] to leave on its own, then SIGTERM (to the guard, which kills
    /// the whole tree; or to the agent's process group), then SIGKILL. Returns how
    /// it ended.
    pub async fn stop(&mut self) -> String {
        self.close_input();
        for signal in [libc::SIGTERM, libc::SIGKILL] {
            if let Ok(Ok(status)) = tokio::time::timeout(STOP_GRACE, self.child.wait()).await {
                let how = describe(status, self.guarded);
                self.exited = Some(how.clone());
                return how;
            }
            self.signal(signal);
        }
        self.wait_exit().await
    }

    /// Signals the guard, or the agent's whole process group when there is no
    /// guard. Nothing when the process has been reaped (its pid may be reused).
    fn signal(&self, sig: libc::c_int) {
        let Some(pid) = self.child.id().and_then(|p| libc::pid_t::try_from(p).ok()) else {
            return;
        };
        let target = if self.guarded { pid } else { -pid };
        // SAFETY: kill(2) on our unreaped child (or its group, which it leads).
        unsafe { libc::kill(target, sig) };
    }
}

/// A process dropped without [`AgentProcess::stop`] (a panic on the way) is
/// still ended with everything it started. Trap: not by tokio's `kill_on_drop`,
/// whose SIGKILL would take the guard before it could kill the agent's tree; the
/// guard is asked with SIGTERM, as `stop` asks it.
impl Drop for AgentProcess {
    fn drop(&mut self) {
        if self.exited.is_none() && matches!(self.child.try_wait(), Ok(None)) {
            self.signal(if self.guarded {
                libc::SIGTERM
            } else {
                libc::SIGKILL
            });
        }
    }
}

/// The exit status in words. Under the guard, the guard's code is the agent's
/// own code, or 128 + the signal that ended it.
fn describe(status: std::process::ExitStatus, guarded: bool) -> String {
    use std::os::unix::process::ExitStatusExt as _;
    match (status.code(), status.signal()) {
        (Some(code), _) if guarded && code > 128 && code < 160 => {
            format!("killed by signal {}", code - 128)
        }
        (Some(code), _) => format!("exit code {code}"),
        (None, Some(sig)) => format!("killed by signal {sig}"),
        (None, None) => format!("{status}"),
    }
}

/// The program as a path: as given when it has a `/`, else looked up on PATH.
pub fn resolve(program: &Path) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt as _;
    let runnable = |p: &Path| {
        p.metadata()
            .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            .unwrap_or(false)
    };
    if program.components().count() > 1 {
        return runnable(program).then(|| program.to_path_buf());
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|p| runnable(p))
}

async fn read_lines(out: impl AsyncRead + Unpin, tx: mpsc::Sender<Line>) {
    let mut reader = tokio::io::BufReader::new(out);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        // Read at most MAX_LINE + 1 bytes of one line; the rest of a longer
        // line is skipped.
        let mut limited = (&mut reader).take(MAX_LINE as u64 + 1);
        match limited.read_until(b'\n', &mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let complete = buf.last() == Some(&b'\n');
        if !complete && buf.len() > MAX_LINE {
            let mut rest = Vec::new();
            if reader.read_until(b'\n', &mut rest).await.is_err() {
                return;
            }
            let head = String::from_utf8_lossy(&buf[..200.min(buf.len())]).into_owned();
            let line = Line::Text(format!(
                "(a line of more than {} MiB, cut) {head}...",
                MAX_LINE >> 20
            ));
            if tx.send(line).await.is_err() {
                return;
            }
            continue;
        }
        let Some(line) = Line::read(&buf) else {
            continue;
        };
        if tx.send(line).await.is_err() {
            return;
        }
    }
}

/// The end of a stream, by whole lines where it can.
#[derive(Default)]
struct Tail {
    bytes: VecDeque<u8>,
}

impl Tail {
    fn push(&mut self, chunk: &[u8]) {
        self.bytes.extend(chunk);
        while self.bytes.len() > TAIL_BYTES {
            self.bytes.pop_front();
        }
    }

    fn text(&self) -> String {
        let (a, b) = self.bytes.as_slices();
        let mut all = a.to_vec();
        all.extend_from_slice(b);
        let text = String::from_utf8_lossy(&all).into_owned();
        // Start at a line when the tail was cut in the middle of one.
        let text = if self.bytes.len() >= TAIL_BYTES {
            text.split_once('\n')
                .map(|(_, r)| r.to_string())
                .unwrap_or(text)
        } else {
            text
        };
        text.trim().to_string()
    }
}

async fn read_tail(
    err: impl AsyncRead + Unpin,
    tail: Arc<Mutex<Tail>>,
    ended: watch::Sender<bool>,
) {
    let mut reader = err;
    let mut buf = [0u8; 4096];
    loop {
        match reader.read(&mut buf).await {
            Ok(0) | Err(_) => {
                ended.send_replace(true);
                return;
            }
            Ok(n) => {
                if let Some(chunk) = buf.get(..n) {
                    tail.lock().unwrap_or_else(|p| p.into_inner()).push(chunk);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn launch(script: &str) -> Launch {
        Launch {
            program: PathBuf::from("sh"),
            args: vec!["-c".into(), script.into()],
            cwd: std::env::temp_dir(),
            env: vec![],
            env_remove: vec![],
            guard: None,
            jail: None,
        }
    }

    #[tokio::test]
    async fn lines_are_json_or_text_and_stderr_is_kept() {
        let mut p = AgentProcess::spawn(&launch(
            r#"echo '{"a":1}'; echo 'not json'; echo oops >&2; exit 3"#,
        ))
        .unwrap();
        assert_eq!(
            p.next_line().await,
            Some(Line::Json(serde_json::json!({"a":1})))
        );
        assert_eq!(p.next_line().await, Some(Line::Text("not json".into())));
        assert_eq!(p.next_line().await, None);
        assert_eq!(p.wait_exit().await, "exit code 3");
        assert_eq!(p.stderr_tail_at_end().await, "oops");
    }

    #[tokio::test]
    async fn a_dead_agents_stderr_is_read_to_its_end() {
        // The last line comes after the agent's exit, from a process it left.
        let mut p = AgentProcess::spawn(&launch(
            "(sleep 0.3; echo 'the late line' >&2) >/dev/null & echo 'the first line' >&2; exit 2",
        ))
        .unwrap();
        assert_eq!(p.next_line().await, None);
        assert_eq!(p.wait_exit().await, "exit code 2");
        assert_eq!(
            p.stderr_tail_at_end().await,
            "the first line\nthe late line"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn the_wait_for_the_end_of_stderr_is_bounded() {
        // A process the agent left holds stderr open for long after its exit.
        let mut p = AgentProcess::spawn(&launch("sleep 60 >&2 & exit 0")).unwrap();
        let group = p.pid().unwrap() as libc::pid_t;
        assert_eq!(p.wait_exit().await, "exit code 0");
        let asked = std::time::Instant::now();
        let tail = p.stderr_tail_at_end().await;
        assert!(
            asked.elapsed() < Duration::from_secs(30),
            "waited for the leftover"
        );
        assert_eq!(tail, "");
        // SAFETY: kill(2) of the group the test's agent led; its leader is reaped.
        unsafe { libc::kill(-group, libc::SIGKILL) };
    }

    #[tokio::test]
    async fn written_lines_reach_the_agent() {
        let mut p = AgentProcess::spawn(&launch("read l; echo \"$l\"")).unwrap();
        p.write(&serde_json::json!({"hi": "there"})).await.unwrap();
        assert_eq!(
            p.next_line().await,
            Some(Line::Json(serde_json::json!({"hi":"there"})))
        );
    }

    #[tokio::test]
    async fn stop_kills_an_agent_that_ignores_its_input_closing() {
        let mut p = AgentProcess::spawn(&launch("trap '' TERM; sleep 30 & wait")).unwrap();
        let started = std::time::Instant::now();
        let how = p.stop().await;
        assert!(how.contains("signal"), "{how}");
        assert!(started.elapsed() < Duration::from_secs(15));
    }

    #[tokio::test]
    async fn a_missing_program_says_so() {
        let mut l = launch("");
        l.program = PathBuf::from("no-such-agent-cli-xyz");
        let Err(e) = AgentProcess::spawn(&l) else {
            panic!("started a missing program")
        };
        assert!(e.to_string().contains("not found on PATH"), "{e}");
    }

    #[tokio::test]
    async fn a_dropped_process_is_ended_with_its_group() {
        let p = AgentProcess::spawn(&launch("sleep 300 & sleep 300; wait")).unwrap();
        let pgid = p.pid().unwrap() as libc::pid_t;
        drop(p);
        for _ in 0..500 {
            // SAFETY: kill(2) with signal 0 only asks whether the group exists.
            if unsafe { libc::kill(-pgid, 0) } != 0 {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("the agent's process group outlived its drop");
    }

    #[test]
    fn the_tail_keeps_the_end_from_a_line_start() {
        let mut t = Tail::default();
        for i in 0..2000 {
            t.push(format!("line {i}\n").as_bytes());
        }
        let text = t.text();
        assert!(text.starts_with("line "), "{}", &text[..20]);
        assert!(text.ends_with("line 1999"));
        assert!(text.len() <= TAIL_BYTES);
    }
}
