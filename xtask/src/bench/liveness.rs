//! `cargo xtask bench-liveness`: how soon boardd's liveness tells the truth
//! about a teammate's process.
//!
//! Real `teammated` processes (scripted model) against a real boardd with a
//! short lease. Each run:
//!
//! - **kill -9 → dead**: a teammate parked in `wait_for_work` is sent SIGKILL;
//!   the clock runs to its `… is now dead` event reaching the lead. Target:
//!   under 1 s.
//! - **SIGSTOP → stalled**: a teammate working on a task (a `sleep` in its
//!   `sh` block) is stopped; the clock runs to `… is now stalled`. Target:
//!   under the lease plus 1 s, with no `working` in between.
//! - **SIGCONT → working**: the same teammate, continued before its lease ran
//!   out, back to `… is now working` on the same claim.
//!
//! The figures are timers and the kernel's, not CPU work, so the bench runs
//! the debug build: a release build would cost minutes and change nothing.

use super::harness::board::{Lead, Mate, Scratch, stop};
use super::harness::report::{Target, print_targets, write_results};
use super::harness::summary::{Col, Summary, ms};
use super::harness::{self, Bins, Host};
use anyhow::{Context, bail};
use serde::Serialize;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use teamboard_process::{Boardd, Launch, die_with_parent};
use teamboard_protocol::request::NewTask;
use teamboard_protocol::{Event, EventKind};
use tokio::process::Child;

const TEAM: &str = "liveness";
/// The longest one step may take before the bench gives up on it.
const STEP_TIMEOUT: Duration = Duration::from_secs(30);
/// The target for kill -9 → dead.
const DEAD_TARGET: Duration = Duration::from_secs(1);

#[derive(Debug, Clone, clap::Args)]
pub struct LivenessBenchArgs {
    /// Runs (each one kill and one stop-and-continue).
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// boardd's lease in seconds; a teammate beats every third of it.
    #[arg(long, default_value_t = 6)]
    lease: u64,
    /// Where boardd's database goes [default: target/bench].
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
}

impl LivenessBenchArgs {
    fn check(&self) -> anyhow::Result<()> {
        if self.runs == 0 || self.runs > 1000 {
            bail!("--runs must be between 1 and 1000");
        }
        if !(2..=600).contains(&self.lease) {
            bail!("--lease must be between 2 and 600 seconds");
        }
        Ok(())
    }
}

#[derive(Debug, Serialize)]
struct Results {
    host: Host,
    runs: usize,
    lease_ms: f64,
    kill_to_dead: Summary,
    stop_to_stalled: Summary,
    cont_to_working: Summary,
    targets: Vec<Target>,
}

/// `bench-liveness`: build, then measure from there.
pub fn build_and_run(args: &LivenessBenchArgs) -> anyhow::Result<()> {
    args.check()?;
    harness::hand_over_as(
        &["boardd", "teammated", "xtask"],
        "bench-liveness-run",
        false,
    )
}

/// `bench-liveness-run`: the measurement.
pub fn run(args: &LivenessBenchArgs) -> anyhow::Result<()> {
    args.check()?;
    harness::block_on(1, run_async(args))
}

async fn run_async(args: &LivenessBenchArgs) -> anyhow::Result<()> {
    let bins = Bins::beside_me(&["boardd", "teammated"], "bench-liveness")?;
    let host = Host::now();
    let scratch = Scratch::new("liveness-", args.dir.as_deref(), harness::bench_dir()?)?;
    let lease = Duration::from_secs(args.lease);
    let boardd = start_boardd(&scratch, &bins, lease).await?;
    let mut lead = Lead::open(&boardd.socket, TEAM).await?;
    println!(
        "liveness, {} runs, lease {} s (a teammate beats every {} ms):",
        args.runs,
        args.lease,
        lease.as_millis() / 3
    );
    let (mut dead, mut stalled, mut working) = (Vec::new(), Vec::new(), Vec::new());
    for n in 0..args.runs {
        let one = async {
            dead.push(kill_one(&mut lead, &scratch, &bins, &boardd, n).await?);
            let (s, w) = stop_one(&mut lead, &scratch, &bins, &boardd, n).await?;
            stalled.push(s);
            working.push(w);
            Ok::<_, anyhow::Error>(())
        };
        one.await.with_context(|| format!("run {n}"))?;
    }
    stop(boardd).await?;

    let (kill_to_dead, stop_to_stalled) = (Summary::of(dead), Summary::of(stalled));
    let cont_to_working = Summary::of(working);
    let cols = [Col::P50, Col::MAX];
    let rows = [
        ("kill -9 -> dead", &kill_to_dead),
        ("SIGSTOP -> stalled", &stop_to_stalled),
        ("SIGCONT -> working", &cont_to_working),
    ];
    for (label, s) in rows {
        println!("{}  ({} samples)", s.line(label, 20, &cols), s.samples);
    }
    let stall_target = lease + Duration::from_secs(1);
    let targets = vec![
        Target {
            name: "kill -9 -> dead, max".into(),
            wanted: format!("< {:.0} ms", ms(DEAD_TARGET)),
            measured: format!("{:.2} ms", kill_to_dead.max_ms),
            pass: kill_to_dead.max_ms < ms(DEAD_TARGET),
        },
        Target {
            name: "SIGSTOP -> stalled, max".into(),
            wanted: format!("< lease + 1 s = {:.0} ms", ms(stall_target)),
            measured: format!("{:.2} ms", stop_to_stalled.max_ms),
            pass: stop_to_stalled.max_ms < ms(stall_target),
        },
    ];
    print_targets(&targets);
    let met = targets.iter().all(|t| t.pass);
    let results = Results {
        host,
        runs: args.runs,
        lease_ms: ms(lease),
        kill_to_dead,
        stop_to_stalled,
        cont_to_working,
        targets,
    };
    write_results("liveness.json", &results)?;
    if !met {
        bail!("liveness missed its target");
    }
    Ok(())
}

/// boardd with the bench's lease, dying with the bench.
async fn start_boardd(scratch: &Scratch, bins: &Bins, lease: Duration) -> anyhow::Result<Boardd> {
    let state = scratch.path().join("state");
    let socket = scratch.socket("boardd.sock");
    let mut launch = Launch::new(
        &bins.get("boardd"),
        &socket,
        &state,
        &state.join("boardd.log"),
    );
    launch
        .command()
        .args(["--lease-ttl", &lease.as_secs().to_string()])
        .env("RUST_LOG", "warn");
    die_with_parent(launch.command(), libc::SIGKILL);
    Ok(launch.start(STEP_TIMEOUT).await?)
}

fn spawn(
    scratch: &Scratch,
    bins: &Bins,
    boardd: &Boardd,
    name: &str,
) -> anyhow::Result<(Child, u32)> {
    let work = scratch.path().join("work").join(name);
    let log = scratch.path().join(format!("{name}.log"));
    let child = Mate::new(name, name, TEAM, &work, &log)
        .scripted()
        .spawn(&bins.get("teammated"), boardd)?;
    let pid = child.id().context("the teammate exited at once")?;
    Ok((child, pid))
}

fn signal(pid: u32, sig: libc::c_int) -> anyhow::Result<()> {
    let pid = libc::pid_t::try_from(pid)?;
    // SAFETY: kill(2) has no memory-safety preconditions; the pid is our own
    // unreaped child's, so it cannot have been reused.
    if unsafe { libc::kill(pid, sig) } != 0 {
        bail!("kill({pid}, {sig}): {}", std::io::Error::last_os_error());
    }
    Ok(())
}

/// Whether `e` is boardd's liveness event saying `name` is now `state`.
fn is_now(e: &Event, name: &str, state: &str) -> bool {
    e.kind == EventKind::MemberStatus
        && e.actor == "boardd"
        && e.member.as_deref() == Some(name)
        && e.detail.starts_with(&format!("{name} is now {state}"))
}

/// Waits for `name` to be `state`, and says when it was read.
async fn now_is(lead: &mut Lead, name: &str, state: &str) -> anyhow::Result<(Event, Instant)> {
    let what = format!("{name} to be {state}");
    lead.next(&what, STEP_TIMEOUT, |e| is_now(e, name, state))
        .await
}

/// A parked teammate killed with SIGKILL: the time to `dead`.
async fn kill_one(
    lead: &mut Lead,
    scratch: &Scratch,
    bins: &Bins,
    boardd: &Boardd,
    n: usize,
) -> anyhow::Result<Duration> {
    let name = format!("kill{n}");
    let (mut child, pid) = spawn(scratch, bins, boardd, &name)?;
    now_is(lead, &name, "idle").await?;
    let killed = Instant::now();
    signal(pid, libc::SIGKILL)?;
    let (e, at) = now_is(lead, &name, "dead").await?;
    // Reaped only now, so that boardd could read how it ended.
    let _ = child.wait().await;
    if !e.detail.contains("killed by SIGKILL") {
        bail!("the exit was not read: {}", e.detail);
    }
    Ok(at.saturating_duration_since(killed))
}

/// A working teammate stopped, then continued: the times to `stalled` and back
/// to `working`.
async fn stop_one(
    lead: &mut Lead,
    scratch: &Scratch,
    bins: &Bins,
    boardd: &Boardd,
    n: usize,
) -> anyhow::Result<(Duration, Duration)> {
    let name = format!("stop{n}");
    let (mut child, pid) = spawn(scratch, bins, boardd, &name)?;
    let task = NewTask {
        subject: format!("{name} works for a while"),
        description: "```sh\nsleep 60\n```".into(),
        role: Some(name.clone()),
        ..NewTask::default()
    };
    lead.client.add_task(task).await?;
    now_is(lead, &name, "working").await?;
    let stopped = Instant::now();
    signal(pid, libc::SIGSTOP)?;
    let (e, at) = lead
        .next("the stall", STEP_TIMEOUT, |e| {
            is_now(e, &name, "stalled") || is_now(e, &name, "working")
        })
        .await?;
    if !is_now(&e, &name, "stalled") {
        bail!("stopped, yet: {}", e.detail);
    }
    let to_stalled = at.saturating_duration_since(stopped);
    let continued = Instant::now();
    signal(pid, libc::SIGCONT)?;
    let (_, at) = now_is(lead, &name, "working").await?;
    let to_working = at.saturating_duration_since(continued);
    child.start_kill().ok();
    let _ = child.wait().await;
    Ok((to_stalled, to_working))
}
