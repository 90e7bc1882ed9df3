//! The real agent CLIs (Claude Code, Codex, Gemini CLI) for the runtime tests.
//!
//! They are installed from the npm registry at pinned versions into
//! `$TEAMBOARD_AGENTS_DIR` (default `<workspace>/target/agents`) by
//! `cargo xtask install-agents`, which `.ci/run` runs. A test asks for one with
//! [`agent_cli`]: where it is missing, the test prints why on stderr and returns
//! early, counted as passed but saying `skipped` in its output. Where the
//! installation is required (`TEAMBOARD_REQUIRE_AGENTS=1`, which `.ci/run` sets
//! once the install succeeded), a missing CLI fails the test instead: a skip must
//! never hide a broken install.

use std::path::PathBuf;

/// One agent CLI, at the version the runtimes are built and tested against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cli {
    Claude,
    Codex,
    Gemini,
}

impl Cli {
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
        let (_, version) = self.package();
        agents_dir().join(format!("{}-{version}", self.name()))
    }

    /// The program to run, inside [`Cli::install_dir`]. Codex's and Claude
    /// Code's native binaries are run directly: their Node wrappers would leave
    /// the real process behind on a `kill -9` of the wrapper.
    pub fn program(self) -> PathBuf {
        let dir = self.install_dir().join("node_modules");
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
}

/// `$TEAMBOARD_AGENTS_DIR`, or `target/agents` at the workspace root.
pub fn agents_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("TEAMBOARD_AGENTS_DIR") {
        return dir.into();
    }
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("..")
        .join("target")
        .join("agents")
}

/// The CLI's program, or `None` after printing why the test is skipped.
/// Panics instead when `TEAMBOARD_REQUIRE_AGENTS=1`.
pub fn agent_cli(cli: Cli) -> Option<PathBuf> {
    let program = std::env::var_os(cli.override_var())
        .map(PathBuf::from)
        .unwrap_or_else(|| cli.program());
    if is_executable(&program) {
        return Some(program);
    }
    let (package, version) = cli.package();
    let why = format!(
        "{} is not installed ({} is missing; `cargo xtask install-agents` installs \
         {package}@{version} from the npm registry, or set {} to its program)",
        cli.name(),
        program.display(),
        cli.override_var()
    );
    if std::env::var("TEAMBOARD_REQUIRE_AGENTS").as_deref() == Ok("1") {
        panic!("TEAMBOARD_REQUIRE_AGENTS=1 but {why}");
    }
    eprintln!("skipped: {why}");
    None
}

fn is_executable(p: &std::path::Path) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::metadata(p)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}
