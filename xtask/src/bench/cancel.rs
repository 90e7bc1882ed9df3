//! `cargo xtask bench-cancel`: how fast a cancelled task stops its teammate.
//!
//! One real `teammated` (scripted model) works through tasks whose `sh` block runs
//! for ten minutes and leaves a child behind. For each task, once the block has
//! written its pids, the lead sends `cancel_task` and the clock runs from just
//! before the request to:
//!
//! - **idle**: the teammate's `member_status` idle event reaching the lead (it
//!   stopped the command, made no further model call and went back to waiting);
//! - **gone**: the last of the block's processes (the shell and its child) no
//!   longer running, polled every millisecond.
//!
//! The baselines from the same run: the floor, boardd answering the `cancel_task`
//! itself, which no teammate can beat; and the heartbeat interval, the delay a
//! teammate had before boardd pushed the loss of a claim (it learned of it only
//! when its next heartbeat was refused). Target: p99 of both figures ≤ 500 ms.

use super::stats::Latency;
use super::teammates::{Env, Watch};
use crate::cargo::Metadata;
use anyhow::{Context, bail};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use teamboard_protocol::EventKind;
use teamboard_protocol::request::NewTask;

const TEAM: &str = "cancel";
const NAME: &str = "runner";
/// The target for the p99 of both figures.
const TARGET: Duration = Duration::from_millis(500);
/// The longest one sample may take before the bench gives up on it.
const SAMPLE_TIMEOUT: Duration = Duration::from_secs(30);
/// How often the block's processes are checked.
const POLL: Duration = Duration::from_millis(1);
/// boardd's default lease; the heartbeat interval a teammate uses is a third of it.
const DEFAULT_LEASE: Duration = Duration::from_secs(30);

#[derive(Debug, Clone, clap::Args)]
pub struct CancelBenchArgs {
    /// Cancels to measure.
    #[arg(long, default_value_t = 30)]
    cancels: usize,
    /// Where boardd's database goes [default: target/bench].
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
}

impl CancelBenchArgs {
    fn to_args(&self) -> Vec<String> {
        let mut v = vec!["--cancels".to_string(), self.cancels.to_string()];
        if let Some(dir) = &self.dir {
            v.push("--dir".into());
            v.push(dir.display().to_string());
        }
        v
    }

    fn check(&self) -> anyhow::Result<()> {
        if self.cancels == 0 || self.cancels > 10_000 {
            bail!("--cancels must be between 1 and 10000");
        }
        Ok(())
    }
}

#[derive(Debug, Serialize)]
struct Results {
    cancels: usize,
    /// cancel_task sent → the teammate's idle status seen by the lead.
    to_idle: Latency,
    /// cancel_task sent → the block's last process gone.
    to_gone: Latency,
    /// cancel_task sent → its answer: the floor.
    cancel_answered: Latency,
    /// The heartbeat interval of this run's boardd (a third of its lease).
    heartbeat_interval_ms: f64,
    /// The same with boardd's default lease.
    default_heartbeat_interval_ms: f64,
    target_p99_ms: f64,
    met: bool,
}

/// `bench-cancel`: build in release mode, then measure from there.
pub fn build_and_run(args: &CancelBenchArgs) -> anyhow::Result<()> {
    args.check()?;
    super::hand_over(
        &["boardd", "teammated", "xtask"],
        "bench-cancel-run",
        &args.to_args(),
    )
}

/// `bench-cancel-run`: the measurement, from the release build.
pub fn run(args: &CancelBenchArgs) -> anyhow::Result<()> {
    args.check()?;
    super::block_on_interruptible(run_async(args))
}

async fn run_async(args: &CancelBenchArgs) -> anyhow::Result<()> {
    let (_scratch, daemon, env) = Env::start("cancel-", args.dir.as_deref()).await?;
    let work = env.work.clone();
    let watch = Watch::open(&env.socket, TEAM).await?;
    let heartbeat = Duration::from_millis(watch.lead.welcome().lease_ttl_ms) / 3;
    let mut child = env.spawn(NAME, TEAM, 30.0)?;
    watch.idle_notice(NAME).await?;

    println!(
        "cancel latency, {} cancels of a running sh block:",
        args.cancels
    );
    let (mut idle, mut gone, mut answered) = (Vec::new(), Vec::new(), Vec::new());
    for n in 0..args.cancels {
        let sample = one_cancel(&watch, &work, n)
            .await
            .with_context(|| format!("cancel {n}"))?;
        answered.push(sample.answered);
        idle.push(sample.idle);
        gone.push(sample.gone);
        // The next task must find the teammate parked, not on its way there.
        tokio::time::sleep(super::wake::PARK_DELAY).await;
    }
    if let Some(status) = child.try_wait()? {
        bail!("the teammate exited during the measurement ({status})");
    }
    child.start_kill().ok();
    let _ = child.wait().await;
    daemon.stop().await?;

    let to_idle = Latency::from_samples(idle);
    let to_gone = Latency::from_samples(gone);
    let cancel_answered = Latency::from_samples(answered);
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let target = ms(TARGET);
    let met = to_idle.p99_ms <= target && to_gone.p99_ms <= target;
    print_row("cancel -> teammate idle", &to_idle);
    print_row("cancel -> last process gone", &to_gone);
    print_row("floor: cancel_task answered", &cancel_answered);
    println!(
        "  before the push, a teammate learned of a cancel at its next heartbeat: every \
         {:.0} s here (a third of this boardd's lease), {:.0} s with boardd's default lease",
        heartbeat.as_secs_f64(),
        (DEFAULT_LEASE / 3).as_secs_f64()
    );
    println!(
        "target p99 <= {target:.0} ms for both: {}",
        if met { "met" } else { "MISSED" }
    );
    let results = Results {
        cancels: args.cancels,
        to_idle,
        to_gone,
        cancel_answered,
        heartbeat_interval_ms: ms(heartbeat),
        default_heartbeat_interval_ms: ms(DEFAULT_LEASE / 3),
        target_p99_ms: target,
        met,
    };
    let out = Metadata::load()?
        .target_directory
        .join("bench")
        .join("cancel.json");
    if let Some(dir) = out.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    std::fs::write(&out, serde_json::to_vec_pretty(&results)?)
        .with_context(|| format!("cannot write {}", out.display()))?;
    println!("results written to {}", out.display());
    if !met {
        bail!("cancel latency missed its target");
    }
    Ok(())
}

struct Sample {
    answered: Duration,
    idle: Duration,
    gone: Duration,
}

/// Adds task `n`, waits until its block runs, cancels it and times the three ends.
async fn one_cancel(watch: &Watch, work: &Path, n: usize) -> anyhow::Result<Sample> {
    let pid_file = work.join(format!("block-{n}.pid"));
    let p = pid_file.display();
    // The shell and a child of its own; both must go.
    let description =
        format!("```sh\nsleep 600 & echo $$ $! > {p}.tmp && mv {p}.tmp {p}; wait\n```\n");
    let task = NewTask {
        subject: format!("cancel me {n}"),
        description,
        ..NewTask::default()
    };
    let id = watch.lead.add_task(task).await?.id;
    let pids = tokio::time::timeout(SAMPLE_TIMEOUT, read_pids(&pid_file))
        .await
        .context("the block did not start")?;

    let start = Instant::now();
    let answer = async {
        watch.lead.cancel_task(id).await?;
        Ok::<_, anyhow::Error>(start.elapsed())
    };
    let idle = async {
        watch
            .next_matching("the teammate to go idle", |e| {
                e.kind == EventKind::MemberStatus
                    && e.member.as_deref() == Some(NAME)
                    && e.detail.ends_with(" idle")
            })
            .await?;
        Ok::<_, anyhow::Error>(start.elapsed())
    };
    let gone = async {
        while pids.iter().any(|p| alive(*p)) {
            tokio::time::sleep(POLL).await;
        }
        start.elapsed()
    };
    let (answered, idle, gone) =
        tokio::time::timeout(SAMPLE_TIMEOUT, async { tokio::join!(answer, idle, gone) })
            .await
            .context("the teammate did not stop")?;
    Ok(Sample {
        answered: answered?,
        idle: idle?,
        gone,
    })
}

/// The pids the block wrote, once it has.
async fn read_pids(file: &Path) -> Vec<u32> {
    loop {
        if let Ok(text) = std::fs::read_to_string(file) {
            let pids: Vec<u32> = text
                .split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect();
            if pids.len() == 2 {
                return pids;
            }
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Whether `pid` still runs (a zombie does not).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit_once(") ").map(|(_, rest)| !rest.starts_with('Z')))
        .unwrap_or(false)
}

fn print_row(label: &str, l: &Latency) {
    println!(
        "  {label:<30} p50 {:>8.2} ms  p99 {:>8.2} ms  max {:>8.2} ms  ({} samples)",
        l.p50_ms, l.p99_ms, l.max_ms, l.samples
    );
}
