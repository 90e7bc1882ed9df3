//! The soak's teammate processes: started, frozen, killed with SIGKILL and
//! started again under the same name.

use super::worker::{WorkerArgs, command_line};
use anyhow::Context;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::process::{Child, Command};

pub struct Teammate {
    pub args: WorkerArgs,
    child: Child,
    /// Exits nobody asked for (a crash of the worker itself).
    pub crashes: Vec<String>,
}

impl Teammate {
    pub fn spawn(exe: &Path, log_dir: &Path, args: WorkerArgs) -> anyhow::Result<Teammate> {
        let child = start(exe, log_dir, &args)?;
        Ok(Teammate {
            args,
            child,
            crashes: Vec::new(),
        })
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// Freezes it (SIGSTOP) and waits until no child process of its is
    /// running any more, so that no git of its is half way through anything
    /// while its worktree is looked at. Its children are not stopped: they
    /// finish what they were doing.
    pub async fn freeze(&self) {
        let Some(pid) = self.pid() else { return };
        // SAFETY: kill(2) on a child we spawned and have not reaped.
        unsafe { libc::kill(pid as libc::pid_t, libc::SIGSTOP) };
        let t = Instant::now();
        while live_children(pid) > 0 && t.elapsed() < Duration::from_secs(5) {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// `kill -9`, then the same teammate again.
    pub async fn kill_and_restart(&mut self, exe: &Path, log_dir: &Path) -> anyhow::Result<()> {
        self.child.start_kill().context("cannot kill a teammate")?;
        self.child.wait().await?;
        self.child = start(exe, log_dir, &self.args)?;
        Ok(())
    }

    /// Restarts it if it exited on its own, noting why.
    pub async fn revive_if_dead(&mut self, exe: &Path, log_dir: &Path) -> anyhow::Result<()> {
        if let Some(status) = self.child.try_wait()? {
            self.crashes.push(format!(
                "{} exited by itself ({status}); its stderr: {}",
                self.args.name,
                teamboard_process::tail(&log_dir.join(format!("{}.log", self.args.name)), 5)
            ));
            self.child = start(exe, log_dir, &self.args)?;
        }
        Ok(())
    }

    pub async fn kill(&mut self) {
        let _ = self.child.start_kill();
        let _ = self.child.wait().await;
    }
}

fn start(exe: &Path, log_dir: &Path, args: &WorkerArgs) -> anyhow::Result<Child> {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log_dir.join(format!("{}.log", args.name)))?;
    let mut cmd = Command::new(exe);
    cmd.arg("soak-git-worker")
        .args(command_line(args))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .kill_on_drop(true);
    super::git::isolate(cmd.as_std_mut());
    teamboard_process::die_with_parent(cmd.as_std_mut(), libc::SIGKILL);
    cmd.spawn()
        .with_context(|| format!("cannot start {}", exe.display()))
}

/// Child processes of `pid` that are still running (not zombies).
fn live_children(pid: u32) -> usize {
    teamboard_process::processes()
        .iter()
        .filter(|s| s.ppid == pid && s.running())
        .count()
}
