//! `cargo xtask bench-plan`: how soon a teammate whose plan waits for the lead
//! gets going again once `teamctl approve` says yes.
//!
//! One real `teammated` on the anthropic provider, against a real `boardd` and
//! the mock LLM server (`teamboard-mock-llm`), takes two kinds of sample in
//! alternation:
//!
//! - **plan**: the lead adds a task with `require_plan`. The teammate claims it,
//!   and the mock answers its first model call with a `submit_plan` tool use;
//!   the teammate submits the plan and parks on boardd inside that tool call.
//!   Once `list_requests` shows the plan pending and the teammate has had
//!   `--hold-ms` to park, the bench starts a real `teamctl approve REQ` process.
//!   The clock runs from just before the spawn to the moment the mock has read,
//!   in full, the teammate's next model request: the one that carries
//!   `submit_plan`'s result. The next tool call is that request's answer, so
//!   with a real model the time to it is this figure plus the model's own
//!   latency, which no runtime can shorten.
//! - **baseline**: the same teammate, idle, woken by a real `teamctl send NAME
//!   TEXT`, timed the same way: from the spawn to the mock reading the model
//!   request the message started.
//!
//! Both sides start a `teamctl` process (exec, connect, hello: most of either
//! figure), both wake a teammate parked in `wait_for_work` with a message boardd
//! pushes, and both end at the same point. The ratio of the medians therefore
//! isolates the plan path: `approve` reads the request before deciding (one
//! round trip more than `send`) and commits the decision with its message; the
//! teammate reads the request the message names, acknowledges it and returns
//! the decision as a tool result into the work phase it never left, where the
//! idle teammate instead opens a phase. Both are taken in the same minute on the
//! same machine, so the host's pace, which changes within the hour, cancels out
//! of the ratio; the absolute figures do not travel.
//!
//! Also reported: from the submission (the mock reading the call it answers
//! with `submit_plan`) to the plan pending at boardd, the teammate's share
//! before the lead can see the plan at all. Added to the approval figure sample
//! by sample, it gives the time from a plan's submission to the teammate's next
//! model request, less the lead's own decision: what the person waits for.
//! And from the submission to the spawn of `teamctl approve`: that interval is
//! the bench's own doing (detecting the pending plan, then the hold), reported
//! for what happens inside it. The bench counts the teammate's model calls
//! meanwhile, and any at all fail the run: the teammate waits inside the tool
//! call instead of leaving its model to poll. The baseline's hold is checked the
//! same way.
//!
//! Traps. An approval that lands before the teammate parks is picked up by its
//! first look at boardd rather than pushed to a parked waiter, which is not the
//! case a person's approval meets; hence the hold, long enough to park. The mock
//! shares the bench's single-threaded runtime, so the instant it reads a request
//! can trail the bytes by whatever the bench does then; during a measured
//! interval the bench only waits on the child and the mock, the same on both
//! sides, and it reads recorded requests one at a time (`MockLlm::request`):
//! copying all of them, hundreds of tool-laden bodies, held the runtime long
//! enough to delay the stamps it was meant to read. The first round of samples is dropped: it pays for first use (teamctl's
//! pages, the model connection) that no later approval pays. Not measured: a
//! model's latency, a network, or a teammate that is mid-round when the decision
//! comes (it reads it between rounds, so the round bounds that wait).
//!
//! Figures and their method are in `docs/benchmarks.md`.

mod report;
mod rounds;

use super::harness::summary::ms;

use super::harness::board::{Lead, Mate, Scratch, stop};
use super::harness::{self, Bins, Host};
use anyhow::{Context, bail};
use rounds::Bench;
use std::path::{Path, PathBuf};
use std::time::Duration;
use teamboard_mock_llm::MockLlm;

const TEAM: &str = "plan";
const NAME: &str = "planner";
/// The longest one step (a wake-up, a plan becoming pending) may take.
const STEP_TIMEOUT: Duration = Duration::from_secs(30);
/// How often boardd is asked whether the plan is pending yet.
const PENDING_POLL: Duration = Duration::from_millis(1);
/// Rounds taken first and not counted.
const WARMUP: usize = 1;

#[derive(Debug, Clone, clap::Args)]
pub struct PlanBenchArgs {
    /// Samples of each kind (a plan approved, a message sent), taken in
    /// alternation after one warm-up round that is not counted. Each round
    /// holds twice for --hold-ms.
    #[arg(long, default_value_t = 100)]
    iterations: usize,
    /// How long the plan stays pending, and the idle teammate idle, before the
    /// bench acts: time for the teammate to park, and a window in which it must
    /// make no model call.
    #[arg(long, default_value_t = 100, value_name = "MS")]
    hold_ms: u64,
    /// Where boardd's database goes [default: target/bench].
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
}

impl PlanBenchArgs {
    fn check(&self) -> anyhow::Result<()> {
        if self.iterations == 0 || self.iterations > 1_000 {
            bail!("--iterations must be between 1 and 1000");
        }
        if self.hold_ms == 0 || self.hold_ms > 60_000 {
            bail!("--hold-ms must be between 1 and 60000");
        }
        Ok(())
    }
}

/// `bench-plan`: build in release mode, then measure from there.
pub fn build_and_run(args: &PlanBenchArgs) -> anyhow::Result<()> {
    args.check()?;
    harness::hand_over(
        &["boardd", "teammated", "teamctl", "xtask"],
        "bench-plan-run",
    )
}

/// `bench-plan-run`: the measurement, from the release build.
pub fn run(args: &PlanBenchArgs) -> anyhow::Result<()> {
    args.check()?;
    harness::block_on(1, run_async(args))
}

async fn run_async(args: &PlanBenchArgs) -> anyhow::Result<()> {
    let bins = Bins::beside_me(&["boardd", "teammated", "teamctl"], "bench-plan")?;
    let (scratch, boardd) = Scratch::with_boardd("plan-", args.dir.as_deref(), &bins).await?;
    let mock = MockLlm::start(Vec::new());
    let watch = Lead::open(&boardd.socket, TEAM).await?;
    let log = scratch.path().join(format!("state/{TEAM}-{NAME}.log"));
    let mut child = Mate::new(NAME, "bench", TEAM, &scratch.path().join("work"), &log)
        .on_mock("anthropic", &mock.url())
        .spawn(&bins.get("teammated"), &boardd)?;
    let mut bench = Bench {
        mock,
        watch,
        teamctl: bins.get("teamctl"),
        socket: boardd.socket.clone(),
        hold: Duration::from_millis(args.hold_ms),
    };
    eprintln!("bench-plan: waiting for {NAME} (anthropic provider, mock LLM) to go idle");
    bench
        .watch
        .idle(NAME, STEP_TIMEOUT)
        .await
        .map_err(|e| with_log(e, &log))?;

    println!(
        "plan approval latency, {} samples of each kind ({WARMUP} warm-up round dropped), \
         {} ms hold:",
        args.iterations, args.hold_ms
    );
    let host = Host::now();
    let mut rounds = Vec::with_capacity(args.iterations);
    for round in 0..WARMUP + args.iterations {
        let base = bench
            .baseline(round)
            .await
            .with_context(|| format!("baseline sample {round}"))
            .map_err(|e| with_log(e, &log))?;
        let plan = bench
            .plan(round)
            .await
            .with_context(|| format!("plan sample {round}"))
            .map_err(|e| with_log(e, &log))?;
        if let Some(status) = child.try_wait()? {
            bail!("the teammate exited during the measurement ({status})");
        }
        let counted = round >= WARMUP;
        eprintln!(
            "bench-plan: round {}/{}{}: send -> call {:.2} ms, approve -> call {:.2} ms",
            round + 1,
            WARMUP + args.iterations,
            if counted { "" } else { " (warm-up)" },
            ms(base.to_call),
            ms(plan.to_call)
        );
        if counted {
            rounds.push((base, plan));
        }
    }
    child.start_kill().ok();
    let _ = child.wait().await;
    stop(boardd).await?;

    let results = report::results(&rounds, args, host, harness::load_average());
    report::print(&results);
    harness::report::write_results("plan.json", &results)
}

fn with_log(e: anyhow::Error, log: &Path) -> anyhow::Error {
    let tail = teamboard_process::tail(log, 20);
    e.context(format!("the teammate's log ({}):\n{tail}", log.display()))
}
