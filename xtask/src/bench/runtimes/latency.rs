//! How long a message from the lead takes to reach a busy agent.
//!
//! **Busy** is the same state for every runtime: the agent works step after
//! step, each step a model call that takes `think` (the mock holds its
//! answer) and then a shell command that runs `run` (`touch busy-K && sleep
//! S`). Message `i` is sent at `0.05 + 0.9 × frac((i+1) × 0.618…)` of a step
//! from its model call's arrival at the mock: spread evenly over the step, so
//! about half land in a model call and half in a command. An ACP agent's
//! turn is [`script::TURN`] steps (the model then ends it with a line of
//! text), and message `i` goes to step `i mod TURN + 1` of a turn; the other
//! runtimes' turn runs on until the message that stops it.
//!
//! The figure runs from the lead's `send` to the mock's receipt of the first
//! model call that carries the message (`received_at`). What bounds it:
//! the native loop reads the inbox before every model call (so a message
//! waits for the running call and command); Claude Code takes a line written
//! during a tool with that tool's result; Codex steers input into the running
//! turn, restarting a model call in flight; an ACP agent gets it only as the
//! next prompt, after the turn's end.

use super::board::{Board, poll};
use super::runtime::Runtime;
use super::script::{self, Busy, Step};
use super::{Agent, STEP};
use crate::bench::harness::summary::Summary;
use anyhow::{Context, bail};
use serde::Serialize;
use std::sync::Arc;
use std::time::{Duration, Instant};
use teamboard_mock_llm::MockLlm;
use teamboard_protocol::{EventKind, MessageKind};

/// How long a message may take to show up in a model call.
const ARRIVAL_TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Debug, Clone, Serialize)]
pub struct Latency {
    pub messages: usize,
    /// A step's model call, and its command.
    pub think_ms: f64,
    pub run_ms: f64,
    /// Send → the first model call that carries the message.
    pub to_model: Summary,
    /// The same, of the messages sent during a model call.
    pub in_model_call: Summary,
    /// The same, of the messages sent during a command.
    pub in_command: Summary,
    /// ACP: the end of the turn (the answer of the model call that ended it,
    /// `think` after that call arrived) → the model call with the message.
    pub after_turn_end: Option<Summary>,
    /// The agent's own time per step: a command's end → its next model call
    /// in the same turn (the step's length less `think` and `run`).
    pub turnaround: Summary,
    /// Every message: when it was sent into its step, and what it took.
    pub samples: Vec<Sample>,
}

#[derive(Debug, Clone, Copy, Serialize)]
pub struct Sample {
    pub into_step_ms: f64,
    pub took_ms: f64,
    /// Model calls made after the send without the message, before the one
    /// with it.
    pub calls_without: usize,
}

/// Where message `i` is sent, as a share of a step: spread evenly over it
/// whatever the number of messages (the golden ratio's sequence).
fn offset(i: usize) -> f64 {
    let phi = 0.618_033_988_749_895_f64;
    0.05 + 0.9 * ((i + 1) as f64 * phi).fract()
}

fn marker(i: usize) -> String {
    format!("LAT-{i:03}:")
}

pub async fn measure(
    board: &mut Board,
    rt: Runtime,
    agent: Option<&Agent>,
    messages: usize,
    think: Duration,
    run: Duration,
) -> anyhow::Result<Latency> {
    let mock = MockLlm::start(Vec::new());
    let busy = Arc::new(Busy::new(think, run));
    script::busy(&mock, rt, busy.clone());
    let name = format!("{}-msgs", rt.name());
    let url = mock.url();
    // Every command is a round; the default bound (50) would end the task.
    let mut mate = board.spawn(rt, &name, &url, agent, &["--max-rounds", "1000"])?;
    let step_len = think + run;
    let measured = async {
        board.lead.idle(&name, STEP).await?;
        // Trap: not the stop word itself, which the script looks for anywhere
        // in a request.
        let brief = "Run the commands you are given until a message tells you to stop.";
        let id = board.add(&name, "stay busy", brief).await?;
        let client = board.lead.client.clone();
        let (mut in_model, mut in_command, mut all, mut after_end) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let mut samples = Vec::with_capacity(messages);
        // Steps used so far, and the last arrival: the next message goes to a
        // step that began after it.
        let (mut used, mut since) = (0, Instant::now());
        for i in 0..=messages {
            let place = (rt == Runtime::Acp).then_some(i % script::TURN + 1);
            let (n, step) = next_step(&busy, used, since, place).await?;
            used = n + 1;
            if i == messages {
                client
                    .send(&name, MessageKind::Message, script::STOP, None)
                    .await?;
                break;
            }
            let into = step_len.mul_f64(offset(i));
            tokio::time::sleep_until(tokio::time::Instant::from_std(step.at + into)).await;
            let seen = mock.calls();
            let text = format!("{} a message from the lead", marker(i));
            let sent = Instant::now();
            client
                .send(&name, MessageKind::Message, &text, None)
                .await?;
            let (n, arrived) = arrival(&mock, seen, &marker(i)).await?;
            let took = arrived.saturating_duration_since(sent);
            all.push(took);
            samples.push(Sample {
                into_step_ms: into.as_secs_f64() * 1e3,
                took_ms: took.as_secs_f64() * 1e3,
                calls_without: n - seen,
            });
            if into < think {
                in_model.push(took);
            } else {
                in_command.push(took);
            }
            if rt == Runtime::Acp
                && let Some(end) = busy.turn_ends().into_iter().find(|e| *e >= sent)
            {
                after_end.push(arrived.saturating_duration_since(end + think));
            }
            since = arrived;
        }
        let (kind, _) = board.lead.ended(id, STEP).await?;
        if kind != EventKind::TaskCompleted {
            bail!("the busy task ended {kind:?}");
        }
        anyhow::Ok(Latency {
            messages,
            think_ms: think.as_secs_f64() * 1e3,
            run_ms: run.as_secs_f64() * 1e3,
            to_model: Summary::of(all),
            in_model_call: Summary::of(in_model),
            in_command: Summary::of(in_command),
            after_turn_end: (rt == Runtime::Acp).then(|| Summary::of(after_end)),
            turnaround: turnaround(&busy.steps(), think, run),
            samples,
        })
    };
    let latency = measured.await.map_err(|e| mate.failed(e))?;
    mate.kill9().await?;
    Ok(latency)
}

/// Each step's length less `think` and `run`, over consecutive steps of one
/// turn. A model call that Codex dropped and made again (a steer) began less
/// than `think` before the next one, and is left out.
fn turnaround(steps: &[Step], think: Duration, run: Duration) -> Summary {
    Summary::of(
        steps
            .windows(2)
            .filter(|w| w[1].place == w[0].place + 1 || (w[0].place == 1 && w[1].place == 1))
            .map(|w| w[1].at.saturating_duration_since(w[0].at))
            .filter(|d| *d >= think)
            .map(|d| d.saturating_sub(think + run))
            .collect(),
    )
}

/// The first step from number `from` on that began at or after `since` (and
/// has place `place` in its turn, when given), and its number.
async fn next_step(
    busy: &Busy,
    from: usize,
    since: Instant,
    place: Option<usize>,
) -> anyhow::Result<(usize, Step)> {
    poll("the agent's next busy step", STEP, || {
        busy.steps()
            .into_iter()
            .enumerate()
            .skip(from)
            .find(|(_, s)| s.at >= since && place.is_none_or(|p| s.place == p))
    })
    .await
}

/// The first model call from number `from` on whose body holds `needle`: its
/// number, and when the mock received it.
async fn arrival(mock: &MockLlm, from: usize, needle: &str) -> anyhow::Result<(usize, Instant)> {
    let deadline = Instant::now() + ARRIVAL_TIMEOUT;
    let mut n = from;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        tokio::time::timeout(left, mock.wait_for_calls(n + 1))
            .await
            .with_context(|| {
                format!("{needle} reached no model call within {ARRIVAL_TIMEOUT:?}")
            })?;
        let request = mock.request(n).context("a recorded call went missing")?;
        if request.body.to_string().contains(needle) {
            return Ok((n, request.received_at));
        }
        n += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_sent_across_the_whole_step() {
        let offsets: Vec<f64> = (0..20).map(offset).collect();
        assert!(offsets.iter().all(|o| (0.05..0.95).contains(o)));
        // Each tenth of the step gets one to four of twenty, each half ten or so.
        for tenth in 0..9 {
            let lo = 0.05 + 0.1 * tenth as f64;
            let n = offsets
                .iter()
                .filter(|o| (lo..lo + 0.1).contains(*o))
                .count();
            assert!((1..=4).contains(&n), "{tenth}: {n} in {offsets:?}");
        }
        let first_half = offsets.iter().filter(|o| **o < 0.5).count();
        assert!((8..=12).contains(&first_half), "{offsets:?}");
        assert!(!marker(10).contains(&marker(1)));
    }

    #[test]
    fn the_turnaround_leaves_out_new_turns_and_dropped_calls() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let step = |at: u64, place| Step {
            at: t0 + ms(at),
            place,
        };
        let (think, run) = (ms(500), ms(500));
        // ACP: two steps of a turn, then a new turn.
        let acp = [step(0, 1), step(1_040, 2), step(4_000, 1)];
        let s = turnaround(&acp, think, run);
        assert_eq!((s.samples, s.p50_ms), (1, 40.0));
        // A steer: the call at 1,030 was made again at 1,060.
        let codex = [step(0, 1), step(1_030, 1), step(1_060, 1), step(2_100, 1)];
        let s = turnaround(&codex, think, run);
        assert_eq!((s.samples, s.p50_ms, s.max_ms), (2, 30.0, 40.0));
    }
}
