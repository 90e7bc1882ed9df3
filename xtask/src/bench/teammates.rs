//! `cargo xtask bench-teammates`: how fast an idle teammate picks up new work, and
//! what idle teammates cost.
//!
//! Two measurements, each next to a baseline taken in the same run:
//!
//! - **Pick-up latency.** One idle `teammated` (scripted model) and, as the
//!   baseline, one bare protocol client parked in `wait_for_work`, each served
//!   tasks one at a time on a team of its own. For every task the clock runs from
//!   just before `add_task` is sent to the `task_claimed` event (boardd claimed it
//!   for the parked teammate) and to the `task_completed` event (the teammate
//!   received the claim, took one model step and reported). The baseline client
//!   completes the moment it holds the claim, so teammate minus baseline is what
//!   the teammate runtime adds.
//! - **Idle cost.** N idle teammates for S seconds: the CPU time of the teammate
//!   processes and of boardd, and the tokens they recorded (must be zero). The
//!   baseline is the same N teammates renewing their wait every second, the way the
//!   reference design polls, for the same S seconds.

use super::daemon::{Daemon, Mode};
use super::stats::Latency;
use crate::cargo::Metadata;
use anyhow::{Context, bail};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};
use teamboard_protocol::request::NewTask;
use teamboard_protocol::{Client, Event, EventKind, Work};
use tokio::process::Child;

#[derive(Debug, Clone, clap::Args)]
pub struct TeammateBenchArgs {
    /// Tasks per pick-up latency series.
    #[arg(long, default_value_t = 200)]
    tasks: usize,
    /// Idle teammates for the CPU measurement.
    #[arg(long, default_value_t = 20)]
    idle: usize,
    /// Seconds each idle series lasts.
    #[arg(long, default_value_t = 60.0)]
    idle_seconds: f64,
    /// Where boardd's database goes [default: target/bench].
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
}

impl TeammateBenchArgs {
    fn to_args(&self) -> Vec<String> {
        let mut v = vec![
            "--tasks".into(),
            self.tasks.to_string(),
            "--idle".into(),
            self.idle.to_string(),
            "--idle-seconds".into(),
            self.idle_seconds.to_string(),
        ];
        if let Some(dir) = &self.dir {
            v.push("--dir".into());
            v.push(dir.display().to_string());
        }
        v
    }

    fn check(&self) -> anyhow::Result<()> {
        if self.tasks == 0 || self.tasks > 100_000 {
            bail!("--tasks must be between 1 and 100000");
        }
        if self.idle == 0 || self.idle > 500 {
            bail!("--idle must be between 1 and 500");
        }
        if !(self.idle_seconds.is_finite()
            && self.idle_seconds >= 1.0
            && self.idle_seconds <= 3600.0)
        {
            bail!("--idle-seconds must be between 1 and 3600");
        }
        Ok(())
    }
}

/// `bench-teammates`: build in release mode, then measure from there.
pub fn build_and_run(args: &TeammateBenchArgs) -> anyhow::Result<()> {
    args.check()?;
    super::hand_over(
        &["boardd", "teammated", "xtask"],
        "bench-teammates-run",
        &args.to_args(),
    )
}

#[derive(Debug, Serialize)]
struct Pickup {
    /// add_task sent → `task_claimed` seen.
    claimed: Latency,
    /// add_task sent → `task_completed` seen.
    completed: Latency,
}

#[derive(Debug, Serialize)]
struct Idle {
    teammates: usize,
    seconds: f64,
    /// The wait renewal interval of these teammates.
    poll_interval_s: f64,
    teammates_cpu_ms: f64,
    boardd_cpu_ms: f64,
    /// Tokens the teammates recorded during the window.
    tokens: u64,
}

#[derive(Debug, Serialize)]
struct Results {
    teammate: Pickup,
    baseline_client: Pickup,
    idle_push: Idle,
    idle_poll_1s: Idle,
}

/// `bench-teammates-run`: the measurement, from the release build.
pub fn run(args: &TeammateBenchArgs) -> anyhow::Result<()> {
    args.check()?;
    super::block_on_interruptible(run_async(args))
}

async fn run_async(args: &TeammateBenchArgs) -> anyhow::Result<()> {
    let (_scratch, daemon, env) = Env::start("teammates-", args.dir.as_deref()).await?;

    println!("pick-up latency, {} tasks each:", args.tasks);
    let baseline_client = pickup_baseline(&env, args.tasks).await?;
    print_pickup("bare protocol client", &baseline_client);
    let teammate = pickup_teammate(&env, args.tasks).await?;
    print_pickup("teammated (scripted)", &teammate);

    println!(
        "idle cost, {} teammates for {} s each:",
        args.idle, args.idle_seconds
    );
    let idle_push = idle_cost(&env, &daemon, args, "push", 30.0).await?;
    print_idle("push (default 30 s safety net)", &idle_push);
    let idle_poll_1s = idle_cost(&env, &daemon, args, "poll", 1.0).await?;
    print_idle("baseline: renewing every 1 s", &idle_poll_1s);

    let ratio = |a: f64, b: f64| if b > 0.0 { a / b } else { f64::NAN };
    println!();
    println!(
        "teammate / bare client: claimed p50 {:.2}x p99 {:.2}x; completed p50 {:.2}x p99 {:.2}x",
        ratio(teammate.claimed.p50_ms, baseline_client.claimed.p50_ms),
        ratio(teammate.claimed.p99_ms, baseline_client.claimed.p99_ms),
        ratio(teammate.completed.p50_ms, baseline_client.completed.p50_ms),
        ratio(teammate.completed.p99_ms, baseline_client.completed.p99_ms),
    );
    // A short window can leave the push teammates with no measurable CPU at all.
    let more = if idle_push.teammates_cpu_ms > 0.0 {
        format!(
            "polling costs {:.0}x more",
            idle_poll_1s.teammates_cpu_ms / idle_push.teammates_cpu_ms
        )
    } else {
        "push used no measurable CPU".to_string()
    };
    println!(
        "idle CPU of the teammates, push / 1 s polling: {:.4}x ({more}); tokens while idle: {}",
        ratio(idle_push.teammates_cpu_ms, idle_poll_1s.teammates_cpu_ms),
        idle_push.tokens
    );
    let results = Results {
        teammate,
        baseline_client,
        idle_push,
        idle_poll_1s,
    };
    let out = Metadata::load()?
        .target_directory
        .join("bench")
        .join("teammates.json");
    if let Some(dir) = out.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    std::fs::write(&out, serde_json::to_vec_pretty(&results)?)
        .with_context(|| format!("cannot write {}", out.display()))?;
    println!("results written to {}", out.display());
    daemon.stop().await?;
    if results.idle_push.tokens != 0 {
        bail!(
            "idle teammates recorded {} tokens",
            results.idle_push.tokens
        );
    }
    Ok(())
}

pub(super) struct Env {
    pub teammated: PathBuf,
    pub socket: PathBuf,
    pub state: PathBuf,
    pub work: PathBuf,
}

impl Env {
    /// A release boardd with its state in a scratch directory named `prefix…`
    /// under `dir` (default `target/bench`), and the places its teammates use.
    /// The directory goes when the returned guard is dropped.
    pub async fn start(
        prefix: &str,
        dir: Option<&Path>,
    ) -> anyhow::Result<(tempfile::TempDir, Daemon, Env)> {
        let meta = Metadata::load()?;
        let bin = meta.release_dir();
        let base = dir.map_or_else(|| meta.target_directory.join("bench"), Path::to_path_buf);
        std::fs::create_dir_all(&base)?;
        let scratch = tempfile::Builder::new()
            .prefix(prefix)
            .tempdir_in(&base)
            .context("cannot create a scratch directory")?;
        let state = scratch.path().join("state");
        let work = scratch.path().join("work");
        std::fs::create_dir_all(&work)?;
        let daemon = Daemon::start(&bin.join("boardd"), &state, Mode::Group).await?;
        let env = Env {
            teammated: bin.join("teammated"),
            socket: daemon.socket.clone(),
            state,
            work,
        };
        Ok((scratch, daemon, env))
    }

    /// Starts a teammate that dies with us.
    pub fn spawn(&self, name: &str, team: &str, poll_interval: f64) -> anyhow::Result<Child> {
        let log = std::fs::File::create(self.state.join(format!("{team}-{name}.log")))?;
        let mut cmd = tokio::process::Command::new(&self.teammated);
        cmd.args(["--name", name, "--role", "bench", "--team", team])
            .arg("--socket")
            .arg(&self.socket)
            .arg("--state-dir")
            .arg(&self.state)
            .arg("--workdir")
            .arg(&self.work)
            .args(["--provider", "scripted", "--idle-timeout", "0"])
            .args(["--poll-interval", &poll_interval.to_string()])
            .env("TEAMMATED_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .kill_on_drop(true);
        super::die_with_parent(&mut cmd);
        cmd.spawn()
            .with_context(|| format!("cannot start {}", self.teammated.display()))
    }
}

/// The lead's view of one team: a subscribed session.
pub(super) struct Watch {
    pub lead: Client,
}

impl Watch {
    pub async fn open(socket: &Path, team: &str) -> anyhow::Result<Watch> {
        let lead = Client::connect(socket, "xtask-bench", "lead", team).await?;
        lead.subscribe().await?;
        Ok(Watch { lead })
    }

    pub async fn next_matching(
        &self,
        what: &str,
        pred: impl Fn(&Event) -> bool,
    ) -> anyhow::Result<Event> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match tokio::time::timeout(left, self.lead.next_event()).await {
                Ok(Some(e)) if pred(&e) => return Ok(e),
                Ok(Some(_)) => {}
                Ok(None) => bail!("boardd closed the connection while waiting for {what}"),
                Err(_) => bail!("timed out waiting for {what}"),
            }
        }
    }

    /// Adds task `n` and times it from just before `add_task` is sent to its
    /// `task_claimed` and then its `task_completed` event.
    async fn one_task(&self, n: usize) -> anyhow::Result<(Duration, Duration)> {
        let start = Instant::now();
        let id = self.lead.add_task(task(n)).await?.id;
        self.next_matching("the claim", |e| {
            e.kind == EventKind::TaskClaimed && e.task == Some(id)
        })
        .await?;
        let claimed = start.elapsed();
        self.next_matching("the completion", |e| {
            e.kind == EventKind::TaskCompleted && e.task == Some(id)
        })
        .await?;
        Ok((claimed, start.elapsed()))
    }

    pub async fn idle_notice(&self, name: &str) -> anyhow::Result<()> {
        let needle = format!("{name} → lead: idle_notification");
        self.next_matching(&format!("{name} to go idle"), |e| {
            e.kind == EventKind::MessageSent && e.detail.contains(&needle)
        })
        .await?;
        Ok(())
    }
}

fn task(n: usize) -> NewTask {
    NewTask {
        subject: format!("pick-up {n}"),
        ..NewTask::default()
    }
}

async fn pickup_teammate(env: &Env, tasks: usize) -> anyhow::Result<Pickup> {
    let team = "pickup-teammate";
    let watch = Watch::open(&env.socket, team).await?;
    let mut child = env.spawn("picker", team, 30.0)?;
    watch.idle_notice("picker").await?;
    // The notice goes out just before the teammate parks; give it the same time to
    // park that the baseline's waiter gets, so both are measured parked.
    tokio::time::sleep(super::wake::PARK_DELAY).await;
    let mut claimed = Vec::with_capacity(tasks);
    let mut completed = Vec::with_capacity(tasks);
    for n in 0..tasks {
        let (c, d) = watch.one_task(n).await?;
        claimed.push(c);
        completed.push(d);
        // Only an idle teammate is parked; wait until it is back before the next.
        watch.idle_notice("picker").await?;
        tokio::time::sleep(super::wake::PARK_DELAY).await;
    }
    child.start_kill().ok();
    let _ = child.wait().await;
    Ok(Pickup {
        claimed: Latency::from_samples(claimed),
        completed: Latency::from_samples(completed),
    })
}

async fn pickup_baseline(env: &Env, tasks: usize) -> anyhow::Result<Pickup> {
    let team = "pickup-baseline";
    let watch = Watch::open(&env.socket, team).await?;
    let waiter =
        std::sync::Arc::new(Client::connect(&env.socket, "xtask-bench", "bare", team).await?);
    waiter.register("bench", Some(std::process::id())).await?;
    let mut claimed = Vec::with_capacity(tasks);
    let mut completed = Vec::with_capacity(tasks);
    for n in 0..tasks {
        let parked = waiter.clone();
        // Like the teammate, the bare client completes as soon as it holds the task.
        let job = tokio::spawn(async move {
            match parked.wait_for_work(Some(30_000)).await? {
                Work::Task { claim } => {
                    parked
                        .complete_task(claim.task.id, claim.epoch, "done")
                        .await?;
                    Ok(())
                }
                other => Err(anyhow::anyhow!("expected a task, got {other:?}")),
            }
        });
        tokio::time::sleep(super::wake::PARK_DELAY).await;
        let (c, d) = watch.one_task(n).await?;
        claimed.push(c);
        completed.push(d);
        job.await.context("the waiter task panicked")??;
    }
    Ok(Pickup {
        claimed: Latency::from_samples(claimed),
        completed: Latency::from_samples(completed),
    })
}

async fn idle_cost(
    env: &Env,
    daemon: &Daemon,
    args: &TeammateBenchArgs,
    label: &str,
    poll_interval: f64,
) -> anyhow::Result<Idle> {
    let team = format!("idle-{label}");
    let watch = Watch::open(&env.socket, &team).await?;
    let mut children = Vec::with_capacity(args.idle);
    for i in 0..args.idle {
        children.push(env.spawn(&format!("idle{i}"), &team, poll_interval)?);
    }
    // They go idle in any order; wait for all of them.
    let mut waiting: std::collections::BTreeSet<String> =
        (0..args.idle).map(|i| format!("idle{i}")).collect();
    while !waiting.is_empty() {
        let e = watch
            .next_matching("the idle teammates to go idle", |e| {
                e.kind == EventKind::MessageSent && e.detail.contains("→ lead: idle_notification")
            })
            .await?;
        waiting.remove(&e.actor);
    }
    let pids: Vec<u32> = children.iter().filter_map(Child::id).collect();
    let cpu = |pids: &[u32]| -> Duration { pids.iter().filter_map(|p| cpu_time(*p)).sum() };
    let tokens = |team: &[teamboard_protocol::Member]| -> u64 {
        team.iter().map(|m| m.tokens.total()).sum()
    };
    let tokens_before = tokens(&watch.lead.team().await?);
    let boardd = daemon.pid();
    let (t0, d0) = (cpu(&pids), cpu(&boardd));
    tokio::time::sleep(Duration::from_secs_f64(args.idle_seconds)).await;
    let (t1, d1) = (cpu(&pids), cpu(&boardd));
    let tokens_after = tokens(&watch.lead.team().await?);
    // A teammate that died during the window would drop out of the sum unnoticed.
    for (i, c) in children.iter_mut().enumerate() {
        if let Some(status) = c.try_wait()? {
            bail!("idle teammate idle{i} exited during the measurement ({status})");
        }
    }
    for c in &mut children {
        c.start_kill().ok();
    }
    for c in &mut children {
        let _ = c.wait().await;
    }
    Ok(Idle {
        teammates: args.idle,
        seconds: args.idle_seconds,
        poll_interval_s: poll_interval,
        teammates_cpu_ms: (t1.saturating_sub(t0)).as_secs_f64() * 1e3,
        boardd_cpu_ms: (d1.saturating_sub(d0)).as_secs_f64() * 1e3,
        tokens: tokens_after.saturating_sub(tokens_before),
    })
}

/// CPU time of a live process, in nanoseconds, from its CPU-time clock
/// (`clock_getcpuclockid`): process-wide, counting threads that have exited, and
/// far finer than /proc/PID/stat's 10 ms ticks, which are too coarse for processes
/// that are idle by design.
fn cpu_time(pid: u32) -> Option<Duration> {
    let pid = libc::pid_t::try_from(pid).ok()?;
    let mut clock: libc::clockid_t = 0;
    // SAFETY: both calls only write to the out-parameters we pass.
    unsafe {
        if libc::clock_getcpuclockid(pid, &mut clock) != 0 {
            return None;
        }
        let mut ts: libc::timespec = std::mem::zeroed();
        if libc::clock_gettime(clock, &mut ts) != 0 {
            return None;
        }
        Some(Duration::new(
            u64::try_from(ts.tv_sec).ok()?,
            u32::try_from(ts.tv_nsec).ok()?,
        ))
    }
}

fn print_pickup(label: &str, p: &Pickup) {
    println!(
        "  {label:<24} claimed p50 {:>7.2} ms  p99 {:>7.2} ms | completed p50 {:>7.2} ms  p99 {:>7.2} ms  ({} tasks)",
        p.claimed.p50_ms,
        p.claimed.p99_ms,
        p.completed.p50_ms,
        p.completed.p99_ms,
        p.claimed.samples
    );
}

fn print_idle(label: &str, i: &Idle) {
    println!(
        "  {label:<32} teammates {:>8.2} ms CPU ({:.5}% of one core each), boardd {:>7.2} ms, tokens {}",
        i.teammates_cpu_ms,
        i.teammates_cpu_ms / (i.seconds * 1e3) / i.teammates as f64 * 100.0,
        i.boardd_cpu_ms,
        i.tokens
    );
}
