//! WORK with teammated's own model loop: rounds of the model and its tools on
//! the held task, with new inbox messages fed in before every round, so the
//! model never polls.
//!
//! The phase ends on a final answer, the `idle` tool, the round limit, an
//! answer cut off at the output limit too often, an LLM error that retries
//! could not fix, a lost claim, or a shutdown request. The model loop is
//! `crate::model_loop`'s; the front end here is [`Hands`]: the teammate's local
//! tools in its working directory and its board tools, behind the plan gate.

use crate::error::Error;
use crate::llm::{LlmError, StopReason};
use crate::model_loop::{ModelLoop, NoTurn, ToolHost};
use crate::teammate::{Exit, Intake, Outcome, Teammate};
use crate::tools::{self, ToolOutput};
use crate::transcript::Transcript;
use serde_json::Value;
use teamboard_protocol::board_call::TeammateCall;
use teamboard_protocol::{MemberStatus, TaskId, TokenUsage, Work};
use tokio_util::sync::CancellationToken;

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
    /// No call was made: a budget had no room for it (boardd's words), or
    /// boardd could not be asked.
    NoCall(String),
    /// boardd took the claim back (lease expired, cancelled by the lead): the
    /// held task's heartbeat says which and why.
    Lost,
    /// A shutdown request or a signal.
    Stop(Exit),
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

/// The native loop's front end for one round: the teammate's tools.
struct Hands<'a> {
    t: &'a mut Teammate,
    /// Set by the `idle` tool: the phase ends after this round.
    idle: bool,
}

/// Runs one WORK phase. `Some(exit)` when the teammate should stop afterwards.
pub(crate) async fn work(model: &mut ModelLoop, t: &mut Teammate) -> Result<Option<Exit>, Error> {
    t.set_status(MemberStatus::Working).await?;
    t.lifecycle("work: started");
    let mut rounds = 0u32;
    // The text of the answer cut off so far, and how many times it was cut.
    let (mut cut, mut cuts) = (String::new(), 0u32);
    let end = loop {
        if let Some(exit) = t.leave_if_free().await {
            break End::Stop(exit);
        }
        if let Some(exit) = t.shutdown() {
            break End::Stop(exit);
        }
        if t.cancel().is_cancelled() {
            break End::Stop(Exit::Terminated);
        }
        t.check_adopted(&mut Feed(model)).await?;
        if t.lost_token().is_cancelled() {
            break End::Lost;
        }
        let inbox = t.session().call(|c| async move { c.inbox().await }).await?;
        if !inbox.is_empty()
            && let Some(exit) = t.take_messages(inbox, &mut Feed(model)).await?
        {
            break End::Stop(exit);
        }
        if rounds >= t.cfg().max_rounds {
            break End::OutOfRounds;
        }
        let mut hands = Hands {
            t: &mut *t,
            idle: false,
        };
        let turn = match model.ask(&mut hands).await {
            Ok(turn) => turn,
            Err(NoTurn::Interrupted(_)) => break stopped(t),
            Err(NoTurn::Failed(e)) => {
                tracing::error!(error = %e, "the model call failed");
                break End::LlmFailed(e);
            }
            Err(NoTurn::Budget(why)) => {
                tracing::warn!(%why, "no model call: budget exhausted");
                break End::NoCall(format!("budget exhausted: {why}"));
            }
            Err(NoTurn::Board(why)) => break End::NoCall(why),
        };
        hands.t.worked();
        if turn.uses.is_empty() {
            // A continuation goes on where the cut text stopped, mid-word maybe,
            // so the parts are joined as they are.
            let text = std::mem::take(&mut cut) + &turn.text;
            match turn.stop {
                StopReason::MaxTokens => {
                    cuts += 1;
                    if cuts > MAX_CONTINUATIONS {
                        break End::CutOff(cuts);
                    }
                    cut = text;
                    model.tell(&mut hands, OUTPUT_MAX_TOKENS_HINT);
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
        let interrupted = model.run_tools(&mut hands, turn.uses).await;
        let idle = hands.idle;
        rounds += 1;
        if interrupted.is_some() {
            break stopped(t);
        }
        if idle {
            break End::Idle(turn.text);
        }
    };
    end.settle(t, model).await
}

/// The end of a round the front end cut short: a signal, or the lost claim.
fn stopped(t: &Teammate) -> End {
    if t.cancel().is_cancelled() {
        End::Stop(Exit::Terminated)
    } else {
        End::Lost
    }
}

impl ToolHost for Hands<'_> {
    fn task(&self) -> Option<TaskId> {
        self.t.task_id()
    }

    fn transcript(&mut self) -> &mut Transcript {
        self.t.transcript()
    }

    fn identity(&self) -> crate::context::Identity {
        self.t.identity()
    }

    fn interrupted(&self, tool: Option<&str>) -> impl Future<Output = String> + Send + 'static {
        let cancel = self.t.cancel().clone();
        // submit_plan's wait watches the claim itself: its parked call must not
        // be dropped (see `wait_for_decision`). The next round sees the lost claim.
        let lost = match tool {
            Some("submit_plan") => CancellationToken::new(),
            _ => self.t.lost_token(),
        };
        async move {
            tokio::select! {
                () = cancel.cancelled() => "stopped: the teammate is shutting down".to_string(),
                () = lost.cancelled() => "stopped: the claim on the task is gone".to_string(),
            }
        }
    }

    /// Nothing to add: the model loop settled the call with boardd, which
    /// charged it to the member and its task.
    async fn spent(&mut self, _usage: TokenUsage) {}

    async fn run_tool(&mut self, name: &str, input: &Value) -> ToolOutput {
        if let Some(refused) = self.t.plan_gate(name) {
            return refused;
        }
        if let Some(out) = tools::run_local(&self.t.env(), name, input).await {
            return out;
        }
        match TeammateCall::read(name, input) {
            Ok(call) => {
                self.idle |= call == TeammateCall::Idle;
                self.t.board_tool(call).await
            }
            Err(bad) => ToolOutput::error(bad.0),
        }
    }
}

/// The native loop's context, which takes a task and messages at once.
pub(super) struct Feed<'a>(pub &'a mut ModelLoop);

impl Intake for Feed<'_> {
    fn begin_task(&mut self, t: &mut Teammate, opening: &[String], fresh: bool) {
        let afresh = fresh && !t.cfg().carry_context;
        if let Some(task) = t.task_id() {
            self.0.open_task(t.transcript(), task, opening, afresh);
        }
    }

    fn hear(&mut self, texts: &[String], _ordinary: &[u64]) -> bool {
        for text in texts {
            self.0.ctx.push_user_text(text.clone());
        }
        false
    }

    fn stashed(&mut self) -> Option<Work> {
        None
    }
}

impl End {
    /// Logs how the work phase ended and settles the held task accordingly.
    /// `Some(exit)` when the teammate should stop afterwards.
    async fn settle(self, t: &mut Teammate, model: &mut ModelLoop) -> Result<Option<Exit>, Error> {
        let end = self;
        let how = match &end {
            End::Final(_) => "final answer".to_string(),
            End::Idle(_) => "the model called idle".to_string(),
            End::Refused(_) => "the model refused".to_string(),
            End::OutOfRounds => format!("{} tool rounds used up", t.cfg().max_rounds),
            End::CutOff(n) => format!("answer cut off at the output limit {n} times"),
            End::LlmFailed(e) => format!("LLM error: {e}"),
            End::NoCall(why) => format!("no model call: {why}"),
            End::Lost => format!("claim lost: {}", t.why_lost()),
            End::Stop(exit) => format!("stopping: {exit}"),
        };
        t.lifecycle(&format!("work: ended ({how})"));
        let held = t.held().is_some();
        match end {
            End::Final(text) | End::Idle(text) if held => {
                let result = if text.trim().is_empty() {
                    "(the model gave no result text)".to_string()
                } else {
                    text
                };
                Outcome::Complete(result).report(t).await;
            }
            End::Refused(why) if held => {
                Outcome::Fail(format!("the model declined: {why}"))
                    .report(t)
                    .await;
            }
            End::OutOfRounds if held => {
                let reason = format!(
                    "stopped after {} tool rounds without finishing (--max-rounds)",
                    t.cfg().max_rounds
                );
                Outcome::Fail(reason).report(t).await;
            }
            End::CutOff(n) if held => {
                let reason = format!(
                    "the model's answer was cut off at the output limit (--max-tokens {}) \
                     {n} times in a row; raise --max-tokens, or split the task so that \
                     each answer is shorter",
                    t.cfg().provider.max_tokens
                );
                Outcome::Fail(reason).report(t).await;
            }
            End::LlmFailed(error) => {
                // A bad key or model name is not the task's fault: give it back
                // without using up one of its attempts, saying why in its history.
                let fatal = error.is_configuration();
                let why = format!("LLM error: {error}");
                t.work_failed(&why, !fatal, &why, "could not answer").await;
                if fatal {
                    return Err(Error::Provider(error));
                }
                t.failed();
            }
            End::NoCall(why) => {
                // Not the task's fault: it goes back without using up an
                // attempt, saying which limit ran out; boardd tells the lead
                // once and hands this teammate no task until there is room.
                t.release_with_note(&why).await;
                model.ctx.push_user_text(format!(
                    "[Runtime] The task was given back without finishing: {why}."
                ));
            }
            End::Lost => {
                let why = t.why_lost();
                t.let_go();
                model.ctx.push_user_text(format!(
                    "[Runtime] Your claim on the task is gone ({why}). Stop working on it."
                ));
            }
            // `exit()` gives a held task back, without using up an attempt.
            End::Stop(e) => return Ok(Some(e)),
            // Nothing held, nothing to settle.
            _ => {}
        }
        t.give_back_unfinished("the teammate could not report its result")
            .await;
        Ok(None)
    }
}
