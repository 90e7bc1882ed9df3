//! `cargo xtask bench-sandbox`: what the sandbox costs a command.
//!
//! The same two commands, run with the sandbox a teammate's `bash` gets
//! (`teamboard_sandbox::Jail` with its private `/tmp` and teamboard's private
//! paths hidden, `workspace-write`) and with `off`, one after the other in
//! the same run, so that the ratio is of one machine in one state:
//!
//! - **`bash -c true`**: the fixed cost, bubblewrap's namespaces and mounts;
//! - **a small build step**: `rustc` of a one-function file in the working
//!   directory, the kind of command a model runs over and over.
//!
//! Only the commands are timed, from spawn to exit, without teammated's guard
//! (the same with and without the sandbox). The figures are the kernel's, not
//! CPU work of ours, so the bench runs the debug build.

use super::harness::report::{Target, print_targets, write_results};
use super::harness::summary::{Col, Summary, ratio};
use super::harness::{self, Host};
use anyhow::{Context, bail};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use teamboard_sandbox::{Jail, Sandbox, SandboxMode, private_paths};

#[derive(Debug, Clone, clap::Args)]
pub struct SandboxBenchArgs {
    /// Runs of `bash -c true`, each way.
    #[arg(long, default_value_t = 200)]
    runs: usize,
    /// Runs of the build step, each way.
    #[arg(long, default_value_t = 20)]
    builds: usize,
    /// Where the working directory goes [default: target/bench].
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
}

#[derive(Debug, Serialize)]
struct Results {
    host: Host,
    trivial_off: Summary,
    trivial_sandboxed: Summary,
    trivial_p50_ratio: Option<f64>,
    build_off: Summary,
    build_sandboxed: Summary,
    build_p50_ratio: Option<f64>,
    targets: Vec<Target>,
}

/// The most the sandbox may add to a trivial command's p50: far below a model's
/// turn (seconds), which is what a command waits on anyway.
const TRIVIAL_TARGET: Duration = Duration::from_millis(50);

pub fn run(args: &SandboxBenchArgs) -> anyhow::Result<()> {
    if args.runs == 0 || args.builds == 0 || args.runs > 100_000 || args.builds > 10_000 {
        bail!("--runs and --builds must be between 1 and 100000 (10000 builds)");
    }
    teamboard_sandbox::probe()?;
    let host = Host::now();
    let base = match &args.dir {
        Some(dir) => dir.clone(),
        None => harness::bench_dir()?,
    };
    std::fs::create_dir_all(&base)?;
    let work = tempfile::Builder::new()
        .prefix("sandbox-")
        .tempdir_in(&base)?;
    let work = work.path().canonicalize()?;
    std::fs::write(
        work.join("lib.rs"),
        "pub fn add(a: u64, b: u64) -> u64 { a + b }\n",
    )?;
    let state = work.join("state");
    std::fs::create_dir_all(&state)?;
    let sandboxed = Jail::new(
        Sandbox {
            mode: SandboxMode::WorkspaceWrite,
            network: true,
        },
        &work,
    )
    .hide(private_paths(
        [state.as_path()],
        &teamboard_protocol::paths::default_socket_path(),
    ))
    .private_tmp()?;
    let off = Jail::off(&work);
    println!(
        "sandbox, {} x `bash -c true` and {} x `rustc` each way, in {}:",
        args.runs,
        args.builds,
        work.display()
    );
    let trivial = ["-c", "true"];
    let build = [
        "-c",
        "rustc --edition 2021 --crate-type lib -o /tmp/liblib.rlib lib.rs",
    ];
    let (trivial_off, trivial_sandboxed) = both(&off, &sandboxed, &work, &trivial, args.runs)?;
    let (build_off, build_sandboxed) = both(&off, &sandboxed, &work, &build, args.builds)?;
    let cols = [Col::P50, Col::P99, Col::MAX];
    for (label, s) in [
        ("bash -c true, off", &trivial_off),
        ("bash -c true, sandboxed", &trivial_sandboxed),
        ("rustc, off", &build_off),
        ("rustc, sandboxed", &build_sandboxed),
    ] {
        println!("{}  ({} samples)", s.line(label, 24, &cols), s.samples);
    }
    let trivial_p50_ratio = ratio(trivial_sandboxed.p50_ms, trivial_off.p50_ms);
    let build_p50_ratio = ratio(build_sandboxed.p50_ms, build_off.p50_ms);
    let added = trivial_sandboxed.p50_ms - trivial_off.p50_ms;
    let targets = vec![Target {
        name: "sandbox's added p50, bash -c true".into(),
        wanted: format!("< {} ms", TRIVIAL_TARGET.as_millis()),
        measured: format!("{added:.2} ms"),
        pass: added < TRIVIAL_TARGET.as_secs_f64() * 1e3,
    }];
    print_targets(&targets);
    let met = targets.iter().all(|t| t.pass);
    let results = Results {
        host,
        trivial_off,
        trivial_sandboxed,
        trivial_p50_ratio,
        build_off,
        build_sandboxed,
        build_p50_ratio,
        targets,
    };
    write_results("sandbox.json", &results)?;
    if !met {
        bail!("the sandbox missed its target");
    }
    Ok(())
}

/// `bash ARGS` `runs` times each way, alternating, so that neither way gets
/// the quieter half of the run.
fn both(
    off: &Jail,
    sandboxed: &Jail,
    work: &Path,
    args: &[&str],
    runs: usize,
) -> anyhow::Result<(Summary, Summary)> {
    let (mut a, mut b) = (Vec::with_capacity(runs), Vec::with_capacity(runs));
    for _ in 0..runs {
        a.push(once(off, work, args)?);
        b.push(once(sandboxed, work, args)?);
    }
    Ok((Summary::of(a), Summary::of(b)))
}

/// One command, spawn to exit.
fn once(jail: &Jail, work: &Path, args: &[&str]) -> anyhow::Result<Duration> {
    let (program, args) = jail.wrap("bash", args.iter().map(Into::into));
    let started = Instant::now();
    let out = Command::new(&program)
        .args(&args)
        .current_dir(work)
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("cannot run {}", program.to_string_lossy()))?;
    let took = started.elapsed();
    if !out.status.success() {
        bail!(
            "{} failed ({}): {}",
            program.to_string_lossy(),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(took)
}
