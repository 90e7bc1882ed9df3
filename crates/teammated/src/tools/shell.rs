//! The `bash` tool.
//!
//! `bash -c COMMAND` runs in the working directory with stdin closed and stdout and
//! stderr sharing one pipe, so the model sees the two streams interleaved in the order
//! they were written, as in a terminal. The command gets its own process group and,
//! in the teammated binary, a guard process ([`super::guard`]), so that a timeout, an
//! abandoned call or the teammate's death kills everything it started, not just the
//! shell.
//!
//! The output ends with a trailer line the model (and the scripted test model) can rely
//! on: `[exit code: N]`, `[killed by signal N]` or `[timed out after Ns; killed]`.
//!
//! Under the teammate's sandbox (`--sandbox`, the default) the guard starts
//! bubblewrap around `bash` ([`teamboard_sandbox::Jail`]): the command writes
//! only the working directory and a private `/tmp`, and lives in a PID
//! namespace of its own, so its background jobs end with it. Under `--sandbox
//! off` it runs with the teammate's own user rights, and its background jobs
//! outlive it until the claim ends.

use super::call::{LocalEnv, ToolOutput, opt_int_arg, str_arg};
use serde_json::Value;
use std::collections::VecDeque;
use std::future::Future;
use std::io::PipeWriter;
use std::os::fd::OwnedFd;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::pin::Pin;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;
use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;
use tokio::process::{Child, Command};
use tokio::time::Instant;

/// The longest a command may run, whatever the model asks for.
pub const MAX_TIMEOUT_SECS: u64 = 600;
/// Bytes of output kept from the start and from the end of a long output. Models act
/// on the first lines (what ran) and the last lines (how it ended: the failing test,
/// the compiler's summary), so the middle is what goes.
const HEAD_BYTES: usize = 25_000;
const TAIL_BYTES: usize = 25_000;
/// How long output is still read after the command exits. A background child
/// (`server &`) inherits the pipe and may keep it open forever; waiting for EOF would
/// hang the teammate, so we take what arrives shortly after exit and stop.
const GRACE: Duration = Duration::from_millis(150);

const EXIT_PREFIX: &str = "[exit code: ";
const SIGNAL_PREFIX: &str = "[killed by signal ";
const TIMEOUT_PREFIX: &str = "[timed out after ";

/// Runs the `bash` tool: `{command, timeout_secs?}`.
pub async fn run(env: &LocalEnv, input: &Value) -> ToolOutput {
    let command = match str_arg(input, "command") {
        Ok(c) => c,
        Err(e) => return e,
    };
    if command.trim().is_empty() {
        return ToolOutput::error("the command is empty; give a bash command to run");
    }
    let timeout = match opt_int_arg(input, "timeout_secs") {
        Ok(None) => env.shell_timeout,
        Ok(Some(0)) => {
            return ToolOutput::error("timeout_secs must be at least 1");
        }
        // Clamped rather than refused: the model asked for "long", and the cap is
        // documented in the tool's description.
        Ok(Some(n)) => Duration::from_secs(n.min(MAX_TIMEOUT_SECS)),
        Err(e) => return e,
    };
    match run_command(env, command, timeout).await {
        Ok(out) => out,
        Err(e) => ToolOutput::error(format!(
            "could not run bash in {}: {e}",
            env.workdir.display()
        )),
    }
}

/// How the command ended.
enum Ending {
    Exited(ExitStatus),
    TimedOut,
}

async fn run_command(
    env: &LocalEnv,
    command: &str,
    timeout: Duration,
) -> std::io::Result<ToolOutput> {
    // std's pipe is created close-on-exec, so commands other tools spawn concurrently
    // do not inherit it (which would keep it open and delay EOF).
    let (reader, writer) = std::io::pipe()?;
    let mut running = Running::start(env, command, writer)?;
    let mut rx = pipe::Receiver::from_owned_fd(OwnedFd::from(reader))?;

    let mut out = Capture::default();
    let mut buf = vec![0u8; 16 * 1024];
    let mut eof = false;
    let deadline = Instant::now() + timeout;
    let ending = loop {
        tokio::select! {
            r = rx.read(&mut buf), if !eof => match r {
                Ok(0) => eof = true,
                Ok(n) => out.push(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    out.note(&format!("[reading the output failed: {e}]"));
                    eof = true;
                }
            },
            status = &mut running.ended => break Ending::Exited(status?),
            () = tokio::time::sleep_until(deadline) => break Ending::TimedOut,
        }
    };
    if let Ending::TimedOut = ending {
        running.stop.kill();
        // Resolves at once now: the shell is reaped (or its guard is done).
        let _ = (&mut running.ended).await;
    }
    running.stop.ended();

    let grace_end = Instant::now() + GRACE;
    let mut still_open = false;
    while !eof {
        match tokio::time::timeout_at(grace_end, rx.read(&mut buf)).await {
            Err(_elapsed) => still_open = true,
            Ok(Ok(0)) => {}
            Ok(Ok(n)) => {
                out.push(&buf[..n]);
                continue;
            }
            Ok(Err(e)) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Ok(Err(e)) => out.note(&format!("[reading the output failed: {e}]")),
        }
        eof = true;
    }

    let mut content = out.finish();
    if !content.is_empty() && !content.ends_with('\n') {
        content.push('\n');
    }
    if still_open {
        content.push_str(
            "[note: a background process still holds the output open; its further output \
             is discarded. Redirect background jobs to a file: cmd > log 2>&1 &]\n",
        );
    }
    let (trailer, is_error) = match ending {
        Ending::TimedOut => (
            format!("{TIMEOUT_PREFIX}{}; killed]", fmt_secs(timeout)),
            true,
        ),
        Ending::Exited(status) => match (status.code(), status.signal()) {
            (Some(code), _) => (format!("{EXIT_PREFIX}{code}]"), code != 0),
            (None, Some(sig)) => (format!("{SIGNAL_PREFIX}{sig}]"), true),
            (None, None) => (format!("[ended: {status}]"), true),
        },
    };
    content.push_str(&trailer);
    Ok(ToolOutput { content, is_error })
}

/// A started command: how to learn that its shell ended, and how to stop it.
struct Running {
    // Declared first so that it drops first: the group must be killed while its
    // leader, owned by `ended` in direct mode, is still unreaped.
    stop: Stop,
    /// Resolves once the shell has ended, with its wait status.
    ended: Pin<Box<dyn Future<Output = std::io::Result<ExitStatus>> + Send>>,
}

impl Running {
    /// Starts `bash -c COMMAND` with `output` as its stdout and stderr: under its
    /// guard when there is one, otherwise directly.
    fn start(env: &LocalEnv, command: &str, output: PipeWriter) -> std::io::Result<Running> {
        let (program, args) = env.jail.wrap("bash", ["-c".into(), command.into()]);
        let mut cmd = match &env.guard {
            Some(guard) => {
                let mut cmd = Command::new(guard);
                cmd.arg(super::guard::ARG)
                    .arg(std::process::id().to_string())
                    .arg(program);
                cmd
            }
            None => {
                let mut cmd = Command::new(program);
                // The only protection without a guard, and it reaches the shell alone.
                teamboard_process::die_with_parent(cmd.as_std_mut(), libc::SIGKILL);
                cmd
            }
        };
        cmd.args(args)
            .current_dir(&env.workdir)
            // teammated's main() already took the API keys out of its environment;
            // this keeps them out of the model's reach when the tools run elsewhere
            // (tests, embedders).
            .env_remove("ANTHROPIC_API_KEY")
            .env_remove("OPENAI_API_KEY")
            .stdin(Stdio::null())
            .process_group(0);
        match &env.guard {
            Some(guard) => Running::guarded(cmd, guard, output, &env.guards),
            None => Running::direct(cmd, output),
        }
    }

    /// The guard passes the output on to bash and tells us on its own stdout how
    /// bash ended.
    fn guarded(
        mut cmd: Command,
        program: &Path,
        output: PipeWriter,
        guards: &super::guards::Guards,
    ) -> std::io::Result<Running> {
        let (status, status_writer) = std::io::pipe()?;
        cmd.stdout(status_writer).stderr(output);
        let spawned = cmd.spawn();
        // The Command still owns our copies of the write ends. Until they are
        // closed, the pipes can never report EOF, so drop them right away.
        drop(cmd);
        let guard = spawned.map_err(|e| {
            std::io::Error::new(
                e.kind(),
                format!("cannot start its guard {}: {e}", program.display()),
            )
        })?;
        let status = pipe::Receiver::from_owned_fd(OwnedFd::from(status))?;
        Ok(Running {
            stop: Stop::Guarded {
                guard: Some(guard),
                guards: guards.clone(),
            },
            ended: Box::pin(read_status(status)),
        })
    }

    fn direct(mut cmd: Command, output: PipeWriter) -> std::io::Result<Running> {
        cmd.stdout(output.try_clone()?)
            .stderr(output)
            .kill_on_drop(true);
        let spawned = cmd.spawn();
        // As above: close our copies of the write end at once.
        drop(cmd);
        let mut child = spawned?;
        // With process_group(0) the child leads a new group whose id is its pid.
        let pgid = child.id().and_then(|id| i32::try_from(id).ok());
        Ok(Running {
            stop: Stop::Direct { pgid },
            ended: Box::pin(async move { child.wait().await }),
        })
    }
}

/// The shell's wait status, as its guard reports it on the pipe.
async fn read_status(mut status: pipe::Receiver) -> std::io::Result<ExitStatus> {
    let mut text = String::new();
    status.read_to_string(&mut text).await?;
    let line = text.trim();
    if let Some(error) = line.strip_prefix("error: ") {
        return Err(std::io::Error::other(error.to_string()));
    }
    line.parse::<i32>()
        .map(ExitStatus::from_raw)
        .map_err(|_| std::io::Error::other("the command's guard ended without saying how it ended"))
}

/// Stops a command and everything it started. Dropped before the command ended
/// (the tool call was abandoned: a lost claim, the teammate leaving), it does so
/// too.
enum Stop {
    /// Under a guard: stopping is asking the guard (SIGTERM), which kills the
    /// whole tree. Once the shell has ended the guard may stay with background
    /// jobs, so it goes to the teammate's [`super::guards::Guards`].
    Guarded {
        guard: Option<Child>,
        guards: super::guards::Guards,
    },
    /// bash run directly, leading its own group; `None` once the leader is reaped
    /// (its pid, and so the group id, may be reused from then on).
    Direct { pgid: Option<i32> },
}

impl Stop {
    fn kill(&mut self) {
        match self {
            Stop::Guarded { guard, .. } => {
                if let Some(pid) = guard
                    .as_ref()
                    .and_then(Child::id)
                    .and_then(|p| i32::try_from(p).ok())
                {
                    // SAFETY: kill(2) on our unreaped child, so the pid is ours.
                    unsafe { libc::kill(pid, libc::SIGTERM) };
                }
            }
            Stop::Direct { pgid } => {
                if let Some(pgid) = pgid.take() {
                    // SAFETY: kill(2) has no memory-safety preconditions. The group
                    // leader has not been reaped yet, so `pgid` still names this
                    // command's group.
                    unsafe { libc::kill(-pgid, libc::SIGKILL) };
                }
            }
        }
    }

    /// The shell has ended (and, in direct mode, been reaped).
    fn ended(&mut self) {
        match self {
            Stop::Guarded { guard, guards } => {
                if let Some(child) = guard.take() {
                    guards.keep(child);
                }
            }
            Stop::Direct { pgid } => *pgid = None,
        }
    }
}

impl Drop for Stop {
    fn drop(&mut self) {
        self.kill();
        self.ended();
    }
}

fn fmt_secs(d: Duration) -> String {
    if d.subsec_nanos() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{:.1}s", d.as_secs_f64())
    }
}

/// The head and the tail of the output, and how much went by in between.
#[derive(Default)]
struct Capture {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    total: usize,
}

impl Capture {
    fn push(&mut self, bytes: &[u8]) {
        self.total += bytes.len();
        let take = HEAD_BYTES.saturating_sub(self.head.len()).min(bytes.len());
        self.head.extend_from_slice(&bytes[..take]);
        let rest = &bytes[take..];
        if rest.len() >= TAIL_BYTES {
            self.tail.clear();
            self.tail.extend(&rest[rest.len() - TAIL_BYTES..]);
        } else {
            self.tail.extend(rest);
            let excess = self.tail.len().saturating_sub(TAIL_BYTES);
            self.tail.drain(..excess);
        }
    }

    /// A line of our own, kept whatever the cap.
    fn note(&mut self, line: &str) {
        let mut bytes = Vec::with_capacity(line.len() + 2);
        if self.total > 0 && !self.ends_with_newline() {
            bytes.push(b'\n');
        }
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
        // Into the tail, which is always shown.
        self.total += bytes.len();
        self.tail.extend(bytes);
    }

    fn ends_with_newline(&self) -> bool {
        match self.tail.back() {
            Some(b) => *b == b'\n',
            None => self.head.last() == Some(&b'\n'),
        }
    }

    fn finish(self) -> String {
        let tail: Vec<u8> = self.tail.into();
        let omitted = self.total - self.head.len() - tail.len();
        if omitted == 0 {
            let mut all = self.head;
            all.extend_from_slice(&tail);
            return String::from_utf8_lossy(&all).into_owned();
        }
        // Cut at line boundaries when one is near, so the model does not read half a
        // line as if it were whole.
        let head_end = self
            .head
            .iter()
            .rposition(|&b| b == b'\n')
            .filter(|&i| i >= self.head.len() / 2)
            .map_or(self.head.len(), |i| i + 1);
        let tail_start = tail
            .iter()
            .position(|&b| b == b'\n')
            .filter(|&i| i < tail.len() / 2)
            .map_or(0, |i| i + 1);
        let omitted = omitted + (self.head.len() - head_end) + tail_start;
        let mut s = String::from_utf8_lossy(&self.head[..head_end]).into_owned();
        if !s.ends_with('\n') {
            s.push('\n');
        }
        s.push_str(&format!("[... {omitted} bytes omitted ...]\n"));
        s.push_str(&String::from_utf8_lossy(&tail[tail_start..]));
        s
    }
}

/// The exit code in a `bash` output's trailer; `None` when it was killed or timed out
/// (or `content` is not a `bash` output).
pub fn exit_code_of(content: &str) -> Option<i32> {
    last_line(content)
        .strip_prefix(EXIT_PREFIX)?
        .strip_suffix(']')?
        .parse()
        .ok()
}

/// A `bash` output without its trailer line (and the newline before it).
pub fn strip_trailer(content: &str) -> &str {
    let last = last_line(content);
    let is_trailer = last.ends_with(']')
        && [EXIT_PREFIX, SIGNAL_PREFIX, TIMEOUT_PREFIX]
            .iter()
            .any(|p| last.starts_with(p));
    if !is_trailer {
        return content;
    }
    let body = &content[..content.len() - last.len()];
    body.strip_suffix('\n').unwrap_or(body)
}

fn last_line(content: &str) -> &str {
    content.rsplit('\n').next().unwrap_or(content)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::time::Instant as StdInstant;

    fn env(dir: &Path) -> LocalEnv {
        LocalEnv::new(dir.to_path_buf(), Duration::from_secs(30))
    }

    async fn bash(dir: &Path, command: &str) -> ToolOutput {
        run(&env(dir), &json!({ "command": command })).await
    }

    #[tokio::test]
    async fn stdout_and_stderr_are_interleaved_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let out = bash(
            dir.path(),
            "echo out1; echo err1 >&2; echo out2; echo err2 >&2",
        )
        .await;
        assert_eq!(out.content, "out1\nerr1\nout2\nerr2\n[exit code: 0]");
        assert!(!out.is_error);
        assert_eq!(strip_trailer(&out.content), "out1\nerr1\nout2\nerr2");
    }

    #[tokio::test]
    async fn runs_in_the_workdir_with_stdin_closed() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("marker"), "").unwrap();
        let out = bash(dir.path(), "ls; cat; echo done").await;
        assert_eq!(out.content, "marker\ndone\n[exit code: 0]");
    }

    #[tokio::test]
    async fn exit_codes_and_signals() {
        let dir = tempfile::tempdir().unwrap();
        let out = bash(dir.path(), "echo no; exit 3").await;
        assert!(out.is_error);
        assert_eq!(exit_code_of(&out.content), Some(3));
        assert_eq!(out.content, "no\n[exit code: 3]");

        let out = bash(dir.path(), "printf 'no newline'").await;
        assert_eq!(out.content, "no newline\n[exit code: 0]");
        assert_eq!(exit_code_of(&out.content), Some(0));

        let out = bash(dir.path(), "kill -TERM $$").await;
        assert!(out.is_error);
        assert_eq!(out.content, "[killed by signal 15]");
        assert_eq!(exit_code_of(&out.content), None);
        assert_eq!(strip_trailer(&out.content), "");
    }

    #[tokio::test]
    async fn bad_arguments_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let e = env(dir.path());
        assert!(run(&e, &json!({})).await.is_error);
        assert!(run(&e, &json!({"command": "  "})).await.is_error);
        let out = run(&e, &json!({"command": "true", "timeout_secs": "soon"})).await;
        assert!(out.is_error);
        assert!(out.content.contains("timeout_secs"), "{}", out.content);
    }

    fn is_gone(pid: i32) -> bool {
        // A killed process may linger as a zombie until its new parent reaps it (a
        // container's init may never do so); both count as gone.
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => true,
            Ok(stat) => stat
                .rsplit(')')
                .next()
                .is_some_and(|rest| rest.trim_start().starts_with('Z')),
        }
    }

    #[tokio::test]
    async fn timeout_kills_the_whole_group() {
        let dir = tempfile::tempdir().unwrap();
        let started = StdInstant::now();
        let out = run(
            &env(dir.path()),
            &json!({
                "command": "sleep 60 & echo $! > bg.pid; echo before; sleep 60",
                "timeout_secs": 1
            }),
        )
        .await;
        assert!(started.elapsed() < Duration::from_secs(10));
        assert!(out.is_error);
        assert!(out.content.starts_with("before\n"), "{}", out.content);
        assert!(
            out.content.ends_with("[timed out after 1s; killed]"),
            "{}",
            out.content
        );
        assert_eq!(exit_code_of(&out.content), None);
        let pid: i32 = std::fs::read_to_string(dir.path().join("bg.pid"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let deadline = StdInstant::now() + Duration::from_secs(5);
        while !is_gone(pid) {
            assert!(
                StdInstant::now() < deadline,
                "background sleep {pid} survived"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    #[tokio::test]
    async fn background_child_does_not_hang() {
        let dir = tempfile::tempdir().unwrap();
        let started = StdInstant::now();
        let out = bash(dir.path(), "sleep 30 & echo $!; echo started").await;
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "took {:?}",
            started.elapsed()
        );
        assert!(!out.is_error, "{}", out.content);
        assert_eq!(exit_code_of(&out.content), Some(0));
        assert!(out.content.contains("started\n"), "{}", out.content);
        assert!(
            out.content.contains("background process"),
            "{}",
            out.content
        );
        // Clean up the sleeper: background jobs outlive a successful command.
        let pid: i32 = out.content.lines().next().unwrap().parse().unwrap();
        // SAFETY: plain kill(2) on a pid this test started.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
        }
    }

    #[tokio::test]
    async fn long_output_keeps_head_and_tail() {
        let dir = tempfile::tempdir().unwrap();
        let out = bash(dir.path(), "seq 1 100000").await;
        assert!(!out.is_error);
        assert!(out.content.len() < 52_000, "{}", out.content.len());
        assert!(out.content.starts_with("1\n2\n3\n"));
        assert!(out.content.ends_with("99999\n100000\n[exit code: 0]"));
        let omitted_line = out
            .content
            .lines()
            .find(|l| l.starts_with("[... "))
            .unwrap();
        let omitted: usize = omitted_line
            .trim_start_matches("[... ")
            .trim_end_matches(" bytes omitted ...]")
            .parse()
            .unwrap();
        // What is shown plus what was omitted is exactly what was written.
        let total: usize = (1..=100000u32).map(|n| n.to_string().len() + 1).sum();
        let shown = strip_trailer(&out.content).len() + 1 - omitted_line.len() - 1;
        assert_eq!(shown + omitted, total);
    }

    #[test]
    fn trailer_parsing() {
        assert_eq!(exit_code_of("x\n[exit code: 127]"), Some(127));
        assert_eq!(exit_code_of("[exit code: -1]"), Some(-1));
        assert_eq!(exit_code_of("[exit code: 1]\nmore"), None);
        assert_eq!(exit_code_of("[timed out after 5s; killed]"), None);
        assert_eq!(strip_trailer("a\nb\n[timed out after 5s; killed]"), "a\nb");
        assert_eq!(strip_trailer("no trailer"), "no trailer");
    }
}
