//! What one task costs in a runtime: N small tasks, one after the other, on one
//! teammate, each "one shell command that writes a file, then the answer".
//!
//! Wall time runs from boardd's `task_claimed` event to its `task_completed`
//! (as the bench reads them): the agent's start, its model calls and tool, and
//! the report, without the wait for the teammate to pick the task up. What the
//! mock received is counted over every model call of the runtime's run: calls,
//! request bytes (the body as compact JSON) and the prompt in estimated tokens
//! (`simulate_prompt_cache`: a quarter of the bytes of each piece, the part a
//! real API's cache would serve counted as cached). The agent's start is read
//! from the transcript: `work: started` → `agent: ... session ... started`.

use super::board::{Board, SessionLine};
use super::runtime::Runtime;
use super::script;
use super::{Agent, STEP};
use crate::bench::harness::summary::Summary;
use anyhow::bail;
use serde::Serialize;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use teamboard_mock_llm::cache::PromptUsage;
use teamboard_mock_llm::{MockLlm, RecordedRequest};
use teamboard_protocol::{Event, EventKind};

/// The longest one small task may take (Gemini CLI alone takes seconds to start).
const TASK_TIMEOUT: Duration = Duration::from_secs(120);

#[derive(Debug, Clone, Serialize)]
pub struct Overhead {
    pub tasks: usize,
    /// Claim → completed, per task.
    pub wall: Summary,
    /// The agent's start per task (`work: started` → the session's start in
    /// the transcript); `None` for the native loop.
    pub startup: Option<Summary>,
    /// Totals over all tasks.
    pub calls: usize,
    /// Of those, calls beside the conversation (Gemini's session titles).
    pub side_calls: usize,
    pub request_bytes: u64,
    pub prompt_tokens: u64,
    pub cached_tokens: u64,
}

impl Overhead {
    pub fn per_task(&self, total: u64) -> f64 {
        total as f64 / self.tasks as f64
    }

    /// The agent's start as a share of the wall time.
    pub fn startup_share(&self) -> Option<f64> {
        let s = self.startup.as_ref()?;
        (self.wall.mean_ms > 0.0).then(|| s.mean_ms / self.wall.mean_ms)
    }
}

pub async fn measure(
    board: &mut Board,
    rt: Runtime,
    agent: Option<&Agent>,
    tasks: usize,
) -> anyhow::Result<Overhead> {
    let mock = MockLlm::start(Vec::new());
    mock.simulate_prompt_cache();
    let current = Arc::new(AtomicUsize::new(0));
    script::small_task(&mock, rt, current.clone());
    let name = format!("{}-tasks", rt.name());
    let url = mock.url();
    let mut mate = board.spawn(rt, &name, &url, agent, &[])?;
    board
        .lead
        .idle(&name, STEP)
        .await
        .map_err(|e| mate.failed(e))?;
    let mut walls = Vec::with_capacity(tasks);
    let mut ids = Vec::with_capacity(tasks);
    for n in 1..=tasks {
        current.store(n, Ordering::SeqCst);
        let (file, done) = (script::task_file(n), script::done(n));
        let brief = format!("Write {file} holding the line 'task {n}', then say {done}.");
        let id = board.add(&name, &format!("task {n}"), &brief).await?;
        let run = async {
            let claim = |e: &Event| e.kind == EventKind::TaskClaimed && e.task == Some(id);
            let (_, claimed) = board
                .lead
                .next(&format!("the claim of task #{id}"), STEP, claim)
                .await?;
            let (kind, ended) = board.lead.ended(id, TASK_TIMEOUT).await?;
            anyhow::Ok((kind, ended - claimed))
        };
        let (kind, wall) = run.await.map_err(|e| mate.failed(e))?;
        let task = board.lead.client.get_task(id).await?.task;
        if kind != EventKind::TaskCompleted {
            let error = task.last_error.unwrap_or_default();
            return Err(mate.failed(anyhow::anyhow!("task #{id} ended {}: {error}", task.status)));
        }
        let result = task.result.unwrap_or_default();
        let written = std::fs::read_to_string(mate.workdir.join(script::task_file(n)));
        if !result.contains(&script::done(n))
            || written.ok().as_deref() != Some(&format!("task {n}\n"))
        {
            bail!(
                "task #{id} completed without its work (result {result:?}); the script ran off its course"
            );
        }
        walls.push(wall);
        ids.push(id);
        board
            .lead
            .idle(&name, STEP)
            .await
            .map_err(|e| mate.failed(e))?;
    }
    let startup = agent
        .map(|_| startups(&mate.transcript(), &ids))
        .transpose()?;
    mate.kill9().await?;
    let (requests, api) = (mock.requests(), rt.api());
    let usage = |r: &RecordedRequest| PromptUsage::of_answer(api, &r.answered_usage);
    let usage: Vec<PromptUsage> = requests.iter().map(usage).collect();
    Ok(Overhead {
        tasks,
        wall: Summary::of(walls),
        startup,
        calls: requests.len(),
        side_calls: requests
            .iter()
            .filter(|r| script::is_side_call(rt, r))
            .count(),
        request_bytes: requests
            .iter()
            .map(|r| r.body.to_string().len() as u64)
            .sum(),
        prompt_tokens: usage.iter().map(|u| u.prompt).sum(),
        cached_tokens: usage.iter().map(|u| u.cache_read).sum(),
    })
}

/// Each task's agent start, from the transcript: its `work: started` to the
/// first session line of the same task.
fn startups(
    transcript: &[teamboard_protocol::transcript::TranscriptEntry],
    ids: &[u64],
) -> anyhow::Result<Summary> {
    let mut out = Vec::with_capacity(ids.len());
    for &id in ids {
        let mine = || transcript.iter().filter(|e| e.task == Some(id));
        let began = mine().find(|e| e.text.starts_with("work: started"));
        let session = mine().find_map(SessionLine::parse);
        let (Some(began), Some(session)) = (began, session) else {
            bail!("the transcript does not show task #{id}'s agent starting");
        };
        out.push(Duration::from_millis(
            (session.at_ms - began.at).max(0) as u64
        ));
    }
    Ok(Summary::of(out))
}
