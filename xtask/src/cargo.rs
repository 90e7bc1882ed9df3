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

    pub fn package(&self, name: &str) -> Option<&Package> {
        self.packages.iter().find(|p| p.name == name)
    }

    /// Where release binaries land.
    pub fn release_dir(&self) -> PathBuf {
        self.target_directory.join("release")
    }

    /// Where binaries of `profile` land.
    pub fn profile_dir(&self, profile: Profile) -> PathBuf {
        self.target_directory.join(profile.dir_name())
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

/// A cargo build profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Profile {
    Debug,
    Release,
}

impl Profile {
    /// The directory under the target directory that holds its binaries.
    pub fn dir_name(self) -> &'static str {
        match self {
            Profile::Debug => "debug",
            Profile::Release => "release",
        }
    }
}

/// Runs `cargo build --release` for `packages`, with cargo's own output on the
/// terminal so that a long first build shows progress.
pub fn build_release(packages: &[&str], locked: bool) -> anyhow::Result<()> {
    build(packages, Profile::Release, locked)
}

/// Runs `cargo build` for `packages` in `profile`, with cargo's own output on the
/// terminal so that a long first build shows progress.
pub fn build(packages: &[&str], profile: Profile, locked: bool) -> anyhow::Result<()> {
    let mut cmd = Command::new(cargo());
    cmd.arg("build").current_dir(workspace_dir());
    let mut shown = String::from("$ cargo build");
    if profile == Profile::Release {
        cmd.arg("--release");
        shown.push_str(" --release");
    }
    if locked {
        cmd.arg("--locked");
        shown.push_str(" --locked");
    }
    for p in packages {
        cmd.args(["-p", p]);
        shown.push_str(" -p ");
        shown.push_str(p);
    }
    println!("{shown}");
    let status = cmd.status().context("cannot run `cargo build`")?;
    if !status.success() {
        bail!("`cargo build` failed ({status})");
    }
    Ok(())
}
