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

use super::harness::board::{Lead, Mate, Scratch, stop};
use super::harness::report::{Target, print_targets, write_results};
use super::harness::summary::{Col, Summary, ms};
use super::harness::{self, Bins, Host, PARK_DELAY};
use anyhow::{Context, bail};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use teamboard_process::alive;
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
    fn check(&self) -> anyhow::Result<()> {
        if self.cancels == 0 || self.cancels > 10_000 {
            bail!("--cancels must be between 1 and 10000");
        }
        Ok(())
    }
}

#[derive(Debug, Serialize)]
struct Results {
    host: Host,
    cancels: usize,
    /// cancel_task sent → the teammate's idle status seen by the lead.
    to_idle: Summary,
    /// cancel_task sent → the block's last process gone.
    to_gone: Summary,
    /// cancel_task sent → its answer: the floor.
    cancel_answered: Summary,
    /// The heartbeat interval of this run's boardd (a third of its lease).
    heartbeat_interval_ms: f64,
    /// The same with boardd's default lease.
    default_heartbeat_interval_ms: f64,
    targets: Vec<Target>,
}

/// `bench-cancel`: build in release mode, then measure from there.
pub fn build_and_run(args: &CancelBenchArgs) -> anyhow::Result<()> {
    args.check()?;
    harness::hand_over(&["boardd", "teammated", "xtask"], "bench-cancel-run")
}

/// `bench-cancel-run`: the measurement, from the release build.
pub fn run(args: &CancelBenchArgs) -> anyhow::Result<()> {
    args.check()?;
    harness::block_on(1, run_async(args))
}

async fn run_async(args: &CancelBenchArgs) -> anyhow::Result<()> {
    let bins = Bins::beside_me(&["boardd", "teammated"], "bench-cancel")?;
    let host = Host::now();
    let (scratch, boardd) = Scratch::with_boardd("cancel-", args.dir.as_deref(), &bins).await?;
    let work = scratch.path().join("work");
    let mut lead = Lead::open(&boardd.socket, TEAM).await?;
    let heartbeat = Duration::from_millis(lead.client.welcome().lease_ttl_ms) / 3;
    let log = scratch.path().join(format!("state/{TEAM}-{NAME}.log"));
    let mut child = Mate::new(NAME, "bench", TEAM, &work, &log)
        .scripted()
        .flags(["--poll-interval", "30"])
        .spawn(&bins.get("teammated"), &boardd)?;
    lead.idle(NAME, SAMPLE_TIMEOUT).await?;

    println!(
        "cancel latency, {} cancels of a running sh block:",
        args.cancels
    );
    let (mut idle, mut gone, mut answered) = (Vec::new(), Vec::new(), Vec::new());
    for n in 0..args.cancels {
        let cancel = one_cancel(&mut lead, &work, n).await;
        let (a, i, g) = cancel.with_context(|| format!("cancel {n}"))?;
        answered.push(a);
        idle.push(i);
        gone.push(g);
        // The next task must find the teammate parked, not on its way there.
        tokio::time::sleep(PARK_DELAY).await;
    }
    if let Some(status) = child.try_wait()? {
        bail!("the teammate exited during the measurement ({status})");
    }
    child.start_kill().ok();
    let _ = child.wait().await;
    stop(boardd).await?;

    let (to_idle, to_gone) = (Summary::of(idle), Summary::of(gone));
    let cancel_answered = Summary::of(answered);
    let target = ms(TARGET);
    let cols = [Col::P50, Col::P99, Col::MAX];
    let rows = [
        ("cancel -> teammate idle", &to_idle),
        ("cancel -> last process gone", &to_gone),
        ("floor: cancel_task answered", &cancel_answered),
    ];
    for (label, s) in rows {
        println!("{}  ({} samples)", s.line(label, 30, &cols), s.samples);
    }
    let (here, default) = (heartbeat.as_secs_f64(), (DEFAULT_LEASE / 3).as_secs_f64());
    println!(
        "  before the push, a teammate learned of a cancel at its next heartbeat: every \
         {here:.0} s here (a third of this boardd's lease), {default:.0} s with boardd's default lease"
    );
    let targets: Vec<Target> = [
        ("cancel -> idle, p99", &to_idle),
        ("cancel -> gone, p99", &to_gone),
    ]
    .into_iter()
    .map(|(name, s)| Target {
        name: name.into(),
        wanted: format!("<= {target:.0} ms"),
        measured: format!("{:.2} ms", s.p99_ms),
        pass: s.p99_ms <= target,
    })
    .collect();
    print_targets(&targets);
    let met = targets.iter().all(|t| t.pass);
    let results = Results {
        host,
        cancels: args.cancels,
        to_idle,
        to_gone,
        cancel_answered,
        heartbeat_interval_ms: ms(heartbeat),
        default_heartbeat_interval_ms: ms(DEFAULT_LEASE / 3),
        targets,
    };
    write_results("cancel.json", &results)?;
    if !met {
        bail!("cancel latency missed its target");
    }
    Ok(())
}

/// Adds task `n`, waits until its block runs, cancels it and times the three
/// ends: the answer, the teammate idle, its processes gone.
async fn one_cancel(
    lead: &mut Lead,
    work: &Path,
    n: usize,
) -> anyhow::Result<(Duration, Duration, Duration)> {
    let pid_file = work.join(format!("block-{n}.pid"));
    let p = pid_file.display();
    // The shell and a child of its own; both must go.
    let description =
        format!("```sh\nsleep 600 & echo $$ $! > {p}.tmp && mv {p}.tmp {p}; wait\n```\n");
    let subject = format!("cancel me {n}");
    let task = NewTask {
        subject,
        description,
        ..NewTask::default()
    };
    let client = lead.client.clone();
    let id = client.add_task(task).await?.id;
    let pids = tokio::time::timeout(SAMPLE_TIMEOUT, read_pids(&pid_file))
        .await
        .context("the block did not start")?;

    let start = Instant::now();
    let answer = async {
        client.cancel_task(id).await?;
        Ok::<_, anyhow::Error>(start.elapsed())
    };
    let idle = async {
        let at = lead.status(NAME, "idle", SAMPLE_TIMEOUT).await?;
        Ok::<_, anyhow::Error>(at - start)
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
    Ok((answered?, idle?, gone))
}

/// The pids the block wrote, once it has.
async fn read_pids(file: &Path) -> Vec<u32> {
    loop {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        let pids: Vec<u32> = text
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect();
        if pids.len() == 2 {
            return pids;
        }
        tokio::time::sleep(POLL).await;
    }
}
