//! Project chores that need more than a plain `cargo` command: `cargo xtask demo`,
//! `cargo xtask install`, `cargo xtask install-agents`, `cargo xtask bench` (with
//! `bench-teammates`, `bench-cancel`, `bench-plan`, `bench-runtimes`,
//! `bench-liveness`, `bench-sandbox`, `bench-spend` and `bench-web`), `cargo xtask soak-git`,
//! `cargo xtask soak`, `cargo xtask fuzz` and `cargo xtask module-cycles`. This file only
//! parses flags; each command
//! lives in its own module.

#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a command-line tool: stdout and stderr are how it reports"
)]

mod bench;
mod cargo;
mod cycles;
mod demo;
mod fuzz;
mod install;
mod install_agents;
mod soak;
mod soak_board;

use clap::{Parser, Subcommand};
use std::path::PathBuf;

#[derive(Debug, Parser)]
#[command(
    name = "xtask",
    bin_name = "cargo xtask",
    about = "teamboard project chores"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Watch three offline teammates work through a small task graph, end to end
    #[command(long_about = demo::LONG_ABOUT)]
    Demo(demo::DemoArgs),
    /// Look for import cycles between the files of each package, then between
    /// the modules of each crate (that needs cargo-modules 0.27: `cargo install
    /// cargo-modules --version 0.27.0 --locked`; `--files` does without).
    ModuleCycles(cycles::CyclesArgs),
    /// Run each fuzz target (fuzz/) for a set time with cargo-fuzz on nightly,
    /// and report its executions, coverage, new corpus entries and crashes.
    Fuzz(fuzz::FuzzArgs),
    /// Build boardd, teamctl and teammated in release mode and install them
    /// (into ~/.cargo/bin) with their systemd user units.
    Install(install::InstallArgs),
    /// Install the pinned agent CLIs (Claude Code, Codex, Gemini CLI) from the
    /// npm registry into target/agents, for the runtime tests.
    #[command(long_about = install_agents::LONG_ABOUT)]
    InstallAgents(install_agents::InstallAgentsArgs),
    /// Measure fsync rate, durable claim throughput and wake-up latency, and check
    /// them against the targets.
    Bench(bench::durable::BenchArgs),
    /// Measure how fast idle teammates pick up new tasks and what idle teammates
    /// cost in CPU and tokens, each against a baseline from the same run.
    BenchTeammates(bench::teammates::TeammateBenchArgs),
    /// The teammate measurement itself, run from a release build.
    #[command(hide = true)]
    BenchTeammatesRun(bench::teammates::TeammateBenchArgs),
    /// Measure how fast a cancelled task stops its teammate (idle, and its tool
    /// processes gone), against boardd's own answer to the cancel.
    BenchCancel(bench::cancel::CancelBenchArgs),
    /// The cancel measurement itself, run from a release build.
    #[command(hide = true)]
    BenchCancelRun(bench::cancel::CancelBenchArgs),
    /// Measure how soon a teammate whose plan waits gets going again after
    /// `teamctl approve`, against the same teammate woken by `teamctl send`.
    BenchPlan(bench::plan::PlanBenchArgs),
    /// The plan measurement itself, run from a release build.
    #[command(hide = true)]
    BenchPlanRun(bench::plan::PlanBenchArgs),
    /// Measure what Claude Code, Codex and an ACP agent cost as a teammate's
    /// runtime against the native one on the same mock: per task, the time a
    /// message takes to reach a busy agent, and the wakes that resumed a session.
    /// How soon a killed, stopped and continued teammate reads dead, stalled
    /// and working.
    BenchLiveness(bench::liveness::LivenessBenchArgs),
    #[command(hide = true)]
    BenchLivenessRun(bench::liveness::LivenessBenchArgs),
    /// Measure what the sandbox costs a command: `bash -c true` and a small
    /// `rustc` build step, sandboxed and not, in the same run.
    BenchSandbox(bench::sandbox::SandboxBenchArgs),
    /// Measure what reserving and settling every model call with boardd costs,
    /// against recording it once after the call, for one teammate and many.
    BenchSpend(bench::spend::SpendBenchArgs),
    #[command(hide = true)]
    BenchSpendRun(bench::spend::SpendBenchArgs),
    #[command(long_about = bench::runtimes::LONG_ABOUT)]
    BenchRuntimes(bench::runtimes::RuntimeBenchArgs),
    /// The runtime measurement itself, run from a release build.
    #[command(hide = true)]
    BenchRuntimesRun(bench::runtimes::RuntimeBenchArgs),
    /// Measure how soon a board event shows on the web page in a real browser,
    /// with 50 members and 1,000 tasks, against a plain subscribed client.
    BenchWeb(bench::web::WebBenchArgs),
    /// The web measurement itself, run from a release build.
    #[command(hide = true)]
    BenchWebRun(bench::web::WebBenchArgs),
    /// Soak the worktrees, gates and merge queue: teammates and tasks in a real
    /// git repository with forced conflicts and random kill -9s, then check
    /// that nothing was lost or landed on a wrong branch.
    #[command(long_about = soak::LONG_ABOUT)]
    SoakGit(soak::SoakArgs),
    /// The soak itself, run from a release build.
    #[command(hide = true)]
    SoakGitRun(soak::SoakArgs),
    /// Soak the whole board: boardd killed with SIGKILL a thousand times under
    /// teammates and clients, then check that no acknowledged change was lost,
    /// no task had two owners, no stale epoch was accepted, no message came too
    /// often and no process was left behind.
    #[command(long_about = soak_board::LONG_ABOUT)]
    Soak(soak_board::BoardSoakArgs),
    /// The whole-board soak itself, run from the build `soak` made.
    #[command(hide = true)]
    SoakRun(soak_board::BoardSoakArgs),
    /// One soak teammate, started by `soak-git-run`.
    #[command(hide = true)]
    SoakGitWorker(soak::worker::WorkerArgs),
    /// The measurement itself, run from a release build by `bench`.
    #[command(hide = true)]
    BenchRun(bench::durable::BenchArgs),
    /// One load-generating client process, started by `bench-run`.
    #[command(hide = true)]
    BenchClient {
        #[arg(long)]
        socket: PathBuf,
        /// Index of this process, used to make client names unique.
        #[arg(long)]
        proc: usize,
        /// Connections (clients) this process opens.
        #[arg(long)]
        clients: usize,
        #[arg(long)]
        seconds: f64,
    },
    /// The child of the bench's floor measurement: answers bytes on a socket,
    /// with an fdatasync before the answer when asked.
    #[command(hide = true)]
    BenchFloor {
        #[arg(long)]
        socket: PathBuf,
        /// Where the probe file goes.
        #[arg(long)]
        dir: PathBuf,
    },
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Demo(args) => demo::run(&args),
        Command::Fuzz(args) => fuzz::run(&args),
        Command::Install(args) => install::run(&args),
        Command::InstallAgents(args) => install_agents::run(&args),
        Command::ModuleCycles(args) => cycles::run(&args),
        Command::Bench(args) => bench::durable::build_and_run(&args),
        Command::BenchRun(args) => bench::durable::run(&args),
        Command::BenchTeammates(args) => bench::teammates::build_and_run(&args),
        Command::BenchTeammatesRun(args) => bench::teammates::run(&args),
        Command::BenchCancel(args) => bench::cancel::build_and_run(&args),
        Command::BenchWeb(args) => bench::web::build_and_run(&args),
        Command::BenchWebRun(args) => bench::web::run(&args),
        Command::BenchCancelRun(args) => bench::cancel::run(&args),
        Command::BenchPlan(args) => bench::plan::build_and_run(&args),
        Command::BenchPlanRun(args) => bench::plan::run(&args),
        Command::BenchSandbox(args) => bench::sandbox::run(&args),
        Command::BenchLiveness(args) => bench::liveness::build_and_run(&args),
        Command::BenchLivenessRun(args) => bench::liveness::run(&args),
        Command::BenchSpend(args) => bench::spend::build_and_run(&args),
        Command::BenchSpendRun(args) => bench::spend::run(&args),
        Command::BenchRuntimes(args) => bench::runtimes::build_and_run(&args),
        Command::BenchRuntimesRun(args) => bench::runtimes::run(&args),
        Command::SoakGit(args) => soak::build_and_run(&args),
        Command::SoakGitRun(args) => soak::run(&args),
        Command::Soak(args) => soak_board::build_and_run(&args),
        Command::SoakRun(args) => soak_board::run(&args),
        Command::SoakGitWorker(args) => soak::worker::run(&args),
        Command::BenchClient {
            socket,
            proc,
            clients,
            seconds,
        } => bench::durable::load::client_process(&socket, proc, clients, seconds),
        Command::BenchFloor { socket, dir } => bench::durable::floor::child(&socket, &dir),
    }
}
