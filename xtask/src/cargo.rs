//! Asking cargo about the workspace and building it.

use anyhow::{Context, bail};
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The parts of `cargo metadata` that xtask needs.
#[derive(Debug, Deserialize)]
pub struct Metadata {
    pub target_directory: PathBuf,
    pub packages: Vec<Package>,
}

#[derive(Debug, Deserialize)]
pub struct Package {
    pub name: String,
    pub targets: Vec<Target>,
}

#[derive(Debug, Deserialize)]
pub struct Target {
    pub name: String,
    pub kind: Vec<String>,
    /// The root file (`src/lib.rs`, `src/main.rs`).
    pub src_path: PathBuf,
}

impl Metadata {
    /// Reads the workspace's metadata. Asking cargo (rather than assuming
    /// `./target`) honours `CARGO_TARGET_DIR` and `build.target-dir`.
    pub fn load() -> anyhow::Result<Metadata> {
        let out = Command::new(cargo())
            .args(["metadata", "--no-deps", "--format-version", "1"])
            .current_dir(workspace_dir())
            .output()
            .context("cannot run `cargo metadata`")?;
        if !out.status.success() {
            bail!(
                "`cargo metadata` failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        serde_json::from_slice(&out.stdout).context("cannot read `cargo metadata` output")
    }
}

impl Package {
    /// The names of the package's binaries.
    pub fn bins(&self) -> impl Iterator<Item = &str> {
        self.targets
            .iter()
            .filter(|t| t.kind.iter().any(|k| k == "bin"))
            .map(|t| t.name.as_str())
    }
}

/// The cargo that runs us, so that a `cargo +toolchain xtask` builds with the same
/// toolchain.
fn cargo() -> std::ffi::OsString {
    std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into())
}

/// The workspace root, known at compile time: xtask always lives in `<root>/xtask`.
#[allow(
    clippy::expect_used,
    reason = "CARGO_MANIFEST_DIR is the absolute path <root>/xtask, so it has a parent"
)]
pub fn workspace_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives inside the workspace")
}

/// Runs `cargo build` for `packages` (`--release` when `release`), with cargo's
/// own output on the terminal so that a long first build shows progress.
/// Answers the directory that holds the binaries.
pub fn build(packages: &[&str], release: bool, locked: bool) -> anyhow::Result<PathBuf> {
    let meta = Metadata::load()?;
    let mut args = vec!["build"];
    args.extend(release.then_some("--release"));
    args.extend(locked.then_some("--locked"));
    packages.iter().for_each(|p| args.extend(["-p", p]));
    println!("$ cargo {}", args.join(" "));
    let status = Command::new(cargo())
        .args(&args)
        .current_dir(workspace_dir())
        .status();
    let status = status.context("cannot run `cargo build`")?;
    if !status.success() {
        bail!("`cargo build` failed ({status})");
    }
    Ok(meta
        .target_directory
        .join(if release { "release" } else { "debug" }))
}
