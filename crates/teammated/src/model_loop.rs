//! One model loop for every front end: a teammate's native work and the lead.
//!
//! [`ModelLoop`] owns what talks to the model: the context and its compaction,
//! the provider, the tool specs. A round is two steps, the same for everyone:
//! [`ModelLoop::ask`] (compact when over budget, call the model, log the turn,
//! put it into the context) and [`ModelLoop::run_tools`] (run each tool the
//! turn called, log its result, put the results into the context). The front
//! end is a [`ToolHost`]: it runs the tools, keeps the transcript and the token
//! accounts, says who the model is, and says when a round must stop. The loop
//! never knows which front end runs it.
//!
//! Each front end writes its own `loop` around the two steps, a screenful,
//! because that is where they differ: a teammate stops on a final answer, the
//! `idle` tool, a lost claim or a shutdown, and continues an answer cut off at
//! the output limit; the lead stops on any text, to print it for the person.
//!
//! Alternatives that lost:
//! - the whole loop in here, with hooks for each front end (before a round,
//!   after an answer, on a cut-off): the ends are what each front end is about,
//!   and hooks for them would scatter two short loops over many callbacks;
//! - `&mut dyn ToolHost`: async methods on a trait object need a boxed future
//!   per call (`async-trait`, or `Pin<Box<dyn Future>>` by hand), and the front
//!   end is always known where the loop is called, so a generic costs nothing;
//! - the transcript and the token accounts inside the loop: a teammate's board
//!   side writes the same transcript (its lifecycle, what its board tools did),
//!   and the lead charges tokens to its own ledger by cause, so the front end
//!   owns both and the loop writes through it.

use crate::context::{self, Context, Identity};
use crate::llm::{Block, CompletionRequest, LlmError, Provider, StopReason, ToolSpec};
use crate::meter::{Grant, Meter, Refusal};
use crate::tools::ToolOutput;
use crate::transcript::{self, Transcript};
use serde_json::Value;
use std::future::Future;
use std::path::PathBuf;
use teamboard_protocol::transcript::EntryKind;
use teamboard_protocol::{TaskId, TokenUsage};

/// What the loop needs of its front end.
pub trait ToolHost {
    /// The task in hand, for the transcript's entries.
    fn task(&self) -> Option<TaskId>;

    /// Where the loop logs the model's turns and the tools' results.
    fn transcript(&mut self) -> &mut Transcript;

    /// Who the model is, and what it works on: put back at the head of a
    /// compacted conversation.
    fn identity(&self) -> Identity;

    /// Completes, with what the model is told, when a model call or the run of
    /// `tool` must be cut short. A front end that is stopped by being dropped
    /// never completes it.
    fn interrupted(&self, tool: Option<&str>) -> impl Future<Output = String> + Send + 'static;

    /// Accounts for the tokens of a model call: a turn, or a summary.
    fn spent(&mut self, usage: TokenUsage) -> impl Future<Output = ()> + Send;

    /// Runs one of the tools the model was offered.
    fn run_tool(&mut self, name: &str, input: &Value) -> impl Future<Output = ToolOutput> + Send;
}

/// One tool call of a turn: its id, the tool, its input.
pub type ToolUse = (String, String, Value);

/// A model turn, logged and in the context.
#[derive(Debug)]
pub struct Turn {
    /// Its text blocks, joined.
    pub text: String,
    /// The tools it called, in order; none for an answer.
    pub uses: Vec<ToolUse>,
    pub stop: StopReason,
}

/// Why [`ModelLoop::ask`] has no turn.
#[derive(Debug)]
pub enum NoTurn {
    /// The front end cut the round short; what the model would be told.
    Interrupted(String),
    /// The model could not be reached, even after retries.
    Failed(LlmError),
    /// A budget has no room for the call, so it was not made: boardd's words.
    Budget(String),
    /// boardd could not be asked for the call.
    Board(String),
}

/// How the wait for a reservation ended.
enum Asked {
    Granted(Grant),
    Refused(Refusal),
    Interrupted(String),
}

/// The model's side of a conversation.
pub struct ModelLoop {
    pub ctx: Context,
    /// The providers of the meter's chain of accounts, in its order: boardd's
    /// grant says which one to call.
    chain: Vec<Provider>,
    meter: Meter,
    specs: Vec<ToolSpec>,
    max_tokens: u32,
    /// Where a compaction saves the whole conversation first: the member's
    /// transcript directory.
    archives: PathBuf,
    /// Compactions so far, to name their archives.
    compactions: u32,
    /// The context's length after a compaction that left it over budget.
    compacted_at: Option<usize>,
}

impl ModelLoop {
    /// `chain` holds a provider for each account of `meter`'s chain, in its
    /// order, the first at least.
    pub fn new(
        ctx: Context,
        chain: Vec<Provider>,
        meter: Meter,
        specs: Vec<ToolSpec>,
        max_tokens: u32,
        archives: PathBuf,
    ) -> ModelLoop {
        ModelLoop {
            ctx,
            chain,
            meter,
            specs,
            max_tokens,
            archives,
            compactions: 0,
            compacted_at: None,
        }
    }

    /// The first provider of the chain: the one the teammate was started with.
    pub fn provider(&self) -> &Provider {
        &self.chain[0]
    }

    /// Reserves a call with boardd, unless the front end cuts the wait short
    /// (the reservation is then withdrawn).
    async fn reserve(&mut self, host: &impl ToolHost, input: u64, output: u64) -> Asked {
        let task = host.task();
        let id = self.meter.next_id();
        let stop = host.interrupted(None);
        let asked = tokio::select! {
            why = stop => Asked::Interrupted(why),
            r = self.meter.reserve(task, input, output) => match r {
                Ok(g) => Asked::Granted(g),
                Err(refusal) => Asked::Refused(refusal),
            },
        };
        if let Asked::Interrupted(_) = asked {
            self.meter.withdraw(id).await;
        }
        asked
    }

    /// The provider a grant names; the chain's first if it names none of it.
    fn provider_for(&self, grant: &Grant) -> &Provider {
        self.chain.get(grant.account).unwrap_or(&self.chain[0])
    }

    /// Asks the model for its next turn: compacts the context first when it is
    /// over budget, then logs the turn and puts it into the context.
    pub async fn ask(&mut self, host: &mut impl ToolHost) -> Result<Turn, NoTurn> {
        if self.ctx.over_budget()
            && let Some(why) = self.compact(host).await
        {
            return Err(NoTurn::Interrupted(why));
        }
        // The worst case boardd holds against the budgets: the prompt about
        // to be sent (its tools too) and the whole output limit.
        let input = crate::llm::estimate_request(self.ctx.system(), &self.ctx.messages)
            + self
                .specs
                .iter()
                .map(|s| crate::llm::estimate_tokens(&s.input_schema.to_string()) + 20)
                .sum::<u64>();
        let output = u64::from(self.max_tokens);
        let completion = self.call(host, input, output).await?;
        let task = host.task();
        host.spent(completion.usage).await;
        let (text, uses) = host.transcript().record_turn(task, &completion.content);
        let stop = completion.stop.clone();
        self.ctx.push_assistant(completion.content);
        Ok(Turn { text, uses, stop })
    }

    /// One model call, reserved with boardd first and settled after. A 429
    /// is not retried here: it is settled with what the provider said of the
    /// account, and the call is reserved again, which waits in boardd until
    /// the account's block ends, or goes to the next account of the chain.
    async fn call(
        &mut self,
        host: &mut impl ToolHost,
        input: u64,
        output: u64,
    ) -> Result<crate::llm::Completion, NoTurn> {
        // 429s in a row without a reset time: each one blocks the account a
        // little longer, so that a provider that says nothing is not called
        // again at once.
        let mut silent_429s = 0u32;
        loop {
            let grant = match self.reserve(host, input, output).await {
                Asked::Granted(g) => g,
                Asked::Interrupted(why) => return Err(NoTurn::Interrupted(why)),
                Asked::Refused(Refusal::Budget(why)) => return Err(NoTurn::Budget(why)),
                Asked::Refused(Refusal::Board(e)) => return Err(NoTurn::Board(e.to_string())),
            };
            let task = host.task();
            let account = self
                .meter
                .chain()
                .get(grant.account)
                .map(|a| a.name.clone());
            let account = account.unwrap_or_default();
            if grant.waited_ms >= 1000 {
                let waited = std::time::Duration::from_millis(grant.waited_ms);
                let text = format!(
                    "model: waited {} for {account}'s rate limit",
                    crate::llm::retry::plain_duration(waited)
                );
                host.transcript()
                    .write(EntryKind::Lifecycle, None, task, false, &text);
            }
            let (on_retry, mut retries) = transcript::retry_notices();
            let request = CompletionRequest {
                system: self.ctx.system(),
                messages: &self.ctx.messages,
                tools: &self.specs,
                max_tokens: self.max_tokens,
                on_retry: Some(&on_retry),
                retry_rate_limits: false,
            };
            let stop = host.interrupted(None);
            let call = self.provider_for(&grant).complete(request);
            // Interrupted, the call is dropped: no model call is made, or
            // finished, for a round the front end gave up.
            let result = tokio::select! {
                why = stop => Err(why),
                r = host.transcript().write_while(task, &mut retries, call) => Ok(r),
            };
            let none = TokenUsage::default();
            match result {
                Ok(Ok(c)) => {
                    let rate = c.rate.clone();
                    self.meter
                        .settle(grant.id, task, c.usage, rate, false)
                        .await;
                    return Ok(c);
                }
                Ok(Err(e)) if crate::llm::retry::is_rate_limit(&e) => {
                    let mut rate = e.rate().cloned().unwrap_or_default();
                    let now = teamboard_protocol::now_ms();
                    match rate.blocked_until_ms {
                        None => {
                            silent_429s += 1;
                            let wait = 1000i64 << silent_429s.min(6);
                            rate.blocked_until_ms = Some(now + wait);
                        }
                        // `retry-after: 0` is no reason to call again at once.
                        Some(until) => rate.blocked_until_ms = Some(until.max(now + 1000)),
                    }
                    rate.blocked_reason
                        .get_or_insert_with(|| "HTTP 429".to_string());
                    let text = format!(
                        "model: {account} refused the call ({}); boardd holds its calls until it resets",
                        rate.blocked_reason.as_deref().unwrap_or("HTTP 429")
                    );
                    host.transcript()
                        .write(EntryKind::Lifecycle, None, task, false, &text);
                    self.meter
                        .settle(grant.id, task, none, Some(rate), false)
                        .await;
                }
                Ok(Err(e)) => {
                    let rate = e.rate().cloned();
                    self.meter.settle(grant.id, task, none, rate, false).await;
                    return Err(NoTurn::Failed(e));
                }
                Err(why) => {
                    // The request may have reached the provider: it is charged
                    // at its worst case, marked as an estimate.
                    let worst = TokenUsage {
                        input,
                        output,
                        ..TokenUsage::default()
                    };
                    self.meter.settle(grant.id, task, worst, None, true).await;
                    return Err(NoTurn::Interrupted(why));
                }
            }
        }
    }

    /// Runs a turn's tool calls in order, logs each result and puts the results
    /// into the context as the turn that answers it. `Some(why)` when the front
    /// end cut the round short: the tool under way then answers `why`, and the
    /// calls after it are not made.
    pub async fn run_tools(
        &mut self,
        host: &mut impl ToolHost,
        uses: Vec<ToolUse>,
    ) -> Option<String> {
        let mut results = Vec::with_capacity(uses.len());
        let mut stopped = None;
        for (id, name, input) in uses {
            let out = if self.specs.iter().any(|s| s.name == name) {
                let stop = host.interrupted(Some(&name));
                // Dropping a running `bash` call kills everything it started.
                tokio::select! {
                    why = stop => {
                        stopped = Some(why.clone());
                        ToolOutput::error(why)
                    }
                    out = host.run_tool(&name, &input) => out,
                }
            } else {
                let names: Vec<&str> = self.specs.iter().map(|s| s.name.as_str()).collect();
                ToolOutput::error(format!(
                    "unknown tool '{name}'; the tools are: {}",
                    names.join(", ")
                ))
            };
            // The task after the tool: one that ended the task logs without it.
            let task = host.task();
            host.transcript().write(
                EntryKind::ToolResult,
                Some(&name),
                task,
                out.is_error,
                &out.content,
            );
            results.push(Block::ToolResult {
                tool_use_id: id,
                content: out.content,
                is_error: out.is_error,
            });
            if stopped.is_some() {
                break;
            }
        }
        self.ctx.push_tool_results(results);
        stopped
    }

    /// Opens a task just taken: adds `opening` to the conversation, or, `afresh`,
    /// starts a conversation of its own. The one it replaces is saved as a
    /// compaction's is, and `log` says where. A conversation that cannot be
    /// saved is dropped all the same: the transcript has every turn of it, and
    /// carrying it on would cost every call of the task.
    pub fn open_task(
        &mut self,
        log: &mut Transcript,
        task: TaskId,
        opening: &[String],
        afresh: bool,
    ) {
        let before = self.ctx.open_task(opening, afresh);
        if !afresh {
            return;
        }
        // Compaction measures its progress in this conversation's length.
        self.compacted_at = None;
        if before.is_empty() {
            return;
        }
        let archive = self.archives.join(format!(
            "context-{}-before-task-{task}.json",
            teamboard_protocol::now_ms()
        ));
        let text = match context::save_archive(&archive, self.ctx.system(), &before) {
            Ok(()) => format!(
                "context: task #{task} starts afresh; the previous conversation ({} messages) is saved in {}",
                before.len(),
                archive.display()
            ),
            Err(e) => {
                tracing::warn!(error = %e, "cannot save the previous conversation");
                format!(
                    "context: task #{task} starts afresh; the previous conversation ({} messages) \
                     could not be saved ({e}) and is in this transcript only",
                    before.len()
                )
            }
        };
        log.write(EntryKind::Lifecycle, None, Some(task), false, &text);
    }

    /// Puts runtime text (a hint, a note) into the context and the transcript.
    pub fn tell(&mut self, host: &mut impl ToolHost, text: &str) {
        self.ctx.push_user_text(text);
        let task = host.task();
        host.transcript()
            .write(EntryKind::User, None, task, false, text);
    }

    /// The one compaction rule: over budget, the older part is summarised
    /// (`Context::compact`), and a compaction that could not get under the
    /// budget (the identity and the summary alone are too big) is not repeated
    /// every round, only once the context has grown by a few messages.
    ///
    /// `Some(why)` when the front end cut it short. Its model call is reserved
    /// and settled like any other: an interrupted one is charged at its worst
    /// case, since it may have reached the provider.
    async fn compact(&mut self, host: &mut impl ToolHost) -> Option<String> {
        if self
            .compacted_at
            .is_some_and(|len| self.ctx.messages.len() < len + 4)
        {
            return None;
        }
        self.compactions += 1;
        let archive = self.archives.join(format!(
            "context-{}-{}.json",
            teamboard_protocol::now_ms(),
            self.compactions
        ));
        let before = self.ctx.estimate();
        let output = u64::from(context::SUMMARY_MAX_TOKENS);
        let grant = match self.reserve(host, before, output).await {
            Asked::Granted(g) => g,
            Asked::Interrupted(why) => return Some(why),
            Asked::Refused(why) => {
                // The next call is refused the same way and says so.
                self.compacted_at = Some(self.ctx.messages.len());
                tracing::warn!(error = %why, "compaction not made");
                return None;
            }
        };
        let (on_retry, mut retries) = transcript::retry_notices();
        let task = host.task();
        let identity = host.identity();
        let provider = self.chain.get(grant.account).unwrap_or(&self.chain[0]);
        let compacted = self
            .ctx
            .compact(provider, &archive, &identity, Some(&on_retry));
        let stop = host.interrupted(None);
        let done = tokio::select! {
            why = stop => Err(why),
            r = host.transcript().write_while(task, &mut retries, compacted) => Ok(r),
        };
        let done = match done {
            Ok(done) => done,
            Err(why) => {
                let worst = TokenUsage {
                    input: before,
                    output,
                    ..TokenUsage::default()
                };
                self.meter.settle(grant.id, task, worst, None, true).await;
                return Some(why);
            }
        };
        let used = done.as_ref().map_or(TokenUsage::default(), |d| d.usage);
        self.meter.settle(grant.id, task, used, None, false).await;
        match done {
            Ok(done) => {
                host.spent(done.usage).await;
                self.compacted_at = self.ctx.over_budget().then_some(self.ctx.messages.len());
                let text = format!(
                    "compacted: {} messages summarised, about {before} -> {} tokens; full context saved to {}",
                    done.summarised,
                    self.ctx.estimate(),
                    archive.display()
                );
                tracing::info!("{text}");
                let log = host.transcript();
                log.write(EntryKind::Lifecycle, None, task, false, &text);
                log.write(EntryKind::User, None, task, false, &done.put_back);
            }
            Err(e) => {
                self.compacted_at = Some(self.ctx.messages.len());
                tracing::warn!(error = %e, "compaction failed; going on uncompacted");
            }
        }
        None
    }
}
