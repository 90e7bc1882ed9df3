//! `cargo xtask bench`: how fast is durable work on this machine?
//!
//! `bench` (running as a debug build through the `cargo xtask` alias) builds boardd
//! and xtask in release mode and hands over to `target/release/xtask bench-run`, so
//! that the clients are optimised too and cannot be what limits the numbers. That
//! process measures, in order:
//!
//! - (a) the disk's fdatasync rate F ([`fsync`]),
//! - the floor under the wake-up: a bare child process answering after one
//!   fdatasync, with no boardd in the way ([`floor`]),
//! - (c) wake-up latency of a parked waiter ([`wake`]),
//! - (b) and (d) claim + complete throughput at 1, 16 and 256 clients, against a
//!   group-commit boardd and a `--no-group-commit` one ([`load`]),
//!
//! then prints the table and the targets and writes `target/bench/results.json`.

pub mod cancel;
pub(crate) mod daemon;
pub mod floor;
mod fsync;
pub mod load;
pub mod plan;
mod report;
pub mod runtimes;
pub(crate) mod stats;
pub mod teammates;
mod wake;

use crate::cargo::{self, Metadata};
use anyhow::{Context, bail};
use clap::Args;
use daemon::Mode;
use std::path::{Path, PathBuf};
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
}

impl BenchArgs {
    fn to_args(&self) -> Vec<String> {
        let mut v = vec!["--seconds".to_string(), self.seconds.to_string()];
        if self.quick {
            v.push("--quick".into());
        }
        if self.wake_only {
            v.push("--wake-only".into());
        }
        if let Some(dir) = &self.dir {
            v.push("--dir".into());
            v.push(dir.display().to_string());
        }
        v
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

/// `cargo xtask bench`: build in release mode, then run the measurement from there.
pub fn build_and_run(args: &BenchArgs) -> anyhow::Result<()> {
    check(args)?;
    hand_over(&["boardd", "xtask"], "bench-run", &args.to_args())
}

/// Builds `packages` in release mode and runs `target/release/xtask SUBCOMMAND ARGS`,
/// so that the measuring clients are optimised too and cannot be what limits the
/// numbers.
pub(crate) fn hand_over(
    packages: &[&str],
    subcommand: &str,
    args: &[String],
) -> anyhow::Result<()> {
    let meta = Metadata::load()?;
    cargo::build_release(packages, false)?;
    let xtask = meta.release_dir().join("xtask");
    let status = std::process::Command::new(&xtask)
        .arg(subcommand)
        .args(args)
        .status()
        .with_context(|| format!("cannot run {}", xtask.display()))?;
    if !status.success() {
        bail!("the benchmark failed ({status})");
    }
    Ok(())
}

/// Runs a measurement on a single-threaded runtime until it ends or Ctrl-C.
///
/// Single-threaded: the bench's own work is light (the load comes from separate
/// processes), and children must be spawned from the main thread for
/// `die_with_parent` to hold. On Ctrl-C it returns an error instead of dying, so
/// that the drop guards kill boardd and the child processes and the temporary
/// directories go away.
pub(crate) fn block_on_interruptible(
    measure: impl std::future::Future<Output = anyhow::Result<()>>,
) -> anyhow::Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        tokio::select! {
            r = measure => r,
            _ = tokio::signal::ctrl_c() => bail!("interrupted"),
        }
    })
}

fn check(args: &BenchArgs) -> anyhow::Result<()> {
    if !(args.seconds.is_finite() && args.seconds > 0.0 && args.seconds <= 600.0) {
        bail!("--seconds must be between 0 and 600, not {}", args.seconds);
    }
    Ok(())
}

/// `bench-run`: the measurement, from the release build.
pub fn run(args: &BenchArgs) -> anyhow::Result<()> {
    check(args)?;
    block_on_interruptible(run_async(args))
}

async fn run_async(args: &BenchArgs) -> anyhow::Result<()> {
    let meta = Metadata::load()?;
    let exe = std::env::current_exe().context("cannot find the xtask binary")?;
    let release = exe.parent().context("xtask binary has no directory")?;
    let boardd = release.join("boardd");
    if !boardd.exists() {
        bail!(
            "{} is missing; run `cargo xtask bench`, which builds it",
            boardd.display()
        );
    }
    let seconds = if args.quick { 1.0 } else { args.seconds };
    let wake_samples = if args.quick {
        WAKE_SAMPLES_QUICK
    } else {
        WAKE_SAMPLES
    };
    let out_dir = meta.target_directory.join("bench");
    let base = args.dir.clone().unwrap_or_else(|| out_dir.clone());
    std::fs::create_dir_all(&base).with_context(|| format!("cannot create {}", base.display()))?;
    // Everything of this run lives in one directory that is removed at the end.
    let run_dir = tempfile::Builder::new()
        .prefix("run-")
        .tempdir_in(&base)
        .with_context(|| format!("cannot create a directory in {}", base.display()))?;
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let load_before = load_average();
    if let Some(l) = load_before
        && l > 0.5 * cpus as f64
    {
        println!(
            "warning: the load average is {l:.2} on {cpus} CPUs; other work on this machine will skew the numbers"
        );
    }
    let fs = fsync::filesystem_name(run_dir.path());
    println!("bench: state in {} ({fs})", run_dir.path().display());
    if fs == "tmpfs" {
        println!(
            "warning: tmpfs keeps data in memory; fsync is free and the numbers mean nothing for a disk. Use --dir."
        );
    }

    println!("(a) fdatasync rate, {seconds} s ...");
    let mut fsync = fsync::measure(run_dir.path(), Duration::from_secs_f64(seconds))?;
    fsync.after_pause = Some(fsync::measure_after_pauses(
        run_dir.path(),
        wake_samples,
        wake::PARK_DELAY,
    )?);
    println!(
        "    F = {:.0} ops/s, p50 {:.3} ms, p99 {:.3} ms",
        fsync.ops_per_s, fsync.latency.p50_ms, fsync.latency.p99_ms
    );

    println!("    floor: a durable answer from a bare child process, {wake_samples} samples ...");
    let floor = floor::measure(&exe, run_dir.path(), wake_samples, wake::PARK_DELAY)?;
    println!(
        "    p50 {:.3} ms, p99 {:.3} ms",
        floor.durable_rtt.p50_ms, floor.durable_rtt.p99_ms
    );

    println!("(c) wake-up latency, {wake_samples} samples ...");
    let budget = Duration::from_secs_f64((seconds * 10.0).max(30.0));
    let wake = wake::measure(&boardd, &run_dir.path().join("wake"), wake_samples, budget).await?;
    println!(
        "    p50 {:.3} ms, p99 {:.3} ms",
        wake.wake.p50_ms, wake.wake.p99_ms
    );

    let mut load: Vec<load::LoadResult> = Vec::new();
    let modes: &[Mode] = if args.wake_only {
        &[]
    } else {
        &[Mode::Group, Mode::PerRequest]
    };
    for &mode in modes {
        for clients in CLIENTS {
            let label = if mode == Mode::Group { "(b)" } else { "(d)" };
            println!(
                "{label} {}, {clients} clients, {seconds} s ...",
                mode.label()
            );
            let expected = expected_rate(&load, mode, clients, fsync.ops_per_s);
            let tasks = (expected * seconds * 1.3) as u64 + 4 * clients as u64;
            let r =
                load_phase(&boardd, &exe, run_dir.path(), mode, clients, seconds, tasks).await?;
            println!(
                "    {:.0} cycles/s ({} cycles in {:.2} s){}",
                r.cycles_per_s,
                r.cycles,
                r.window_s,
                if r.starved_clients > 0 {
                    ", board ran dry"
                } else {
                    ""
                }
            );
            load.push(r);
        }
    }

    let mut results = report::Results {
        seconds_per_phase: seconds,
        quick: args.quick,
        cpus,
        load_average: load_before,
        fsync,
        floor,
        wake,
        load,
        targets: Vec::new(),
    };
    results.check();
    results.print();
    std::fs::create_dir_all(&out_dir)?;
    let json = out_dir.join("results.json");
    std::fs::write(&json, serde_json::to_vec_pretty(&results)?)
        .with_context(|| format!("cannot write {}", json.display()))?;
    println!();
    println!("results written to {}", json.display());
    Ok(())
}

/// The 1-minute load average, from /proc/loadavg.
pub(crate) fn load_average() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    text.split_whitespace().next()?.parse().ok()
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
    boardd: &Path,
    xtask: &Path,
    run_dir: &Path,
    mode: Mode,
    clients: usize,
    seconds: f64,
    mut tasks: u64,
) -> anyhow::Result<load::LoadResult> {
    for attempt in 0.. {
        let state = run_dir.join(format!("{mode:?}-{clients}-{attempt}"));
        let r = load::measure(boardd, xtask, &state, mode, clients, seconds, tasks).await?;
        // Free the disk space of a finished phase straight away.
        let _ = std::fs::remove_dir_all(&state);
        if r.starved_clients == 0 || r.window_s >= seconds * 0.5 || attempt == 2 {
            return Ok(r);
        }
        let more = (r.cycles_per_s * seconds * 1.5) as u64;
        tasks = more.max(tasks * 2);
        println!(
            "    the board ran dry after {:.2} s; again with {tasks} tasks",
            r.window_s
        );
    }
    unreachable!("the loop returns by its third attempt")
}

/// Makes a child process die with the bench: the kernel sends it SIGKILL when the
/// thread that spawned it exits. Drop guards cover errors and panics; this covers
/// the bench itself being killed. (Spawn from the main thread: with a thread that
/// exits early, the child would die early.)
pub(crate) fn die_with_parent(cmd: &mut tokio::process::Command) {
    // SAFETY: the closure runs between fork and exec and only calls prctl, which is
    // async-signal-safe and touches no memory of ours.
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// A teammated for a measurement: on `provider` against the mock LLM server at
/// `base_url`, never idling out, its log (warnings only) in `log`.
pub(crate) struct MockTeammate<'a> {
    pub teammated: &'a std::path::Path,
    pub name: &'a str,
    pub role: &'a str,
    pub team: &'a str,
    pub socket: &'a std::path::Path,
    pub state: &'a std::path::Path,
    pub work: &'a std::path::Path,
    pub provider: &'a str,
    pub base_url: &'a str,
    /// More flags, after the common ones.
    pub flags: &'a [&'a str],
    pub log: &'a std::path::Path,
}

impl MockTeammate<'_> {
    /// Starts it, dying with us. The environment cannot change what is measured:
    /// the mock's key is set, and the variables that would flip the frugal
    /// defaults are cleared.
    pub fn spawn(&self) -> anyhow::Result<tokio::process::Child> {
        use anyhow::Context;
        let mut cmd = tokio::process::Command::new(self.teammated);
        cmd.args([
            "--name", self.name, "--role", self.role, "--team", self.team,
        ])
        .arg("--socket")
        .arg(self.socket)
        .arg("--state-dir")
        .arg(self.state)
        .arg("--workdir")
        .arg(self.work)
        .args(["--provider", self.provider, "--base-url", self.base_url])
        .args(["--idle-timeout", "0"])
        .args(self.flags)
        .env("ANTHROPIC_API_KEY", "mock-key")
        .env_remove("OPENAI_API_KEY")
        .env_remove("TEAMMATE_CARRY_CONTEXT")
        .env_remove("TEAMMATE_NO_PROMPT_CACHE")
        .env("TEAMMATED_LOG", "warn")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(self.log)?)
        .kill_on_drop(true);
        die_with_parent(&mut cmd);
        cmd.spawn()
            .with_context(|| format!("cannot start {}", self.teammated.display()))
    }
}
