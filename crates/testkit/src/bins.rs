//! The workspace's binaries, built for the running test's profile.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The `boardd` binary next to this test's executable (`target/<profile>/boardd`).
/// `TEAMBOARD_TEST_BOARDD` overrides the path.
pub fn boardd_bin() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| match std::env::var_os("TEAMBOARD_TEST_BOARDD") {
        Some(path) => PathBuf::from(path),
        None => workspace_bin("boardd"),
    })
}

/// A binary of the workspace (`boardd`, `teamctl`, `teammated`, and this kit's
/// `mute-teammate` and `worktree-teammate`), built for this test's profile.
///
/// `CARGO_BIN_EXE_<name>` only exists inside a binary's own package, so the
/// binaries are built here once per test process with `cargo build`. That is a
/// no-op when they are up to date, and it keeps the tests from running a stale
/// binary after the sources changed. A test inside the binary's own package uses
/// `env!("CARGO_BIN_EXE_<name>")` instead, which cargo has already built.
pub fn workspace_bin(name: &str) -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    let profile_dir = BUILT.get_or_init(build_workspace_bins);
    let bin = profile_dir.join(name);
    assert!(bin.exists(), "{} missing after the build", bin.display());
    bin
}

fn build_workspace_bins() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    // target/<profile>/deps/<test>-<hash>
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("the test executable lives in target/<profile>/deps")
        .to_path_buf();
    let profile = profile_dir
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("debug")
        .to_string();
    let cargo = option_env!("CARGO").unwrap_or("cargo");
    let mut cmd = nested_cargo(cargo);
    cmd.current_dir(env!("CARGO_MANIFEST_DIR")).args([
        "build",
        "--quiet",
        "-p",
        "boardd",
        "-p",
        "teamctl",
        "-p",
        "teammated",
        "-p",
        "teamboard-testkit",
        "--bins",
    ]);
    match profile.as_str() {
        "debug" => {}
        "release" => {
            cmd.arg("--release");
        }
        other => {
            cmd.args(["--profile", other]);
        }
    }
    if let Some(target_dir) = profile_dir.parent() {
        cmd.env("CARGO_TARGET_DIR", target_dir);
    }
    let out = match cmd.output() {
        Ok(out) => out,
        // No cargo here (the test binary was run by hand): use what was built.
        Err(e) if profile_dir.join("boardd").exists() => {
            eprintln!(
                "cannot run `{cargo} build` ({e}); using the binaries in {}",
                profile_dir.display()
            );
            return profile_dir;
        }
        Err(e) => panic!("cannot run `{cargo} build`: {e}"),
    };
    assert!(
        out.status.success(),
        "`cargo build` of the binaries failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    profile_dir
}

/// `cargo`, without the variables cargo set for the running test about its own
/// package (`CARGO_MANIFEST_DIR`, `CARGO_PKG_*`, ...).
///
/// Trap: build scripts watch some of them (`ring`'s reruns when
/// `CARGO_MANIFEST_DIR` changes), so a build that inherits the test's values
/// differs from a plain `cargo build`: it rebuilt ring, rustls and everything
/// above them on every test run, and the next plain build rebuilt them back.
fn nested_cargo(cargo: &str) -> Command {
    let mut cmd = Command::new(cargo);
    for (key, _) in std::env::vars_os() {
        let Some(key) = key.to_str() else { continue };
        let the_tests_own = key.starts_with("CARGO_PKG_")
            || matches!(
                key,
                "CARGO_MANIFEST_DIR"
                    | "CARGO_MANIFEST_PATH"
                    | "CARGO_CRATE_NAME"
                    | "CARGO_PRIMARY_PACKAGE"
                    | "CARGO_TARGET_TMPDIR"
            );
        if the_tests_own {
            cmd.env_remove(key);
        }
    }
    cmd
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nested_build_does_not_inherit_the_tests_package() {
        // Cargo sets it for every test it runs, this one included.
        assert!(std::env::var_os("CARGO_MANIFEST_DIR").is_some());
        let cmd = nested_cargo("cargo");
        let removed: Vec<_> = cmd
            .get_envs()
            .filter(|(_, value)| value.is_none())
            .map(|(key, _)| key.to_string_lossy().into_owned())
            .collect();
        for key in ["CARGO_MANIFEST_DIR", "CARGO_PKG_NAME", "CARGO_PKG_VERSION"] {
            assert!(removed.iter().any(|k| k == key), "{key}: {removed:?}");
        }
        assert!(!removed.iter().any(|k| k == "CARGO_HOME"), "{removed:?}");
    }
}
