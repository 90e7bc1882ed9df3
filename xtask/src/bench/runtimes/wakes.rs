//! The share of wakes of one task that resumed the task's agent session.
//!
//! One task, K wakes. In each stretch the agent runs one command and is then
//! held in a model call (for `--wake-after` seconds, else none); the bench
//! wakes the task again by one of the two ways a real one is woken, in turn:
//!
//! - **restart**: `kill -9` of the teammate, then the same name started again
//!   (boardd gives the task back as the connection closes; the new process
//!   claims it);
//! - **crash**: `kill -9` of the agent process alone; the teammate gives the
//!   task back with the error and claims it again itself.
//!
//! The last wake lets the agent finish. Counted from the teammate's
//! `agent/sessions.json` (`starts`, `resumed`) and checked against its
//! transcript (`agent: RT session ID started|resumed`, one per start, and the
//! id of each resumed start is the first one's).

use super::board::{Board, SessionLine, poll};
use super::runtime::Runtime;
use super::script;
use super::{Agent, STEP};
use anyhow::{Context, bail};
use serde::Serialize;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;
use teamboard_mock_llm::MockLlm;
use teamboard_protocol::{Event, EventKind};

/// How long one stretch may take: Gemini CLI's start, a failed load and a new
/// session.
const WAKE_TIMEOUT: Duration = Duration::from_secs(120);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, strum::Display)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum How {
    Restart,
    Crash,
}

impl How {
    /// Wake `w` (from 1): restarts and crashes in turn, a restart first.
    fn of(w: usize) -> How {
        if w % 2 == 1 { How::Restart } else { How::Crash }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Wake {
    pub how: How,
    pub resumed: bool,
    pub session: String,
    /// Why a new session was started instead, as the transcript says.
    pub why_new: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Wakes {
    pub each: Vec<Wake>,
    /// `agent/sessions.json`: starts of the agent for the task, and of them
    /// resumed ones.
    pub starts: u64,
    pub resumed: u64,
}

impl Wakes {
    /// resumed / wakes (every start after the first is a wake).
    pub fn share(&self) -> Option<f64> {
        crate::bench::harness::summary::ratio(
            self.resumed as f64,
            self.starts.saturating_sub(1) as f64,
        )
    }

    /// (resumed, wakes) of one kind.
    pub fn of(&self, how: How) -> (usize, usize) {
        let mine = self.each.iter().filter(|w| w.how == how);
        (mine.clone().filter(|w| w.resumed).count(), mine.count())
    }
}

pub async fn measure(
    board: &mut Board,
    rt: Runtime,
    agent: &Agent,
    wakes: usize,
    after: Duration,
) -> anyhow::Result<Wakes> {
    let mock = MockLlm::start(Vec::new());
    let state = Arc::new(script::Wakes::default());
    script::wakes(&mock, rt, state.clone());
    let name = format!("{}-wakes", rt.name());
    let url = mock.url();
    let mut mate = board.spawn(rt, &name, &url, Some(agent), &[])?;
    let run = async {
        board.lead.idle(&name, STEP).await?;
        let brief = "Run the command you are given, then wait.";
        let id = board.add(&name, "wake me", brief).await?;
        held(&state, 0).await?;
        for w in 1..=wakes {
            tokio::time::sleep(after).await;
            state.wake.store(w, Ordering::SeqCst);
            state.finish.store(w == wakes, Ordering::SeqCst);
            match How::of(w) {
                How::Restart => {
                    mate.kill9().await?;
                    released(board, id).await?;
                    mate = board.spawn(rt, &name, &url, Some(agent), &[])?;
                }
                How::Crash => {
                    kill_agent(&mate.transcript(), id)?;
                    released(board, id).await?;
                }
            }
            if w < wakes {
                held(&state, w).await?;
            }
        }
        let (kind, _) = board.lead.ended(id, WAKE_TIMEOUT).await?;
        if kind != EventKind::TaskCompleted {
            bail!("the task ended {kind:?}");
        }
        anyhow::Ok(id)
    };
    let id = run.await.map_err(|e| mate.failed(e))?;
    let why_new = |text: &str| {
        let why = text.split_once("could not be resumed: ");
        why.map(|(_, w)| w.trim_end_matches(')').to_string())
    };
    let transcript = mate.transcript();
    let mine = transcript.iter().filter(|e| e.task == Some(id));
    let lines: Vec<(SessionLine, Option<String>)> = mine
        .filter_map(|e| Some((SessionLine::parse(e)?, why_new(&e.text))))
        .collect();
    let recorded = mate.recorded_session(id);
    let (session, starts, resumed) =
        recorded.context("agent/sessions.json has no entry for the task")?;
    mate.kill9().await?;
    let (n, wanted) = (lines.len(), wakes + 1);
    if n != wanted || starts != wanted as u64 {
        bail!("{n} agent starts in the transcript and {starts} in sessions.json, not {wanted}");
    }
    let first = &lines[0].0.id;
    let wake = |(i, (line, why)): (usize, &(SessionLine, Option<String>))| Wake {
        how: How::of(i + 1),
        resumed: line.resumed,
        session: line.id.clone(),
        why_new: why.clone(),
    };
    let each: Vec<Wake> = lines[1..].iter().enumerate().map(wake).collect();
    if let Some(w) = each.iter().find(|w| w.resumed && w.session != *first) {
        bail!(
            "a resumed start named session {}, not the task's {first}",
            w.session
        );
    }
    if each.iter().filter(|w| w.resumed).count() as u64 != resumed || session != lines[wakes].0.id {
        bail!("sessions.json ({session}, {resumed} resumed) disagrees with the transcript");
    }
    Ok(Wakes {
        each,
        starts,
        resumed,
    })
}

/// Waits until the agent of wake `w` is held in its model call.
async fn held(state: &script::Wakes, w: usize) -> anyhow::Result<()> {
    poll(
        &format!("agent of wake {w} in its model call"),
        WAKE_TIMEOUT,
        || (state.held.load(Ordering::SeqCst) == w + 1).then_some(()),
    )
    .await
}

async fn released(board: &mut Board, id: u64) -> anyhow::Result<()> {
    let given_back = |e: &Event| e.kind == EventKind::TaskReleased && e.task == Some(id);
    board
        .lead
        .next(&format!("task #{id} given back"), STEP, given_back)
        .await?;
    Ok(())
}

/// `kill -9` of the task's running agent: the children of the pid its last
/// session line names (teammated's guard), or that pid where it has none.
fn kill_agent(
    transcript: &[teamboard_protocol::transcript::TranscriptEntry],
    id: u64,
) -> anyhow::Result<()> {
    let pid = transcript
        .iter()
        .rev()
        .filter(|e| e.task == Some(id))
        .find_map(SessionLine::parse)
        .and_then(|l| l.pid)
        .context("the transcript names no agent process")?;
    let all = teamboard_process::processes();
    let mut targets: Vec<u32> = all
        .iter()
        .filter(|s| s.ppid == pid)
        .map(|s| s.pid)
        .collect();
    if targets.is_empty() {
        targets.push(pid);
    }
    for p in targets {
        // SAFETY: kill(2) has no memory-safety preconditions.
        unsafe { libc::kill(p as libc::pid_t, libc::SIGKILL) };
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wakes_take_turns_restart_first_and_the_share_counts_wakes_only() {
        let kinds: Vec<How> = (1..=4).map(How::of).collect();
        assert_eq!(kinds, [How::Restart, How::Crash, How::Restart, How::Crash]);
        let wake = |how, resumed| Wake {
            how,
            resumed,
            session: "s".into(),
            why_new: None,
        };
        let w = Wakes {
            each: vec![
                wake(How::Restart, true),
                wake(How::Crash, false),
                wake(How::Restart, true),
            ],
            starts: 4,
            resumed: 2,
        };
        assert_eq!(w.share(), Some(2.0 / 3.0));
        assert_eq!(w.of(How::Restart), (2, 2));
        assert_eq!(w.of(How::Crash), (0, 1));
    }
}
