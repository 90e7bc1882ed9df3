//! The tool guard: a small supervisor between teammated and every `bash` command,
//! so that whatever a command starts dies with its teammate, however the teammate
//! ends (a clean exit, a crash, `kill -9`). Linux only.
//!
//! # What runs
//!
//! teammated does not start `bash` itself. It starts itself again
//! (`/proc/self/exe __tool-guard PARENT_PID bash -c COMMAND`, see [`program`]),
//! and that guard process, which never enters the async runtime or touches the
//! board:
//!
//! 1. blocks SIGCHLD, SIGTERM, SIGHUP and SIGINT, so that it takes them one at a
//!    time from `sigwaitinfo` and never dies of them half way;
//! 2. becomes a child subreaper (`PR_SET_CHILD_SUBREAPER`): whatever the command
//!    starts, and whose parent then exits (a double fork, `cmd &` in a subshell,
//!    a daemon that forks and calls `setsid()`), is re-parented to the guard
//!    instead of to init, so the guard always sees every live descendant as a
//!    child of its own;
//! 3. asks for SIGTERM when its parent dies (`PR_SET_PDEATHSIG`), then checks that
//!    its parent is still teammated, which closes the race with a parent that died
//!    before the request;
//! 4. starts `bash` in a process group of its own, with `PR_SET_PDEATHSIG =
//!    SIGKILL` set in `pre_exec` (should the guard itself be killed, the shell
//!    goes at least);
//! 5. reports the shell's wait status on its stdout (a pipe to teammated) when the
//!    shell exits, and stays as long as any descendant lives: background jobs
//!    (`server &`) outlive their command, as they always did, but not the guard;
//! 6. on SIGTERM (teammated died, stopped the command, or is leaving), kills
//!    everything: the shell's group, then, round after round, every child it has
//!    (re-parented orphans included), reaping each, until it has none. Then it
//!    exits.
//!
//! Under the teammate's sandbox the program the guard starts is bubblewrap
//! around `bash` (`teamboard_sandbox::Jail::wrap`): the guard still leads,
//! reaps and kills as above, with bubblewrap as the shell it sees. Killing
//! bubblewrap ends the sandbox's PID namespace and everything in it (its
//! `--die-with-parent`), so what a sandboxed command starts cannot escape the
//! guard even by a double fork into another session.
//!
//! teammated keeps the guards of commands that may still have processes in
//! [`super::guards::Guards`], and signals them when a claim is given up or lost and
//! before it exits, so none of that waits for the kernel.
//!
//! # Why this design
//!
//! The requirement is that `kill -9` of teammated also ends grandchildren: the
//! `sleep` under `sh -c`, the test server a build script backgrounds. A dead
//! process can do nothing, so something else must act, and must learn of the death
//! from the kernel.
//!
//! - **`PR_SET_PDEATHSIG` on the shell alone** (in `pre_exec`): the kernel delivers
//!   it to the direct child only, and a fork clears it. The shell dies; its
//!   children live on, re-parented to init. Kept as the fallback when there is no
//!   guard (see below), and as the guard's own safety net for the shell.
//! - **A subreaper in teammated itself**, killing its tool groups on exit: orphans
//!   do come back to teammated, but a subreaper that is killed hands them on to
//!   init, and on `kill -9` teammated runs no code at all. It covers clean exits,
//!   which the guard also covers.
//! - **`sh` with a trap as the supervisor**: a shell can trap the SIGTERM that
//!   PDEATHSIG sends and kill the group, but it cannot be a subreaper, it loses
//!   the difference between "exited 143" and "killed by SIGTERM" that the model is
//!   shown, job control prints to the command's output, and it would have to poll
//!   to stay alive exactly as long as background jobs do.
//! - **A forked supervisor without exec**, set up in `pre_exec`: no second binary,
//!   but everything it does between fork and its end must be async-signal-safe in
//!   the copy of a multi-threaded process: no allocation, and it holds copies of
//!   every descriptor teammated had (the boardd socket, other commands' pipes)
//!   until it closes them by hand. Fragile to write and to review.
//! - **A PID namespace** (`unshare --pid`): the kernel kills every process in it
//!   when its init dies, escapes included. It needs a user namespace where
//!   unprivileged ones may be disabled, and it changes what commands see (pids,
//!   `/proc`, uid mapping).
//! - **A cgroup per command**: `cgroup.kill` is exact, but needs a delegated
//!   cgroup subtree, which only a systemd unit has. Under systemd the unit's
//!   cgroup does this for the whole teammate (see `systemd/teammated@.service`).
//!
//! Re-executing teammated is ordinary Rust in a fresh single-threaded process,
//! needs no extra binary to install and cannot drift in version from its parent:
//! `/proc/self/exe` names the running binary even after it was replaced on disk.
//!
//! # Limits
//!
//! - A process that leaves the guard's tree is out of reach: one started through
//!   another service (`systemd-run`, `at`, a container daemon, an ssh to
//!   elsewhere). Within the tree, `setsid()` or `setpgid()` only leave the
//!   command's *group*; the subreaper still finds them.
//! - If the guard itself is killed with SIGKILL (the OOM killer, or someone
//!   signalling its pid), only the shell follows it, by its own PDEATHSIG.
//! - PDEATHSIG fires when the *thread* that started the guard ends, not the
//!   process. teammated's binary runs on one thread, so the two are the same;
//!   an embedder that starts commands from a thread that exits early would see
//!   its commands killed early.
//! - The guard exists only in a process whose `main` called [`serve_if_asked`]:
//!   the teammated binary. The library run in-process (tests) falls back to the
//!   shell's own PDEATHSIG and process group, where grandchildren survive a
//!   `kill -9`.

use std::ffi::OsString;
use std::io::Write as _;
use std::os::fd::{AsRawFd as _, OwnedFd};
use std::os::unix::process::CommandExt as _;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};

/// The first argument that turns teammated into a guard. Not a flag: clap never
/// sees it, and no teammate name can be mistaken for it.
pub const ARG: &str = "__tool-guard";

/// The same guard for an agent runtime's process (Claude Code, Codex, an ACP
/// agent), with two differences: the agent keeps teammated's stdin, stdout and
/// stderr (its JSON streams), so the guard reports the agent's end as its own
/// exit status instead of on stdout; and the guard kills whatever is left as soon
/// as the agent itself ends, since nothing an agent starts should outlive it.
pub const AGENT_ARG: &str = "__agent-guard";

/// Set once `main` has shown that this executable serves [`ARG`].
static SERVES: AtomicBool = AtomicBool::new(false);

/// Signals the guard takes from `sigwaitinfo`: a child changed state, or stop.
const SIGNALS: [libc::c_int; 4] = [libc::SIGCHLD, libc::SIGTERM, libc::SIGHUP, libc::SIGINT];

/// To be called first thing in teammated's `main`, before any thread exists.
/// When the process was started as a guard it runs as one and returns the exit
/// code; otherwise it returns `None` and records that this executable can serve
/// as the guard of its tool commands.
pub fn serve_if_asked() -> Option<i32> {
    let mut args = std::env::args_os();
    let first = args.nth(1);
    if first.as_deref() == Some(std::ffi::OsStr::new(ARG)) {
        return Some(serve(args, Mode::Tool));
    }
    if first.as_deref() == Some(std::ffi::OsStr::new(AGENT_ARG)) {
        return Some(serve(args, Mode::Agent));
    }
    SERVES.store(true, Ordering::Release);
    None
}

/// What the guard guards.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// A `bash` tool command: output on stderr, the status reported on stdout,
    /// background jobs may outlive the command (not the guard).
    Tool,
    /// An agent runtime: all three streams are the agent's, the status is the
    /// guard's exit code, and the rest is killed when the agent ends.
    Agent,
}

/// The program to start as a command's guard: this very executable, when its
/// `main` serves [`ARG`]; `None` elsewhere (the library inside a test binary).
pub fn program() -> Option<PathBuf> {
    SERVES
        .load(Ordering::Acquire)
        .then(|| PathBuf::from("/proc/self/exe"))
}

/// The guard's whole life. `args`: the parent's pid, then the program and its
/// arguments.
fn serve(mut args: impl Iterator<Item = OsString>, mode: Mode) -> i32 {
    let parent = args
        .next()
        .and_then(|a| a.to_str()?.parse::<libc::pid_t>().ok());
    let (Some(parent), Some(program)) = (parent, args.next()) else {
        report(&format!(
            "error: usage: teammated {ARG} PARENT_PID PROGRAM [ARG...]"
        ));
        return 2;
    };
    let set = signal_set();
    // SAFETY: plain system calls on values we own; the process has one thread.
    unsafe {
        libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM, 0, 0, 0);
        if libc::getppid() != parent {
            // teammated died before we asked to hear of it: start nothing.
            return 1;
        }
    }
    let leader = match start(program, args.collect(), mode) {
        Ok(pid) => pid,
        Err(e) => {
            if mode == Mode::Agent {
                // teammated reads the agent's stderr for the reason.
                let _ = writeln!(std::io::stderr(), "teammated's agent guard: {e}");
                return 127;
            }
            report(&format!("error: {e}"));
            return 1;
        }
    };
    if mode == Mode::Agent {
        // The agent's pipes must close when the agent's processes are done, not
        // when the guard is.
        onto_null(libc::STDIN_FILENO);
        onto_null(libc::STDOUT_FILENO);
    }
    // The command's output pipe must close when the command's processes are
    // done, not when the guard is.
    onto_null(libc::STDERR_FILENO);
    let mut leader_alive = true;
    let mut code = 0;
    loop {
        // SAFETY: `set` is initialised; a null siginfo pointer is allowed.
        let sig = unsafe { libc::sigwaitinfo(&set, std::ptr::null_mut()) };
        if sig == libc::SIGCHLD {
            let was_alive = leader_alive;
            let reaped = reap(leader, &mut leader_alive, mode, &mut code);
            if mode == Mode::Agent && was_alive && !leader_alive {
                // The agent is gone: so is everything it started.
                kill_all(None);
                return code;
            }
            match reaped {
                Reaped::Some => {}
                Reaped::NoChildren => return code,
            }
        } else if sig > 0 {
            kill_all(leader_alive.then_some(leader));
            // An agent stopped by teammated ended by its SIGTERM, as far as
            // teammated's wait can tell.
            return if mode == Mode::Agent {
                128 + libc::SIGTERM
            } else {
                0
            };
        }
        // -1: EINTR from a signal outside the set; wait again.
    }
}

fn signal_set() -> libc::sigset_t {
    // SAFETY: sigemptyset initialises the set before sigaddset reads it.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in SIGNALS {
            libc::sigaddset(&mut set, s);
        }
        set
    }
}

/// Starts the command in a process group of its own, on our stderr (the output
/// pipe), and returns its pid.
fn start(program: OsString, args: Vec<OsString>, mode: Mode) -> std::io::Result<libc::pid_t> {
    let out = std::io::stderr().as_raw_fd();
    // SAFETY: dup(2) of our own stderr; the new descriptor is owned at once.
    let out = unsafe { libc::fcntl(out, libc::F_DUPFD_CLOEXEC, 0) };
    if out < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `out` is a fresh descriptor nothing else owns.
    let out = unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(out) };
    let guard = std::process::id() as libc::pid_t;
    let mut cmd = Command::new(program);
    cmd.args(args).stdin(Stdio::inherit()).process_group(0);
    match mode {
        Mode::Tool => cmd
            .stdout(Stdio::from(out.try_clone()?))
            .stderr(Stdio::from(out)),
        Mode::Agent => cmd.stdout(Stdio::inherit()).stderr(Stdio::inherit()),
    };
    // SAFETY: between fork and exec the closure only makes system calls that are
    // async-signal-safe and touches no memory but the stack.
    unsafe {
        cmd.pre_exec(move || {
            // The command must not inherit the guard's blocked signals.
            let mut empty: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut empty);
            libc::sigprocmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut());
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::getppid() != guard {
                return Err(std::io::Error::other("the tool guard died"));
            }
            Ok(())
        });
    }
    let child = cmd.spawn()?;
    // The guard reaps with waitpid(-1) itself; the handle is only dropped.
    Ok(child.id() as libc::pid_t)
}

enum Reaped {
    Some,
    /// Nothing is left: the command and everything it started have ended.
    NoChildren,
}

/// Reaps every child that has ended; reports the shell's status when it is one
/// (for an agent: keeps it in `code`, as an exit code: the agent's own, or 128 +
/// the signal that killed it, as a shell would say).
fn reap(leader: libc::pid_t, leader_alive: &mut bool, mode: Mode, code: &mut i32) -> Reaped {
    loop {
        let mut status = 0;
        // SAFETY: waitpid writes only to `status`.
        let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
        if pid > 0 {
            if pid == leader {
                *leader_alive = false;
                match mode {
                    Mode::Tool => report(&format!("{status}")),
                    Mode::Agent => {
                        *code = if libc::WIFEXITED(status) {
                            libc::WEXITSTATUS(status)
                        } else {
                            128 + libc::WTERMSIG(status)
                        };
                    }
                }
            }
            continue;
        }
        if pid == 0 {
            return Reaped::Some;
        }
        match std::io::Error::last_os_error().raw_os_error() {
            Some(libc::EINTR) => continue,
            _ => return Reaped::NoChildren,
        }
    }
}

/// Kills everything below the guard and reaps it. `leader`: the shell, while it
/// is unreaped, so that its group id still names its group.
fn kill_all(leader: Option<libc::pid_t>) {
    if let Some(leader) = leader {
        // SAFETY: kill(2) has no memory-safety preconditions.
        unsafe { libc::kill(-leader, libc::SIGKILL) };
    }
    // Killing a process re-parents its children to us (we are their subreaper),
    // so each round reaches one level deeper, until no child is left.
    loop {
        let Some(children) = children() else {
            // No /proc to list them by: take what has died and leave.
            // SAFETY: waitpid with a null status pointer writes nothing.
            while unsafe { libc::waitpid(-1, std::ptr::null_mut(), libc::WNOHANG) } > 0 {}
            return;
        };
        for pid in &children {
            // SAFETY: as above; an unreaped child's pid cannot be reused.
            unsafe { libc::kill(*pid, libc::SIGKILL) };
        }
        // Every child listed was just killed, so this returns, unless there were
        // none, in which case it fails with ECHILD.
        // SAFETY: waitpid with a null status pointer writes nothing.
        let pid = unsafe { libc::waitpid(-1, std::ptr::null_mut(), 0) };
        if pid < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return;
        }
    }
}

/// The guard's children, living or dead. From `/proc/self/task/PID/children`
/// (the guard has one thread), or, on a kernel without that file, by scanning
/// `/proc` for our parent id.
fn children() -> Option<Vec<libc::pid_t>> {
    let me = std::process::id();
    if let Ok(text) = std::fs::read_to_string(format!("/proc/self/task/{me}/children")) {
        return Some(
            text.split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect(),
        );
    }
    std::fs::read_dir("/proc").ok()?;
    let mine = teamboard_process::processes()
        .into_iter()
        .filter(|s| s.ppid == me);
    Some(mine.filter_map(|s| s.pid.try_into().ok()).collect())
}

/// Writes one line to teammated on stdout, then closes it: teammated reads the
/// pipe to its end.
fn report(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
    drop(out);
    onto_null(libc::STDOUT_FILENO);
}

/// Points `fd` at /dev/null, closing what it was.
fn onto_null(fd: libc::c_int) {
    if let Ok(null) = std::fs::OpenOptions::new().write(true).open("/dev/null") {
        // SAFETY: dup2 onto a standard descriptor of our own.
        unsafe { libc::dup2(null.as_raw_fd(), fd) };
    }
}
