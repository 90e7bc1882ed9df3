//! The man pages and shell completions `cargo xtask install` puts under the
//! prefix, each where its reader looks for it.
//!
//! They are asked of the programs just built (`PROGRAM --generate-man DIR`,
//! `teamctl completions SHELL`) rather than kept in the tree: rendered from the
//! clap definitions, they cannot fall behind `--help`.
//!
//! man-db and bash-completion find PREFIX/share on their own when PREFIX/bin is
//! on PATH; zsh and fish do not look there unless told, which [`hints`] says.

use anyhow::{Context, bail};
use std::fs;
use std::path::Path;
use std::process::Command;

/// The programs that have man pages.
const PROGRAMS: [&str; 3] = ["boardd", "teamctl", "teammated"];

/// Each shell teamctl completes for, with where its script goes under PREFIX.
const COMPLETIONS: [(&str, &str); 3] = [
    ("bash", "share/bash-completion/completions/teamctl"),
    ("zsh", "share/zsh/site-functions/_teamctl"),
    ("fish", "share/fish/vendor_completions.d/teamctl.fish"),
];

/// Writes the man pages into PREFIX/share/man/man1 and the completion scripts
/// under PREFIX/share, with the programs in `bin_dir`, and says where.
pub fn install(bin_dir: &Path, prefix: &Path) -> anyhow::Result<()> {
    let man_dir = prefix.join("share/man/man1");
    for program in PROGRAMS {
        let mut generate = Command::new(bin_dir.join(program));
        run(generate.arg("--generate-man").arg(&man_dir))?;
    }
    println!("installed the man pages in {}", man_dir.display());
    for (shell, path) in COMPLETIONS {
        let script = run(Command::new(bin_dir.join("teamctl")).args(["completions", shell]))?;
        let dest = prefix.join(path);
        let dir = dest.parent().context("a completion path has a parent")?;
        fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        super::write_file(&dest, &script, 0o644)?;
        println!("installed {}", dest.display());
    }
    Ok(())
}

/// What to add to zsh's and fish's settings, which look under /usr/share and
/// /usr/local/share only.
pub fn hints(prefix: &Path) -> Vec<String> {
    let share = prefix.join("share");
    if ["/usr/share", "/usr/local/share"]
        .iter()
        .any(|d| share == Path::new(d))
    {
        return Vec::new();
    }
    let zsh = share.join("zsh/site-functions");
    let fish = share.join("fish/vendor_completions.d");
    vec![
        format!(
            "zsh finds the completions with `fpath+=({})` before `compinit` in ~/.zshrc",
            zsh.display()
        ),
        format!(
            "fish finds the completions with `set -p fish_complete_path {}` in ~/.config/fish/config.fish",
            fish.display()
        ),
    ]
}

/// Runs `command` and answers its stdout, or why it failed.
fn run(command: &mut Command) -> anyhow::Result<Vec<u8>> {
    let shown = format!("{command:?}");
    let out = command
        .output()
        .with_context(|| format!("cannot run {shown}"))?;
    if !out.status.success() {
        bail!(
            "{shown} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(out.stdout)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cargo;

    /// The install path with the programs as `cargo xtask install` would find
    /// them (debug builds, which render the same pages).
    #[test]
    fn writes_the_man_pages_and_completions() {
        let bin_dir = cargo::build(&PROGRAMS, false, true).unwrap();
        let prefix = tempfile::tempdir().unwrap();
        let man = prefix.path().join("share/man/man1");
        install(&bin_dir, prefix.path()).unwrap();
        for page in [
            "boardd",
            "teammated",
            "teammated-lead",
            "teamctl",
            "teamctl-task-add",
        ] {
            let text = fs::read_to_string(man.join(format!("{page}.1"))).unwrap();
            assert!(text.contains(&format!(".TH {page} 1")), "{page}: {text}");
        }
        let page = fs::read_to_string(man.join("teamctl-completions.1")).unwrap();
        assert!(page.contains("completion script"), "{page}");
        for (shell, path) in COMPLETIONS {
            let script = fs::read_to_string(prefix.path().join(path)).unwrap();
            assert!(script.contains("spawn"), "{shell}: {script}");
        }
        assert_eq!(hints(Path::new("/usr")), Vec::<String>::new());
        assert_eq!(hints(prefix.path()).len(), 2);
    }
}
