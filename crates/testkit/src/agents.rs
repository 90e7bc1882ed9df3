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
//!
//! The pins and the layout live in `teamboard-agent-clis`, which xtask reads too.

use std::path::PathBuf;
pub use teamboard_agent_clis::{Cli, agents_dir};

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
