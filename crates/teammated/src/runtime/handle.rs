//! The handle the WORK loop holds on a running agent, whatever the runtime:
//! [`Agent`] numbers the inputs, hands them and the lead's plan decisions to
//! the task that drives the agent ([`Command`]), gives out that task's events
//! in order, and stops it.
//!
//! Each runtime drives its agent from a task of its own because a line to the
//! agent must never be cut in the middle: the WORK loop drops `next_event` in
//! a `select!` whenever something else comes first, and a write inside it
//! would leave half a line on the agent's stdin. The handle therefore only
//! exchanges messages with that task, which is cancel-safe, and nothing it
//! does depends on the runtime except how the driver takes input ([`Intake`]):
//! Claude Code's driver writes each input at once and the caller waits for
//! the write, the others queue it and the caller does not wait.
//!
//! A handle per runtime is the obvious shape, and each one is short. But the
//! copies look alike and differ in small ways, and every difference (does a
//! send wait for the write, is a send after the exit refused, when is the
//! session known) has to be read out of near-identical code before anyone can
//! tell a decision from an accident; a fix to one copy silently misses the
//! others.
//!
//! A trait that each driver implements, held as a `Box<dyn ...>`, would share
//! only the signatures. Its methods are async, so the trait needs boxed
//! futures or a macro crate, and each implementation would still carry its
//! own tags, session, backlog and stop handshake: the part that is the same
//! everywhere would stay copied, behind a vtable.
//!
//! A handle generic over each driver's own command type shares that part, but
//! then `Agent` has to be an enum over the handle's instances again, with a
//! `match` in every method, for command types that all say the same three
//! things.
//!
//! So there is one concrete handle over one command enum, and a runtime
//! chooses its [`Intake`], its [`Pid`] (shared with the driver where the
//! process can change) and, where it opens the session before the driver
//! runs, the session's id. The price is small: every [`Command::Send`] and
//! [`Command::Plan`] carries a [`Reply`], which a driver whose handle does not
//! wait simply drops.
//!
//! The trap: a driver started with [`Intake::Written`] must answer every
//! [`Reply`], or each `send` fails with [`AgentError::Gone`]; nothing may rely
//! on the answer of a driver started with [`Intake::Queued`], since nobody
//! listens for it.

use crate::runtime::{AgentError, AgentEvent, PlanAnswer};
use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

/// Where a driver says how an input went: written, or the error why not.
/// Dropping it unanswered reads as [`AgentError::Gone`].
pub type Reply = oneshot::Sender<Result<(), AgentError>>;

/// What the handle asks of a driver.
pub enum Command {
    /// Input for the agent, tagged for its [`AgentEvent::Delivered`].
    Send { tag: u64, text: String, done: Reply },
    /// The lead's decision on the plan the agent proposed.
    Plan { answer: PlanAnswer, done: Reply },
    /// Interrupt the running turn (bounded), stop the process, then answer.
    Stop(oneshot::Sender<()>),
}

/// How a driver takes input (`send`, `answer_plan`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Intake {
    /// The driver writes each input when it gets it and answers its
    /// [`Reply`]; the call waits for that answer and fails with the write's
    /// error.
    Written,
    /// The call returns once the driver has the command; the driver sends the
    /// input on its own time (at once, or at the turn boundary) and its
    /// [`Reply`] is not waited for. `refused_after_exit`: a `send` after the
    /// handle gave out [`AgentEvent::Exited`] fails with [`AgentError::Gone`]
    /// instead of reaching the driver.
    Queued { refused_after_exit: bool },
}

/// The pid of the agent's process as its driver last knew it (0: none),
/// shared: a driver that starts a new process or sees it end updates it.
#[derive(Debug, Clone)]
pub struct Pid(Arc<AtomicU32>);

impl Pid {
    pub fn new(pid: Option<u32>) -> Pid {
        Pid(Arc::new(AtomicU32::new(pid.unwrap_or(0))))
    }

    pub fn set(&self, pid: Option<u32>) {
        self.0.store(pid.unwrap_or(0), Ordering::Relaxed);
    }

    pub fn get(&self) -> Option<u32> {
        match self.0.load(Ordering::Relaxed) {
            0 => None,
            pid => Some(pid),
        }
    }
}

/// Why a session did not open: what [`Agent::opened`] read instead.
#[derive(Debug)]
pub enum Unopened {
    Failed(String),
    Exited {
        status: String,
        stderr: String,
    },
    /// The driver ended without a word.
    Ended,
}

/// One running agent, for one task.
pub struct Agent {
    commands: mpsc::UnboundedSender<Command>,
    events: mpsc::UnboundedReceiver<AgentEvent>,
    /// Events read before the session opened ([`Agent::opened`]): given out
    /// first.
    backlog: VecDeque<AgentEvent>,
    session: Option<String>,
    pid: Pid,
    intake: Intake,
    /// The tag of the last input sent.
    next_tag: u64,
    /// [`AgentEvent::Exited`] has been given out: nothing comes after it.
    exited: bool,
    task: JoinHandle<()>,
}

impl Agent {
    /// Runs a driver on a task of its own: `driver` gets the commands to carry
    /// out and the channel for its events. `session`: the session's id where
    /// the runtime knows it before the driver runs.
    pub(super) fn spawn<D, F>(intake: Intake, pid: Pid, session: Option<String>, driver: D) -> Agent
    where
        D: FnOnce(mpsc::UnboundedReceiver<Command>, mpsc::UnboundedSender<AgentEvent>) -> F,
        F: Future<Output = ()> + Send + 'static,
    {
        let (commands, command_rx) = mpsc::unbounded_channel();
        let (event_tx, events) = mpsc::unbounded_channel();
        let task = tokio::spawn(driver(command_rx, event_tx));
        Agent {
            commands,
            events,
            backlog: VecDeque::new(),
            session,
            pid,
            intake,
            next_tag: 0,
            exited: false,
            task,
        }
    }

    /// Reads events until the session is open; what came before it is kept
    /// for [`Agent::next_event`], after the session's own event. For a
    /// runtime whose driver opens the session.
    pub(super) async fn opened(&mut self) -> Result<(), Unopened> {
        loop {
            match self.events.recv().await {
                Some(session @ AgentEvent::Session { .. }) => {
                    if let AgentEvent::Session { id, .. } = &session {
                        self.session = Some(id.clone());
                    }
                    self.backlog.push_front(session);
                    return Ok(());
                }
                Some(AgentEvent::Failed(why)) => return Err(Unopened::Failed(why)),
                Some(AgentEvent::Exited { status, stderr }) => {
                    return Err(Unopened::Exited { status, stderr });
                }
                Some(other) => self.backlog.push_back(other),
                None => return Err(Unopened::Ended),
            }
        }
    }

    /// Sends a message (from the inbox, or a refusal of the completion gate) to
    /// the agent: steered into the running turn where the runtime allows,
    /// otherwise queued for the turn boundary. Returns the tag that its
    /// [`AgentEvent::Delivered`] will carry.
    pub async fn send(&mut self, text: &str) -> Result<u64, AgentError> {
        let refused = matches!(
            self.intake,
            Intake::Queued {
                refused_after_exit: true
            }
        );
        if self.exited && refused {
            return Err(AgentError::Gone);
        }
        self.next_tag += 1;
        let tag = self.next_tag;
        let (done, answer) = oneshot::channel();
        let text = text.to_string();
        self.command(Command::Send { tag, text, done }, answer)
            .await?;
        Ok(tag)
    }

    /// Answers the plan the agent proposed (the last [`AgentEvent::PlanProposed`]).
    pub async fn answer_plan(&mut self, answer: PlanAnswer) -> Result<(), AgentError> {
        let (done, answered) = oneshot::channel();
        self.command(Command::Plan { answer, done }, answered).await
    }

    /// Hands `command` to the driver, and waits for its answer where the
    /// driver writes the input at once.
    async fn command(
        &self,
        command: Command,
        answer: oneshot::Receiver<Result<(), AgentError>>,
    ) -> Result<(), AgentError> {
        self.commands.send(command).map_err(|_| AgentError::Gone)?;
        match self.intake {
            Intake::Written => answer.await.map_err(|_| AgentError::Gone)?,
            Intake::Queued { .. } => Ok(()),
        }
    }

    /// The next event. Cancel-safe: an event is never lost to a `select!`.
    /// After [`AgentEvent::Exited`], waits forever.
    pub async fn next_event(&mut self) -> AgentEvent {
        if self.exited {
            return std::future::pending().await;
        }
        let event = match self.backlog.pop_front() {
            Some(event) => event,
            None => match self.events.recv().await {
                Some(event) => event,
                None => std::future::pending().await,
            },
        };
        match &event {
            AgentEvent::Session { id, .. } => self.session = Some(id.clone()),
            AgentEvent::Exited { .. } => self.exited = true,
            _ => {}
        }
        event
    }

    /// Stops the agent: interrupts the running turn (bounded), closes its input,
    /// then ends its process group and everything it started. Returns once no
    /// process of it is left (or the guard has been told and the grace is over).
    pub async fn stop(self) {
        let (done, stopped) = oneshot::channel();
        if self.commands.send(Command::Stop(done)).is_ok() {
            let _ = stopped.await;
        }
        let _ = self.task.await;
    }

    /// The session's id, once known.
    pub fn session(&self) -> Option<&str> {
        self.session.as_deref()
    }

    /// The pid of the agent's process (its guard's, under a guard), for tests and
    /// the transcript.
    pub fn pid(&self) -> Option<u32> {
        self.pid.get()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// A driver that answers every input with `answer(tag)`, and a stop.
    async fn answering(
        mut commands: mpsc::UnboundedReceiver<Command>,
        answer: fn(u64) -> Result<(), AgentError>,
    ) {
        while let Some(command) = commands.recv().await {
            match command {
                Command::Send { tag, done, .. } => {
                    let _ = done.send(answer(tag));
                }
                // Dropped unanswered.
                Command::Plan { .. } => {}
                Command::Stop(done) => {
                    let _ = done.send(());
                    return;
                }
            }
        }
    }

    /// A driver that reports `events`, then takes commands without answering
    /// any until it is stopped.
    async fn reporting(
        mut commands: mpsc::UnboundedReceiver<Command>,
        events: mpsc::UnboundedSender<AgentEvent>,
        report: Vec<AgentEvent>,
    ) {
        for event in report {
            let _ = events.send(event);
        }
        while let Some(command) = commands.recv().await {
            if let Command::Stop(done) = command {
                let _ = done.send(());
                return;
            }
        }
    }

    fn exited() -> AgentEvent {
        AgentEvent::Exited {
            status: "exit code 1".into(),
            stderr: String::new(),
        }
    }

    fn approved() -> PlanAnswer {
        PlanAnswer::Approved {
            feedback: String::new(),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_written_input_waits_for_the_drivers_answer_and_fails_with_its_error() {
        let mut agent = Agent::spawn(Intake::Written, Pid::new(None), None, |commands, _| {
            answering(commands, |tag| match tag {
                1 => Ok(()),
                _ => Err(AgentError::Protocol("not written".into())),
            })
        });
        assert_eq!(agent.send("one").await.unwrap(), 1);
        let refused = agent.send("two").await;
        assert!(
            matches!(refused, Err(AgentError::Protocol(_))),
            "{refused:?}"
        );
        let unanswered = agent.answer_plan(approved()).await;
        assert!(
            matches!(unanswered, Err(AgentError::Gone)),
            "{unanswered:?}"
        );
        agent.stop().await;
    }

    #[tokio::test(start_paused = true)]
    async fn a_queued_input_does_not_wait_for_the_driver() {
        let intake = Intake::Queued {
            refused_after_exit: false,
        };
        let mut agent = Agent::spawn(intake, Pid::new(Some(7)), None, |commands, events| {
            reporting(commands, events, Vec::new())
        });
        let sent = tokio::time::timeout(Duration::from_secs(1), agent.send("one")).await;
        assert_eq!(sent.expect("not waited for").unwrap(), 1);
        let answered = tokio::time::timeout(Duration::from_secs(1), agent.answer_plan(approved()));
        answered.await.expect("not waited for").unwrap();
        assert_eq!(agent.pid(), Some(7));
        agent.stop().await;
    }

    #[tokio::test(start_paused = true)]
    async fn nothing_comes_after_the_exit_and_a_send_is_refused_only_where_the_runtime_says() {
        for refused_after_exit in [true, false] {
            let intake = Intake::Queued { refused_after_exit };
            let mut agent = Agent::spawn(intake, Pid::new(None), None, |commands, events| {
                reporting(
                    commands,
                    events,
                    vec![exited(), AgentEvent::Said("late".into())],
                )
            });
            assert_eq!(agent.send("before").await.unwrap(), 1);
            assert_eq!(agent.next_event().await, exited());
            let after = tokio::time::timeout(Duration::from_secs(5), agent.next_event()).await;
            assert!(after.is_err(), "an event after the exit: {after:?}");
            let sent = agent.send("after").await;
            match refused_after_exit {
                true => assert!(matches!(sent, Err(AgentError::Gone)), "{sent:?}"),
                false => assert_eq!(sent.unwrap(), 2),
            }
            agent.stop().await;
        }
    }

    #[tokio::test(start_paused = true)]
    async fn the_session_comes_first_and_what_came_before_it_is_kept() {
        let session = AgentEvent::Session {
            id: "S1".into(),
            resumed: false,
            why_new: None,
        };
        let report = vec![AgentEvent::Said("early".into()), session.clone()];
        let intake = Intake::Queued {
            refused_after_exit: false,
        };
        let mut agent = Agent::spawn(intake, Pid::new(None), None, |commands, events| {
            reporting(commands, events, report)
        });
        assert_eq!(agent.session(), None);
        agent.opened().await.unwrap();
        assert_eq!(agent.session(), Some("S1"));
        assert_eq!(agent.next_event().await, session);
        assert_eq!(agent.next_event().await, AgentEvent::Said("early".into()));
        agent.stop().await;

        let mut agent = Agent::spawn(intake, Pid::new(None), None, |commands, events| {
            reporting(commands, events, vec![exited()])
        });
        assert!(matches!(agent.opened().await, Err(Unopened::Exited { .. })));
        agent.stop().await;
    }
}
