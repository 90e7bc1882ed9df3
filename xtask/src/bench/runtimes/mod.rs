//! `cargo xtask bench-runtimes`: what a teammate's work costs through Claude
//! Code, Codex or an ACP agent against teammated's own loop ([`LONG_ABOUT`]
//! says what is measured). Each runtime whose CLI is installed runs on a fresh
//! mock and a fresh teammate of its own, against one boardd: the per-task
//! overhead ([`overhead`]), the message latency ([`latency`]) and the resumed
//! share ([`wakes`]); the native loop is the baseline (`--provider openai` for
//! codex, whose API is OpenAI's). Every step has a timeout.

mod board;
mod latency;
mod overhead;
mod report;
mod runtime;
mod script;
mod wakes;

use super::harness::board::Scratch;
use super::harness::{self, Bins, Host};
use crate::cargo::Metadata;
use anyhow::{Context, bail};
use board::Board;
use report::{Measured, Setup};
use runtime::Runtime;
use std::path::PathBuf;
use std::time::Duration;
use teamboard_agent_clis::Cli;

/// `cargo xtask bench-runtimes --help`.
pub const LONG_ABOUT: &str = "\
Measure what running a teammate's work through Claude Code, Codex or an ACP agent \
(gemini --acp) costs against teammated's own loop, offline, on the same mock LLM \
server, through real boardd and teammated processes (release builds):

  - per task: N small tasks (a shell command, then the answer): wall time from \
claim to completion, the agent's start, model calls, bytes and prompt tokens sent \
to the mock, each against the native loop;
  - a message to a busy agent: M messages sent while the agent works in steps of a \
500 ms model call and a 500 ms command; send -> the first model call that carries it;
  - resumed share: K wakes of one task (kill -9 of the teammate and a restart, in \
turn with kill -9 of the agent and a re-claim); how many resumed the task's session.

The CLIs are the pinned ones `cargo xtask install-agents` puts in \
$TEAMBOARD_AGENTS_DIR (default target/agents), or TEAMBOARD_CLAUDE_BIN, \
TEAMBOARD_CODEX_BIN, TEAMBOARD_GEMINI_BIN; a runtime whose CLI is missing is \
reported as skipped. Tables go to stdout, every figure to \
target/bench/runtimes.json, progress to stderr. What the figures mean, and the \
results: docs/benchmarks.md §11.";

/// The longest a step of the bench that should take seconds may take: a
/// teammate going idle, a claim, a command starting.
const STEP: Duration = Duration::from_secs(60);
/// A busy agent's step in the latency measurement: a model call this long
/// (the mock holds its answer), then a command this long.
const THINK: Duration = Duration::from_millis(500);
const RUN: Duration = Duration::from_millis(500);

#[derive(Debug, Clone, clap::Args)]
pub struct RuntimeBenchArgs {
    /// The runtimes to measure, comma-separated: native, claude, codex, acp
    /// (`gemini --acp`). The native runtime always runs: it is the baseline.
    #[arg(long, default_value = "native,claude,codex,acp", value_name = "LIST")]
    runtimes: String,
    /// Small tasks per runtime for the per-task overhead (1-50).
    #[arg(long, default_value_t = 5, value_name = "N")]
    tasks: usize,
    /// Messages sent to each busy agent (0 skips the latency; at most 200).
    #[arg(long, default_value_t = 20, value_name = "M")]
    messages: usize,
    /// Wakes of one task per agent runtime (0 skips them; at most 20).
    #[arg(long, default_value_t = 3, value_name = "K")]
    wakes: usize,
    /// Seconds the wake task's agent works (held in a model call) before each
    /// wake; 0 wakes it at once. Gemini CLI 0.61.0 cannot load a session in the
    /// minute it began, so the acp runtime holds such a load until the next
    /// minute: `--wake-after 61` measures wakes without that wait.
    #[arg(long, default_value_t = 0, value_name = "SECS")]
    wake_after: u64,
    /// One more argument for one runtime's agent, as RUNTIME:ARG; repeat it
    /// for more. For example `--agent-arg claude:--tools --agent-arg
    /// claude:Bash,Read,Edit,Write` measures Claude Code with four tools.
    #[arg(long = "agent-arg", value_name = "RUNTIME:ARG")]
    agent_args: Vec<String>,
    /// Where the scratch state goes [default: target/bench, or /var/tmp when
    /// that is under /tmp]. Not under /tmp: Codex will not keep its helpers there.
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
}

impl RuntimeBenchArgs {
    fn check(&self) -> anyhow::Result<Vec<Runtime>> {
        if !(1..=50).contains(&self.tasks) {
            bail!("--tasks must be between 1 and 50");
        }
        if self.messages > 200 {
            bail!("--messages must be at most 200");
        }
        if self.wakes > 20 {
            bail!("--wakes must be at most 20");
        }
        if self.wake_after > 600 {
            bail!("--wake-after must be at most 600 seconds");
        }
        let runtimes = runtime::selected(&self.runtimes)?;
        self.extra_args()?;
        Ok(runtimes)
    }

    /// `--agent-arg`s by runtime.
    fn extra_args(&self) -> anyhow::Result<Vec<(Runtime, String)>> {
        self.agent_args
            .iter()
            .map(|a| {
                let (name, arg) = a.split_once(':').with_context(|| {
                    format!("--agent-arg {a:?}: write RUNTIME:ARG, e.g. claude:--tools")
                })?;
                match Runtime::parse(name) {
                    Some(rt) if rt.is_agent() => Ok((rt, arg.to_string())),
                    _ => bail!(
                        "--agent-arg {a:?}: {name} is not an agent runtime (claude, codex, acp)"
                    ),
                }
            })
            .collect()
    }
}

/// `bench-runtimes`: build in release mode, then measure from there.
pub fn build_and_run(args: &RuntimeBenchArgs) -> anyhow::Result<()> {
    args.check()?;
    harness::hand_over(
        &["boardd", "teammated", "teamctl", "xtask"],
        "bench-runtimes-run",
    )
}

/// An agent runtime's CLI, set up for the run.
pub struct Agent {
    cli: Cli,
    program: PathBuf,
    /// The agent's home (its settings and session store), the same for all
    /// its teammates of the run.
    home: PathBuf,
    /// `--agent-arg=...` flags from the command line.
    extra: Vec<String>,
}

/// `bench-runtimes-run`: the measurement, from the release build.
pub fn run(args: &RuntimeBenchArgs) -> anyhow::Result<()> {
    let runtimes = args.check()?;
    // Multi-threaded, so the mock answers while the bench waits; the measuring
    // future runs on this thread, where every child is spawned (they die with
    // it, see `die_with_parent`).
    harness::block_on(2, run_async(args, &runtimes))
}

async fn run_async(args: &RuntimeBenchArgs, runtimes: &[Runtime]) -> anyhow::Result<()> {
    let bins = Bins::beside_me(&["boardd", "teammated", "teamctl"], "bench-runtimes")?;
    let host = Host::now();
    // The agents' homes go in the scratch directory, and Codex's must not be
    // under the temporary directory (a checkout in /tmp): then /var/tmp.
    let out_dir = Metadata::load()?.target_directory.join("bench");
    let default = teamboard_agent_clis::offline::codex_home_parent(&out_dir);
    let scratch = Scratch::new("runtimes-", args.dir.as_deref(), default)?;
    let setup = Setup {
        tasks: args.tasks,
        messages: args.messages,
        wakes: args.wakes,
        wake_after_s: args.wake_after,
        think_ms: THINK.as_secs_f64() * 1e3,
        run_ms: RUN.as_secs_f64() * 1e3,
        host,
    };
    eprintln!("bench-runtimes: state in {}", scratch.path().display());
    let extra = args.extra_args()?;
    let mut board = Board::start(&bins, &scratch).await?;
    let mut all = Vec::new();
    for &rt in runtimes {
        let mut m = Measured::new(rt);
        let agent = match rt.cli().map(|cli| (cli, cli.find())) {
            None => None,
            Some((_, Err(why))) => {
                eprintln!("{}: skipped: {why}", rt.name());
                m.skipped = Some(why);
                all.push(m);
                continue;
            }
            Some((cli, Ok(program))) => {
                let mine: Vec<String> = extra
                    .iter()
                    .filter(|e| e.0 == rt)
                    .map(|e| e.1.clone())
                    .collect();
                let extra = mine.iter().map(|a| format!("--agent-arg={a}")).collect();
                m.agent = Some((cli.package().1.to_string(), mine));
                let home = scratch.path().join("homes").join(cli.name());
                Some(Agent {
                    cli,
                    program,
                    home,
                    extra,
                })
            }
        };
        let agent = agent.as_ref();
        eprintln!("{}: {} tasks ...", rt.name(), args.tasks);
        let tasks = overhead::measure(&mut board, rt, agent, args.tasks).await;
        m.overhead = outcome(rt, "tasks", tasks);
        if args.messages > 0 && rt != Runtime::NativeOpenai {
            eprintln!("{}: {} messages while busy ...", rt.name(), args.messages);
            let latency = latency::measure(&mut board, rt, agent, args.messages, THINK, RUN).await;
            m.latency = outcome(rt, "messages", latency);
        }
        if let (Some(agent), true) = (agent, args.wakes > 0) {
            eprintln!("{}: {} wakes of one task ...", rt.name(), args.wakes);
            let after = Duration::from_secs(args.wake_after);
            let wakes = wakes::measure(&mut board, rt, agent, args.wakes, after).await;
            m.wakes = outcome(rt, "wakes", wakes);
        }
        all.push(m);
    }
    board.stop().await?;
    report::print(&all, &setup);
    let unix_s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    harness::report::write_results("runtimes.json", &report::json(&all, &setup, unix_s))?;
    if all.iter().any(Measured::failed) {
        let kept = scratch.keep();
        bail!(
            "a measurement failed (see above); the teammates' logs and state are kept in {}",
            kept.display()
        );
    }
    Ok(())
}

/// A measurement's result as the report keeps it, its failure said at once.
fn outcome<T>(rt: Runtime, what: &str, r: anyhow::Result<T>) -> report::Outcome<T> {
    let r = r.map_err(|e| format!("{e:#}"));
    if let Err(e) = &r {
        eprintln!("{}: {what} FAILED: {e}", rt.name());
    }
    Some(r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: RuntimeBenchArgs,
    }

    fn parse(line: &[&str]) -> RuntimeBenchArgs {
        Cli::try_parse_from(std::iter::once("x").chain(line.iter().copied()))
            .expect("parses")
            .args
    }

    #[test]
    fn options_are_checked() {
        let args = parse(&[
            "--runtimes",
            "claude",
            "--tasks",
            "2",
            "--agent-arg",
            "claude:--tools",
            "--agent-arg=claude:Bash,Read",
        ]);
        assert_eq!(
            args.check().expect("valid"),
            [Runtime::Native, Runtime::Claude]
        );
        assert_eq!(
            args.extra_args().expect("valid"),
            [
                (Runtime::Claude, "--tools".to_string()),
                (Runtime::Claude, "Bash,Read".to_string())
            ]
        );
        for bad in [
            &["--tasks", "0"][..],
            &["--messages", "201"],
            &["--agent-arg", "native:--x"],
            &["--agent-arg", "claude"],
            &["--wake-after", "601"],
            &["--runtimes", "claude,cursor"],
        ] {
            assert!(parse(bad).check().is_err(), "{bad:?}");
        }
    }
}
