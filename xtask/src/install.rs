//! `cargo xtask install`: release binaries into PREFIX/bin, their man pages and
//! teamctl's shell completions under PREFIX/share, and the systemd user units into
//! the user's unit directory.

mod manuals;

use crate::cargo::{self, Metadata};
use anyhow::{Context, bail};
use clap::Args;
use std::fs;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const BOARDD_UNIT: &str = include_str!("../../systemd/boardd.service");
const TEAMMATED_UNIT: &str = include_str!("../../systemd/teammated@.service");
const WEB_UNIT: &str = include_str!("../../systemd/teamctl-web.service");

/// The binary directory the units' `ExecStart=` names. It is home-relative (`%h`)
/// so the same unit works for every user; another prefix gets its own absolute
/// path written in.
const UNIT_BIN_DIR: &str = "%h/.cargo/bin/";

#[derive(Debug, Args)]
pub struct InstallArgs {
    /// Install binaries into DIR/bin, man pages into DIR/share/man/man1 and shell
    /// completions under DIR/share [default: $CARGO_HOME, else ~/.cargo]
    #[arg(long, value_name = "DIR")]
    prefix: Option<PathBuf>,
    /// Do not install the systemd user units or reload the user manager.
    #[arg(long)]
    no_systemd: bool,
}

pub fn run(args: &InstallArgs) -> anyhow::Result<()> {
    let home = std::env::var_os("HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from);
    let home = home.context("HOME is not set; pass --prefix and --no-systemd, or set HOME")?;
    let default_prefix = std::env::var_os("CARGO_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| home.join(".cargo"));
    let prefix = args.prefix.clone().unwrap_or(default_prefix);
    let prefix = std::path::absolute(&prefix)
        .with_context(|| format!("cannot resolve {}", prefix.display()))?;
    let bin_dir = prefix.join("bin");

    let meta = Metadata::load()?;
    let packages = ["boardd", "teamctl", "teammated"];
    let release = cargo::build(&packages, true, true)?;

    fs::create_dir_all(&bin_dir).with_context(|| format!("cannot create {}", bin_dir.display()))?;
    for name in &packages {
        let package = meta.packages.iter().find(|p| p.name == *name);
        let package = package.with_context(|| format!("package {name} is not in the workspace"))?;
        for bin in package.bins() {
            let src = release.join(bin);
            let dest = bin_dir.join(bin);
            install_file(&src, &dest, 0o755)?;
            println!("installed {}", dest.display());
        }
    }
    manuals::install(&bin_dir, &prefix)?;

    let mut reloaded = false;
    if !args.no_systemd {
        let unit_dir = config_home(&home).join("systemd/user");
        fs::create_dir_all(&unit_dir)
            .with_context(|| format!("cannot create {}", unit_dir.display()))?;
        let unit_bin = unit_bin_dir(&bin_dir, &home)?;
        for (name, text) in [
            ("boardd.service", BOARDD_UNIT),
            ("teammated@.service", TEAMMATED_UNIT),
            ("teamctl-web.service", WEB_UNIT),
        ] {
            let dest = unit_dir.join(name);
            write_file(&dest, with_bin_dir(text, &unit_bin).as_bytes(), 0o644)?;
            println!("installed {}", dest.display());
        }
        // teammated@NAME reads its settings from here; create it so the place is
        // obvious (teamctl writes these files when it spawns a teammate). Private:
        // the settings may name credentials.
        let env_dir = config_home(&home).join("teamboard/teammates");
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&env_dir)
            .with_context(|| format!("cannot create {}", env_dir.display()))?;
        reloaded = daemon_reload();
    }

    println!();
    let on_path = path_contains(&bin_dir);
    if !on_path {
        println!(
            "note: {} is not on your PATH; add it, or call the binaries by full path.",
            bin_dir.display()
        );
    }
    for hint in manuals::hints(&prefix) {
        println!("note: {hint}.");
    }
    let teamctl = match on_path {
        true => "teamctl".to_string(),
        false => bin_dir.join("teamctl").display().to_string(),
    };
    println!("Next steps:");
    if args.no_systemd {
        let boardd = bin_dir.join("boardd");
        println!("  {}    # run the daemon in a terminal", boardd.display());
    } else {
        if !reloaded {
            println!("  systemctl --user daemon-reload");
        }
        println!("  systemctl --user enable --now boardd");
        println!("  systemctl --user restart boardd    # if it was already running the old binary");
    }
    println!("  {teamctl} status");
    println!(
        "  {teamctl} spawn alice --role dev     # a teammate (add --systemd to run it as teammated@alice)"
    );
    Ok(())
}

/// `$XDG_CONFIG_HOME`, or `~/.config`: where the user manager looks for units.
fn config_home(home: &Path) -> PathBuf {
    std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        // The XDG spec says to ignore a relative value.
        .filter(|p| p.is_absolute())
        .unwrap_or_else(|| home.join(".config"))
}

/// What the units' `%h/.cargo/bin/` becomes for this install.
fn unit_bin_dir(bin_dir: &Path, home: &Path) -> anyhow::Result<String> {
    if bin_dir == home.join(".cargo/bin") {
        return Ok(UNIT_BIN_DIR.to_string());
    }
    let s = bin_dir
        .to_str()
        .context("the install prefix is not valid UTF-8; systemd units need a UTF-8 path")?;
    // Quoting rules for ExecStart= are subtle; rather than get them half right,
    // accept the characters that need none. `%` starts a specifier, so it is doubled.
    if let Some(bad) = s
        .chars()
        .find(|c| c.is_whitespace() || matches!(c, '"' | '\'' | '\\' | ';' | '$'))
    {
        bail!(
            "the install prefix {s} contains {bad:?}, which systemd units would need quoted; \
             choose another --prefix or pass --no-systemd"
        );
    }
    Ok(format!("{}/", s.replace('%', "%%")))
}

/// The unit text with its `ExecStart=` lines pointing into `bin_dir`.
fn with_bin_dir(unit: &str, bin_dir: &str) -> String {
    unit.lines()
        .map(|line| match line.strip_prefix("ExecStart=") {
            Some(rest) => format!("ExecStart={}\n", rest.replacen(UNIT_BIN_DIR, bin_dir, 1)),
            None => format!("{line}\n"),
        })
        .collect()
}

/// Copies `src` over `dest` atomically: a copy next to `dest`, then a rename.
///
/// Writing into the old file in place would fail with "text file busy" or corrupt a
/// boardd that is running from it; a rename swaps the directory entry, and the
/// running process keeps its old inode until it exits.
fn install_file(src: &Path, dest: &Path, mode: u32) -> anyhow::Result<()> {
    let bytes = fs::read(src).with_context(|| format!("cannot read {}", src.display()))?;
    write_file(dest, &bytes, mode)
}

/// Writes `bytes` to `dest` through a temporary file in the same directory and a
/// rename, so that readers see the old or the new file, never half of one.
fn write_file(dest: &Path, bytes: &[u8], mode: u32) -> anyhow::Result<()> {
    let dir = dest
        .parent()
        .context("destination has no parent directory")?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".xtask-install-")
        .tempfile_in(dir)
        .with_context(|| format!("cannot create a temporary file in {}", dir.display()))?;
    tmp.write_all(bytes)
        .and_then(|()| {
            tmp.as_file()
                .set_permissions(fs::Permissions::from_mode(mode))
        })
        .and_then(|()| tmp.as_file().sync_all())
        .with_context(|| format!("cannot write {}", tmp.path().display()))?;
    // The temporary file is removed if the rename fails.
    tmp.persist(dest)
        .map_err(|e| e.error)
        .with_context(|| format!("cannot rename into {}", dest.display()))?;
    Ok(())
}

/// Reloads the user manager if there is one; true if it was reloaded.
fn daemon_reload() -> bool {
    // `show-environment` is a cheap question that only a running user manager answers:
    // there is none in containers, over plain `su`, or without lingering.
    let systemctl = |what| Command::new("systemctl").args(["--user", what]).status();
    let quiet = Command::new("systemctl")
        .args(["--user", "show-environment"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    let reachable = quiet.is_ok_and(|s| s.success());
    if !reachable {
        println!(
            "no systemd user manager is reachable from here; skipped `systemctl --user daemon-reload`"
        );
        return false;
    }
    match systemctl("daemon-reload") {
        Ok(s) if s.success() => {
            println!("reloaded the systemd user manager");
            true
        }
        Ok(s) => {
            println!("`systemctl --user daemon-reload` failed ({s})");
            false
        }
        Err(e) => {
            println!("cannot run `systemctl --user daemon-reload`: {e}");
            false
        }
    }
}

fn path_contains(dir: &Path) -> bool {
    std::env::var_os("PATH").is_some_and(|p| std::env::split_paths(&p).any(|d| d == dir))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_point_at_the_prefix() {
        let unit = with_bin_dir(BOARDD_UNIT, "/opt/tb/bin/");
        assert!(unit.contains("\nExecStart=/opt/tb/bin/boardd\n"));
        // Comments that mention the default path stay as they are.
        assert!(unit.contains("%h/.cargo/bin/ paths"));
        let unit = with_bin_dir(TEAMMATED_UNIT, "/opt/tb/bin/");
        assert!(unit.contains("\nExecStart=/opt/tb/bin/teammated --name %i\n"));
        let unit = with_bin_dir(WEB_UNIT, "/opt/tb/bin/");
        assert!(unit.contains("\nExecStart=/opt/tb/bin/teamctl web\n"));
    }

    #[test]
    fn default_prefix_keeps_the_home_relative_path() {
        let home = Path::new("/home/me");
        let dir = unit_bin_dir(&home.join(".cargo/bin"), home).unwrap();
        assert_eq!(dir, UNIT_BIN_DIR);
        let dir = unit_bin_dir(Path::new("/opt/100%/bin"), home).unwrap();
        assert_eq!(dir, "/opt/100%%/bin/");
        assert!(unit_bin_dir(Path::new("/opt/my tools/bin"), home).is_err());
    }
}
