//! (c) Wake-up latency: from a task being created to a parked waiter holding it.
//!
//! One registered client parks in `wait_for_work`; another adds a task. The clock
//! runs from just before `add_task` is sent until the waiter's `wait_for_work`
//! returns the claim, both in this process on the monotonic clock. The waiter
//! then completes the task and parks again. Samples are taken one after another,
//! so each measures an idle daemon waking one waiter.

use crate::bench::harness::PARK_DELAY;
use crate::bench::harness::board::{Scratch, stop};
use crate::bench::harness::summary::Summary;
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
    boardd: &Path,
    samples: usize,
    budget: Duration,
) -> anyhow::Result<WakeResult> {
    let daemon = run.boardd(boardd, &run.path().join("wake"), &[]).await?;
    let waiter = Arc::new(Client::connect(&daemon.socket, "xtask-bench", "waiter", TEAM).await?);
    waiter.register("bench", Some(std::process::id())).await?;
    let lead = Client::connect(&daemon.socket, "xtask-bench", "lead", TEAM).await?;

    let started = Instant::now();
    let mut wake = Vec::with_capacity(samples);
    let mut add_ack = Vec::with_capacity(samples);
    let mut idle_rtt = Vec::with_capacity(samples);
    while wake.len() < samples && started.elapsed() < budget {
        let parked = waiter.clone();
        let wait = tokio::spawn(async move {
            let work = parked.wait_for_work(None).await;
            (work, Instant::now())
        });
        tokio::time::sleep(PARK_DELAY).await;
        if wait.is_finished() {
            bail!("wait_for_work returned before any task was added");
        }
        let t0 = Instant::now();
        let add = async {
            let task = lead
                .add_task(NewTask {
                    subject: "wake".into(),
                    ..NewTask::default()
                })
                .await;
            (task, Instant::now())
        };
        let ((task, acked), waited) =
            tokio::time::timeout(SAMPLE_TIMEOUT, async { tokio::join!(add, wait) })
                .await
                .context("a wake-up sample took longer than 10 s")?;
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
        tokio::time::timeout(
            SAMPLE_TIMEOUT,
            waiter.complete_task(claim.task.id, claim.epoch, ""),
        )
        .await
        .context("complete_task took longer than 10 s")??;
        tokio::time::sleep(PARK_DELAY).await;
        let t0 = Instant::now();
        tokio::time::timeout(SAMPLE_TIMEOUT, lead.status())
            .await
            .context("status took longer than 10 s")??;
        idle_rtt.push(t0.elapsed());
    }
    let mut busy_rtt = Vec::with_capacity(samples);
    while busy_rtt.len() < samples && started.elapsed() < budget {
        let t0 = Instant::now();
        tokio::time::timeout(SAMPLE_TIMEOUT, lead.status())
            .await
            .context("status took longer than 10 s")??;
        busy_rtt.push(t0.elapsed());
    }
    drop(lead);
    drop(waiter);
    stop(daemon).await?;
    Ok(WakeResult {
        wake: Summary::of(wake),
        add_ack: Summary::of(add_ack),
        idle_rtt: Summary::of(idle_rtt),
        busy_rtt: Summary::of(busy_rtt),
    })
}
