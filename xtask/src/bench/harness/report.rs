//! The end of a bench's report: its targets, each with the figure, the target
//! and PASS or MISS, and its figures written to `target/bench/NAME.json`.

use anyhow::Context;
use serde::Serialize;
use std::path::Path;

/// A target a bench checks, as the docs state it.
#[derive(Debug, Clone, Serialize)]
pub struct Target {
    pub name: String,
    pub wanted: String,
    pub measured: String,
    pub pass: bool,
}

/// Prints the targets: `PASS  name  wanted …  got …`.
pub fn print_targets(targets: &[Target]) {
    println!("\nTargets");
    for t in targets {
        println!(
            "  {}  {:<34} wanted {:<40} got {}",
            if t.pass { "PASS" } else { "MISS" },
            t.name,
            t.wanted,
            t.measured
        );
    }
}

/// Writes `results` to `target/bench/NAME` and says where.
pub fn write_results(name: &str, results: &impl Serialize) -> anyhow::Result<()> {
    write_json(&super::bench_dir()?.join(name), "results", results)
}

/// Writes `value` to `path` (creating its directory) and says where.
pub fn write_json(path: &Path, what: &str, value: &impl Serialize) -> anyhow::Result<()> {
    let dir = path.parent().context("a results file has no directory")?;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    std::fs::write(path, serde_json::to_vec_pretty(value)?)
        .with_context(|| format!("cannot write {}", path.display()))?;
    println!("\n{what} written to {}", path.display());
    Ok(())
}
