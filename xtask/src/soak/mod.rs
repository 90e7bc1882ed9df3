//! `cargo xtask soak-git` ([`LONG_ABOUT`]): the driver, run from the release
//! build, makes a repository (`main` checked out nowhere), starts boardd and
//! adds the task graph ([`plan`]). Each teammate is a process of its own
//! ([`worker`]) that works like a model-driven teammate without the model.
//! The [`driver`] freezes and kills teammates (after a [`manifest`] of their
//! worktree) and boardd until every task is completed; then [`verify`] checks
//! the repository and the board and [`report`] sums up.

mod driver;
mod edits;
mod git;
mod journal;
mod lead;
mod manifest;
mod plan;
mod procs;
mod report;
pub mod rng;
mod setup;
mod verify;
pub mod worker;

use crate::bench::harness::board::Scratch;
use crate::bench::harness::report::write_json;
use crate::bench::harness::{self, Bins, Host};
use crate::cargo::Metadata;
use anyhow::{Context, bail};
use plan::{Shape, TEAM};
use std::path::PathBuf;
use std::time::Duration;
use teamboard_process::{Launch, die_with_parent};

pub const LONG_ABOUT: &str = "\
Soak boardd's worktrees, completion gates and merge queue: N teammate processes \
work through a graph of tasks in a real git repository, with conflicts forced \
on a few shared files, checks that fail the first time, dependencies, and \
random kill -9s of the teammates and of boardd itself. Then it checks:

  - no commit on a wrong branch (main holds exactly the landed tasks' commits,
    each task branch only its own task's);
  - no uncommitted file lost, by a manifest of the killed teammate's worktree
    taken before each kill and checked when the next owner opens it and
    against the commit the task landed;
  - no orphan worktree or branch after prune_worktrees;
  - every merge_conflict names at least one path, which exists;
  - git fsck clean;

and reports the time from complete_task to the landing (p50/p99) and what the
checks add to the gate. It prints a summary, writes target/soak-git/report.json
and exits non-zero if a check fails (keeping the run's directory: the
repository, boardd's state and log, each teammate's journal and log).

Builds boardd and xtask in release mode first. The default run takes 30 to 60
seconds on a 2-core machine. Repeat a run's choices with its --seed.

Example:
  cargo xtask soak-git --teammates 8 --tasks 50 --kill-every 1.5 --boardd-kills 4";

#[derive(Debug, Clone, clap::Args)]
pub struct SoakArgs {
    /// Teammate processes.
    #[arg(long, default_value_t = 8, value_name = "N")]
    teammates: usize,
    /// Tasks in the graph.
    #[arg(long, default_value_t = 50, value_name = "N")]
    tasks: usize,
    /// Seed of every choice the soak makes (the graph, the edits, who is
    /// killed); printed at the start [default: from the clock].
    #[arg(long, value_name = "N")]
    seed: Option<u64>,
    /// Kill a random teammate with SIGKILL about every SECS seconds (0: never).
    #[arg(long, default_value_t = 1.5, value_name = "SECS")]
    kill_every: f64,
    /// Times boardd is killed with SIGKILL and restarted on the same state,
    /// spread over the run; in turn once a landing is queued, the moment the
    /// target branch moves (a landing half recorded), while a gate runs, and at
    /// random.
    #[arg(long, default_value_t = 4, value_name = "N")]
    boardd_kills: usize,
    /// Share of the tasks that also append to a shared file, which forces
    /// conflicts.
    #[arg(long, default_value_t = 0.4, value_name = "P")]
    conflict_rate: f64,
    /// Shared files the conflicting tasks pick from.
    #[arg(long, default_value_t = 3, value_name = "N")]
    shared_files: usize,
    /// Share of the tasks with a check (the rest are the gate's baseline).
    #[arg(long, default_value_t = 0.6, value_name = "P")]
    check_rate: f64,
    /// Share of the checked tasks whose check fails the first time.
    #[arg(long, default_value_t = 0.3, value_name = "P")]
    check_fail_rate: f64,
    /// Share of the tasks (after the first four) blocked by earlier ones.
    #[arg(long, default_value_t = 0.3, value_name = "P")]
    dep_rate: f64,
    /// Seconds each check sleeps before it looks at the file: what a test
    /// run would cost.
    #[arg(long, default_value_t = 0.2, value_name = "SECS")]
    check_secs: f64,
    /// Give up (and fail) if the tasks are not all completed by then.
    #[arg(long, default_value_t = 240.0, value_name = "SECS")]
    timeout: f64,
    /// Keep the run's directory even when every check passes.
    #[arg(long)]
    keep: bool,
    /// Where the run's directory goes [default: target/soak-git].
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
}

/// boardd's lease: short, so a teammate that is frozen and killed loses
/// nothing to waiting, and long enough for a loaded machine.
const LEASE_TTL_S: u64 = 10;
/// How long boardd may take to answer (a restart replays the log).
pub const START_TIMEOUT: Duration = Duration::from_secs(30);

impl SoakArgs {
    fn check(&self) -> anyhow::Result<()> {
        if !(1..=64).contains(&self.teammates) {
            bail!("--teammates must be between 1 and 64");
        }
        if !(1..=1000).contains(&self.tasks) {
            bail!("--tasks must be between 1 and 1000");
        }
        for (flag, p) in [
            ("--conflict-rate", self.conflict_rate),
            ("--check-rate", self.check_rate),
            ("--check-fail-rate", self.check_fail_rate),
            ("--dep-rate", self.dep_rate),
        ] {
            if !(0.0..=1.0).contains(&p) {
                bail!("{flag} is a share between 0 and 1, not {p}");
            }
        }
        if !(self.kill_every.is_finite() && self.kill_every >= 0.0) {
            bail!("--kill-every must be 0 (never) or a number of seconds");
        }
        if !(self.check_secs.is_finite() && (0.0..=60.0).contains(&self.check_secs)) {
            bail!("--check-secs must be between 0 and 60");
        }
        if !(self.timeout.is_finite() && self.timeout >= 1.0) {
            bail!("--timeout must be at least 1 second");
        }
        if self.boardd_kills > 20 {
            bail!("--boardd-kills must be at most 20");
        }
        if self.shared_files == 0 && self.conflict_rate > 0.0 {
            bail!("--conflict-rate needs at least one --shared-files");
        }
        Ok(())
    }

    fn shape(&self) -> Shape {
        Shape {
            tasks: self.tasks,
            shared_files: self.shared_files,
            conflict_rate: self.conflict_rate,
            check_rate: self.check_rate,
            check_fail_rate: self.check_fail_rate,
            dep_rate: self.dep_rate,
            check_secs: self.check_secs,
        }
    }
}

/// `cargo xtask soak-git`: build in release mode, then run from there.
pub fn build_and_run(args: &SoakArgs) -> anyhow::Result<()> {
    args.check()?;
    harness::hand_over(&["boardd", "xtask"], "soak-git-run")
}

/// `soak-git-run`: the soak, from the release build.
pub fn run(args: &SoakArgs) -> anyhow::Result<()> {
    args.check()?;
    harness::block_on(1, run_async(args))
}

async fn run_async(args: &SoakArgs) -> anyhow::Result<()> {
    let bins = Bins::beside_me(&["boardd"], "soak-git")?;
    let seed = args.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64 % 1_000_000)
    });
    let out_dir = Metadata::load()?.target_directory.join("soak-git");
    let prefix = format!("run-{seed}-");
    let run = Scratch::new(&prefix, args.dir.as_deref(), out_dir.clone())?;
    let dir = run.path();
    let (repo, state, manifests) = (dir.join("repo"), dir.join("state"), dir.join("manifests"));
    for d in ["journal", "manifests", "logs"] {
        std::fs::create_dir_all(dir.join(d))?;
    }
    let host = Host::now();
    let (teammates, tasks) = (args.teammates, args.tasks);
    println!(
        "soak-git: seed {seed}, {teammates} teammates, {tasks} tasks, in {}",
        dir.display()
    );
    let initial = setup::repository(&repo, args.shared_files)?;
    let plan = plan::plan(seed, &args.shape());
    let socket = run.socket("boardd.sock");
    // On a fixed socket and state directory, so that it can be killed and
    // started again on the same state, as a crash and a restart by systemd
    // would. Its log is appended to across restarts: one log for the run.
    let (bin, log) = (bins.get("boardd"), state.join("boardd.log"));
    let mut launch = Launch::new(&bin, &socket, &state, &log);
    let lease = LEASE_TTL_S.to_string();
    let flags = ["--lease-ttl", &lease, "--restart-grace", &lease];
    launch.command().args(flags);
    git::isolate(launch.command());
    die_with_parent(launch.command(), libc::SIGKILL);
    let mut boardd = launch.start(START_TIMEOUT).await?;
    let mut lead = lead::Lead::new(socket.clone(), TEAM);
    let ids = setup::board(&mut lead, &repo, &plan).await?;
    let (exe, journals) = (bins.xtask.clone(), dir.join("journal"));
    let start = procs::Start {
        exe,
        socket,
        dir: dir.to_path_buf(),
        seed,
    };
    let mut procs: Vec<_> = (1..=teammates)
        .map(|i| procs::Teammate::spawn(&start, format!("w{i}")))
        .collect::<anyhow::Result<_>>()?;
    let setting = driver::Setting {
        seed,
        kill_every: args.kill_every,
        boardd_kills: args.boardd_kills,
        timeout: Duration::from_secs_f64(args.timeout),
        manifests: manifests.clone(),
        repo: repo.clone(),
    };
    let driven = driver::drive(&setting, &mut boardd, &mut lead, &mut procs, ids.len()).await?;
    let mut worker_crashes = Vec::new();
    for t in &mut procs {
        t.kill().await;
        worker_crashes.append(&mut t.crashes);
    }

    let mut details = Vec::with_capacity(ids.len());
    for &id in &ids {
        details.push(lead.call(|c| Box::pin(c.get_task(id))).await?);
    }
    let records = journal::read_all(&journals)?;
    let mut checks = Vec::new();
    if let Some(stuck) = &driven.timed_out {
        checks.push(verify::Check {
            name: format!("every task completed within {} s", args.timeout),
            pass: false,
            looked_at: "the board when the time ran out".into(),
            problems: stuck.lines().map(str::to_string).collect(),
        });
    }
    checks.push(verify::all_completed(&details));
    checks.push(verify::target_history(&repo, &initial, &details)?);
    checks.push(verify::task_branches(&repo, &details)?);
    checks.push(verify::own_files(&repo, &details)?);
    checks.push(verify::dependencies(&records, &details));
    let (manifest_check, manifest_counts) =
        verify::manifests(&repo, &manifests, &driven.worker_kills, &records, &details)?;
    checks.push(manifest_check);
    let (conflict_check, answered, in_history) = verify::conflicts(&repo, &records, &details)?;
    checks.push(conflict_check);
    let pruned = lead.call(|c| Box::pin(c.prune_worktrees(false))).await;
    let worktrees = state.join("worktrees").join(TEAM);
    checks.push(verify::pruned(
        &repo,
        &worktrees,
        &pruned.context("prune_worktrees")?,
    )?);
    checks.push(verify::fsck(&repo)?);
    checks.push(verify::crashes(worker_crashes, &driven.boardd_crashes));
    boardd.stop(Duration::from_secs(10)).await?;

    let boardd_kills: Vec<report::BoarddKillSeen> = driven
        .boardd_kills
        .iter()
        .map(|k| report::BoarddKillSeen {
            kill: k.clone(),
            queued_across: report::queued_across(&details, k.at_ms),
        })
        .collect();
    let passed = checks.iter().all(|c| c.pass);
    let conflicts = (answered, in_history);
    let report = report::Report {
        passed,
        seed,
        teammates,
        tasks,
        shape: args.shape(),
        kill_every_s: args.kill_every,
        seconds: driven.seconds,
        cpus: host.cpus,
        load_average_before: host.load_average,
        load_average_after: harness::load_average(),
        figures: report::figures(&records, &details),
        counts: report::counts(&records, &driven, manifest_counts, conflicts, &boardd_kills),
        checks,
        worker_kills: driven.worker_kills,
        boardd_kills,
        retried: driven.retried,
        git_trouble: report::git_trouble(&records),
        run_dir: (!passed || args.keep).then(|| run.keep().display().to_string()),
    };
    report.print();
    write_json(&out_dir.join("report.json"), "report", &report)?;
    if let Some(d) = &report.run_dir {
        println!("the run's directory is kept: {d}");
    }
    if !passed {
        let failed = report.checks.iter().filter(|c| !c.pass).count();
        bail!("the soak failed {failed} check(s); seed {seed}");
    }
    Ok(())
}
