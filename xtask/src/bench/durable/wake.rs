//! (c) Wake-up latency: from a task being created to a parked waiter holding it.
//!
//! One registered client parks in `wait_for_work`; another adds a task. The clock
//! runs from just before `add_task` is sent until the waiter's `wait_for_work`
//! returns the claim, both in this process on the monotonic clock. The waiter
//! then completes the task and parks again. Samples are taken one after another,
//! so each measures an idle daemon waking one waiter.

use crate::bench::harness::board::{Scratch, stop};
use crate::bench::harness::summary::Summary;
use crate::bench::harness::{Bins, PARK_DELAY};
use anyhow::{Context, bail};
use serde::Serialize;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
use teamboard_protocol::request::NewTask;
use teamboard_protocol::{Client, Work};

const TEAM: &str = "wake";
/// The most one sample may take.
const SAMPLE_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, Clone, Serialize)]
pub struct WakeResult {
    /// add_task sent → waiter holds the claim.
    pub wake: Summary,
    /// add_task sent → add_task acknowledged, for comparison: the waiter cannot be
    /// answered before the task is durable.
    pub add_ack: Summary,
    /// A `status` round trip after the same idle pause. It takes the same path
    /// through boardd (connection, actor, connection) but commits nothing, so wake
    /// minus this is roughly what the commit costs.
    pub idle_rtt: Summary,
    /// `status` round trips back to back: the same path with every thread awake.
    /// Idle minus this is what waking boardd's threads costs on this machine.
    pub busy_rtt: Summary,
}

/// Takes `samples` samples, stopping early (with fewer) after `budget`.
pub async fn measure(
    run: &Scratch,
    bins: &Bins,
    samples: usize,
    budget: Duration,
) -> anyhow::Result<WakeResult> {
    let daemon = run
        .boardd(&bins.get("boardd"), &run.path().join("wake"), &[])
        .await?;
    let r = measure_on(&daemon.socket, &daemon.socket, samples, budget).await?;
    stop(daemon).await?;
    Ok(r)
}

/// [`measure`] with the waiter on `waiter_at` and the lead on `lead_at`: two
/// boardd of one board, or the same one.
pub async fn measure_on(
    waiter_at: &Path,
    lead_at: &Path,
    samples: usize,
    budget: Duration,
) -> anyhow::Result<WakeResult> {
    let key = teamboard_process::lead_key(waiter_at)?;
    let waiter =
        Arc::new(Client::connect(waiter_at, "xtask-bench", "waiter", TEAM, Some(&key)).await?);
    waiter.register("bench", Some(std::process::id())).await?;
    let key = teamboard_process::lead_key(lead_at)?;
    let lead = Client::connect(lead_at, "xtask-bench", "lead", TEAM, Some(&key)).await?;

    let started = Instant::now();
    let (mut wake, mut add_ack, mut idle_rtt) = (Vec::new(), Vec::new(), Vec::new());
    while wake.len() < samples && started.elapsed() < budget {
        let parked = waiter.clone();
        let wait = tokio::spawn(async move { (parked.wait_for_work(None).await, Instant::now()) });
        tokio::time::sleep(PARK_DELAY).await;
        if wait.is_finished() {
            bail!("wait_for_work returned before any task was added");
        }
        let t0 = Instant::now();
        let add = async {
            let subject = "wake".into();
            (
                lead.add_task(NewTask {
                    subject,
                    ..NewTask::default()
                })
                .await,
                Instant::now(),
            )
        };
        let ((task, acked), waited) =
            within("a wake-up sample", async { tokio::join!(add, wait) }).await?;
        let task = task.context("add_task")?;
        let (work, woke) = waited.context("waiter task")?;
        let claim = match work.context("wait_for_work")? {
            Work::Task { claim } => claim,
            other => bail!("the waiter was woken with {other:?} instead of a task"),
        };
        if claim.task.id != task.id {
            bail!(
                "the waiter got task #{} instead of #{}",
                claim.task.id,
                task.id
            );
        }
        wake.push(woke - t0);
        add_ack.push(acked - t0);
        within(
            "complete_task",
            waiter.complete_task(claim.task.id, claim.epoch, ""),
        )
        .await??;
        tokio::time::sleep(PARK_DELAY).await;
        let t0 = Instant::now();
        within("status", lead.status()).await??;
        idle_rtt.push(t0.elapsed());
    }
    let mut busy_rtt = Vec::with_capacity(samples);
    while busy_rtt.len() < samples && started.elapsed() < budget {
        let t0 = Instant::now();
        within("status", lead.status()).await??;
        busy_rtt.push(t0.elapsed());
    }
    drop((lead, waiter));
    Ok(WakeResult {
        wake: Summary::of(wake),
        add_ack: Summary::of(add_ack),
        idle_rtt: Summary::of(idle_rtt),
        busy_rtt: Summary::of(busy_rtt),
    })
}

/// `step` within [`SAMPLE_TIMEOUT`], or an error that says `what` took longer.
async fn within<T>(what: &str, step: impl Future<Output = T>) -> anyhow::Result<T> {
    tokio::time::timeout(SAMPLE_TIMEOUT, step)
        .await
        .with_context(|| format!("{what} took longer than 10 s"))
}
