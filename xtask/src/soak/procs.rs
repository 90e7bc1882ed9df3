//! The soak's teammate processes: started, frozen, killed with SIGKILL and
//! started again under the same name.

use anyhow::Context;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::process::{Child, Command};

/// What every teammate is started with: the xtask binary, the run's socket and
/// directory (its journal, the manifests, `logs/NAME.log`), and the seed.
#[derive(Clone)]
pub struct Start {
    pub exe: PathBuf,
    pub socket: PathBuf,
    pub dir: PathBuf,
    pub seed: u64,
}

pub struct Teammate {
    pub name: String,
    start: Start,
    child: Child,
    /// Exits nobody asked for (a crash of the worker itself).
    pub crashes: Vec<String>,
}

impl Teammate {
    pub fn spawn(start: &Start, name: String) -> anyhow::Result<Teammate> {
        let child = start.spawn(&name)?;
        Ok(Teammate {
            name,
            start: start.clone(),
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
        let live_children = || {
            let all = teamboard_process::processes();
            all.iter().filter(|s| s.ppid == pid && s.running()).count()
        };
        let t = Instant::now();
        while live_children() > 0 && t.elapsed() < Duration::from_secs(5) {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// `kill -9`, then the same teammate again.
    pub async fn kill_and_restart(&mut self) -> anyhow::Result<()> {
        self.kill().await;
        self.child = self.start.spawn(&self.name)?;
        Ok(())
    }

    /// Restarts it if it exited on its own, noting why.
    pub fn revive_if_dead(&mut self) -> anyhow::Result<()> {
        if let Some(status) = self.child.try_wait()? {
            let log = teamboard_process::tail(&self.start.log(&self.name), 5);
            let name = &self.name;
            self.crashes.push(format!(
                "{name} exited by itself ({status}); its stderr: {log}"
            ));
            self.child = self.start.spawn(name)?;
        }
        Ok(())
    }

    pub async fn kill(&mut self) {
        let _ = self.child.start_kill();
        let _ = self.child.wait().await;
    }
}

impl Start {
    fn log(&self, name: &str) -> PathBuf {
        self.dir.join("logs").join(format!("{name}.log"))
    }

    fn spawn(&self, name: &str) -> anyhow::Result<Child> {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log(name))?;
        let (key_var, key) = teamboard_process::lead_key_env(&self.socket);
        let mut cmd = Command::new(&self.exe);
        cmd.args([
            "soak-git-worker",
            "--name",
            name,
            "--seed",
            &self.seed.to_string(),
        ])
        .arg("--socket")
        .arg(&self.socket)
        .arg("--dir")
        .arg(&self.dir)
        .env(key_var, key)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .kill_on_drop(true);
        super::git::isolate(cmd.as_std_mut());
        teamboard_process::die_with_parent(cmd.as_std_mut(), libc::SIGKILL);
        cmd.spawn()
            .with_context(|| format!("cannot start {}", self.exe.display()))
    }
}
