//! The end of a bench's report: its targets, each with the figure, the target
//! and PASS or MISS, and its figures written to `target/bench/NAME.json`.

use crate::cargo::Metadata;
use anyhow::Context;
use serde::Serialize;

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
    println!();
    println!("Targets");
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
    let dir = Metadata::load()?.target_directory.join("bench");
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let out = dir.join(name);
    std::fs::write(&out, serde_json::to_vec_pretty(results)?)
        .with_context(|| format!("cannot write {}", out.display()))?;
    println!();
    println!("results written to {}", out.display());
    Ok(())
}
