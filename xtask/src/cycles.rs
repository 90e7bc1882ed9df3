//! `cargo xtask module-cycles`: do a crate's modules import each other in a circle?
//!
//! `cargo modules dependencies` (the cargo-modules tool, which reads the crate the
//! way rust-analyzer does) lists which item uses which. Its own `--acyclic` check
//! works on items, where a method and its type always form a loop, so this command
//! folds every item into the module that holds it and looks for cycles between
//! modules. A module's uses of its own ancestors and descendants are left out: a
//! `mod.rs` declaring the types its submodules share is the ordinary shape of a
//! Rust module, not a cycle between two of them.
//!
//! A trap: cargo-modules files a method under its type's path, wherever the
//! `impl` block sits. An `impl Teammate` in `work/` that names `work::End` reads
//! as `teammate -> work`, and rightly so: the type then depends on that module.

mod graph;

use anyhow::{Context, bail};
use clap::Args;
use std::process::Command;

/// The crates checked by default, and how cargo-modules is to find their code.
const CRATES: [(&str, Target); 5] = [
    ("teamboard-protocol", Target::Lib),
    ("teamboard-board", Target::Lib),
    ("boardd", Target::Lib),
    ("teammated", Target::Lib),
    ("teamctl", Target::Bin("teamctl")),
];

#[derive(Debug, Clone, Copy)]
enum Target {
    Lib,
    Bin(&'static str),
}

#[derive(Debug, Clone, Args)]
pub struct CyclesArgs {
    /// Check only this package (default: every crate with daemon or client code).
    #[arg(long, short)]
    package: Option<String>,
    /// Also print every module-to-module edge.
    #[arg(long)]
    edges: bool,
}

pub fn run(args: &CyclesArgs) -> anyhow::Result<()> {
    let probe = Command::new("cargo")
        .args(["modules", "--version"])
        .output();
    if !probe.is_ok_and(|o| o.status.success()) {
        bail!(
            "cargo-modules is not installed. Install it with \
             `cargo install cargo-modules --version 0.27.0 --locked` (0.28 needs a newer rustc)"
        );
    }
    let mut cyclic = Vec::new();
    for (package, target) in CRATES {
        if args.package.as_deref().is_some_and(|p| p != package) {
            continue;
        }
        let dot = dependencies(package, target)?;
        let graph = graph::Graph::from_dot(&dot);
        println!(
            "{package}: {} modules, {} module-to-module uses",
            graph.modules(),
            graph.edges().count()
        );
        if args.edges {
            for (from, to) in graph.edges() {
                println!("  {from} -> {to}");
            }
        }
        let cycles = graph.cycles();
        for cycle in &cycles {
            println!("  CYCLE: {}", cycle.join(" <-> "));
        }
        if cycles.is_empty() {
            println!("  acyclic");
        } else {
            cyclic.push(package);
        }
    }
    if !cyclic.is_empty() {
        bail!("module cycles in {}", cyclic.join(", "));
    }
    Ok(())
}

fn dependencies(package: &str, target: Target) -> anyhow::Result<String> {
    let mut cmd = Command::new("cargo");
    cmd.args(["modules", "dependencies", "-p", package]);
    match target {
        Target::Lib => cmd.arg("--lib"),
        Target::Bin(name) => cmd.args(["--bin", name]),
    };
    cmd.args(["--no-externs", "--no-sysroot", "--no-owns"]);
    let out = cmd
        .output()
        .with_context(|| format!("running cargo modules for {package}"))?;
    if !out.status.success() {
        bail!(
            "cargo modules failed for {package}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    String::from_utf8(out.stdout).context("cargo modules wrote something that is not UTF-8")
}
