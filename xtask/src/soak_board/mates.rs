//! The teammated processes of a run (the scripted model, role `mate`): started,
//! killed with SIGKILL and started again under the same name, frozen with
//! SIGSTOP and thawed.

use super::marker::Marker;
use super::tasks::MATE_ROLE;
use crate::bench::harness::board::Mate;
use std::path::{Path, PathBuf};
use std::time::Instant;
use teamboard_process::Boardd;
use tokio::process::Child;

pub struct Teammate {
    pub name: String,
    log: PathBuf,
    child: Child,
    /// Frozen until then.
    pub stopped_until: Option<Instant>,
    /// Exits nobody asked for.
    pub crashes: Vec<String>,
}

/// What every teammate is started with.
pub struct Start<'a> {
    pub bin: &'a Path,
    pub team: &'a str,
    pub dir: &'a Path,
    pub marker: &'a Marker,
}

impl Start<'_> {
    fn spawn(&self, name: &str, boardd: &Boardd) -> anyhow::Result<Child> {
        let workdir = self.dir.join("work").join(name);
        let log = self.dir.join("logs").join(format!("{name}.log"));
        let mut mate = Mate::new(name, MATE_ROLE, self.team, &workdir, &log).scripted();
        mate.env.push(self.marker.env());
        mate.spawn(self.bin, boardd)
    }

    pub fn teammate(&self, name: String, boardd: &Boardd) -> anyhow::Result<Teammate> {
        let child = self.spawn(&name, boardd)?;
        Ok(Teammate {
            log: self.dir.join("logs").join(format!("{name}.log")),
            name,
            child,
            stopped_until: None,
            crashes: Vec::new(),
        })
    }
}

impl Teammate {
    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    fn signal(&self, signal: libc::c_int) {
        if let Some(pid) = self.pid() {
            // SAFETY: kill(2) on our own child, not yet reaped.
            unsafe { libc::kill(pid as libc::pid_t, signal) };
        }
    }

    /// SIGSTOP until `until`.
    pub fn freeze(&mut self, until: Instant) {
        self.signal(libc::SIGSTOP);
        self.stopped_until = Some(until);
    }

    /// SIGCONT, if frozen.
    pub fn thaw(&mut self) {
        if self.stopped_until.take().is_some() {
            self.signal(libc::SIGCONT);
        }
    }

    /// `kill -9`, then the same teammate again.
    pub async fn kill_and_restart(&mut self, start: &Start<'_>, b: &Boardd) -> anyhow::Result<()> {
        self.kill().await;
        self.stopped_until = None;
        self.child = start.spawn(&self.name, b)?;
        Ok(())
    }

    /// Starts it again if it exited by itself, noting how.
    pub fn revive_if_dead(&mut self, start: &Start<'_>, b: &Boardd) -> anyhow::Result<()> {
        if let Some(status) = self.child.try_wait()? {
            let log = teamboard_process::tail(&self.log, 5);
            self.crashes
                .push(format!("{} exited by itself ({status}): {log}", self.name));
            self.child = start.spawn(&self.name, b)?;
        }
        Ok(())
    }

    /// Whether it has exited (after a shutdown).
    pub fn exited(&mut self) -> bool {
        !matches!(self.child.try_wait(), Ok(None))
    }

    pub async fn kill(&mut self) {
        let _ = self.child.start_kill();
        let _ = self.child.wait().await;
    }
}
