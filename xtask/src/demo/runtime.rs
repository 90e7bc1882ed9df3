//! `cargo xtask demo --runtime claude`: the demo's teammates run Claude Code
//! instead of the offline scripted model. The lead stays the scripted one, so
//! the plan and the board are the same; the work, the plan the tests task writes
//! and the results are Claude Code's, with real model calls.
//!
//! Checked before anything is built or started: Claude Code must be installed
//! (on PATH, or where `cargo xtask install-agents` puts it) and an Anthropic API
//! key set, since the default demo must never need either.

use anyhow::bail;
use clap::ValueEnum;
use std::ffi::OsString;
use std::path::PathBuf;
use teamboard_agent_clis::Cli;

/// What does the demo's teammates' work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DemoRuntime {
    /// The offline scripted model, which runs each task's ```sh blocks
    Native,
    /// Claude Code (needs `claude` and ANTHROPIC_API_KEY; real tokens)
    Claude,
}

/// How the demo's teammates are started, once checked.
#[derive(Debug, Clone)]
pub enum Team {
    Scripted,
    /// Claude Code, with the directory of its program put first on the lead's
    /// PATH (where `teamctl spawn` looks for `claude`).
    Claude {
        program: PathBuf,
    },
}

/// The default `--timeout` for each: Claude Code thinks for real.
pub fn default_timeout(runtime: DemoRuntime) -> u64 {
    match runtime {
        DemoRuntime::Native => 120,
        DemoRuntime::Claude => 900,
    }
}

/// Checks what the runtime needs, and says exactly what is missing.
pub fn check(runtime: DemoRuntime) -> anyhow::Result<Team> {
    match runtime {
        DemoRuntime::Native => Ok(Team::Scripted),
        DemoRuntime::Claude => {
            let Some(program) = find_claude() else {
                bail!(
                    "--runtime claude needs Claude Code: `claude` is not on PATH, and {} is \
                     missing. Install it (`cargo xtask install-agents --cli claude`, or \
                     `npm install -g @anthropic-ai/claude-code`), or run the default, \
                     offline demo",
                    Cli::Claude.program().display()
                );
            };
            if !has_api_key() {
                bail!(
                    "--runtime claude needs an Anthropic API key: set ANTHROPIC_API_KEY (or \
                     put ANTHROPIC_API_KEY=... in {}). The teammates then make real model \
                     calls, which cost tokens; the default demo needs no key",
                    keys_file().display()
                );
            }
            Ok(Team::Claude { program })
        }
    }
}

impl Team {
    /// The lead's extra arguments for its teammates.
    pub fn lead_args(&self) -> Vec<&'static str> {
        match self {
            Team::Scripted => Vec::new(),
            Team::Claude { .. } => vec!["--teammate-runtime", "claude"],
        }
    }

    /// The lead's PATH (which its `teamctl spawn`s inherit), when it must differ.
    pub fn lead_path(&self) -> Option<OsString> {
        let Team::Claude { program } = self else {
            return None;
        };
        let dir = program.parent()?.to_path_buf();
        let rest = std::env::var_os("PATH").unwrap_or_default();
        std::env::join_paths(std::iter::once(dir).chain(std::env::split_paths(&rest))).ok()
    }

    /// What the intro says about the teammates.
    pub fn describe(&self) -> String {
        match self {
            Team::Scripted => "The lead and the teammates are the offline `scripted` stand-ins \
                 (the teammates run the ```sh blocks of each task): no network, no API key."
                .to_string(),
            Team::Claude { program } => format!(
                "The lead is the offline `scripted` stand-in; the teammates are Claude Code \
                 ({}), one session per task, making real model calls with your \
                 ANTHROPIC_API_KEY.",
                program.display()
            ),
        }
    }
}

/// `claude` on PATH, else the pinned install under the agents directory.
fn find_claude() -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt as _;
    let runs = |p: &PathBuf| {
        p.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    let path = std::env::var_os("PATH").unwrap_or_default();
    let on_path = std::env::split_paths(&path)
        .map(|d| d.join("claude"))
        .find(runs);
    on_path.or_else(|| Some(Cli::Claude.program()).filter(runs))
}

/// ANTHROPIC_API_KEY in the environment or in teamboard's keys file, where
/// teammated looks for it too.
fn has_api_key() -> bool {
    const VAR: &str = "ANTHROPIC_API_KEY";
    if std::env::var(VAR).is_ok_and(|v| !v.trim().is_empty()) {
        return true;
    }
    let set =
        |(k, v): (&str, &str)| k.trim() == VAR && !v.trim().trim_matches(['"', '\'']).is_empty();
    let text = std::fs::read_to_string(keys_file()).unwrap_or_default();
    text.lines().any(|l| {
        let l = l.trim();
        l.strip_prefix("export ")
            .unwrap_or(l)
            .split_once('=')
            .is_some_and(set)
    })
}

/// `$XDG_CONFIG_HOME/teamboard/keys.env` (`~/.config/...` by default).
fn keys_file() -> PathBuf {
    teamboard_protocol::paths::config_dir()
        .unwrap_or_else(|| PathBuf::from("~/.config/teamboard"))
        .join("keys.env")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claude_teammates_are_asked_of_the_lead_and_found_first_on_its_path() {
        let team = Team::Claude {
            program: PathBuf::from("/opt/agents/bin/claude"),
        };
        assert_eq!(team.lead_args(), ["--teammate-runtime", "claude"]);
        let path = team.lead_path().expect("a PATH");
        let first = std::env::split_paths(&path).next().expect("one entry");
        assert_eq!(first, std::path::Path::new("/opt/agents/bin"));
        assert!(Team::Scripted.lead_args().is_empty());
        assert!(Team::Scripted.lead_path().is_none());
        assert_eq!(default_timeout(DemoRuntime::Native), 120);
    }
}
