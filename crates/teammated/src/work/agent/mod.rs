//! WORK with an agent runtime: the board's side of a task that Claude Code, Codex
//! or an ACP agent carries out.
//!
//! One phase is one agent process for the held task (or, with no task held, for
//! the messages that woke the teammate): it starts, or resumes, the task's
//! session, and the loop below maps what happens on the board onto the agent
//! and what the agent reports back onto the board, until the task ends. The
//! mapping, runtime by runtime, is in `docs/runtimes.md`.
//!
//! [`AgentRun`] owns what only this runtime uses: the agent's setup and
//! sessions, the member socket, and what the board side handed it for its next
//! phase. The loop waits on five things at once, and each wait is a plain
//! future over a local (the agent, the member socket, the parked
//! `wait_for_work`), never over the teammate, so that what one brings is handled
//! with the whole teammate at hand:
//!
//! - the agent's events ([`AgentEvent`]);
//! - the board tools the agent calls through the member socket;
//! - boardd's answer to a parked `wait_for_work`, which a message for us wakes
//!   (a teammate that holds a task is woken by messages only, protocol §9.7);
//! - the claim being lost (the heartbeat's token) and teammated being stopped.
//!
//! Messages are acknowledged once the agent took them ([`AgentEvent::Delivered`]),
//! never before, so a crash in between delivers them again rather than loses
//! them. That holds for the messages IDLE read and put into the first input
//! too ([`FIRST_INPUT`]): an agent that cannot start leaves them in the inbox.
//! Until a batch is delivered boardd would answer every wait with it again, so
//! the loop does not park meanwhile: it looks at the inbox every
//! [`INBOX_POLL`] instead, for the messages that cannot wait behind the batch (a
//! plan decision the agent is blocked on, a shutdown request). A phase for
//! messages alone never parks (a wait could claim a task); it reads the inbox
//! the same way all along. Trap: a parked `wait_for_work` cannot be withdrawn
//! (see `wait_for_decision`); dropping one would make the next wait on the
//! connection fail. So it is parked for [`AGENT_PARK`] only, and at the end of
//! the phase its answer is awaited and kept for IDLE.

mod brief;
mod events;
mod inbox;
mod settle;
mod setup;
mod spend;
#[cfg(test)]
mod tests;

pub(crate) use setup::setup;

use crate::error::Error;
use crate::member::MemberServer;
use crate::runtime::{Agent, AgentError, AgentEvent, AgentSpec, FIRST_INPUT, Limit, McpServer};
use crate::teammate::{AskedToLeave, Exit, Intake, Outcome, Teammate};
use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;
use teamboard_protocol::{ClientError, MemberStatus, TaskId, Work};

/// How long one `wait_for_work` parks while an agent works. Short, because the
/// phase must await it before it ends; a message answers it at once anyway.
pub(crate) const AGENT_PARK: Duration = Duration::from_secs(1);
/// How often the inbox is read while a batch of messages waits for the agent to
/// take it.
const INBOX_POLL: Duration = Duration::from_millis(250);
/// Refusals of the completion gate in a row before the task is given back.
const MAX_REFUSALS: u32 = 3;
/// The answer to a board call that came outside the phase of the agent that
/// made it (see `MemberServer::refuse_queued`).
const STALE_CALL: &str = "refused: the call came while no agent of this teammate was working \
     on a task (its phase had ended); it was not carried out";

/// The work of a teammate with an agent runtime.
pub(crate) struct AgentRun {
    /// How the agent is started.
    spec: AgentSpec,
    /// The agent's sessions, by task: a task's next phase resumes its session.
    sessions: crate::runtime::sessions::Sessions,
    /// The socket the agent's board tools reach the teammate through. Taken
    /// out for the length of a phase, so that the loop can wait on it while it
    /// works with the rest.
    member: Option<MemberServer>,
    /// How the agent starts the board's MCP server.
    mcp: McpServer,
    /// The text that opened the held task: the first turn of its phase.
    opening: String,
    /// Messages read while idle, for the next phase.
    inbox: Vec<String>,
    /// The ids of those messages: acknowledged only once the agent took them,
    /// so that an agent that cannot start loses none.
    unacked: Vec<u64>,
    /// What a wait parked during a phase brought after the phase ended: IDLE
    /// takes it before it waits again.
    stashed: Option<Work>,
}

type Parked = Pin<Box<dyn Future<Output = Result<Work, ClientError>> + Send>>;

/// How an agent's phase ended.
enum AgentEnd {
    /// The task ended on the board (with the agent's result), or a phase for
    /// messages alone is over.
    Done,
    /// The agent gave the task up with `fail_task`, with this reason: once the
    /// agent has stopped, the task fails. Trap: not before, since the task may
    /// go to its next owner the moment it is back, and the agent could still
    /// write to its worktree.
    GaveUp(String),
    /// The agent could not be started.
    StartFailed(AgentError),
    /// The agent reported an error, or died.
    Failed(String),
    /// The completion gate refused the agent's result too often.
    Refused,
    /// boardd took the claim back.
    Lost,
    /// A budget that covers the work ran out, in boardd's words (or the
    /// agent's, at its own spend cap): the task goes back, and the attempt
    /// does not count.
    OverBudget(String),
    /// The agent's account reached a usage limit: the task goes back, and the
    /// teammate waits for the reset.
    LimitReached(Limit),
    Stop(Exit),
    /// A shutdown request came while the agent worked: once the agent has
    /// stopped, the task goes back and the request is approved. Trap: not
    /// before, since the task may be claimed elsewhere the moment it is back.
    Leave {
        asked: AskedToLeave,
        /// The agent's session, kept for the task.
        session: Option<String>,
    },
}

/// What one wait of the loop brought.
#[allow(
    clippy::large_enum_variant,
    reason = "one is built per wake-up and matched at once; boxing would buy nothing"
)]
enum Step {
    Event(AgentEvent),
    Call(crate::member::Incoming),
    Woken(Result<Work, ClientError>),
    Poll,
    Lost,
    Stop,
}

/// Where the phase is.
struct Phase {
    agent: Agent,
    /// Sends to the agent not yet delivered: tag → the message ids to ack.
    pending: BTreeMap<u64, Vec<u64>>,
    /// Every message id handed to the agent in this phase, so that a wait or a poll of
    /// the inbox does not hand it over twice.
    handed: BTreeSet<u64>,
    refusals: u32,
    /// The task (0: the messages-only conversation).
    key: TaskId,
    /// The result the agent gave `complete_task`: the task completes with it,
    /// rather than with the turn's answer, once the turn has ended.
    result: Option<String>,
    /// The answer of the last turn that worked on the task. Trap: a message
    /// that came meanwhile is answered in a turn of its own, which is no result.
    answer: Option<String>,
    /// The running turn took messages and nothing else (`Some(true)`); the
    /// first input, a refusal and the runtime's own input (untagged) are work.
    only_messages: Option<bool>,
    /// A budget ran out with the call that ended the turn (see `spend`): why.
    /// The turn's answer may complete the task; no next turn starts.
    over_budget: Option<String>,
}

impl AgentRun {
    /// Runs the agent's whole process in `jail` (the teammate's sandbox).
    pub(crate) fn confine(&mut self, jail: &teamboard_sandbox::Jail) {
        self.spec.jail = Some(jail.clone());
    }

    /// The agent, for the transcript's first line: `acp (/usr/bin/agent), policy
    /// auto`.
    pub(crate) fn describe(&self) -> String {
        format!(
            "{} ({}), policy {}",
            self.spec.kind,
            self.spec.program.display(),
            self.spec.policy
        )
    }

    /// Runs one WORK phase with the agent. `Some(exit)` when the teammate should
    /// stop afterwards.
    pub(crate) async fn work(&mut self, t: &mut Teammate) -> Result<Option<Exit>, Error> {
        let Some(mut member) = self.member.take() else {
            return Err(Error::Agent(
                "the agent runtime is not set up (no member socket)".into(),
            ));
        };
        let end = self.phase(t, &mut member).await;
        self.member = Some(member);
        let end = end?;
        self.settle(t, end).await
    }

    async fn phase(
        &mut self,
        t: &mut Teammate,
        member: &mut MemberServer,
    ) -> Result<AgentEnd, Error> {
        if t.held().is_none() && self.inbox.is_empty() {
            return Ok(AgentEnd::Done);
        }
        t.set_status(MemberStatus::Working).await?;
        let mut brief = self.brief(t, member);
        let key = brief.task;
        // The messages in the brief: acknowledged once the agent took them,
        // left in the inbox if it cannot start.
        let first_ids = std::mem::take(&mut self.unacked);
        if t.held().is_some() {
            match spend::room(t).await {
                Ok(left) => brief.usd_cap = left,
                Err(why) => return Ok(AgentEnd::OverBudget(why)),
            }
        }
        let spec = self.spec.clone();
        t.lifecycle(&format!(
            "work: started ({} agent {}{})",
            spec.kind,
            spec.program.display(),
            match &brief.resume {
                Some(id) => format!(", resuming session {id}"),
                None => String::new(),
            }
        ));
        member.refuse_queued(STALE_CALL);
        let cancel = t.cancel().clone();
        let lost = t.lost_token();
        // A start may take long (Codex and ACP agents are given a minute or
        // two to open their session), and a stop or a lost claim must not wait
        // for it. Dropping a start half way ends what it spawned: the process
        // asks its guard to kill everything on drop, and a driver's task stops
        // its process when the handle goes.
        let started = tokio::select! {
            _ = cancel.cancelled() => return Ok(AgentEnd::Stop(Exit::Terminated)),
            _ = lost.cancelled() => return Ok(AgentEnd::Lost),
            started = Agent::start(&spec, brief) => started,
        };
        let agent = match started {
            Ok(a) => a,
            Err(e) => return Ok(AgentEnd::StartFailed(e)),
        };
        let mut phase = Phase {
            agent,
            pending: BTreeMap::new(),
            handed: first_ids.iter().copied().collect(),
            refusals: 0,
            key,
            result: None,
            answer: None,
            only_messages: None,
            over_budget: None,
        };
        if !first_ids.is_empty() {
            phase.pending.insert(FIRST_INPUT, first_ids);
        }
        let mut parked: Option<Parked> = None;
        // When the inbox is read next, while a batch waits for the agent (or,
        // in a phase without a task, all along).
        let mut next_poll: Option<tokio::time::Instant> = None;
        // A phase for messages alone never parks: boardd answers the wait of a
        // teammate that holds no task with a claim on a ready task, and taking
        // it would cut the agent's answer short (its messages acknowledged,
        // their answer lost) or leave the claim without a heartbeat until the
        // answer ends. It reads the inbox instead, and a ready task waits on
        // the board for IDLE, which takes it once the agent has answered.
        let parks = key != 0;
        let end = loop {
            if parks && parked.is_none() && phase.pending.is_empty() {
                parked = Some(park(t));
            }
            // Trap: the deadline outlives the loop's turns. A sleep made anew on
            // every turn would never end while the agent reports events faster
            // than INBOX_POLL, and a shutdown request would wait for its turn.
            if parks && phase.pending.is_empty() {
                next_poll = None;
            } else if next_poll.is_none() {
                next_poll = Some(tokio::time::Instant::now() + INBOX_POLL);
            }
            let step = tokio::select! {
                _ = cancel.cancelled() => Step::Stop,
                _ = lost.cancelled() => Step::Lost,
                ev = phase.agent.next_event() => Step::Event(ev),
                call = member.next() => Step::Call(call),
                // The guard keeps the branch off when nothing is parked.
                w = async {
                    match parked.as_mut() {
                        Some(wait) => wait.await,
                        None => std::future::pending().await,
                    }
                },
                    if parked.is_some() => Step::Woken(w),
                _ = async { tokio::time::sleep_until(next_poll.unwrap_or_else(tokio::time::Instant::now)).await },
                    if next_poll.is_some() => Step::Poll,
            };
            let flow = match step {
                Step::Stop => Some(AgentEnd::Stop(Exit::Terminated)),
                Step::Lost => Some(AgentEnd::Lost),
                Step::Event(ev) => self.on_event(t, ev, &mut phase).await,
                Step::Call(incoming) => {
                    let answered = t.member_call(incoming.call).await;
                    let _ = incoming.reply.send(answered.reply);
                    match answered.ends {
                        None => None,
                        // Carried out when the turn ends (`agent_answered`).
                        Some(Outcome::Complete(result)) => {
                            phase.result = Some(result);
                            None
                        }
                        Some(Outcome::Fail(reason)) => Some(AgentEnd::GaveUp(reason)),
                    }
                }
                Step::Woken(w) => {
                    parked = None;
                    self.on_woken(t, w, &mut phase).await?
                }
                Step::Poll => {
                    next_poll = None;
                    let messages = t.session().call(|c| async move { c.inbox().await }).await?;
                    inbox::on_messages(t, messages, &mut phase).await?
                }
            };
            if let Some(end) = flow {
                break end;
            }
        };
        // Interrupt and stop the agent before anything else: a task given back
        // may run elsewhere at once, and its agent must not run on meanwhile.
        let how = match &end {
            AgentEnd::Done => "its work is done",
            AgentEnd::GaveUp(_) => "it gave the task up",
            AgentEnd::Lost => "the claim is gone",
            AgentEnd::OverBudget(_) => "a budget ran out",
            AgentEnd::LimitReached(_) => "its account reached a usage limit",
            AgentEnd::Stop(_) | AgentEnd::Leave { .. } => "the teammate is stopping",
            _ => "it failed",
        };
        let session = phase.agent.session().map(str::to_string);
        phase.agent.stop().await;
        // What the stopped agent had on its way belongs to this phase only.
        member.refuse_queued(STALE_CALL);
        t.lifecycle(&format!(
            "agent: stopped ({how}){}",
            session
                .map(|s| format!("; session {s} kept for this task"))
                .unwrap_or_default()
        ));
        if let Some(wait) = parked {
            self.stash(wait.await);
        }
        Ok(match phase.result.take() {
            Some(result) => keep_promise(t, result, end).await,
            None => end,
        })
    }

    /// Keeps what a wait brought after the phase ended, for IDLE to handle.
    fn stash(&mut self, woken: Result<Work, ClientError>) {
        match woken {
            Ok(Work::Timeout) => {}
            Ok(Work::Messages { messages }) if messages.is_empty() => {}
            Ok(work) => self.stashed = Some(work),
            Err(e) => tracing::warn!(error = %e, "a wait parked during work failed"),
        }
    }
}

/// The agent takes a task and messages in its next phase.
impl Intake for AgentRun {
    fn begin_task(&mut self, _t: &mut Teammate, opening: &[String], _fresh: bool) {
        self.opening = opening.join("\n\n");
    }

    fn hear(&mut self, texts: &[String], ordinary: &[u64]) -> bool {
        self.inbox.extend(texts.iter().cloned());
        for id in ordinary {
            if !self.unacked.contains(id) {
                self.unacked.push(*id);
            }
        }
        true
    }

    fn stashed(&mut self) -> Option<Work> {
        self.stashed.take()
    }
}

/// A `wait_for_work` parked for [`AGENT_PARK`], as a future that owns what it
/// needs.
fn park(t: &Teammate) -> Parked {
    let session = t.session().clone();
    let ms = AGENT_PARK.min(t.cfg().poll_interval).as_millis() as u64;
    Box::pin(async move {
        session
            .call(|c| async move { c.wait_for_work(Some(ms.max(1))).await })
            .await
    })
}

/// The agent's `complete_task` was answered "completes the task when your
/// turn ends", and the phase ended otherwise: the agent failed (a turn
/// limit, a model error, a crash after the call) or the teammate is
/// stopping. The agent has stopped, so the task can no longer change under
/// the result: it completes through the gate as promised. Trap: giving it
/// back instead throws finished work's result away and uses up an attempt.
/// A refusal of the gate leaves `end` to settle the task as before.
async fn keep_promise(t: &mut Teammate, result: String, end: AgentEnd) -> AgentEnd {
    if !matches!(
        end,
        AgentEnd::Failed(_)
            | AgentEnd::Stop(_)
            | AgentEnd::Leave { .. }
            | AgentEnd::OverBudget(_)
            | AgentEnd::LimitReached(_)
    ) || t.held().is_none()
    {
        return end;
    }
    match Outcome::Complete(result).end(t).await {
        Ok((task, what)) => {
            let after = match &end {
                AgentEnd::Failed(why) => format!("the agent then failed: {why}"),
                AgentEnd::OverBudget(why) => format!("then budget exhausted: {why}"),
                AgentEnd::LimitReached(limit) => format!("then {}", spend::limit_note(limit)),
                _ => "the teammate is stopping".to_string(),
            };
            t.lifecycle(&format!(
                "work: #{} {what} with the result the agent gave complete_task ({after})",
                task.id
            ));
            match end {
                AgentEnd::Failed(_) => AgentEnd::Done,
                other => other,
            }
        }
        Err(not) => {
            t.lifecycle_error(&format!(
                "work: the agent's complete_task could not be carried out: {not}"
            ));
            end
        }
    }
}
