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

use super::harness::board::{Lead, Mate, Scratch, stop};
use super::harness::summary::{Col, Summary, ratio};
use super::harness::{self, Bins, Host, PARK_DELAY};
use anyhow::{Context, bail};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use teamboard_process::{Boardd, cpu_time};
use teamboard_protocol::request::NewTask;
use teamboard_protocol::{Client, Event, EventKind, Work};
use tokio::process::Child;

/// The longest any one step (a claim, a teammate going idle) may take.
const STEP: Duration = Duration::from_secs(30);

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
    harness::hand_over(&["boardd", "teammated", "xtask"], "bench-teammates-run")
}

#[derive(Debug, Serialize)]
struct Pickup {
    /// add_task sent → `task_claimed` seen.
    claimed: Summary,
    /// add_task sent → `task_completed` seen.
    completed: Summary,
}

impl Pickup {
    fn of(samples: Vec<(Duration, Duration)>) -> Pickup {
        let (claimed, completed) = samples.into_iter().unzip();
        let (claimed, completed) = (Summary::of(claimed), Summary::of(completed));
        Pickup { claimed, completed }
    }
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
    host: Host,
    teammate: Pickup,
    baseline_client: Pickup,
    idle_push: Idle,
    idle_poll_1s: Idle,
}

/// `bench-teammates-run`: the measurement, from the release build.
pub fn run(args: &TeammateBenchArgs) -> anyhow::Result<()> {
    args.check()?;
    harness::block_on(1, run_async(args))
}

/// The board the teammates work on.
struct Bench<'a> {
    teammated: PathBuf,
    boardd: &'a Boardd,
    dir: &'a Path,
}

impl Bench<'_> {
    /// Starts a scripted teammate that renews its wait every `poll` seconds.
    fn spawn(&self, name: &str, team: &str, poll: f64) -> anyhow::Result<Child> {
        let log = self.dir.join(format!("state/{team}-{name}.log"));
        Mate::new(name, "bench", team, &self.dir.join("work"), &log)
            .scripted()
            .flags(["--poll-interval".to_string(), poll.to_string()])
            .spawn(&self.teammated, self.boardd)
    }
}

async fn run_async(args: &TeammateBenchArgs) -> anyhow::Result<()> {
    let bins = Bins::beside_me(&["boardd", "teammated"], "bench-teammates")?;
    let host = Host::now();
    let (scratch, boardd) = Scratch::with_boardd("teammates-", args.dir.as_deref(), &bins).await?;
    let bench = Bench {
        teammated: bins.get("teammated"),
        boardd: &boardd,
        dir: scratch.path(),
    };

    println!("pick-up latency, {} tasks each:", args.tasks);
    let baseline_client = pickup_baseline(&bench, args.tasks).await?;
    print_pickup("bare protocol client", &baseline_client);
    let teammate = pickup_teammate(&bench, args.tasks).await?;
    print_pickup("teammated (scripted)", &teammate);

    let (idle, seconds) = (args.idle, args.idle_seconds);
    println!("idle cost, {idle} teammates for {seconds} s each:");
    let idle_push = idle_cost(&bench, args, "push", 30.0).await?;
    print_idle("push (default 30 s safety net)", &idle_push);
    let idle_poll_1s = idle_cost(&bench, args, "poll", 1.0).await?;
    print_idle("baseline: renewing every 1 s", &idle_poll_1s);

    let x = |a: f64, b: f64| ratio(a, b).unwrap_or(f64::NAN);
    let (t, b) = (&teammate, &baseline_client);
    println!(
        "\nteammate / bare client: claimed p50 {:.2}x p99 {:.2}x; completed p50 {:.2}x p99 {:.2}x",
        x(t.claimed.p50_ms, b.claimed.p50_ms),
        x(t.claimed.p99_ms, b.claimed.p99_ms),
        x(t.completed.p50_ms, b.completed.p50_ms),
        x(t.completed.p99_ms, b.completed.p99_ms),
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
        x(idle_push.teammates_cpu_ms, idle_poll_1s.teammates_cpu_ms),
        idle_push.tokens
    );
    let tokens = idle_push.tokens;
    let results = Results {
        host,
        teammate,
        baseline_client,
        idle_push,
        idle_poll_1s,
    };
    harness::report::write_results("teammates.json", &results)?;
    stop(boardd).await?;
    if tokens != 0 {
        bail!("idle teammates recorded {tokens} tokens");
    }
    Ok(())
}

/// Adds task `n` and times it from just before `add_task` is sent to its
/// `task_claimed` and then its `task_completed` event.
async fn one_task(lead: &mut Lead, n: usize) -> anyhow::Result<(Duration, Duration)> {
    let start = Instant::now();
    let subject = format!("pick-up {n}");
    let id = lead
        .client
        .add_task(NewTask {
            subject,
            ..NewTask::default()
        })
        .await?
        .id;
    let of = |kind| move |e: &Event| e.kind == kind && e.task == Some(id);
    let (_, claimed) = lead
        .next("the claim", STEP, of(EventKind::TaskClaimed))
        .await?;
    let (_, completed) = lead
        .next("the completion", STEP, of(EventKind::TaskCompleted))
        .await?;
    Ok((claimed - start, completed - start))
}

async fn pickup_teammate(bench: &Bench<'_>, tasks: usize) -> anyhow::Result<Pickup> {
    let team = "pickup-teammate";
    let mut lead = Lead::open(&bench.boardd.socket, team).await?;
    let mut child = bench.spawn("picker", team, 30.0)?;
    lead.idle("picker", STEP).await?;
    // The notice goes out just before the teammate parks; give it the same time to
    // park that the baseline's waiter gets, so both are measured parked.
    tokio::time::sleep(PARK_DELAY).await;
    let mut samples = Vec::with_capacity(tasks);
    for n in 0..tasks {
        samples.push(one_task(&mut lead, n).await?);
        // Only an idle teammate is parked; wait until it is back before the next.
        lead.idle("picker", STEP).await?;
        tokio::time::sleep(PARK_DELAY).await;
    }
    child.start_kill().ok();
    let _ = child.wait().await;
    Ok(Pickup::of(samples))
}

async fn pickup_baseline(bench: &Bench<'_>, tasks: usize) -> anyhow::Result<Pickup> {
    let team = "pickup-baseline";
    let socket = &bench.boardd.socket;
    let mut lead = Lead::open(socket, team).await?;
    let key = teamboard_process::lead_key(socket)?;
    let waiter = std::sync::Arc::new(
        Client::connect(socket, "xtask-bench", "bare", team, Some(&key)).await?,
    );
    waiter.register("bench", Some(std::process::id())).await?;
    let mut samples = Vec::with_capacity(tasks);
    for n in 0..tasks {
        let parked = waiter.clone();
        // Like the teammate, the bare client completes as soon as it holds the task.
        let job = tokio::spawn(async move {
            match parked.wait_for_work(Some(30_000)).await? {
                Work::Task { claim } => {
                    let (id, epoch) = (claim.task.id, claim.epoch);
                    parked.complete_task(id, epoch, "done").await?;
                    Ok(())
                }
                other => Err(anyhow::anyhow!("expected a task, got {other:?}")),
            }
        });
        tokio::time::sleep(PARK_DELAY).await;
        samples.push(one_task(&mut lead, n).await?);
        job.await.context("the waiter task panicked")??;
    }
    Ok(Pickup::of(samples))
}

async fn idle_cost(
    bench: &Bench<'_>,
    args: &TeammateBenchArgs,
    label: &str,
    poll_interval: f64,
) -> anyhow::Result<Idle> {
    let team = format!("idle-{label}");
    let mut lead = Lead::open(&bench.boardd.socket, &team).await?;
    let names: Vec<String> = (0..args.idle).map(|i| format!("idle{i}")).collect();
    let mut children = Vec::with_capacity(args.idle);
    for name in &names {
        children.push(bench.spawn(name, &team, poll_interval)?);
    }
    // They go idle in any order; wait for all of them.
    let mut waiting: std::collections::BTreeSet<String> = names.into_iter().collect();
    let idle = |e: &Event| {
        e.kind == EventKind::MessageSent && e.detail.contains("→ lead: idle_notification")
    };
    while !waiting.is_empty() {
        let (e, _) = lead
            .next("the idle teammates to go idle", STEP, idle)
            .await?;
        waiting.remove(&e.actor);
    }
    let pids: Vec<u32> = children.iter().filter_map(Child::id).collect();
    let cpu = |pids: &[u32]| -> Duration { pids.iter().filter_map(|p| cpu_time(*p)).sum() };
    let tokens =
        |team: &[teamboard_protocol::Member]| team.iter().map(|m| m.tokens.total()).sum::<u64>();
    let tokens_before = tokens(&lead.client.team().await?);
    let boardd: Vec<u32> = bench.boardd.pid().into_iter().collect();
    let (t0, d0) = (cpu(&pids), cpu(&boardd));
    tokio::time::sleep(Duration::from_secs_f64(args.idle_seconds)).await;
    let (t1, d1) = (cpu(&pids), cpu(&boardd));
    let tokens_after = tokens(&lead.client.team().await?);
    // A teammate that died during the window would drop out of the sum unnoticed.
    for (i, c) in children.iter_mut().enumerate() {
        if let Some(status) = c.try_wait()? {
            bail!("idle teammate idle{i} exited during the measurement ({status})");
        }
    }
    children.iter_mut().for_each(|c| _ = c.start_kill());
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

fn print_pickup(label: &str, p: &Pickup) {
    let cols = [Col::P50, Col::P99];
    println!(
        "  {label:<24} claimed {} | completed {}  ({} tasks)",
        p.claimed.cells(&cols),
        p.completed.cells(&cols),
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
