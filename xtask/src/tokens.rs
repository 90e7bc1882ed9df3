//! `cargo xtask tokens`: what a teammate's input costs on one fixed workload,
//! before and after the frugal defaults.
//!
//! One real `teammated` works through a fixed number of small tasks, one after the
//! other, against a real `boardd` and the mock LLM server (`teamboard-mock-llm`)
//! through a real provider. The mock plays the same scripted tool-calling
//! conversation for every task (a `bash` call that writes a file, one that reads it
//! back, a final answer) and simulates prompt caching, so it reports the usage a
//! real API would: fresh input, input read from the cache and input written to it,
//! in estimated tokens (bytes/4; see the mock's `cache` module). The teammate
//! records that usage with boardd as always; the per-task figures are boardd's.
//!
//! The workload runs once per variant:
//! - **before**: `--carry-context` and the hidden `--no-prompt-cache`: the
//!   conversation runs on from task to task and no `cache_control` is sent, as
//!   teammated did before;
//! - **after**: the defaults: a fresh context per task, and cache breakpoints;
//! - for anthropic, each half alone too (`--no-prompt-cache`, `--carry-context`),
//!   to show what each contributes. OpenAI caches on its own, so there the two
//!   halves are one.
//!
//! Billed input weighs the three kinds as the provider bills them (see
//! `report::Rates`). The goal (issue 14): after at most 30% of before, for
//! anthropic. OpenAI caches on its own in both runs, so its figures are reported
//! but not held to the goal.

mod report;

use crate::bench::daemon::{Daemon, Mode};
use crate::cargo::{self, Metadata, Profile};
use anyhow::{Context, bail};
use report::{Provider, Run, RunTokens, TaskTokens, Variant};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use teamboard_mock_llm::{MockLlm, MockReply};
use teamboard_protocol::request::NewTask;
use teamboard_protocol::{Client, TaskStatus};

const TEAM: &str = "tokens";
const NAME: &str = "frugal";
/// The longest one task may take before the run gives up.
const TASK_TIMEOUT: Duration = Duration::from_secs(60);
/// Model calls per task in the scripted conversation.
const CALLS_PER_TASK: usize = 3;

#[derive(Debug, Clone, clap::Args)]
pub struct TokensArgs {
    /// Which provider's format to measure: anthropic, openai or both.
    #[arg(long, default_value = "both", value_parser = ["anthropic", "openai", "both"])]
    provider: String,
    /// Tasks in the workload, one after the other.
    #[arg(long, default_value_t = 6)]
    tasks: usize,
    /// Where the scratch state goes [default: target/bench].
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
}

/// `cargo xtask tokens`: builds boardd and teammated (debug: token counts do not
/// depend on the build) and measures.
pub fn run(args: &TokensArgs) -> anyhow::Result<()> {
    if args.tasks == 0 || args.tasks > 50 {
        bail!("--tasks must be between 1 and 50");
    }
    cargo::build(&["boardd", "teammated"], Profile::Debug, false)?;
    let meta = Metadata::load()?;
    let bins = meta.profile_dir(Profile::Debug);
    let base = args
        .dir
        .clone()
        .unwrap_or_else(|| meta.target_directory.join("bench"));
    let providers = match args.provider.as_str() {
        "anthropic" => vec![Provider::Anthropic],
        "openai" => vec![Provider::OpenAi],
        _ => vec![Provider::Anthropic, Provider::OpenAi],
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let mut runs = Vec::new();
    for provider in providers {
        let (mut before, mut after, mut partial) = (None, None, Vec::new());
        for &variant in Variant::all(provider) {
            println!("{} {}...", provider.name(), variant.name());
            let measured = rt
                .block_on(measure(&bins, &base, provider, variant, args.tasks))
                .with_context(|| format!("{} {}", provider.name(), variant.name()))?;
            match variant {
                Variant::Before => before = Some(measured),
                Variant::After => after = Some(measured),
                other => partial.push((other, measured)),
            }
        }
        runs.push(Run {
            provider,
            before: before.context("no before run")?,
            after: after.context("no after run")?,
            partial,
        });
    }
    let met = report::print(&runs);
    let out = meta.target_directory.join("bench").join("tokens.json");
    if let Some(dir) = out.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    std::fs::write(&out, serde_json::to_vec_pretty(&report::json(&runs))?)
        .with_context(|| format!("cannot write {}", out.display()))?;
    println!("results written to {}", out.display());
    if !met {
        bail!("billed input missed the goal");
    }
    Ok(())
}

/// The scripted conversation of task `n`, in `provider`'s format.
fn replies(provider: Provider, n: usize) -> Vec<MockReply> {
    let write = format!("printf 'part {n}\\n' > part-{n}.txt");
    let read = format!("cat part-{n}.txt");
    let done = format!("part-{n}.txt holds 'part {n}'.");
    match provider {
        Provider::Anthropic => vec![
            MockReply::anthropic_tool_use(
                &format!("toolu_w{n}"),
                "bash",
                json!({"command": write}),
            ),
            MockReply::anthropic_tool_use(&format!("toolu_r{n}"), "bash", json!({"command": read})),
            MockReply::anthropic_text(&done),
        ],
        Provider::OpenAi => vec![
            MockReply::openai_tool_call(
                &format!("call_w{n}"),
                "bash",
                &json!({"command": write}).to_string(),
            ),
            MockReply::openai_tool_call(
                &format!("call_r{n}"),
                "bash",
                &json!({"command": read}).to_string(),
            ),
            MockReply::openai_text(&done),
        ],
    }
}

/// One run of the workload.
async fn measure(
    bins: &Path,
    base: &Path,
    provider: Provider,
    variant: Variant,
    tasks: usize,
) -> anyhow::Result<RunTokens> {
    std::fs::create_dir_all(base).with_context(|| format!("cannot create {}", base.display()))?;
    let scratch = tempfile::Builder::new()
        .prefix("tokens-")
        .tempdir_in(base)
        .context("cannot create a scratch directory")?;
    let state = scratch.path().join("state");
    let work = scratch.path().join("work");
    std::fs::create_dir_all(&work)?;
    let daemon = Daemon::start(&bins.join("boardd"), &state, Mode::Group).await?;
    let mock = MockLlm::start((1..=tasks).flat_map(|n| replies(provider, n)).collect());
    mock.simulate_prompt_cache();
    let log_path = state.join("teammated.log");
    let mut child = crate::bench::MockTeammate {
        teammated: &bins.join("teammated"),
        name: NAME,
        role: "dev",
        team: TEAM,
        socket: &daemon.socket,
        state: &state,
        work: &work,
        provider: provider.name(),
        base_url: &mock.url(),
        flags: &variant.flags(),
        log: &log_path,
    }
    .spawn()?;
    let lead = Client::connect(&daemon.socket, "xtask-tokens", "lead", TEAM).await?;
    let mut per_task = Vec::new();
    for n in 1..=tasks {
        let task = lead
            .add_task(NewTask {
                subject: format!("part {n}"),
                description: format!("Write part-{n}.txt with the line 'part {n}', and check it."),
                ..NewTask::default()
            })
            .await?;
        let done = wait_done(&lead, task.id).await;
        let done = match done {
            Ok(t) => t,
            Err(e) => bail!("{e:#}; the teammate's log:\n{}", tail(&log_path)),
        };
        if done.status != TaskStatus::Completed {
            bail!(
                "task #{} ended {}: {}; the teammate's log:\n{}",
                done.id,
                done.status,
                done.last_error.unwrap_or_default(),
                tail(&log_path)
            );
        }
        per_task.push(TaskTokens::of(done.id, done.tokens));
    }
    child.start_kill().ok();
    let _ = child.wait().await;
    daemon.stop().await?;
    let requests = mock.requests();
    if requests.len() != tasks * CALLS_PER_TASK || mock.fallback_calls() > 0 {
        bail!(
            "the model was called {} times, not {} (the script ran off its course)",
            requests.len(),
            tasks * CALLS_PER_TASK
        );
    }
    let prompts = requests
        .iter()
        .map(|r| provider.prompt_of(&r.answered_usage))
        .collect();
    Ok(RunTokens {
        tasks: per_task,
        prompts,
    })
}

/// Waits until task `id` has ended, polling: a handful of tasks, no hurry.
async fn wait_done(lead: &Client, id: u64) -> anyhow::Result<teamboard_protocol::Task> {
    let started = Instant::now();
    loop {
        let task = lead.get_task(id).await?.task;
        if task.status.is_ended() {
            return Ok(task);
        }
        if started.elapsed() > TASK_TIMEOUT {
            bail!("task #{id} did not end within {TASK_TIMEOUT:?}");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}
