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
pub use teamboard_agent_clis::offline::OfflineAgent;
pub use teamboard_agent_clis::{Cli, agents_dir, offline};

/// The CLI's program, or `None` after printing why the test is skipped.
/// Panics instead when `TEAMBOARD_REQUIRE_AGENTS=1`.
pub fn agent_cli(cli: Cli) -> Option<PathBuf> {
    match cli.find() {
        Ok(program) => Some(program),
        Err(why) if std::env::var("TEAMBOARD_REQUIRE_AGENTS").as_deref() == Ok("1") => {
            panic!("TEAMBOARD_REQUIRE_AGENTS=1 but {why}")
        }
        Err(why) => {
            eprintln!("skipped: {why}");
            None
        }
    }
}
