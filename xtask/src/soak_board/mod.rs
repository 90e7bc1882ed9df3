//! `cargo xtask soak` ([`LONG_ABOUT`]): the whole board under a thousand
//! crashes. Real boardd and teammated processes (the scripted model), driver
//! clients ([`lead`], [`member`]) that log every answered change ([`acks`]),
//! and the [`faults`] of each cycle; at the end [`finish`] shuts the team down
//! and reads boardd's history back, and [`check`] holds the two against each
//! other.
//!
//! Beside `soak-git` rather than inside it: that soak's teammates are workers
//! of its own that mimic a model against a git repository, and its checks are
//! about branches and files; this one runs teammated itself, without a
//! repository, and its checks are the board's promises (durability, one
//! owner, fencing, at-least-once delivery, no process left). They share the
//! bench harness (scratch directory, teammate launch, report file) and the
//! seeded generator.

mod acks;
mod check;
mod client;
mod connect;
mod faults;
mod finish;
mod inbox;
mod lead;
mod marker;
mod mates;
mod member;
mod report;
mod tasks;

use crate::bench::harness::board::Scratch;
use crate::bench::harness::report::write_json;
use crate::bench::harness::{self, Bins, Host};
use crate::cargo::Metadata;
use crate::soak::rng;
use acks::{AckLog, What};
use anyhow::{Context, bail};
use client::{Driver, Log};
use connect::Conn;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use teamboard_process::{Launch, die_with_parent};
use tokio::task::JoinHandle;

pub const LONG_ABOUT: &str = "\
Soak the whole board: real boardd and teammated processes (the offline \
scripted model, whose tasks run sleeps and sometimes fail), a lead and member \
clients that add tasks with dependencies, claim, heartbeat, complete, fail, \
release, send and acknowledge messages, submit and review plans and refuse \
shutdowns, all at random; and, in each cycle, kill -9 of boardd (started \
again on the same state and socket), now and then of a teammate, of a \
teammate's command, or SIGSTOP of a teammate past its lease.

Every answered change goes to a client-side log (target/soak/run-*/acks.jsonl). \
At the end the teammates are shut down, and a checker reads the log and \
boardd's event history and reports, each of which must be 0:

  - acknowledged changes lost;
  - tasks with two owners at once;
  - stale epochs accepted;
  - messages delivered more often than at-least-once allows;
  - processes of the run left behind.

It prints progress and a summary, writes target/soak/report.json and exits \
non-zero if a figure is not 0, keeping the run's directory (boardd's state \
and log, the teammates' logs, the ack log). Repeat a run's choices with its \
--seed (timing still varies).

Builds boardd, teammated and xtask in release mode first; --debug uses the \
debug build that `cargo test` made instead.

Example:
  cargo xtask soak --cycles 1000 --teammates 3 --clients 4 --seed 1";

#[derive(Debug, Clone, clap::Args)]
pub struct BoardSoakArgs {
    /// Cycles, each ending with boardd killed (SIGKILL) and started again.
    #[arg(long, default_value_t = 1000, value_name = "N")]
    cycles: u64,
    /// teammated processes (the scripted model).
    #[arg(long, default_value_t = 3, value_name = "N")]
    teammates: usize,
    /// Member driver clients, beside the lead's.
    #[arg(long, default_value_t = 4, value_name = "N")]
    clients: usize,
    /// Seed of every choice the soak makes [default: from the clock].
    #[arg(long, value_name = "N")]
    seed: Option<u64>,
    /// boardd's lease in seconds; a frozen teammate stays frozen a second
    /// past it.
    #[arg(long, default_value_t = 3, value_name = "SECS")]
    lease: u64,
    /// Use the debug build (as `cargo test` left it) rather than a release
    /// build.
    #[arg(long)]
    debug: bool,
    /// Keep the run's directory even when every figure is 0.
    #[arg(long)]
    keep: bool,
    /// Where the run's directory goes [default: target/soak].
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
}

const TEAM: &str = "soak";

impl BoardSoakArgs {
    fn check(&self) -> anyhow::Result<()> {
        if !(1..=100_000).contains(&self.cycles) {
            bail!("--cycles must be between 1 and 100000");
        }
        if self.teammates > 16 || self.clients > 32 {
            bail!("--teammates is at most 16 and --clients at most 32");
        }
        if !(1..=60).contains(&self.lease) {
            bail!("--lease must be between 1 and 60 seconds");
        }
        Ok(())
    }
}

/// `cargo xtask soak`: build, then run from that build.
pub fn build_and_run(args: &BoardSoakArgs) -> anyhow::Result<()> {
    args.check()?;
    let packages = ["boardd", "teammated", "xtask"];
    harness::hand_over_as(&packages, "soak-run", !args.debug)
}

/// `soak-run`: the soak itself.
pub fn run(args: &BoardSoakArgs) -> anyhow::Result<()> {
    args.check()?;
    harness::block_on(1, run_async(args))
}

/// The drivers, running.
struct Drivers {
    handles: Vec<JoinHandle<anyhow::Result<Driver>>>,
    log: Log,
}

impl faults::Watch for Drivers {
    fn all_running(&self) -> bool {
        self.handles.iter().all(|h| !h.is_finished())
    }

    fn acks(&self) -> u64 {
        self.log.lock().map_or(0, |l| l.lines)
    }
}

async fn run_async(args: &BoardSoakArgs) -> anyhow::Result<()> {
    let started = Instant::now();
    let bins = Bins::beside_me(&["boardd", "teammated"], "soak")?;
    let seed = args.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64 % 1_000_000)
    });
    let out_dir = Metadata::load()?.target_directory.join("soak");
    let run = Scratch::new(
        &format!("run-{seed}-"),
        args.dir.as_deref(),
        out_dir.clone(),
    )?;
    let soaked = soak(args, &bins, seed, &run).await;
    let passed = soaked.as_ref().is_ok_and(|r| r.passed);
    let kept = (!passed || args.keep).then(|| run.keep().display().to_string());
    if let (Err(_), Some(d)) = (&soaked, &kept) {
        println!("the run's directory is kept: {d}");
    }
    let mut report = soaked?;
    report.seconds = started.elapsed().as_secs_f64();
    report.run_dir = kept;
    report.print();
    write_json(&out_dir.join("report.json"), "report", &report)?;
    if let Some(d) = &report.run_dir {
        println!("the run's directory is kept: {d}");
    }
    if !passed {
        bail!("the soak found problems; seed {seed}");
    }
    if report.faults.boardd_kills < args.cycles {
        bail!("the cycles stopped early");
    }
    Ok(())
}

/// The run, up to its report. An error leaves the run's directory to the
/// caller, which keeps it.
async fn soak(
    args: &BoardSoakArgs,
    bins: &Bins,
    seed: u64,
    run: &Scratch,
) -> anyhow::Result<report::Report> {
    let dir = run.path().to_path_buf();
    std::fs::create_dir_all(dir.join("logs"))?;
    let host = Host::now();
    let build = if args.debug { "debug" } else { "release" };
    println!(
        "soak: seed {seed}, {} cycles, {} teammates, {} clients, {build} build, in {}",
        args.cycles,
        args.teammates,
        args.clients,
        dir.display()
    );
    let marker = marker::Marker::new(&dir);
    let socket = run.socket("boardd.sock");
    let state = dir.join("state");
    let mut launch = Launch::new(
        &bins.get("boardd"),
        &socket,
        &state,
        &state.join("boardd.log"),
    );
    let lease = args.lease.to_string();
    let (k, v) = marker.env();
    launch
        .command()
        .args(["--lease-ttl", &lease, "--restart-grace", &lease])
        .env("RUST_LOG", "warn")
        .env(k, v);
    die_with_parent(launch.command(), libc::SIGKILL);
    let mut boardd = launch.start(faults::START_TIMEOUT).await?;

    // The lead's hello makes the team; a teammate's would be refused before.
    let mut lead_conn = Conn::lead(socket.clone(), TEAM);
    lead_conn.client().await?;
    let teammated = bins.get("teammated");
    let start = mates::Start {
        bin: &teammated,
        team: TEAM,
        dir: &dir,
        marker: &marker,
    };
    let mut mates = (1..=args.teammates)
        .map(|i| start.teammate(format!("t{i}"), &boardd))
        .collect::<anyhow::Result<Vec<_>>>()?;

    let log: Log = Arc::new(Mutex::new(AckLog::create(&dir.join("acks.jsonl"))?));
    let stop = Arc::new(AtomicBool::new(false));
    let drivers: Vec<String> = (1..=args.clients).map(|i| format!("d{i}")).collect();
    let teammates: Vec<String> = mates.iter().map(|m| m.name.clone()).collect();
    let driver = |name: &str, conn: Conn, k: u64| {
        let r = rng::derive(seed, &[rng::hash_str(name), k]);
        Driver::new(conn, log.clone(), r, stop.clone())
    };
    let mut handles = Vec::new();
    let lead = lead::Lead::new(
        driver("lead", Conn::lead(socket.clone(), TEAM), 1),
        drivers.clone(),
        teammates.clone(),
    );
    handles.push(tokio::spawn(lead.run()));
    let lease_d = Duration::from_secs(args.lease);
    for name in &drivers {
        let conn = Conn::member(socket.clone(), TEAM, name, tasks::DRIVER_ROLE);
        let mut peers: Vec<String> = drivers.iter().filter(|d| *d != name).cloned().collect();
        peers.push("lead".into());
        let m = member::Member::new(driver(name, conn, 2), lease_d, peers);
        handles.push(tokio::spawn(m.run()));
    }
    let running = Drivers {
        handles,
        log: log.clone(),
    };

    let setting = faults::Setting {
        cycles: args.cycles,
        lease: lease_d,
    };
    let mut frng = rng::derive(seed, &[rng::hash_str("faults")]);
    let done = faults::run(
        &setting,
        &mut frng,
        &mut boardd,
        &mut mates,
        &start,
        &marker,
        &running,
    )
    .await?;

    // The drivers stop, then read their inboxes once more each, so that a
    // message sent by another driver's last step has reached them.
    stop.store(true, Ordering::Relaxed);
    let mut ended = Vec::new();
    for h in running.handles {
        ended.push(h.await.context("a driver panicked")??);
    }
    for d in &mut ended {
        inbox::drain(d).await?;
    }
    let before_shutdown = marker.processes().len();
    let did_not_shut_down = finish::shut_down(&mut lead_conn, &mut mates).await?;
    let (events, tasks) = finish::read_back(&mut lead_conn).await?;
    // For the post-mortem of a failed run: boardd's side, as the checker read it.
    let events_file = dir.join("events.json");
    std::fs::write(&events_file, serde_json::to_vec(&events)?)
        .with_context(|| format!("cannot write {}", events_file.display()))?;
    drop(lead_conn);
    drop(ended);
    let left = finish::stop(&mut boardd, &marker).await?;

    let lines = acks::read(&dir.join("acks.jsonl"))?;
    let figures = check::check(&check::Evidence {
        log: &lines,
        events: &events,
        tasks: &tasks,
        left: &left,
    });
    let report = report::Report {
        passed: figures.zero(),
        seed,
        cycles: args.cycles,
        teammates: args.teammates,
        clients: args.clients,
        lease_ttl_s: args.lease,
        build,
        cpus: host.cpus,
        load_average_before: host.load_average,
        load_average_after: harness::load_average(),
        seconds: 0.0,
        faults: done,
        acks: by_op(&lines),
        stale_tries_refused: lines
            .iter()
            .filter(|l| matches!(l.what, What::StaleTry { acked: false, .. }))
            .count() as u64,
        events: events.len(),
        tasks_by_status: tasks.iter().fold(BTreeMap::new(), |mut m, t| {
            *m.entry(t.status.to_string()).or_insert(0) += 1;
            m
        }),
        teammate_crashes: mates.iter_mut().flat_map(|m| m.crashes.drain(..)).collect(),
        did_not_shut_down,
        processes_before_shutdown: before_shutdown,
        figures,
        run_dir: None,
    };
    Ok(report)
}

/// Lines of the log by op.
fn by_op(lines: &[acks::Line]) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    for l in lines {
        let v = serde_json::to_value(&l.what).unwrap_or_default();
        let op = v["op"].as_str().unwrap_or("?").to_string();
        *m.entry(op).or_insert(0) += 1;
    }
    m
}
