//! `cargo xtask module-cycles`: do a crate's files, or its modules, import each
//! other in a circle?
//!
//! Files first ([`files`]): every library and binary of the workspace, read from
//! the source text, so that the check needs nothing installed. Then modules:
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

mod files;
mod graph;

use crate::cargo::Metadata;
use anyhow::{Context, bail};
use clap::Args;
use graph::Graph;
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
    /// Check only this package (default: files in every package, modules in
    /// every crate with daemon or client code).
    #[arg(long, short)]
    package: Option<String>,
    /// Check only the files (needs no cargo-modules).
    #[arg(long)]
    files: bool,
    /// Also print every file-to-file and module-to-module edge.
    #[arg(long)]
    edges: bool,
}

pub fn run(args: &CyclesArgs) -> anyhow::Result<()> {
    let mut cyclic = files(args)?;
    if !args.files {
        cyclic.extend(modules(args)?);
    }
    if !cyclic.is_empty() {
        bail!("import cycles: {}", cyclic.join(", "));
    }
    Ok(())
}

/// The file-level check of every package's libraries and binaries: the
/// packages (and targets) with a cycle.
fn files(args: &CyclesArgs) -> anyhow::Result<Vec<String>> {
    let meta = Metadata::load()?;
    let mut cyclic = Vec::new();
    println!("Imports between files:");
    for package in &meta.packages {
        if args.package.as_deref().is_some_and(|p| p != package.name) {
            continue;
        }
        for target in &package.targets {
            let is = |kind: &str| target.kind.iter().any(|k| k == kind);
            let label = match (is("lib"), is("bin")) {
                (true, _) => package.name.clone(),
                (false, true) => format!("{} (bin {})", package.name, target.name),
                (false, false) => continue,
            };
            let krate = files::Crate::read(&target.src_path)?;
            let graph = Graph::of_files(krate.files(), krate.imports());
            if report(&label, "file", &graph, args.edges) {
                cyclic.push(format!("{label} (files)"));
            }
        }
    }
    Ok(cyclic)
}

/// Prints a graph's size, its edges if asked, and its cycles; whether it has one.
fn report(label: &str, what: &str, graph: &Graph, edges: bool) -> bool {
    let (nodes, uses) = (graph.nodes(), graph.edges().count());
    println!("{label}: {nodes} {what}s, {uses} {what}-to-{what} uses");
    if edges {
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
    }
    !cycles.is_empty()
}

/// The module-level check, with cargo-modules: the crates with a cycle.
fn modules(args: &CyclesArgs) -> anyhow::Result<Vec<String>> {
    let probe = Command::new("cargo")
        .args(["modules", "--version"])
        .output();
    if !probe.is_ok_and(|o| o.status.success()) {
        bail!(
            "cargo-modules is not installed. Install it with \
             `cargo install cargo-modules --version 0.27.0 --locked` (0.28 needs a newer rustc)"
        );
    }
    println!("Uses between modules (cargo-modules):");
    let mut cyclic = Vec::new();
    for (package, target) in CRATES {
        if args.package.as_deref().is_some_and(|p| p != package) {
            continue;
        }
        let graph = Graph::from_dot(&dependencies(package, target)?);
        if report(package, "module", &graph, args.edges) {
            cyclic.push(format!("{package} (modules)"));
        }
    }
    Ok(cyclic)
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
        let stderr = String::from_utf8_lossy(&out.stderr);
        bail!("cargo modules failed for {package}: {stderr}");
    }
    String::from_utf8(out.stdout).context("cargo modules wrote something that is not UTF-8")
}
