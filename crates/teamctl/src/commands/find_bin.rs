//! Where programs are: the teammated binary, for `spawn` and `lead`, and an
//! agent's program.

use anyhow::{Context as _, bail};
use std::fs;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

/// Overrides where teammated is found.
const TEAMMATED_BIN_ENV: &str = "TEAMMATED_BIN";

/// Where teammated is: `$TEAMMATED_BIN`, next to teamctl (as `cargo build` and
/// `cargo xtask install` leave them), or on `$PATH`. Always absolute, because the
/// child starts in another directory.
pub fn find_teammated() -> anyhow::Result<PathBuf> {
    if let Some(bin) = std::env::var_os(TEAMMATED_BIN_ENV).filter(|v| !v.is_empty()) {
        let bin = absolute(Path::new(&bin), TEAMMATED_BIN_ENV)?;
        if !runnable(&bin) {
            bail!(
                "${TEAMMATED_BIN_ENV} is {}, which is not an executable file",
                bin.display()
            );
        }
        return Ok(bin);
    }
    let beside = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join("teammated")));
    if let Some(bin) = beside.as_ref().filter(|b| runnable(b)) {
        return Ok(bin.clone());
    }
    if let Some(bin) = resolve(Path::new("teammated")) {
        return absolute(&bin, "teammated path");
    }
    let beside = beside.as_ref().and_then(|b| b.parent()).map_or_else(
        || "teamctl's directory".to_string(),
        |d| d.display().to_string(),
    );
    bail!(
        "cannot find the teammated binary (looked in {beside} and on $PATH). Build it with \
         `cargo build` (it lands next to teamctl), install both with `cargo xtask install`, \
         or point ${TEAMMATED_BIN_ENV} at it"
    )
}

/// The program as a path: as given when it has a `/`, else the first executable
/// of that name on PATH (the rule teammated follows too).
pub fn resolve(program: &Path) -> Option<PathBuf> {
    if program.as_os_str().is_empty() {
        return None;
    }
    if program.components().count() > 1 {
        return runnable(program).then(|| program.to_path_buf());
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|p| runnable(p))
}

/// An executable file.
fn runnable(path: &Path) -> bool {
    fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// `path` made absolute (a child started elsewhere must still find it).
pub fn absolute(path: &Path, what: &str) -> anyhow::Result<PathBuf> {
    std::path::absolute(path)
        .with_context(|| format!("cannot make the {what} {} absolute", path.display()))
}
