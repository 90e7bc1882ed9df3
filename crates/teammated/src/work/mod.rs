//! WORK: the model loop with tools.
//!
//! Each round asks the model for its next turn and runs the tools it asks for. Before
//! every round the runtime feeds in new inbox messages, so the model never polls. The
//! phase ends on a final answer, the `idle` tool, the round limit, an answer cut off
//! at the output limit too often, an LLM error that retries could not fix, a lost
//! claim, or a shutdown request; whatever happens, a task still held is completed,
//! failed or released, never left in progress.

pub(crate) mod agent;
mod board_tools;
mod protocol_tools;

use crate::board_text;
use crate::error::Error;
use crate::llm::{Block, CompletionRequest, LlmError, StopReason};
use crate::session::is_claim_gone;
use crate::teammate::{Exit, Teammate};
use crate::tools::{self, ToolOutput};
use crate::transcript;
use teamboard_protocol::transcript::EntryKind;
use teamboard_protocol::{ClientError, MemberStatus, MessageKind, Task, TaskStatus};

/// How long giving a task back waits for its commands' background jobs to die.
const STOP_BACKGROUND_WITHIN: std::time::Duration = std::time::Duration::from_secs(5);

/// How a work phase ended.
#[derive(Debug)]
enum End {
    /// The model answered without asking for tools; its text.
    Final(String),
    /// The model called `idle`; the text of its last turn.
    Idle(String),
    /// The model declined (`stop_reason` "refusal" and the like).
    Refused(String),
    /// `--max-rounds` tool rounds passed.
    OutOfRounds,
    /// The answer was cut off at the output limit this many times in a row.
    CutOff(u32),
    /// The model could not be reached, even after retries.
    LlmFailed(LlmError),
    /// boardd took the claim back (lease expired, cancelled by the lead): the
    /// held task's heartbeat says which and why.
    Lost,
    /// A shutdown request or a signal.
    Stop(Exit),
}

/// How a held task ends.
pub(crate) enum Outcome {
    Complete(String),
    Fail(String),
}

/// What the model is told after an answer cut off at the output limit. The cut
/// turn stays in the context as it was, so the model sees its own partial text and
/// this right after it.
const OUTPUT_MAX_TOKENS_HINT: &str = "[Runtime] Your last answer was cut off at the output \
     limit. Continue exactly where it stopped, without repeating anything: the parts are \
     joined into one answer. If there is much left, finish in smaller steps.";

/// How many times in a row a cut-off answer is continued before the task fails.
/// The parts of a cut answer are joined into one; a model that needs more than this
/// is better served by a higher `--max-tokens` than by rounds of fragments, and its
/// cut text must never be recorded as a result.
const MAX_CONTINUATIONS: u32 = 3;

impl Teammate {
    /// Runs one WORK phase. `Some(exit)` when the teammate should stop afterwards.
    pub(crate) async fn work(&mut self) -> Result<Option<Exit>, Error> {
        if self.agent.is_some() {
            return self.work_with_agent().await;
        }
        self.set_status(MemberStatus::Working).await?;
        self.idle_requested = false;
        self.log(EntryKind::Lifecycle, None, false, "work: started");
        let mut rounds = 0u32;
        // The text of the answer cut off so far, and how many times it was cut.
        let (mut cut, mut cuts) = (String::new(), 0u32);
        let cancel = self.cancel.clone();
        let end = loop {
            if let Some(exit) = self.leave_if_free().await {
                break End::Stop(exit);
            }
            if let Some(exit) = self.shutdown.clone() {
                break End::Stop(exit);
            }
            if self.cancel.is_cancelled() {
                break End::Stop(Exit::Terminated);
            }
            self.check_adopted().await?;
            if self.lost_token().is_cancelled() {
                break End::Lost;
            }
            let inbox = self
                .session
                .call(|c| async move { c.inbox().await })
                .await?;
            if !inbox.is_empty()
                && let Some(exit) = self.take_messages(inbox).await?
            {
                break End::Stop(exit);
            }
            if rounds >= self.cfg.max_rounds {
                break End::OutOfRounds;
            }
            let lost = self.lost_token();
            if self.ctx.over_budget() {
                tokio::select! {
                    _ = lost.cancelled() => break End::Lost,
                    () = self.compact() => {}
                }
            }
            let system = self.ctx.system();
            let (on_retry, mut retries) = transcript::retry_notices();
            let request = CompletionRequest {
                system: &system,
                messages: &self.ctx.messages,
                tools: &self.specs,
                max_tokens: self.cfg.provider.max_tokens,
                on_retry: Some(&on_retry),
            };
            let task = self.task_id();
            let call = self.provider.complete(request);
            // A claim lost meanwhile aborts the call: no model call is made, or
            // finished, for a task that is no longer ours.
            let completion = tokio::select! {
                _ = cancel.cancelled() => break End::Stop(Exit::Terminated),
                _ = lost.cancelled() => break End::Lost,
                r = self.transcript.write_while(task, &mut retries, call) => r,
            };
            let completion = match completion {
                Ok(c) => c,
                Err(e) => {
                    tracing::error!(error = %e, "the model call failed");
                    break End::LlmFailed(e);
                }
            };
            self.llm_failures = 0;
            self.record_usage(completion.usage).await;
            let (text, uses) = self
                .transcript
                .record_turn(self.task_id(), &completion.content);
            let stop = completion.stop.clone();
            self.ctx.push_assistant(completion.content);
            if uses.is_empty() {
                // A continuation goes on where the cut text stopped, mid-word maybe,
                // so the parts are joined as they are.
                let text = std::mem::take(&mut cut) + &text;
                match stop {
                    StopReason::MaxTokens => {
                        cuts += 1;
                        if cuts > MAX_CONTINUATIONS {
                            break End::CutOff(cuts);
                        }
                        cut = text;
                        self.ctx.push_user_text(OUTPUT_MAX_TOKENS_HINT);
                        self.log(EntryKind::User, None, false, OUTPUT_MAX_TOKENS_HINT);
                        rounds += 1;
                        continue;
                    }
                    StopReason::Other(why) if why == "refusal" => {
                        break End::Refused(if text.is_empty() { why } else { text });
                    }
                    _ => break End::Final(text),
                }
            }
            // A turn that calls tools is not an answer: text cut before it was only
            // what the model said on the way.
            (cut, cuts) = (String::new(), 0);
            let mut results = Vec::with_capacity(uses.len());
            let mut stopped = None;
            for (id, name, input) in uses {
                // submit_plan's wait watches the claim itself: its parked call
                // must not be dropped (see `wait_for_decision`). The next round
                // sees the lost claim.
                let lost = if name == "submit_plan" {
                    tokio_util::sync::CancellationToken::new()
                } else {
                    self.lost_token()
                };
                let out = tokio::select! {
                    // Dropping a running `bash` call kills everything it started.
                    _ = cancel.cancelled() => {
                        stopped = Some(End::Stop(Exit::Terminated));
                        ToolOutput::error("stopped: the teammate is shutting down")
                    }
                    _ = lost.cancelled() => {
                        stopped = Some(End::Lost);
                        ToolOutput::error("stopped: the claim on the task is gone")
                    }
                    out = self.run_tool(&name, &input) => out,
                };
                self.log(
                    EntryKind::ToolResult,
                    Some(&name),
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
            rounds += 1;
            if let Some(end) = stopped {
                break end;
            }
            if self.idle_requested {
                break End::Idle(text);
            }
        };
        end.settle(self).await
    }

    /// Cancelled once the held task's claim is gone; never, when none is held.
    fn lost_token(&self) -> tokio_util::sync::CancellationToken {
        self.held
            .as_ref()
            .map(|h| h.heartbeat.lost.clone())
            .unwrap_or_default()
    }

    /// Why the held task's claim was lost, for the transcript and the model.
    fn why_lost(&self) -> String {
        match &self.held {
            Some(h) => h
                .heartbeat
                .why_lost()
                .unwrap_or_else(|| format!("boardd took #{} back", h.id)),
            None => "the task is no longer held".to_string(),
        }
    }

    /// Forgets the held task: its heartbeat stops, the identity says so and the
    /// tools work in the teammate's own directory again.
    pub(crate) fn drop_held(&mut self) {
        self.held = None;
        self.ctx.identity.task = None;
        self.ctx.identity.worktree = None;
        self.local = self.home.clone();
    }

    /// Forgets a task that did not complete and may now run elsewhere: its
    /// commands' background jobs end too, so that a task's commands never run
    /// under two owners at once.
    pub(crate) fn let_go(&mut self) {
        self.drop_held();
        self.local.guards.kill_all();
    }

    /// Gives the held task back to the board. With a reason, the attempt counts
    /// (the task went wrong); without, it does not (the teammate is leaving).
    pub(crate) async fn release(&mut self, why: Option<&str>) {
        self.give_back(why, None).await;
    }

    /// Gives the held task back without using up its attempt, with `note` in its
    /// history.
    async fn release_with_note(&mut self, note: &str) {
        self.give_back(None, Some(note)).await;
    }

    async fn give_back(&mut self, error: Option<&str>, note: Option<&str>) {
        let Some(held) = &self.held else { return };
        let (id, epoch) = (held.id, held.epoch);
        self.drop_held();
        // Before boardd hears of it: the moment it does, the task may be claimed
        // by someone else, and its commands must not run under two owners.
        self.stop_background().await;
        let given = match note {
            Some(note) => {
                self.session
                    .call(|c| async move { c.release_task_with_note(id, epoch, note).await })
                    .await
            }
            None => {
                self.session
                    .call(|c| async move { c.release_task(id, epoch, error).await })
                    .await
            }
        };
        if let Err(e) = given {
            tracing::warn!(task = id, error = %e, "cannot release the task");
        }
    }

    /// Stops the background jobs of the held task's commands and waits until they
    /// are gone.
    pub(crate) async fn stop_background(&self) {
        self.local.guards.stop_all(STOP_BACKGROUND_WITHIN).await;
    }

    async fn record_usage(&self, usage: teamboard_protocol::TokenUsage) {
        if usage.total() == 0 {
            return;
        }
        let task = self.task_id();
        if let Err(e) = self
            .session
            .call(|c| async move { c.record_usage(task, usage).await })
            .await
        {
            tracing::warn!(error = %e, "cannot record token use");
        }
    }

    async fn compact(&mut self) {
        // A compaction that could not get under the budget (the identity and summary
        // alone are too big) is not repeated every round, only as the context grows.
        if self
            .compacted_at
            .is_some_and(|len| self.ctx.messages.len() < len + 4)
        {
            return;
        }
        self.compactions += 1;
        let dir = teamboard_protocol::transcript::teammate_dir(
            &self.cfg.state_dir,
            &self.cfg.team,
            &self.cfg.name,
        );
        let archive = dir.join(format!(
            "context-{}-{}.json",
            teamboard_protocol::now_ms(),
            self.compactions
        ));
        let before = self.ctx.estimate();
        let (on_retry, mut retries) = transcript::retry_notices();
        let task = self.task_id();
        let compacted = self.ctx.compact(&self.provider, &archive, Some(&on_retry));
        match self
            .transcript
            .write_while(task, &mut retries, compacted)
            .await
        {
            Ok(done) => {
                self.record_usage(done.usage).await;
                self.compacted_at = self.ctx.over_budget().then_some(self.ctx.messages.len());
                let text = format!(
                    "compacted: {} messages summarised, about {before} -> {} tokens; full context saved to {}",
                    done.summarised,
                    self.ctx.estimate(),
                    archive.display()
                );
                tracing::info!("{text}");
                self.log(EntryKind::Lifecycle, None, false, &text);
                self.log(EntryKind::User, None, false, &done.put_back);
            }
            Err(e) => {
                self.compacted_at = Some(self.ctx.messages.len());
                tracing::warn!(error = %e, "compaction failed; going on uncompacted");
            }
        }
    }

    async fn run_tool(&mut self, name: &str, input: &serde_json::Value) -> ToolOutput {
        if let Some(refused) = self.plan_gate(name) {
            return refused;
        }
        if let Some(out) = tools::run_local(&self.local, name, input).await {
            return out;
        }
        match self.board_tool(name, input).await {
            Some(out) => out,
            None => ToolOutput::error(format!(
                "unknown tool '{name}'; the tools are: {}",
                self.specs
                    .iter()
                    .map(|s| s.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
    }
}

impl End {
    /// Logs how the work phase ended and settles the held task accordingly.
    /// `Some(exit)` when the teammate should stop afterwards.
    async fn settle(self, t: &mut Teammate) -> Result<Option<Exit>, Error> {
        let end = self;
        let how = match &end {
            End::Final(_) => "final answer".to_string(),
            End::Idle(_) => "the model called idle".to_string(),
            End::Refused(_) => "the model refused".to_string(),
            End::OutOfRounds => format!("{} tool rounds used up", t.cfg.max_rounds),
            End::CutOff(n) => format!("answer cut off at the output limit {n} times"),
            End::LlmFailed(e) => format!("LLM error: {e}"),
            End::Lost => format!("claim lost: {}", t.why_lost()),
            End::Stop(exit) => format!("stopping: {exit}"),
        };
        t.log(
            EntryKind::Lifecycle,
            None,
            false,
            &format!("work: ended ({how})"),
        );
        match end {
            End::Final(text) | End::Idle(text) => {
                if t.held.is_some() {
                    let result = if text.trim().is_empty() {
                        "(the model gave no result text)".to_string()
                    } else {
                        text
                    };
                    Outcome::Complete(result).report(t).await;
                }
            }
            End::Refused(why) => {
                if t.held.is_some() {
                    Outcome::Fail(format!("the model declined: {why}"))
                        .report(t)
                        .await;
                }
            }
            End::OutOfRounds => {
                if t.held.is_some() {
                    let reason = format!(
                        "stopped after {} tool rounds without finishing (--max-rounds)",
                        t.cfg.max_rounds
                    );
                    Outcome::Fail(reason).report(t).await;
                }
            }
            End::CutOff(n) => {
                if t.held.is_some() {
                    let reason = format!(
                        "the model's answer was cut off at the output limit (--max-tokens {}) \
                         {n} times in a row; raise --max-tokens, or split the task so that \
                         each answer is shorter",
                        t.cfg.provider.max_tokens
                    );
                    Outcome::Fail(reason).report(t).await;
                }
            }
            End::LlmFailed(error) => {
                let fatal = error.is_configuration();
                let what = match t.task_id() {
                    Some(id) => format!("released #{id}"),
                    None => "could not answer".to_string(),
                };
                if t.held.is_some() {
                    // A bad key or model name is not the task's fault: give it back
                    // without using up one of its attempts, saying why in its history.
                    let why = format!("LLM error: {error}");
                    if fatal {
                        t.release_with_note(&why).await;
                    } else {
                        t.release(Some(&why)).await;
                    }
                }
                t.tell_lead(
                    MessageKind::Error,
                    format!("{} {what}: LLM error: {error}", t.cfg.name),
                )
                .await;
                if fatal {
                    return Err(Error::Provider(error));
                }
                t.llm_failures += 1;
            }
            End::Lost => {
                let why = t.why_lost();
                t.let_go();
                t.ctx.push_user_text(format!(
                    "[Runtime] Your claim on the task is gone ({why}). Stop working on it."
                ));
            }
            // `exit()` gives a held task back, without using up an attempt.
            End::Stop(e) => return Ok(Some(e)),
        }
        if let Some(held) = &t.held {
            // boardd refused to end the task (a failed check, a conflict, a result
            // it would not take): give it back rather than leave it in progress,
            // with boardd's reason, so that the evidence is in the history.
            let why = match &held.refused {
                Some(r) => format!("the teammate could not complete it: {r}"),
                None => "the teammate could not report its result".to_string(),
            };
            t.release(Some(&why)).await;
        }
        Ok(None)
    }
}

/// Why the held task could not be ended: what to tell the model.
pub(crate) struct NotEnded {
    pub text: String,
}

impl NotEnded {
    fn new(text: impl Into<String>) -> NotEnded {
        NotEnded { text: text.into() }
    }
}

impl Outcome {
    /// Ends the held task and tells the lead. Returns what to tell the model; see
    /// [`Outcome::end`].
    pub(crate) async fn report(self, t: &mut Teammate) -> ToolOutput {
        match self.end(t).await {
            Ok((task, what)) => ToolOutput::ok(format!("task #{} {what}", task.id)),
            Err(not) => ToolOutput::error(not.text),
        }
    }

    /// Ends the held task and tells the lead: the task as boardd ended it, and how
    /// in words. The claim is kept when boardd refuses the request itself, so the
    /// model can try again; it is dropped only once boardd has ended it or says it
    /// is gone.
    pub(crate) async fn end(self, t: &mut Teammate) -> Result<(Task, &'static str), NotEnded> {
        let outcome = self;
        let Some(held) = &t.held else {
            return Err(NotEnded::new("you hold no task; claim one first"));
        };
        let (id, epoch, subject) = (held.id, held.epoch, held.subject.clone());
        let (completing, text) = match &outcome {
            Outcome::Complete(r) => (true, board_text::cap(r)),
            Outcome::Fail(r) => (false, board_text::cap(r)),
        };
        let text = &text;
        if !completing {
            // A failed attempt may go to someone else at once; see `give_back`.
            t.stop_background().await;
        }
        let answer = if completing {
            t.session
                .call(|c| async move { c.complete_task(id, epoch, text).await })
                .await
        } else {
            t.session
                .call(|c| async move { c.fail_task(id, epoch, text).await })
                .await
        };
        let task = match answer {
            Ok(task) => task,
            Err(e) if is_claim_gone(&e) => {
                // If our first request went through and only its answer was lost
                // with the connection, the repeat is refused: the board knows.
                let now = t
                    .session
                    .call(|c| async move { c.get_task(id).await })
                    .await
                    .ok()
                    .map(|d| d.task);
                let me = t.cfg.name.as_str();
                match now {
                    Some(t)
                        if t.epoch == epoch
                            && t.status != TaskStatus::InProgress
                            && (!completing
                                || (t.status == TaskStatus::Completed
                                    && t.owner.as_deref() == Some(me))) =>
                    {
                        t
                    }
                    _ => {
                        t.let_go();
                        tracing::warn!(task = id, error = %e, "the claim is gone");
                        return Err(NotEnded::new(format!(
                            "your claim on task #{id} is gone ({e}); stop working on it"
                        )));
                    }
                }
            }
            Err(e) => {
                // The completion gate: a check failed or the branch conflicts. The
                // claim stays ours; the heartbeat kept it while the checks ran.
                if let ClientError::Server(body) = &e
                    && let Some(text) = crate::worktree::text::refused_completion(
                        body.code,
                        &body.message,
                        t.held.as_ref().and_then(|h| h.tree.as_ref()),
                    )
                {
                    tracing::info!(
                        task = id,
                        code = %body.code,
                        "the completion gate refused"
                    );
                    if let Some(h) = t.held.as_mut() {
                        h.refused = Some(body.message.clone());
                    }
                    return Err(NotEnded::new(text));
                }
                tracing::warn!(task = id, error = %e, "boardd refused to end the task");
                if let Some(h) = t.held.as_mut() {
                    h.refused = Some(e.to_string());
                }
                return Err(NotEnded::new(format!("boardd refused: {e}")));
            }
        };
        if completing {
            t.drop_held();
        } else {
            t.let_go();
        }
        let what = match (completing, task.status) {
            (true, _) => "completed",
            (false, TaskStatus::Failed) => "failed for good",
            (false, _) => "failed (it will be retried)",
        };
        // Completed or failed, the lead gets the outcome as a `result`.
        t.tell_lead(
            MessageKind::Result,
            format!("#{id} {subject}: {what} by {}\n{text}", t.cfg.name),
        )
        .await;
        Ok((task, what))
    }
}
