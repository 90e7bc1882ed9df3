//! `cargo xtask fuzz`: builds the libFuzzer targets of `fuzz/` with cargo-fuzz
//! on nightly, runs each for a set time, one after the other, and reports per
//! target the executions, the coverage, the corpus entries it added and any
//! crash (kept, with the command that replays it).
//!
//! The targets run in turn, not side by side: on a small machine two fuzzers
//! only halve each other's executions, and the figures per target are then
//! comparable from run to run.
//!
//! Without a sanitizer by default: the targets are safe Rust, where what a
//! fuzzer finds is a panic, an overflow (the build keeps overflow checks and
//! debug assertions) or a hang, and AddressSanitizer would halve the
//! executions for nothing it could add. `--sanitizer address` is there for a
//! change that brings unsafe code into a parser.

mod stats;

use crate::cargo::workspace_dir;
use anyhow::{Context, bail};
use stats::Stats;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

#[derive(Debug, clap::Args)]
pub struct FuzzArgs {
    /// How long each target runs.
    #[arg(long, default_value_t = 60)]
    pub seconds: u64,
    /// cargo-fuzz's sanitizer: none, address, leak, memory, thread.
    #[arg(long, default_value = "none")]
    pub sanitizer: String,
    /// Minimise each target's corpus (`cargo fuzz cmin`) after its run, as
    /// before committing it.
    #[arg(long)]
    pub cmin: bool,
    /// The targets to run (default: all of them).
    pub targets: Vec<String>,
}

/// One target's run.
struct Run {
    target: String,
    stats: Stats,
    corpus_before: usize,
    corpus_after: usize,
    log: PathBuf,
}

pub fn run(args: &FuzzArgs) -> anyhow::Result<()> {
    let dir = workspace_dir().join("fuzz");
    check_tools(&dir)?;
    let all = list(&dir)?;
    let targets = if args.targets.is_empty() {
        all
    } else {
        for t in &args.targets {
            if !all.contains(t) {
                bail!("no fuzz target {t}; there are: {}", all.join(", "));
            }
        }
        args.targets.clone()
    };
    // The targets build the versions the workspace tests: cargo adds
    // libFuzzer's own crates to a copy of the workspace's lock file.
    std::fs::copy(workspace_dir().join("Cargo.lock"), dir.join("Cargo.lock"))
        .context("cannot copy Cargo.lock into fuzz/")?;
    println!("$ cargo +nightly fuzz build -s {}", args.sanitizer);
    let built = nightly(&dir)
        .args(["fuzz", "build", "-s", &args.sanitizer])
        .status()
        .context("cannot run `cargo +nightly fuzz build`")?;
    if !built.success() {
        bail!("`cargo +nightly fuzz build` failed ({built})");
    }
    let mut runs = Vec::new();
    for target in &targets {
        let run = fuzz_one(&dir, target, args)?;
        report(&run, &args.sanitizer);
        if args.cmin && run.stats.crash.is_none() {
            cmin(&dir, target, &args.sanitizer)?;
        }
        runs.push(run);
    }
    summary(&runs, args.seconds);
    let crashed = runs.iter().filter(|r| r.stats.crash.is_some()).count();
    if crashed > 0 {
        bail!("{crashed} target(s) crashed; see above");
    }
    Ok(())
}

/// Nightly and cargo-fuzz are there, or what to install.
fn check_tools(dir: &Path) -> anyhow::Result<()> {
    let nightly_ok = Command::new("cargo")
        .args(["+nightly", "--version"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !nightly_ok {
        bail!(
            "the nightly toolchain is missing (libFuzzer's instrumentation needs it): \
             `rustup toolchain install nightly`"
        );
    }
    let fuzz_ok = nightly(dir)
        .args(["fuzz", "--version"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !fuzz_ok {
        bail!("cargo-fuzz is missing: `cargo install cargo-fuzz --locked`");
    }
    Ok(())
}

/// `cargo +nightly` in `fuzz/`. Through rustup's `cargo`, not `$CARGO`: the
/// toolchain's own cargo does not take `+nightly`.
fn nightly(dir: &Path) -> Command {
    let mut c = Command::new("cargo");
    c.arg("+nightly").current_dir(dir);
    c
}

/// The targets `fuzz/Cargo.toml` declares.
fn list(dir: &Path) -> anyhow::Result<Vec<String>> {
    let out = nightly(dir)
        .args(["fuzz", "list"])
        .output()
        .context("cannot run `cargo +nightly fuzz list`")?;
    if !out.status.success() {
        bail!(
            "`cargo fuzz list` failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect())
}

fn fuzz_one(dir: &Path, target: &str, args: &FuzzArgs) -> anyhow::Result<Run> {
    let corpus = dir.join("corpus").join(target);
    std::fs::create_dir_all(&corpus).context("cannot make the corpus directory")?;
    let logs = dir.join("artifacts");
    std::fs::create_dir_all(&logs).context("cannot make fuzz/artifacts")?;
    let log = logs.join(format!("{target}.log"));
    let corpus_before = count(&corpus);
    println!(
        "fuzzing {target} for {} s (log: {})",
        args.seconds,
        log.display()
    );
    let log_file = std::fs::File::create(&log).context("cannot create the log")?;
    let status = nightly(dir)
        .args(["fuzz", "run", "-s", &args.sanitizer, target, "--"])
        .arg(format!("-max_total_time={}", args.seconds))
        // A hang is a finding too: an input that takes this long is kept
        // as a timeout.
        .arg("-timeout=10")
        .arg("-print_final_stats=1")
        .stdout(log_file.try_clone().context("cannot share the log")?)
        .stderr(log_file)
        .status()
        .context("cannot run `cargo +nightly fuzz run`")?;
    let output = std::fs::read_to_string(&log).context("cannot read the log")?;
    let stats = stats::read(&output);
    if !status.success() && stats.crash.is_none() {
        bail!(
            "`cargo fuzz run {target}` failed ({status}); see {}",
            log.display()
        );
    }
    Ok(Run {
        target: target.to_string(),
        stats,
        corpus_before,
        corpus_after: count(&corpus),
        log,
    })
}

impl Run {
    /// Files the run added to the corpus. libFuzzer's own count
    /// (`new_units_added`) also counts the inputs it later replaced with
    /// smaller ones.
    fn new_entries(&self) -> usize {
        self.corpus_after.saturating_sub(self.corpus_before)
    }
}

fn cmin(dir: &Path, target: &str, sanitizer: &str) -> anyhow::Result<()> {
    // By edges, not by hit counts (`-use_counters=0`): the corpus in the
    // repository stays small (a few hundred files at most), and the counts
    // come back within seconds of the next run.
    let status = nightly(dir)
        .args([
            "fuzz",
            "cmin",
            "-s",
            sanitizer,
            target,
            "--",
            "-use_counters=0",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .context("cannot run `cargo fuzz cmin`")?;
    if !status.success() {
        bail!("`cargo fuzz cmin {target}` failed ({status})");
    }
    println!(
        "  corpus minimised: {} file(s)",
        count(&dir.join("corpus").join(target))
    );
    Ok(())
}

fn count(dir: &Path) -> usize {
    std::fs::read_dir(dir).map_or(0, |d| d.flatten().filter(|e| e.path().is_file()).count())
}

fn or_dash(n: Option<u64>) -> String {
    n.map_or_else(|| "-".to_string(), |n| n.to_string())
}

fn report(run: &Run, sanitizer: &str) {
    let s = &run.stats;
    println!(
        "  {}: {} executions ({} /s), coverage {} edges / {} features, corpus {} -> {} files ({} new)",
        run.target,
        or_dash(s.executions),
        or_dash(s.exec_per_sec),
        or_dash(s.coverage),
        or_dash(s.features),
        run.corpus_before,
        run.corpus_after,
        run.new_entries(),
    );
    if let Some(crash) = &s.crash {
        println!("  CRASH: {}", crash.display());
        if let Some(panic) = &s.panic {
            println!("    {panic}");
        }
        println!("    log: {}", run.log.display());
        println!(
            "    replay: cd fuzz && cargo +nightly fuzz run -s {sanitizer} {} {}",
            run.target,
            crash.display()
        );
        println!(
            "    once fixed, keep it: cp {} fuzz/regressions/{}/ (replayed by \
             `cargo test -p teamboard-fuzz-entry --test replay`)",
            crash.display(),
            run.target
        );
    }
}

fn summary(runs: &[Run], seconds: u64) {
    println!();
    println!(
        "{:<18} {:>8} {:>12} {:>8} {:>9} {:>9} {:>7}  crash",
        "target", "seconds", "executions", "exec/s", "coverage", "features", "new"
    );
    for r in runs {
        let s = &r.stats;
        println!(
            "{:<18} {:>8} {:>12} {:>8} {:>9} {:>9} {:>7}  {}",
            r.target,
            seconds,
            or_dash(s.executions),
            or_dash(s.exec_per_sec),
            or_dash(s.coverage),
            or_dash(s.features),
            r.new_entries(),
            s.crash
                .as_ref()
                .map_or_else(|| "none".to_string(), |c| c.display().to_string()),
        );
    }
}
