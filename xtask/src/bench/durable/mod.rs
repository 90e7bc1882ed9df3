//! `cargo xtask bench`: how fast is durable work on this machine?
//!
//! Measured in order, each on the release build:
//!
//! - (a) the disk's fdatasync rate F ([`fsync`]),
//! - the floor under the wake-up: a bare child process answering after one
//!   fdatasync, with no boardd in the way ([`floor`]),
//! - (c) wake-up latency of a parked waiter ([`wake`]),
//! - (b) and (d) claim + complete throughput at 1, 16 and 256 clients, against a
//!   group-commit boardd and a `--no-group-commit` one ([`load`]),
//!
//! then the table and the targets ([`targets`]), and `target/bench/results.json`.

mod engines;
pub mod floor;
mod fsync;
pub mod load;
mod targets;
mod wake;

use super::harness::board::Scratch;
use super::harness::{self, Bins, Host};
use anyhow::bail;
use clap::Args;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, Clone, Args)]
pub struct BenchArgs {
    /// Seconds per measurement phase.
    #[arg(long, default_value_t = 5.0, value_name = "S")]
    seconds: f64,
    /// A smoke test: 1 s per phase and 50 wake-up samples.
    #[arg(long)]
    quick: bool,
    /// Run only the fdatasync probes, the floor and the wake-up phase (about
    /// 25 s), for working on wake-up latency. The throughput targets are then not
    /// checked.
    #[arg(long)]
    wake_only: bool,
    /// Where boardd's databases and the fsync probe go [default: target/bench]. Put
    /// it on the disk you care about: /tmp is often tmpfs, where fsync is free.
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    /// `postgres`: instead of the phases above, the wake-up and P1 (256
    /// clients) of SQLite, PostgreSQL with one boardd and PostgreSQL with three,
    /// in one run (a private server in the run's directory, or
    /// TEAMBOARD_PG_URL's). Results: target/bench/engines.json.
    #[arg(long, value_enum, default_value_t = Database::Sqlite)]
    database: Database,
}

/// Which storage `bench` measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Database {
    /// boardd's default: the phases (a) to (d) on SQLite.
    Sqlite,
    /// The engines side by side (see `engines`).
    Postgres,
}

/// How boardd commits, as the bench compares them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, strum::Display)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Group commit: the default.
    #[strum(to_string = "group commit")]
    Group,
    /// `--no-group-commit`: one transaction per request.
    #[strum(to_string = "per request")]
    PerRequest,
}

impl Mode {
    /// boardd's flags for it.
    pub fn flags(self) -> &'static [&'static str] {
        match self {
            Mode::Group => &[],
            Mode::PerRequest => &["--no-group-commit"],
        }
    }
}

/// Concurrency levels of the load phases.
const CLIENTS: [usize; 3] = [1, 16, 256];
/// Wake-up samples. The p99 of 300 is the third-worst sample, which one stray
/// scheduling hiccup on a shared VM moves a long way; with 1,000 it is the
/// tenth-worst, and the phase still takes only seconds.
const WAKE_SAMPLES: usize = 1000;
const WAKE_SAMPLES_QUICK: usize = 50;
/// A generous ceiling on what boardd could do, for sizing the prefilled board when
/// there is nothing better to go on. A phase that runs dry is repeated with more.
const PREFILL_RATE_CEILING: f64 = 40_000.0;

fn check(args: &BenchArgs) -> anyhow::Result<()> {
    if !(args.seconds.is_finite() && args.seconds > 0.0 && args.seconds <= 600.0) {
        bail!("--seconds must be between 0 and 600, not {}", args.seconds);
    }
    Ok(())
}

/// `cargo xtask bench`: build in release mode, then run the measurement from there.
pub fn build_and_run(args: &BenchArgs) -> anyhow::Result<()> {
    check(args)?;
    harness::hand_over(&["boardd", "xtask"], "bench-run")
}

/// `bench-run`: the measurement, from the release build.
pub fn run(args: &BenchArgs) -> anyhow::Result<()> {
    check(args)?;
    harness::block_on(1, run_async(args))
}

async fn run_async(args: &BenchArgs) -> anyhow::Result<()> {
    let bins = Bins::beside_me(&["boardd"], "bench")?;
    let (seconds, wake_samples) = match args.quick {
        true => (1.0, WAKE_SAMPLES_QUICK),
        false => (args.seconds, WAKE_SAMPLES),
    };
    let run = Scratch::new("run-", args.dir.as_deref(), harness::bench_dir()?)?;
    let host = Host::now();
    let fs = fsync::filesystem_name(run.path());
    println!("bench: state in {} ({fs})", run.path().display());
    if fs == "tmpfs" {
        println!(
            "warning: tmpfs keeps data in memory; fsync is free and the numbers mean nothing for a disk. Use --dir."
        );
    }

    if args.database == Database::Postgres {
        return engines::run(&run, &bins, seconds, wake_samples).await;
    }

    println!("(a) fdatasync rate, {seconds} s ...");
    let mut fsync = fsync::measure(run.path(), Duration::from_secs_f64(seconds))?;
    let pause = harness::PARK_DELAY;
    fsync.after_pause = Some(fsync::measure_after_pauses(
        run.path(),
        wake_samples,
        pause,
    )?);
    let (f, l) = (fsync.ops_per_s, &fsync.latency);
    println!(
        "    F = {f:.0} ops/s, p50 {:.3} ms, p99 {:.3} ms",
        l.p50_ms, l.p99_ms
    );

    println!("    floor: a durable answer from a bare child process, {wake_samples} samples ...");
    let floor = floor::measure(&bins.xtask, &run, wake_samples, pause)?;
    let d = &floor.durable_rtt;
    println!("    p50 {:.3} ms, p99 {:.3} ms", d.p50_ms, d.p99_ms);

    println!("(c) wake-up latency, {wake_samples} samples ...");
    let budget = Duration::from_secs_f64((seconds * 10.0).max(30.0));
    let wake = wake::measure(&run, &bins, wake_samples, budget).await?;
    println!(
        "    p50 {:.3} ms, p99 {:.3} ms",
        wake.wake.p50_ms, wake.wake.p99_ms
    );

    let mut load: Vec<load::LoadResult> = Vec::new();
    let modes: &[Mode] = match args.wake_only {
        true => &[],
        false => &[Mode::Group, Mode::PerRequest],
    };
    for &mode in modes {
        for clients in CLIENTS {
            let label = if mode == Mode::Group { "(b)" } else { "(d)" };
            println!("{label} {}, {clients} clients, {seconds} s ...", mode);
            let expected = expected_rate(&load, mode, clients, fsync.ops_per_s);
            let tasks = (expected * seconds * 1.3) as u64 + 4 * clients as u64;
            let r = load_phase(&run, &bins, mode, clients, seconds, tasks).await?;
            let dry = if r.starved_clients > 0 {
                ", board ran dry"
            } else {
                ""
            };
            let (rate, n, s) = (r.cycles_per_s, r.cycles, r.window_s);
            println!("    {rate:.0} cycles/s ({n} cycles in {s:.2} s){dry}");
            load.push(r);
        }
    }

    let mut results = targets::Results {
        seconds_per_phase: seconds,
        quick: args.quick,
        cpus: host.cpus,
        load_average: host.load_average,
        fsync,
        floor,
        wake,
        load,
        targets: Vec::new(),
    };
    results.check();
    results.print();
    harness::report::write_results("results.json", &results)
}

/// A guess at the cycle rate of a phase, to size its board: too small and the
/// phase runs dry, too large and filling it wastes time.
fn expected_rate(done: &[load::LoadResult], mode: Mode, clients: usize, fsync_rate: f64) -> f64 {
    // Each cycle needs a commit and each commit an fdatasync, so F bounds one
    // client (and every client without group commit). With group commit, clients
    // can share an fdatasync, so they scale at best linearly.
    let mut expected = match mode {
        Mode::Group => clients as f64 * fsync_rate,
        Mode::PerRequest => fsync_rate,
    };
    expected = expected.min(PREFILL_RATE_CEILING);
    // Linear scaling from the previous phase of the same mode.
    if let Some(prev) = done.iter().rev().find(|l| l.mode == mode) {
        expected = expected.min(prev.cycles_per_s * clients as f64 / prev.clients as f64);
    }
    // Without group commit, the grouped rate at the same concurrency (with margin).
    if mode == Mode::PerRequest
        && let Some(g) = done
            .iter()
            .find(|l| l.mode == Mode::Group && l.clients == clients)
    {
        expected = expected.min(g.cycles_per_s * 1.5);
    }
    expected.max(100.0)
}

/// One load phase on a fresh board, repeated with a bigger board if it ran dry
/// within the first half of the window.
async fn load_phase(
    run: &Scratch,
    bins: &Bins,
    mode: Mode,
    clients: usize,
    seconds: f64,
    mut tasks: u64,
) -> anyhow::Result<load::LoadResult> {
    let mut attempt = 0;
    loop {
        let state = run.path().join(format!("{mode:?}-{clients}-{attempt}"));
        let r = load::measure(run, bins, &state, mode, clients, seconds, tasks).await?;
        // Free the disk space of a finished phase straight away.
        let _ = std::fs::remove_dir_all(&state);
        if r.starved_clients == 0 || r.window_s >= seconds * 0.5 || attempt == 2 {
            return Ok(r);
        }
        attempt += 1;
        tasks = ((r.cycles_per_s * seconds * 1.5) as u64).max(tasks * 2);
        println!(
            "    the board ran dry after {:.2} s; again with {tasks} tasks",
            r.window_s
        );
    }
}
