//! WORK with an agent runtime: the board's side of a task that Claude Code, Codex
//! or an ACP agent carries out.
//!
//! One phase is one agent process for the held task (or, with no task held, for
//! the messages that woke the teammate): it starts, or resumes, the task's
//! session, and the loop below maps what happens on the board onto the agent
//! and what the agent reports back onto the board, until the task ends. The
//! mapping, runtime by runtime, is in `docs/runtimes.md`.
//!
//! The loop waits on five things at once, and each wait is a plain future over a
//! local (the agent, the member socket, the parked `wait_for_work`), never over
//! `self`, so that what one brings is handled with the whole teammate at hand:
//!
//! - the agent's events ([`AgentEvent`]);
//! - the board tools the agent calls through the member socket;
//! - boardd's answer to a parked `wait_for_work`, which a message for us wakes
//!   (a teammate that holds a task is woken by messages only, protocol §9.7);
//! - the claim being lost (the heartbeat's token) and teammated being stopped.
//!
//! Messages are acknowledged once the agent took them ([`AgentEvent::Delivered`]),
//! never before, so a crash in between delivers them again rather than loses
//! them. Until a batch is delivered boardd would answer every wait with it again,
//! so the loop does not park meanwhile: it looks at the inbox every
//! [`INBOX_POLL`] instead, for the messages that cannot wait behind the batch (a
//! plan decision the agent is blocked on, a shutdown request). Trap: a parked
//! `wait_for_work` cannot be withdrawn (see `wait_for_decision`); dropping one
//! would make the next wait on the connection fail. So it is parked for
//! [`AGENT_PARK`] only, and at the end of the phase its answer is awaited and
//! kept for IDLE.

use crate::error::Error;
use crate::member::MemberServer;
use crate::runtime::{
    Agent, AgentError, AgentEvent, AgentSpec, Brief, McpServer, PlanAnswer, RuntimeKind,
};
use crate::teammate::{Exit, PlanState, Teammate};
use crate::work::Outcome;
use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;
use teamboard_protocol::member::MEMBER_SOCKET_ENV;
use teamboard_protocol::transcript::EntryKind;
use teamboard_protocol::{ClientError, MemberStatus, Message, MessageKind, TaskId, Work};

/// How long one `wait_for_work` parks while an agent works. Short, because the
/// phase must await it before it ends; a message answers it at once anyway.
pub(crate) const AGENT_PARK: Duration = Duration::from_secs(1);
/// How often the inbox is read while a batch of messages waits for the agent to
/// take it.
const INBOX_POLL: Duration = Duration::from_millis(250);
/// Refusals of the completion gate in a row before the task is given back.
const MAX_REFUSALS: u32 = 3;

/// What a teammate with an agent runtime keeps for its whole life.
pub(crate) struct AgentSetup {
    pub spec: AgentSpec,
    pub sessions: crate::runtime::sessions::Sessions,
    /// Taken out for the length of a phase, so that the loop can wait on it
    /// without holding the teammate.
    pub member: Option<MemberServer>,
    /// How the agent starts the board's MCP server.
    pub mcp: McpServer,
}

type Parked = Pin<Box<dyn Future<Output = Result<Work, ClientError>> + Send>>;

/// How an agent's phase ended.
enum AgentEnd {
    /// The task ended on the board (its result, or the agent's own
    /// `complete_task`/`fail_task`), or a phase for messages alone is over.
    Done,
    /// The agent could not be started.
    StartFailed(AgentError),
    /// The agent reported an error, or died.
    Failed(String),
    /// The completion gate refused the agent's result too often.
    Refused,
    /// boardd took the claim back.
    Lost,
    Stop(Exit),
}

/// What one wait of the loop brought.
// One is built per wake-up and matched at once; boxing would buy nothing.
#[allow(clippy::large_enum_variant)]
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
    /// Every message id handed to the agent in this phase, so that a poll of
    /// the inbox does not hand it over twice.
    handed: BTreeSet<u64>,
    refusals: u32,
    /// The task (0: the messages-only conversation).
    key: TaskId,
}

impl Teammate {
    /// Runs one WORK phase with the agent. `Some(exit)` when the teammate should
    /// stop afterwards.
    pub(crate) async fn work_with_agent(&mut self) -> Result<Option<Exit>, Error> {
        let Some(mut member) = self.agent.as_mut().and_then(|a| a.member.take()) else {
            return Err(Error::Agent(
                "the agent runtime is not set up (no member socket)".into(),
            ));
        };
        let end = self.agent_phase(&mut member).await;
        if let Some(setup) = self.agent.as_mut() {
            setup.member = Some(member);
        }
        let end = end?;
        self.settle_agent(end).await
    }

    async fn agent_phase(&mut self, member: &mut MemberServer) -> Result<AgentEnd, Error> {
        if self.held.is_none() && self.agent_inbox.is_empty() {
            return Ok(AgentEnd::Done);
        }
        self.set_status(MemberStatus::Working).await?;
        let Some(brief) = self.brief(member) else {
            return Ok(AgentEnd::Done);
        };
        let key = brief.task;
        let Some(spec) = self.agent.as_ref().map(|a| a.spec.clone()) else {
            return Ok(AgentEnd::Done);
        };
        self.log(
            EntryKind::Lifecycle,
            None,
            false,
            &format!(
                "work: started ({} agent {}{})",
                spec.kind.as_str(),
                spec.program.display(),
                match &brief.resume {
                    Some(id) => format!(", resuming session {id}"),
                    None => String::new(),
                }
            ),
        );
        let agent = match Agent::start(&spec, brief).await {
            Ok(a) => a,
            Err(e) => return Ok(AgentEnd::StartFailed(e)),
        };
        let mut phase = Phase {
            agent,
            pending: BTreeMap::new(),
            handed: BTreeSet::new(),
            refusals: 0,
            key,
        };
        let cancel = self.cancel.clone();
        let lost = self.lost_token();
        let mut parked: Option<Parked> = None;
        let end = loop {
            if parked.is_none() && phase.pending.is_empty() {
                parked = Some(self.park());
            }
            let polling = !phase.pending.is_empty();
            let step = tokio::select! {
                _ = cancel.cancelled() => Step::Stop,
                _ = lost.cancelled() => Step::Lost,
                ev = phase.agent.next_event() => Step::Event(ev),
                call = member.next() => Step::Call(call),
                w = async { parked.as_mut().expect("guarded by the branch condition").await },
                    if parked.is_some() => Step::Woken(w),
                _ = tokio::time::sleep(INBOX_POLL), if polling => Step::Poll,
            };
            let flow = match step {
                Step::Stop => Some(AgentEnd::Stop(Exit::Terminated)),
                Step::Lost => Some(AgentEnd::Lost),
                Step::Event(ev) => self.on_agent_event(ev, &mut phase).await,
                Step::Call(incoming) => {
                    let reply = self.member_call(incoming.call).await;
                    let _ = incoming.reply.send(reply);
                    // The agent ended its task itself.
                    (key != 0 && self.held.is_none()).then_some(AgentEnd::Done)
                }
                Step::Woken(w) => {
                    parked = None;
                    self.on_woken(w, &mut phase).await?
                }
                Step::Poll => {
                    let inbox = self
                        .session
                        .call(|c| async move { c.inbox().await })
                        .await?;
                    let fresh: Vec<Message> = inbox
                        .into_iter()
                        .filter(|m| !phase.handed.contains(&m.id))
                        .collect();
                    self.on_messages(fresh, &mut phase).await?
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
            AgentEnd::Lost => "the claim is gone",
            AgentEnd::Stop(_) => "the teammate is stopping",
            _ => "it failed",
        };
        let session = phase.agent.session().map(str::to_string);
        phase.agent.stop().await;
        self.log(
            EntryKind::Lifecycle,
            None,
            false,
            &format!(
                "agent: stopped ({how}){}",
                session
                    .map(|s| format!("; session {s} kept for this task"))
                    .unwrap_or_default()
            ),
        );
        if let Some(wait) = parked {
            self.stash(wait.await);
        }
        Ok(end)
    }

    /// A `wait_for_work` parked for [`AGENT_PARK`], as a future that owns what it
    /// needs.
    fn park(&self) -> Parked {
        let session = self.session.clone();
        let ms = AGENT_PARK.min(self.cfg.poll_interval).as_millis() as u64;
        Box::pin(async move {
            session
                .call(|c| async move { c.wait_for_work(Some(ms.max(1))).await })
                .await
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

    /// What the agent starts with. `None` when there is nothing to do.
    fn brief(&mut self, member: &MemberServer) -> Option<Brief> {
        let setup = self.agent.as_ref()?;
        let kind = setup.spec.kind;
        let key = self.task_id().unwrap_or(0);
        let resume = setup.sessions.get(key, kind).map(|e| e.session);
        let mut parts = Vec::new();
        if let Some(held) = &self.held {
            if resume.is_some() {
                parts.push(crate::prompts::agent::RESUMED.to_string());
            }
            parts.push(held.opening.clone());
        }
        let inbox = std::mem::take(&mut self.agent_inbox);
        if self.held.is_none() {
            parts.push(crate::prompts::agent::MESSAGES_ONLY.to_string());
        }
        parts.extend(inbox);
        let cwd = self.local.workdir.clone();
        let mut mcp = setup.mcp.clone();
        mcp.env.push((
            MEMBER_SOCKET_ENV.to_string(),
            member.path().display().to_string(),
        ));
        let plan_first = self
            .held
            .as_ref()
            .is_some_and(|h| h.needs_plan && !matches!(h.plan, PlanState::Approved { .. }));
        Some(Brief {
            task: key,
            cwd,
            resume,
            identity: crate::prompts::agent::identity(
                &self.cfg.name,
                &self.cfg.role,
                &self.cfg.team,
                self.ctx.identity.worktree.as_deref(),
            ),
            prompt: parts.join("\n\n"),
            plan_first,
            mcp: Some(mcp),
        })
    }

    async fn on_agent_event(&mut self, ev: AgentEvent, phase: &mut Phase) -> Option<AgentEnd> {
        match ev {
            AgentEvent::Session {
                id,
                resumed,
                why_new,
            } => {
                let kind = self
                    .agent
                    .as_ref()
                    .map(|a| a.spec.kind)
                    .unwrap_or(RuntimeKind::Native);
                let counted = self
                    .agent
                    .as_ref()
                    .map(|a| a.sessions.started(phase.key, kind, &id, resumed));
                if let Some(Err(e)) = counted {
                    tracing::warn!(error = %e, "cannot record the agent's session");
                }
                let what = if resumed { "resumed" } else { "started" };
                let why = why_new
                    .map(|w| format!(" (the old one could not be resumed: {w})"))
                    .unwrap_or_default();
                let pid = phase
                    .agent
                    .pid()
                    .map(|p| format!(", pid {p}"))
                    .unwrap_or_default();
                self.log(
                    EntryKind::Lifecycle,
                    None,
                    false,
                    &format!("agent: {} session {id} {what}{pid}{why}", kind.as_str()),
                );
                None
            }
            AgentEvent::Said(text) => {
                self.log(EntryKind::Assistant, None, false, &text);
                None
            }
            AgentEvent::ToolCall { name, input } => {
                self.log(EntryKind::ToolUse, Some(&name), false, &input);
                None
            }
            AgentEvent::Delivered(tag) => {
                if let Some(ids) = phase.pending.remove(&tag)
                    && let Err(e) = self.ack(ids).await
                {
                    tracing::warn!(error = %e, "cannot acknowledge messages the agent took");
                }
                None
            }
            AgentEvent::Usage(usage) => {
                self.record_usage(usage).await;
                None
            }
            AgentEvent::PlanProposed(plan) => {
                self.agent_plan(plan, phase).await;
                None
            }
            AgentEvent::Idle { answer } => self.agent_answered(answer, phase).await,
            AgentEvent::Failed(why) => Some(AgentEnd::Failed(why)),
            AgentEvent::Exited { status, stderr } => Some(AgentEnd::Failed(with_tail(
                format!("the agent exited ({status}) before it finished"),
                &stderr,
            ))),
        }
    }

    /// The agent's final answer: the task's result. A refusal of the completion
    /// gate goes back to the agent as its next input.
    async fn agent_answered(&mut self, answer: String, phase: &mut Phase) -> Option<AgentEnd> {
        if self.held.is_none() {
            // A conversation about messages alone, or a task the agent ended
            // itself through the board.
            return Some(AgentEnd::Done);
        }
        let result = if answer.trim().is_empty() {
            "(the agent gave no result text)".to_string()
        } else {
            answer
        };
        let out = Outcome::Complete(result).report(self).await;
        if self.held.is_none() {
            return Some(AgentEnd::Done);
        }
        phase.refusals += 1;
        self.log(
            EntryKind::ToolResult,
            Some("complete_task"),
            true,
            &out.content,
        );
        if phase.refusals >= MAX_REFUSALS {
            return Some(AgentEnd::Refused);
        }
        match phase.agent.send(&out.content).await {
            Ok(tag) => {
                phase.pending.insert(tag, Vec::new());
                None
            }
            Err(e) => Some(AgentEnd::Failed(format!(
                "cannot give the agent the gate's refusal: {e}"
            ))),
        }
    }

    /// The agent asks for its plan to be approved: it becomes the claim's plan
    /// request; the answer comes with the lead's decision (see `on_messages`).
    async fn agent_plan(&mut self, plan: String, phase: &mut Phase) {
        let Some(held) = &self.held else {
            let _ = phase
                .agent
                .answer_plan(PlanAnswer::Rejected {
                    feedback: "there is no task to plan for".into(),
                })
                .await;
            return;
        };
        let (id, epoch) = (held.id, held.epoch);
        let text = plan.trim();
        let text = if text.is_empty() {
            "(the agent proposed an empty plan)"
        } else {
            text
        };
        match self
            .session
            .call(|c| async move { c.submit_plan(id, epoch, text).await })
            .await
        {
            Ok(req) => {
                if let Some(h) = self.held.as_mut() {
                    h.plan = PlanState::Pending {
                        id: req.id,
                        plan: text.to_string(),
                    };
                }
                self.log(
                    EntryKind::Lifecycle,
                    None,
                    false,
                    &format!(
                        "plan submitted for #{id} (request {}); the agent waits for the lead",
                        req.id
                    ),
                );
            }
            Err(e) => {
                let _ = phase
                    .agent
                    .answer_plan(PlanAnswer::Rejected {
                        feedback: format!("the plan could not be submitted: {e}"),
                    })
                    .await;
            }
        }
    }

    async fn on_woken(
        &mut self,
        woken: Result<Work, ClientError>,
        phase: &mut Phase,
    ) -> Result<Option<AgentEnd>, Error> {
        match woken? {
            Work::Timeout => Ok(None),
            Work::Messages { messages } => self.on_messages(messages, phase).await,
            Work::Task { claim } => {
                // boardd claims for a teammate that holds no task: ours ended
                // meanwhile (the agent completed it). The claim is IDLE's.
                self.stashed = Some(Work::Task { claim });
                Ok(Some(AgentEnd::Done))
            }
        }
    }

    /// Messages that arrived while the agent works: ordinary ones go to the
    /// agent and are acknowledged once it took them; plan decisions and
    /// shutdown requests are the runtime's, acknowledged at once.
    async fn on_messages(
        &mut self,
        messages: Vec<Message>,
        phase: &mut Phase,
    ) -> Result<Option<AgentEnd>, Error> {
        if messages.is_empty() {
            return Ok(None);
        }
        let (protocol, ordinary): (Vec<Message>, Vec<Message>) = messages
            .into_iter()
            .partition(|m| crate::messages::is_protocol(m.kind));
        if !ordinary.is_empty() {
            let ids: Vec<u64> = ordinary.iter().map(|m| m.id).collect();
            let text = ordinary
                .iter()
                .map(crate::messages::message_text)
                .collect::<Vec<_>>()
                .join("\n\n");
            for m in &ordinary {
                self.log(
                    EntryKind::User,
                    None,
                    false,
                    &crate::messages::message_text(m),
                );
            }
            phase.handed.extend(ids.iter().copied());
            match phase.agent.send(&text).await {
                Ok(tag) => {
                    phase.pending.insert(tag, ids);
                }
                // The agent is gone; its exit comes as an event. The messages stay
                // in the inbox for the next session.
                Err(e) => tracing::warn!(error = %e, "cannot give messages to the agent"),
            }
        }
        if protocol.is_empty() {
            return Ok(None);
        }
        let plan_before = self.held.as_ref().map(|h| h.plan.clone());
        let read = crate::messages::read_messages(self, protocol).await?;
        self.ack(read.ids).await?;
        if let Some(by) = read.leave_for {
            return Ok(Some(AgentEnd::Stop(Exit::ShutdownRequested { by })));
        }
        if let Some(asked) = self.asked_to_leave.take() {
            return Ok(Some(self.leave_now(asked, phase).await));
        }
        if read.decided.is_some() {
            let plan_now = self.held.as_ref().map(|h| h.plan.clone());
            if plan_now != plan_before {
                let answer = match plan_now {
                    Some(PlanState::Approved { .. }) => PlanAnswer::Approved {
                        feedback: String::new(),
                    },
                    Some(PlanState::Rejected { feedback, .. }) => PlanAnswer::Rejected { feedback },
                    _ => PlanAnswer::Rejected {
                        feedback: "the plan request was withdrawn; plan again".into(),
                    },
                };
                for text in &read.texts {
                    self.log(EntryKind::User, None, false, text);
                }
                if let Err(e) = phase.agent.answer_plan(answer).await {
                    tracing::warn!(error = %e, "cannot give the agent the plan decision");
                }
            }
        }
        Ok(None)
    }

    /// A shutdown request while the agent works: the agent cannot answer it
    /// (it has no such tool), so the teammate approves it, gives the task back
    /// with a note saying the agent's session is kept, and leaves.
    async fn leave_now(
        &mut self,
        asked: crate::teammate::AskedToLeave,
        phase: &mut Phase,
    ) -> AgentEnd {
        let note = format!(
            "interrupted by a shutdown request from {}; the agent's session {} is kept with {} for this task",
            asked.from,
            phase.agent.session().unwrap_or("(none yet)"),
            self.cfg.name
        );
        self.release(None).await;
        let id = asked.id;
        if let Err(e) = self
            .session
            .call(|c| async move { c.respond_shutdown(id, true, None).await })
            .await
        {
            tracing::warn!(error = %e, request = id, "cannot answer the shutdown request");
        }
        self.log(EntryKind::Lifecycle, None, false, &note);
        let exit = Exit::ShutdownRequested { by: asked.from };
        self.shutdown = Some(exit.clone());
        AgentEnd::Stop(exit)
    }

    /// Settles the held task after the phase. `Some(exit)` when the teammate
    /// should stop.
    async fn settle_agent(&mut self, end: AgentEnd) -> Result<Option<Exit>, Error> {
        let kind = self
            .agent
            .as_ref()
            .map(|a| a.spec.kind.as_str())
            .unwrap_or("agent");
        match end {
            AgentEnd::Done => {
                self.log(EntryKind::Lifecycle, None, false, "work: ended");
                self.agent_failures = 0;
            }
            AgentEnd::Stop(exit) => return Ok(Some(exit)),
            AgentEnd::Lost => {
                let why = self.why_lost();
                self.log(
                    EntryKind::Lifecycle,
                    None,
                    false,
                    &format!("work: ended (claim lost: {why})"),
                );
                self.let_go();
            }
            AgentEnd::Refused => {
                self.log(
                    EntryKind::Lifecycle,
                    None,
                    false,
                    &format!("work: ended (the completion gate refused {MAX_REFUSALS} times)"),
                );
            }
            AgentEnd::StartFailed(e) => {
                let why = format!("the {kind} agent could not start: {e}");
                self.log(
                    EntryKind::Lifecycle,
                    None,
                    true,
                    &format!("work: ended ({why})"),
                );
                let what = match self.task_id() {
                    Some(id) => format!("released #{id}"),
                    None => "could not read its messages".into(),
                };
                // Not the task's fault: give it back without using up an attempt.
                self.release_with_note(&why).await;
                self.tell_lead(
                    MessageKind::Error,
                    format!("{} {what}: {why}", self.cfg.name),
                )
                .await;
                self.agent_failures += 1;
                self.llm_failures = self.agent_failures;
                return Ok(None);
            }
            AgentEnd::Failed(why) => {
                self.log(
                    EntryKind::Lifecycle,
                    None,
                    true,
                    &format!("work: ended ({why})"),
                );
                let what = match self.task_id() {
                    Some(id) => format!("released #{id}"),
                    None => "could not answer".into(),
                };
                if self.held.is_some() {
                    self.release(Some(&why)).await;
                }
                self.tell_lead(
                    MessageKind::Error,
                    format!("{} {what}: {kind} agent: {why}", self.cfg.name),
                )
                .await;
                self.agent_failures += 1;
                self.llm_failures = self.agent_failures;
                return Ok(None);
            }
        }
        if let Some(held) = &self.held {
            let why = match &held.refused {
                Some(r) => format!("the teammate could not complete it: {r}"),
                None => "the agent ended without a result the board took".to_string(),
            };
            self.release(Some(&why)).await;
        }
        Ok(None)
    }
}

/// An error with the agent's last stderr lines, when it said anything.
fn with_tail(why: String, stderr: &str) -> String {
    let stderr = stderr.trim();
    if stderr.is_empty() {
        why
    } else {
        format!("{why}; its last stderr lines:\n{stderr}")
    }
}

/// The agent runtime's setup, from the configuration: `None` for the native
/// runtime. Fails when the agent's program cannot be found, or the member
/// socket cannot be bound: nothing could run then.
pub(crate) fn setup(cfg: &crate::config::Config) -> Result<Option<AgentSetup>, Error> {
    let rt = &cfg.runtime;
    if rt.kind == RuntimeKind::Native {
        return Ok(None);
    }
    let named = match (&rt.agent_cmd, rt.kind.default_cmd()) {
        (Some(cmd), _) => cmd.clone(),
        (None, Some(cmd)) => std::path::PathBuf::from(cmd),
        (None, None) => {
            return Err(Error::Agent(format!(
                "--runtime {} needs the agent's program: --agent-cmd CMD",
                rt.kind.as_str()
            )));
        }
    };
    let program = crate::runtime::process::resolve(&named).ok_or_else(|| {
        Error::Agent(format!(
            "the {} agent '{}' is not found or not executable; install it, or name it with --agent-cmd",
            rt.kind.as_str(),
            named.display()
        ))
    })?;
    let dir = teamboard_protocol::transcript::teammate_dir(&cfg.state_dir, &cfg.team, &cfg.name)
        .join("agent");
    std::fs::create_dir_all(&dir)
        .map_err(|e| Error::Agent(format!("cannot create {}: {e}", dir.display())))?;
    let member = MemberServer::bind(&cfg.name)
        .map_err(|e| Error::Agent(format!("cannot open the member socket: {e}")))?;
    let socket = member.path().display().to_string();
    let mut env = rt.agent_env.clone();
    env.extend([
        (MEMBER_SOCKET_ENV.to_string(), socket.clone()),
        (
            "TEAMBOARD_SOCKET".to_string(),
            cfg.socket.display().to_string(),
        ),
        ("TEAMBOARD_TEAM".to_string(), cfg.team.clone()),
    ]);
    let teamctl = teamctl_program();
    let mcp = McpServer {
        command: teamctl,
        args: vec![
            "mcp".into(),
            "--name".into(),
            cfg.name.clone(),
            "--team".into(),
            cfg.team.clone(),
        ],
        env: vec![
            (MEMBER_SOCKET_ENV.to_string(), socket),
            (
                "TEAMBOARD_SOCKET".to_string(),
                cfg.socket.display().to_string(),
            ),
        ],
    };
    Ok(Some(AgentSetup {
        spec: AgentSpec {
            kind: rt.kind,
            program,
            extra_args: rt.agent_args.clone(),
            max_turns: cfg.max_rounds,
            model: cfg.provider.model.clone(),
            policy: rt.policy,
            env,
            guard: crate::tools::guard::program(),
        },
        sessions: crate::runtime::sessions::Sessions::new(&dir),
        member: Some(member),
        mcp,
    }))
}

/// `teamctl`, for the board's MCP server: `TEAMBOARD_TEAMCTL` when set, else the
/// one next to this teammated (they are installed together), else the one on
/// PATH.
fn teamctl_program() -> std::path::PathBuf {
    if let Some(p) = std::env::var_os("TEAMBOARD_TEAMCTL") {
        return p.into();
    }
    let sibling = std::env::current_exe().ok().and_then(|exe| {
        let dir = exe.parent()?;
        // A test binary lives in target/<profile>/deps, the binaries one up.
        [dir.join("teamctl"), dir.parent()?.join("teamctl")]
            .into_iter()
            .find(|p| p.is_file())
    });
    sibling.unwrap_or_else(|| std::path::PathBuf::from("teamctl"))
}
