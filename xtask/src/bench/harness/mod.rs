//! What every bench shares, so that each bench is only its measurement: the
//! hand-over to a release build, the runtime, the host's state, a scratch
//! board with its boardd, teammates and the lead's events ([`board`]), the one
//! percentile [`summary`], and the report: targets with PASS or MISS and the
//! JSON file ([`report`]).
//!
//! A bench is a command (`bench`, `bench-plan`, ...) that checks its flags and
//! hands over to `target/release/xtask <bench>-run` with the same flags, so
//! that the clients are optimised too and cannot be what limits the figures.
//! The flags are passed on as the user gave them (the process's own argument
//! list) rather than rebuilt from the parsed values: one list to keep, and
//! nothing a bench adds can be forgotten on the way.

pub mod board;
pub mod report;
pub mod summary;

use crate::cargo::{self, Metadata};
use anyhow::{Context, bail};
use serde::Serialize;
use std::path::PathBuf;
use std::time::Duration;

/// Time for a waiter's request to reach boardd's actor and park before the bench
/// acts. Without it a task could arrive first and be claimed by an ordinary
/// (non-parked) `wait_for_work`, which is not what the benches measure.
pub const PARK_DELAY: Duration = Duration::from_millis(3);

/// `target/bench`, where the benches' scratch directories and results go.
pub fn bench_dir() -> anyhow::Result<PathBuf> {
    Ok(Metadata::load()?.target_directory.join("bench"))
}

/// `cargo xtask BENCH`: builds `packages` in release mode and runs
/// `target/release/xtask RUN` with this process's own flags.
pub fn hand_over(packages: &[&str], run: &str) -> anyhow::Result<()> {
    hand_over_as(packages, run, true)
}

/// [`hand_over`], in release mode or not: a bench whose figures are timers and
/// the kernel's, not CPU work, need not wait for a release build.
pub fn hand_over_as(packages: &[&str], run: &str, release: bool) -> anyhow::Result<()> {
    let xtask = cargo::build(packages, release, false)?.join("xtask");
    // argv: the xtask binary, the command, then its flags.
    let status = std::process::Command::new(&xtask)
        .arg(run)
        .args(std::env::args_os().skip(2))
        .status()
        .with_context(|| format!("cannot run {}", xtask.display()))?;
    if !status.success() {
        bail!("the benchmark failed ({status})");
    }
    Ok(())
}

/// Runs a measurement until it ends or Ctrl-C, on one thread or, where a mock
/// must answer while the bench waits, on `threads` workers.
///
/// One thread by default: the bench's own work is light (load comes from
/// separate processes), and children must be spawned from the main thread for
/// `die_with_parent` to hold. On Ctrl-C it returns an error instead of dying,
/// so that the drop guards kill boardd and the children and the temporary
/// directories go away.
pub fn block_on(
    threads: usize,
    measure: impl Future<Output = anyhow::Result<()>>,
) -> anyhow::Result<()> {
    let rt = match threads {
        0 | 1 => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?,
        n => tokio::runtime::Builder::new_multi_thread()
            .worker_threads(n)
            .enable_all()
            .build()?,
    };
    rt.block_on(async {
        tokio::select! {
            r = measure => r,
            _ = tokio::signal::ctrl_c() => bail!("interrupted"),
        }
    })
}

/// The machine a run measured on: other work skews every figure.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Host {
    pub cpus: usize,
    /// The 1-minute load average when the run began.
    pub load_average: Option<f64>,
}

impl Host {
    /// The host now, with a warning printed when it is busy.
    pub fn now() -> Host {
        let h = Host {
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
            load_average: load_average(),
        };
        if let Some(l) = h.load_average
            && l > 0.5 * h.cpus as f64
        {
            println!(
                "warning: the load average is {l:.2} on {} CPUs; other work on this machine \
                 will skew the figures",
                h.cpus
            );
        }
        h
    }

    /// `2 CPUs, load average 0.31`.
    pub fn said(&self) -> String {
        format!(
            "{} CPUs, load average {}",
            self.cpus,
            shown(self.load_average)
        )
    }
}

/// The 1-minute load average, from /proc/loadavg.
pub fn load_average() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    text.split_whitespace().next()?.parse().ok()
}

/// A load average as printed, `?` when unknown.
pub fn shown(load: Option<f64>) -> String {
    load.map_or_else(|| "?".to_string(), |l| format!("{l:.2}"))
}

/// The release binaries beside the running xtask.
pub struct Bins {
    pub dir: PathBuf,
    pub xtask: PathBuf,
}

impl Bins {
    /// Finds them, each of `needed` checked: `command` is what builds them.
    pub fn beside_me(needed: &[&str], command: &str) -> anyhow::Result<Bins> {
        let xtask = std::env::current_exe().context("cannot find the xtask binary")?;
        let dir = xtask
            .parent()
            .context("the xtask binary has no directory")?
            .to_path_buf();
        for name in needed {
            let bin = dir.join(name);
            if !bin.exists() {
                bail!(
                    "{} is missing; run `cargo xtask {command}`, which builds it",
                    bin.display()
                );
            }
        }
        Ok(Bins { dir, xtask })
    }

    pub fn get(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
}
