//! The lead's session: who speaks when.
//!
//! One loop waits for the person's next line and for boardd's next event. The
//! person's words start a planning turn; slash commands are answered locally.
//! Their "start" (or `--yes`, after the goal's turn) opens the lead's tools that
//! change the board or the team, for the rest of the session.
//! Events are read as they come: news (results, shutdown answers, messages) goes
//! into the context at once, idle notifications wait to go in as one digest with
//! the next delivery, and a plan request or an error starts a coordination turn.
//! When every task on the board has ended, a summary turn runs. A turn is never
//! interrupted: what arrives during one waits for its next round (events) or its
//! end (the person's lines), so the person's words and the team's events never
//! interleave inside one model call.

use super::LeadConfig;
use super::console::{self, Command};
use super::ledger::{Cause, usage_path};
use super::settled::{settled, stuck_behind};
use super::turn::{Lead, TurnError, lead_identity, say};
use super::unstaffed::{Unstaffed, tick};
use crate::context::Context;
use crate::llm::{LlmError, Probe};
use crate::model_loop::ModelLoop;
use crate::prompts::lead::says_start;
use crate::transcript::Transcript;
use std::sync::Arc;
use std::time::Duration;
use teamboard_protocol::board_call::Front;
use teamboard_protocol::transcript::{EntryKind, transcript_path};
use teamboard_protocol::{Client, ClientError, Endpoint, Event, EventKind, LEAD, Task, TaskStatus};
use tokio::io::{AsyncBufRead, AsyncBufReadExt};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// How a lead session ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The person left (`/quit`, end of input).
    Quit,
    /// With a goal: the board is done; how many of how many tasks completed.
    Done { completed: usize, total: usize },
    /// With a goal: the person never said "start" (or the lead put no task on the
    /// board after it).
    NotStarted(String),
    /// With a goal: the open tasks had nobody to take them for the whole
    /// `--give-up-after`; why, in words.
    GaveUp(String),
    /// A signal.
    Interrupted,
}

#[derive(Debug, thiserror::Error)]
pub enum LeadError {
    #[error(transparent)]
    Boardd(#[from] ClientError),
    /// Shown with its cause by `{:#}`.
    #[error("the model provider cannot be used")]
    Provider(#[source] LlmError),
    #[error("the model call failed")]
    Llm(#[source] LlmError),
    #[error("boardd closed the connection")]
    Gone,
    #[error(transparent)]
    LeadKey(#[from] teamboard_protocol::lead_key::LeadKeyError),
    #[error(transparent)]
    Token(#[from] teamboard_protocol::endpoint::TokenFileError),
}

impl From<TurnError> for LeadError {
    fn from(e: TurnError) -> LeadError {
        match e {
            TurnError::Llm(e) => LeadError::Llm(e),
            TurnError::Boardd(e) => LeadError::Boardd(e),
        }
    }
}

/// Runs a lead session with the person's lines coming from `input`. `prompt`
/// prints a `> ` before each line (for a terminal).
pub async fn run<R>(
    cfg: LeadConfig,
    input: R,
    prompt: bool,
    cancel: CancellationToken,
) -> Result<Outcome, LeadError>
where
    R: AsyncBufRead + Unpin + Send + 'static,
{
    let (chain, accounts) =
        crate::accounts::build_chain(&cfg.provider).map_err(LeadError::Provider)?;
    let provider = &chain[0];
    let probe = tokio::select! {
        _ = cancel.cancelled() => return Ok(Outcome::Interrupted),
        probe = provider.probe() => probe.map_err(LeadError::Provider)?,
    };
    if let Probe::Unsure(why) = &probe {
        tracing::warn!("{why}");
    }
    let (endpoint, key) = match &cfg.remote {
        Some(remote) => (remote.endpoint.clone(), remote.token()?),
        None => (
            Endpoint::Unix(cfg.socket.clone()),
            teamboard_protocol::lead_key::lead_key(Some(&cfg.state_dir))?,
        ),
    };
    let client = Client::open(
        &endpoint,
        "teammated-lead",
        LEAD,
        &cfg.team,
        Some(cfg.new_team),
        Some(&key),
    )
    .await?;
    // Before anything is planned: a second lead on the team would plan over the
    // first one's tasks.
    client.take_lead().await?;
    // Before anything happens, so that no event of this session is missed.
    client.subscribe().await?;
    let mut transcript = Transcript::open(transcript_path(&cfg.state_dir, &cfg.team, LEAD));
    transcript.write(
        EntryKind::Lifecycle,
        None,
        None,
        false,
        &format!(
            "lead started: pid {}, provider {}, context budget {} tokens",
            std::process::id(),
            provider.describe(),
            cfg.context_budget
        ),
    );
    let client = Arc::new(client);
    let scripted = cfg.provider.kind == crate::config::ProviderKind::Scripted;
    let meter = crate::meter::Meter::new(
        crate::meter::Line::Client(client.clone()),
        accounts,
        scripted,
    );
    let model = ModelLoop::new(
        Context::new(&lead_identity(&cfg.team), cfg.context_budget),
        chain,
        meter,
        Front::Lead.specs(),
        cfg.provider.max_tokens,
        teamboard_protocol::transcript::teammate_dir(&cfg.state_dir, &cfg.team, LEAD),
    );
    let lead = Lead::new(cfg, client, model, transcript);
    let (lines_tx, lines) = mpsc::unbounded_channel();
    let reader = tokio::spawn(read_lines(input, lines_tx));
    let mut driver = Driver {
        lead,
        lines,
        prompt,
        cancel,
        summarised: None,
    };
    let outcome = match driver.lead.desk.cfg.goal.clone() {
        Some(goal) => driver.with_goal(&goal).await,
        None => driver.interactive().await,
    };
    reader.abort();
    let lead = &mut driver.lead;
    lead.desk
        .ledger
        .save(&usage_path(&lead.desk.cfg.state_dir, &lead.desk.cfg.team));
    let line = lead.desk.ledger.line();
    lead.log(EntryKind::Lifecycle, &format!("lead stopped; {line}"));
    // The count closes the conversation with the person, on stdout, as the
    // outcome's line after it does.
    say(&line);
    outcome
}

/// Sends what the person writes, one message at a time, until the input ends. A
/// message is one line, or a whole fenced block: a line that opens a fence (three
/// or more backticks) and everything up to the line that closes it, so that a plan
/// can be pasted or piped in.
async fn read_lines<R: AsyncBufRead + Unpin>(input: R, tx: mpsc::UnboundedSender<String>) {
    let mut lines = input.lines();
    let mut block: Option<(String, Vec<String>)> = None;
    while let Ok(Some(line)) = lines.next_line().await {
        let message = match block.as_mut() {
            Some((fence, body)) => {
                let closes = line.trim() == fence.as_str();
                body.push(line);
                if !closes {
                    continue;
                }
                let (_, body) = block.take().unwrap_or_default();
                body.join("\n")
            }
            None => match opening_fence(&line) {
                Some(fence) => {
                    block = Some((fence, vec![line]));
                    continue;
                }
                None => line,
            },
        };
        if tx.send(message).is_err() {
            return;
        }
    }
    // An unclosed block is still the person's words.
    if let Some((_, body)) = block {
        let _ = tx.send(body.join("\n"));
    }
}

/// The backticks a line opens a fenced block with.
fn opening_fence(line: &str) -> Option<String> {
    let t = line.trim();
    let ticks = t.chars().take_while(|c| *c == '`').count();
    (ticks >= 3 && t.len() > ticks).then(|| "`".repeat(ticks))
}

struct Driver {
    lead: Lead,
    lines: mpsc::UnboundedReceiver<String>,
    prompt: bool,
    cancel: CancellationToken,
    /// The board as it was when last found done and summarised.
    summarised: Option<Vec<Ended>>,
}

/// What woke the loop.
enum Wake {
    Line(Option<String>),
    Event(Option<Event>),
    Cancelled,
}

impl Driver {
    async fn next(&mut self, with_lines: bool) -> Wake {
        let client = self.lead.desk.client.clone();
        tokio::select! {
            _ = self.cancel.cancelled() => Wake::Cancelled,
            line = self.lines.recv(), if with_lines => Wake::Line(line),
            event = client.next_event() => Wake::Event(event),
        }
    }

    fn show_prompt(&self) {
        if self.prompt {
            use std::io::Write as _;
            let mut out = std::io::stdout().lock();
            let _ = write!(out, "> ");
            let _ = out.flush();
        }
    }

    /// A turn for the person's words; a failed model call is reported, not fatal.
    async fn person_turn(&mut self, words: &str) -> Result<(), LeadError> {
        self.lead.read_inbox().await?;
        self.lead.deliver(false).await?;
        self.lead.push_person(words);
        self.run_turn(Cause::Planning).await
    }

    async fn run_turn(&mut self, cause: Cause) -> Result<(), LeadError> {
        let cancel = self.cancel.clone();
        let turn = tokio::select! {
            _ = cancel.cancelled() => return Ok(()),
            t = self.lead.turn(cause) => t,
        };
        match turn {
            Ok(_) => Ok(()),
            Err(TurnError::Llm(e))
                if !e.is_configuration() && self.lead.desk.cfg.goal.is_none() =>
            {
                say(&format!(
                    "(the model call failed: {e}; say something to try again)"
                ));
                Ok(())
            }
            Err(e) => Err(e.into()),
        }
    }

    async fn interactive(&mut self) -> Result<Outcome, LeadError> {
        say(&format!(
            "teamboard lead, team '{}', provider {}. Tell me what you want done.\n{}",
            self.lead.desk.cfg.team,
            self.lead.model.provider().describe(),
            console::HELP
        ));
        self.show_prompt();
        loop {
            match self.next(true).await {
                Wake::Cancelled => return Ok(Outcome::Interrupted),
                Wake::Line(None) => return Ok(Outcome::Quit),
                Wake::Line(Some(line)) => {
                    let line = line.trim();
                    match console::parse(line) {
                        Some(Command::Quit) => return Ok(Outcome::Quit),
                        Some(command) => {
                            say(&console::answer(&self.lead.desk.client, &command).await)
                        }
                        None if line.is_empty() => {}
                        None => {
                            self.lead.desk.started |= says_start(line);
                            self.person_turn(line).await?
                        }
                    }
                    self.show_prompt();
                }
                Wake::Event(None) => return Err(LeadError::Gone),
                Wake::Event(Some(e)) => {
                    if self.on_event(&e).await? {
                        self.show_prompt();
                    }
                }
            }
        }
    }

    async fn with_goal(&mut self, goal: &str) -> Result<Outcome, LeadError> {
        // The goal's first paragraph: a plan pasted after it would flood the screen.
        let first = goal.split("\n\n").next().unwrap_or(goal);
        let rest = goal[first.len()..].lines().count();
        if rest > 1 {
            say(&format!("person: {first}\n        [... {rest} more lines]"));
        } else {
            say(&format!("person: {goal}"));
        }
        self.person_turn(goal).await?;
        if !self.lead.desk.cfg.yes {
            say("Type \"start\" to put the plan on the board, or say what to change.");
            loop {
                self.show_prompt();
                let line = tokio::select! {
                    _ = self.cancel.cancelled() => return Ok(Outcome::Interrupted),
                    line = self.lines.recv() => line,
                };
                let Some(line) = line else {
                    return Ok(Outcome::NotStarted(
                        "the input ended before \"start\"".to_string(),
                    ));
                };
                let line = line.trim();
                if says_start(line) {
                    break;
                }
                if !line.is_empty() {
                    self.person_turn(line).await?;
                }
            }
        } else {
            say("person: start");
        }
        self.lead.desk.started = true;
        self.person_turn("start").await?;
        if self.cancel.is_cancelled() {
            return Ok(Outcome::Interrupted);
        }
        if self.lead.desk.client.list_tasks(None).await?.is_empty() {
            return Ok(Outcome::NotStarted(
                "the lead put no task on the board".to_string(),
            ));
        }
        // The tasks may all have ended during the start turn already.
        if let Some(done) = self.check_done().await? {
            return Ok(done);
        }
        let mut unstaffed = self.lead.desk.cfg.give_up_after.map(Unstaffed::new);
        // Never polled without a grace; finite all the same, since an Instant
        // plus Duration::MAX panics.
        let every = self
            .lead
            .desk
            .cfg
            .give_up_after
            .map_or(Duration::from_secs(3600), tick);
        let mut look = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        look.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        loop {
            let wake = tokio::select! {
                wake = self.next(false) => Some(wake),
                _ = look.tick(), if unstaffed.is_some() => None,
            };
            let Some(wake) = wake else {
                if let Some(u) = unstaffed.as_mut() {
                    let tasks = self.lead.desk.client.list_tasks(None).await?;
                    let team = self.lead.desk.client.team().await?;
                    if let Some(why) = u.observe(std::time::Instant::now(), &tasks, &team) {
                        say(&format!("  · giving up: {why}"));
                        return Ok(Outcome::GaveUp(why));
                    }
                }
                continue;
            };
            match wake {
                Wake::Cancelled => return Ok(Outcome::Interrupted),
                Wake::Line(_) => {}
                Wake::Event(None) => return Err(LeadError::Gone),
                Wake::Event(Some(e)) => {
                    self.on_event(&e).await?;
                    if self.summarised.is_some() {
                        let tasks = self.lead.desk.client.list_tasks(None).await?;
                        return Ok(done_outcome(&tasks));
                    }
                }
            }
        }
    }

    /// Handles one event. Returns whether anything was printed.
    async fn on_event(&mut self, e: &Event) -> Result<bool, LeadError> {
        if e.team != self.lead.desk.cfg.team {
            return Ok(false);
        }
        match e.kind {
            EventKind::MessageSent if e.member.as_deref() == Some(LEAD) => {
                self.lead.read_inbox().await?;
                if self.lead.desk.pending.needs_decision() {
                    self.lead.deliver(true).await?;
                    self.run_turn(Cause::Coordination).await?;
                    return Ok(true);
                }
                if self.lead.desk.pending.has_news() {
                    self.lead.deliver(true).await?;
                    return Ok(true);
                }
                Ok(false)
            }
            EventKind::TaskCompleted | EventKind::TaskFailed | EventKind::TaskCancelled => {
                Ok(self.check_done().await?.is_some())
            }
            _ => Ok(false),
        }
    }

    /// When every task has ended and this board was not summarised yet: tells the
    /// lead, runs the summary turn, and returns the outcome.
    ///
    /// The board is compared with the one last summarised, not reset by the
    /// events: those the lead hears after a turn can be older than the board it
    /// reads, and a `task_created` heard after the summary that already counted
    /// its task must not make a done board undone (a second summary of the same
    /// work, in a team that should be quiet).
    async fn check_done(&mut self) -> Result<Option<Outcome>, LeadError> {
        let tasks = self.lead.desk.client.list_tasks(None).await?;
        if tasks.is_empty() || !settled(&tasks) {
            return Ok(None);
        }
        let board: Vec<Ended> = tasks.iter().map(Ended::of).collect();
        if self.summarised.as_ref() == Some(&board) {
            return Ok(None);
        }
        self.summarised = Some(board);
        self.lead.read_inbox().await?;
        self.lead.deliver(true).await?;
        let report = board_report(&tasks);
        say(&format!(
            "  · {}",
            report.lines().next().unwrap_or_default()
        ));
        self.lead.push_person(&report);
        self.run_turn(Cause::Summary).await?;
        Ok(Some(done_outcome(&tasks)))
    }
}

/// What a summary said of one ended task: a task retried and ended again has a
/// new claim epoch, so its new end is news even with the same status.
#[derive(Debug, PartialEq, Eq)]
struct Ended {
    id: u64,
    status: TaskStatus,
    epoch: u64,
}

impl Ended {
    fn of(t: &Task) -> Ended {
        Ended {
            id: t.id,
            status: t.status,
            epoch: t.epoch,
        }
    }
}

fn done_outcome(tasks: &[Task]) -> Outcome {
    Outcome::Done {
        completed: tasks
            .iter()
            .filter(|t| t.status == TaskStatus::Completed)
            .count(),
        total: tasks.len(),
    }
}

/// What the lead is told when the board is done: the counts, then one line per
/// task with its outcome.
fn board_report(tasks: &[Task]) -> String {
    let count = |s: TaskStatus| tasks.iter().filter(|t| t.status == s).count();
    let mut s = format!(
        "{} {} task(s): {} completed, {} failed, {} cancelled.",
        crate::prompts::lead::BOARD_DONE,
        tasks.len(),
        count(TaskStatus::Completed),
        count(TaskStatus::Failed),
        count(TaskStatus::Cancelled)
    );
    s.push('\n');
    s.push_str(&spend_line(tasks));
    for t in tasks {
        let by = t
            .owner
            .as_deref()
            .map(|o| format!(" by {o}"))
            .unwrap_or_default();
        let outcome = t
            .result
            .as_deref()
            .or(t.last_error.as_deref())
            .and_then(|r| r.lines().find(|l| !l.trim().is_empty()))
            .unwrap_or_default();
        s.push_str(&format!("\n#{} {}: {}{by}", t.id, t.subject, t.status));
        if !outcome.is_empty() {
            s.push_str(&format!(" — {outcome}"));
        }
        if let Some(b) = stuck_behind(tasks, t) {
            s.push_str(&format!(" — cannot start: #{} is {}", b.id, b.status));
        }
    }
    s.push('\n');
    s.push_str(SUMMARISE);
    s
}

/// What the tasks spent, tokens and dollars apart, for the summary to tell
/// the person: `Spent on these tasks: 4200 tokens, $0.0123.`
fn spend_line(tasks: &[Task]) -> String {
    let mut tokens = teamboard_protocol::TokenUsage::default();
    let mut cost = teamboard_protocol::spend::Cost::default();
    for t in tasks {
        tokens.add(t.tokens);
        cost.add(t.cost);
    }
    let unpriced = match cost.unpriced_tokens {
        0 => String::new(),
        n => format!(", {n} of the tokens on models without a price"),
    };
    format!(
        "Spent on these tasks: {} tokens, {}{unpriced}.",
        tokens.total(),
        cost.usd
    )
}

/// The last line of the board-done report.
const SUMMARISE: &str = "Summarise the results for the person.";

#[cfg(test)]
mod tests {
    use super::*;

    fn task(id: u64, status: &str, blocked_by: &[u64]) -> Task {
        serde_json::from_value(serde_json::json!({
            "id": id, "subject": format!("t{id}"), "status": status,
            "blocked_by": blocked_by, "created_at": 0, "updated_at": 0,
        }))
        .expect("a task")
    }

    #[test]
    fn the_report_says_what_the_tasks_spent_in_tokens_and_dollars() {
        let mut done = task(1, "completed", &[]);
        done.tokens.input = 4_000;
        done.tokens.output = 200;
        done.cost.usd = teamboard_protocol::spend::MicroUsd(12_300);
        let mut unpriced = task(2, "completed", &[]);
        unpriced.tokens.input = 1_000;
        unpriced.cost.unpriced_tokens = 1_000;
        assert_eq!(
            spend_line(&[done, unpriced]),
            "Spent on these tasks: 5200 tokens, $0.0123, 1000 of the tokens on models \
             without a price."
        );
    }

    #[test]
    fn a_task_behind_a_failed_blocker_does_not_keep_the_board_open() {
        let tasks = vec![
            task(1, "failed", &[]),
            task(2, "pending", &[1]),
            task(3, "pending", &[2]),
            task(4, "completed", &[]),
        ];
        assert!(settled(&tasks));
        assert_eq!(stuck_behind(&tasks, &tasks[2]).map(|t| t.id), Some(1));
        let report = board_report(&tasks);
        assert!(
            report.contains("#3 t3: pending — cannot start: #1 is failed"),
            "{report}"
        );
        assert!(
            report.contains("\nSpent on these tasks: 0 tokens, $0.00.\n"),
            "{report}"
        );
        // A blocker still at work, or a ready task, keeps it open.
        let open = vec![task(1, "in_progress", &[]), task(2, "pending", &[1])];
        assert!(!settled(&open));
        assert!(!settled(&[
            task(1, "completed", &[]),
            task(2, "pending", &[1])
        ]));
    }

    #[tokio::test]
    async fn a_fenced_block_is_one_message_and_other_lines_are_one_each() {
        let input =
            "hello\n````plan\ntask a\n    ```sh\n    echo\n    ```\n````\n/tasks\n```sh\nunclosed";
        let (tx, mut rx) = mpsc::unbounded_channel();
        read_lines(tokio::io::BufReader::new(input.as_bytes()), tx).await;
        let mut got = Vec::new();
        while let Some(m) = rx.recv().await {
            got.push(m);
        }
        assert_eq!(
            got,
            vec![
                "hello".to_string(),
                "````plan\ntask a\n    ```sh\n    echo\n    ```\n````".to_string(),
                "/tasks".to_string(),
                "```sh\nunclosed".to_string(),
            ]
        );
    }
}
