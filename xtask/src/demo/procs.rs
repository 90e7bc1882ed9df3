//! The demo's processes: one boardd and the teammates, and making sure none of them
//! outlives the demo.
//!
//! Teammates are started by `teamctl spawn`, which detaches them and exits, so they
//! are not our children. The demo therefore makes itself a child subreaper first:
//! an orphaned teammated is then re-parented to the demo instead of to init, so the
//! demo can wait for it and reap it (in a container whose init does not reap, it
//! would otherwise stay a zombie) and can find any teammate whose pid it never
//! learned (a `teamctl spawn` cut short by Ctrl-C).

use anyhow::Context;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::time::{Duration, Instant};
use teamboard_process::{Boardd, Launch, Stat, die_with_parent, processes};
use tokio::signal::unix::{Signal, SignalKind, signal};

/// How long boardd may take to answer.
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a SIGTERM may take before the process is killed.
const TERM_TIMEOUT: Duration = Duration::from_secs(10);
/// How often exits are checked while stopping. Only shutdown polls; the live view
/// is driven by boardd's events.
const EXIT_POLL: Duration = Duration::from_millis(20);

/// Makes orphaned descendants (the detached teammates) our children.
pub fn become_subreaper() -> anyhow::Result<()> {
    // SAFETY: prctl with integer arguments only.
    if unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) } != 0 {
        return Err(std::io::Error::last_os_error()).context("cannot become a child subreaper");
    }
    Ok(())
}

/// A teammate the demo started.
pub struct Teammate {
    pub name: String,
    pub pid: u32,
    /// Set once it has exited (and been reaped, when it was our child).
    pub exit: Option<Exited>,
}

#[derive(Debug, Clone, Copy)]
pub enum Exited {
    Status(ExitStatus),
    /// Gone, but not our child, so its status is unknown.
    Unknown,
}

/// Everything running. Dropping it stops the teammates first (they give their tasks
/// back while boardd still listens), then boardd.
#[derive(Default)]
pub struct Procs {
    pub teammates: Vec<Teammate>,
    pub boardd: Option<Boardd>,
}

impl Procs {
    /// Starts boardd in its own process group, so that a Ctrl-C in the terminal
    /// reaches only the demo, which then stops the teammates before boardd. Waits
    /// until it answers. If the demo is killed outright (SIGKILL), boardd gets a
    /// SIGTERM and shuts down cleanly instead of running on unseen.
    pub async fn start_boardd(
        &mut self,
        bin: &Path,
        state_dir: &Path,
        socket: &Path,
        remove_env: &[std::ffi::OsString],
    ) -> anyhow::Result<()> {
        let mut launch = Launch::new(bin, socket, state_dir, &state_dir.join("boardd.log"));
        launch.command().process_group(0);
        for key in remove_env {
            launch.command().env_remove(key);
        }
        die_with_parent(launch.command(), libc::SIGTERM);
        self.boardd = Some(launch.start(START_TIMEOUT).await?);
        Ok(())
    }

    /// Records the roster's teammates by pid (the lead spawned them, detached; as
    /// the demo is their subreaper, they are below it).
    pub fn adopt(&mut self, members: &[teamboard_protocol::Member]) {
        for m in members {
            if let Some(pid) = m.pid {
                self.track(pid).name = m.name.clone();
            }
        }
    }

    /// Adds teammated processes below us that were never recorded: a spawn that
    /// was interrupted after the process started.
    pub fn adopt_strays(&mut self) {
        for pid in descendant_teammates() {
            self.track(pid);
        }
    }

    /// The teammate of `pid`, recorded (as `pid N`) if it was not yet.
    fn track(&mut self, pid: u32) -> &mut Teammate {
        let at = match self.teammates.iter().position(|t| t.pid == pid) {
            Some(at) => at,
            None => {
                let name = format!("pid {pid}");
                self.teammates.push(Teammate {
                    name,
                    pid,
                    exit: None,
                });
                self.teammates.len() - 1
            }
        };
        &mut self.teammates[at]
    }

    /// The teammates that have not exited yet, after checking each.
    pub fn running(&mut self) -> Vec<usize> {
        for t in self.teammates.iter_mut().filter(|t| t.exit.is_none()) {
            t.exit = check_exit(t.pid);
        }
        let left = self
            .teammates
            .iter()
            .enumerate()
            .filter(|(_, t)| t.exit.is_none());
        left.map(|(i, _)| i).collect()
    }

    /// Waits until every teammate has exited or `limit` has passed.
    pub async fn wait_teammates(&mut self, limit: Duration) {
        let until = Instant::now() + limit;
        while !self.running().is_empty() && Instant::now() < until {
            tokio::time::sleep(EXIT_POLL).await;
        }
    }

    /// Signals every teammate still running.
    pub fn signal_teammates(&mut self, signal: libc::c_int) {
        for i in self.running() {
            let pid = self.teammates[i].pid as libc::pid_t;
            // SAFETY: kill(2) on a pid that has not exited: it is our unreaped child
            // or a live teammate (checked just now), so it cannot have been reused.
            unsafe { libc::kill(pid, signal) };
            if signal == libc::SIGKILL {
                // A teammate leads its own process group: a killed teammate cannot
                // stop the tool commands it started, so they go with it.
                // SAFETY: as above, for the group the live teammate leads.
                unsafe { libc::kill(-pid, signal) };
            }
        }
    }

    /// SIGTERM (teammated gives its task back and leaves), then SIGKILL for any
    /// that does not go within the limit.
    pub async fn terminate_teammates(&mut self) {
        self.signal_teammates(libc::SIGTERM);
        self.wait_teammates(TERM_TIMEOUT).await;
        if !self.running().is_empty() {
            self.signal_teammates(libc::SIGKILL);
            self.wait_teammates(Duration::from_secs(2)).await;
        }
    }

    /// Stops boardd with SIGTERM (it persists and releases its lock), killing it if
    /// that takes too long.
    pub async fn stop_boardd(&mut self) -> anyhow::Result<()> {
        if let Some(mut b) = self.boardd.take() {
            b.stop(TERM_TIMEOUT).await?;
        }
        Ok(())
    }

    /// The end of boardd's log, for an error.
    pub fn boardd_log(&self) -> String {
        self.boardd
            .as_ref()
            .map(|b| b.log_tail(20))
            .unwrap_or_default()
    }
}

impl Drop for Procs {
    /// The fallback for every path that did not stop things itself (an error, a
    /// panic). Blocking is fine here: nothing else runs any more.
    fn drop(&mut self) {
        self.adopt_strays();
        if !self.running().is_empty() {
            self.signal_teammates(libc::SIGTERM);
            block_until(TERM_TIMEOUT, || self.running().is_empty());
            self.signal_teammates(libc::SIGKILL);
            block_until(Duration::from_secs(2), || self.running().is_empty());
        }
        // SIGTERM first, as in `stop_boardd`; dropping it kills what is left.
        if let Some(mut b) = self.boardd.take()
            && b.running()
        {
            let _ = b.signal(libc::SIGTERM);
            block_until(TERM_TIMEOUT, || !b.running());
        }
    }
}

fn block_until(limit: Duration, mut done: impl FnMut() -> bool) {
    let until = Instant::now() + limit;
    while !done() && Instant::now() < until {
        std::thread::sleep(EXIT_POLL);
    }
}

/// Whether `pid` has exited, reaping it if it is our child.
fn check_exit(pid: u32) -> Option<Exited> {
    let mut status = 0;
    // SAFETY: waitpid on one pid with WNOHANG; `status` is a valid out-pointer.
    let r = unsafe { libc::waitpid(pid as libc::pid_t, &mut status, libc::WNOHANG) };
    if r == pid as libc::pid_t {
        use std::os::unix::process::ExitStatusExt as _;
        return Some(Exited::Status(ExitStatus::from_raw(status)));
    }
    if r == 0 {
        return None;
    }
    // Not our child (re-parenting failed, or someone else reaped it): it is gone
    // when the pid no longer exists or is a zombie waiting for another parent.
    match Stat::of(pid) {
        Some(s) if s.running() => None,
        _ => Some(Exited::Unknown),
    }
}

/// The teammated processes below the demo, from /proc: our children, and
/// grandchildren whose `teamctl spawn` is still exiting (it re-parents them to us
/// only once it is gone, so looking at children alone would race with that).
fn descendant_teammates() -> Vec<u32> {
    let me = std::process::id();
    let all = processes();
    let parent: std::collections::HashMap<u32, u32> = all.iter().map(|s| (s.pid, s.ppid)).collect();
    let below_me = |mut pid: u32| {
        // A short walk up: the demo's processes are at most a few levels down.
        for _ in 0..8 {
            match parent.get(&pid) {
                Some(&ppid) if ppid == me => return true,
                Some(&ppid) if ppid > 1 => pid = ppid,
                _ => return false,
            }
        }
        false
    };
    let teammates = all
        .iter()
        .filter(|s| s.comm == "teammated" && below_me(s.pid));
    teammates.map(|s| s.pid).collect()
}

/// Where the three binaries are.
pub struct Bins {
    pub boardd: PathBuf,
    pub teamctl: PathBuf,
    pub teammated: PathBuf,
}

/// The signals that end the demo early. Once these handlers are installed, the
/// signals no longer kill the process, so a second Ctrl-C cannot cut the cleanup
/// short and leave teammates behind; the cleanup is bounded by its own timeouts.
pub struct Signals {
    int: Signal,
    term: Signal,
    hup: Signal,
}

impl Signals {
    pub fn new() -> anyhow::Result<Signals> {
        let install = |kind| signal(kind).context("cannot install a signal handler");
        let (int, term) = (
            install(SignalKind::interrupt())?,
            install(SignalKind::terminate())?,
        );
        let hup = install(SignalKind::hangup())?;
        Ok(Signals { int, term, hup })
    }

    pub async fn recv(&mut self) -> &'static str {
        tokio::select! {
            _ = self.int.recv() => "Ctrl-C",
            _ = self.term.recv() => "SIGTERM",
            _ = self.hup.recv() => "SIGHUP",
        }
    }
}
