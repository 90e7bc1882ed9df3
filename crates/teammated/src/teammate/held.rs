//! The task the teammate holds: taking a claim, and letting it go.
//!
//! Every claim goes through [`Teammate::hold`]: the wait's auto-claim, the
//! `claim_task` tool, and a claim boardd gives back on reconnecting or at
//! start. Holding starts the claim's heartbeat and opens its worktree
//! (`tree`). From then until the task ends, the claim's fence (its epoch)
//! goes with every request about it, and its tools work in its worktree.

use super::{Intake, Teammate};
use crate::context;
use crate::heartbeat::Heartbeat;
use crate::worktree::TaskTree;
use teamboard_protocol::transcript::EntryKind;
use teamboard_protocol::{Claim, ClientError, ErrorCode, RequestId, TaskId, TaskStatus};
use tokio_util::sync::CancellationToken;

/// How long giving a task back waits for its commands' background jobs to die.
const STOP_BACKGROUND_WITHIN: std::time::Duration = std::time::Duration::from_secs(5);

/// Where the plan of the held claim stands, as far as this teammate knows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlanState {
    /// No plan submitted for this claim.
    None,
    /// Submitted as request `id`; the lead has not decided.
    Pending {
        id: RequestId,
        plan: String,
    },
    Approved {
        id: RequestId,
    },
    Rejected {
        id: RequestId,
        feedback: String,
    },
}

/// The task the teammate holds.
pub struct Held {
    pub id: TaskId,
    /// The claim's fence: boardd refuses a request about the task with another.
    pub epoch: u64,
    pub subject: String,
    pub description: String,
    pub heartbeat: Heartbeat,
    /// The claim needs an approved plan before bash, write_file and edit_file
    /// open: the task or the teammate was created with `--require-plan`.
    pub needs_plan: bool,
    pub plan: PlanState,
    /// The task's git worktree, once opened: where its tools work.
    pub tree: Option<TaskTree>,
    /// Why boardd last refused to end the task (a failed check, a conflict),
    /// for the history if the teammate gives it back without finishing.
    pub refused: Option<String>,
}

impl Held {
    /// Whether the claim's plan still keeps the tools that change things shut.
    pub fn plan_pending(&self) -> bool {
        self.needs_plan && !matches!(self.plan, PlanState::Approved { .. })
    }
}

impl Teammate {
    /// Handles a claim boardd gave back when the session reconnected after a
    /// restart: ours already, or one we never heard of because its answer was lost
    /// in the crash. Between two rounds of a work phase.
    pub(crate) async fn check_adopted(
        &mut self,
        intake: &mut impl Intake,
    ) -> Result<(), crate::error::Error> {
        let Some(id) = self.session.take_adopted() else {
            return Ok(());
        };
        match self.task_id() {
            Some(held) if held == id => Ok(()),
            Some(held) => {
                tracing::warn!(
                    held,
                    adopted = id,
                    "boardd gave back a claim we do not hold"
                );
                Ok(())
            }
            None => self.resume(id, false, intake).await,
        }
    }

    /// Takes over a claim boardd kept for our name across its restart, unless it
    /// has ended since boardd handed it back (the lead cancelled it meanwhile).
    /// `fresh`: between work phases.
    pub(crate) async fn resume(
        &mut self,
        id: TaskId,
        fresh: bool,
        intake: &mut impl Intake,
    ) -> Result<(), crate::error::Error> {
        let detail = self
            .session
            .call(|c| async move { c.get_task(id).await })
            .await?;
        let owner_done = detail.task.landing.as_ref().is_some_and(|l| l.owner_done());
        if owner_done {
            // Completed already, and waiting for a person's review or merged
            // by one: it comes back through `wait_for_work` if it is sent back.
            tracing::info!(task = id, "the claim boardd gave back waits for review");
            return Ok(());
        }
        if detail.task.status != TaskStatus::InProgress
            || detail.task.owner.as_deref() != Some(self.cfg.name.as_str())
        {
            tracing::info!(
                task = id,
                status = %detail.task.status,
                "the claim boardd gave back has ended since; not resuming it"
            );
            return Ok(());
        }
        let claim = Claim {
            epoch: detail.task.epoch,
            task: detail.task,
        };
        if let Err(why) = self.take_up(claim, "Claimed", fresh, intake).await {
            tracing::warn!(task = id, "not resuming: {why}");
        }
        Ok(())
    }

    /// Holds `claim` and hands its opening to the work; `fresh` when taken
    /// between work phases. `Err` as for [`Teammate::hold`].
    pub(crate) async fn take_up(
        &mut self,
        claim: Claim,
        how: &str,
        fresh: bool,
        intake: &mut impl Intake,
    ) -> Result<(), String> {
        let opening = self.hold(claim, how).await?;
        intake.begin_task(self, &opening, fresh);
        for text in &opening {
            self.log(EntryKind::User, None, false, text);
        }
        Ok(())
    }

    /// Takes a claim: starts its heartbeat and opens the task's worktree if it
    /// has one (its tools work there from now on). Returns the text that opens
    /// the task, block by block: the task, the plan note, the worktree, the
    /// previous owner's note. `Err` when the task could not be taken up (its
    /// worktree did not open) and is settled already, with what happened.
    pub(crate) async fn hold(&mut self, claim: Claim, how: &str) -> Result<Vec<String>, String> {
        let task = claim.task;
        let heartbeat = Heartbeat::start(self.session.clone(), task.id, claim.epoch).await;
        self.announce_idle = true;
        let needs_plan = task.require_plan || self.cfg.require_plan;
        // Held before the worktree opens, which may take a while: the heartbeat
        // keeps the lease, and a failure gives the task back like any other.
        self.held = Some(Held {
            id: task.id,
            epoch: claim.epoch,
            subject: task.subject.clone(),
            description: task.description.clone(),
            heartbeat,
            needs_plan,
            plan: PlanState::None,
            tree: None,
            refused: None,
        });
        let tree = self.open_tree(&task, claim.epoch).await?;
        let mut blocks = context::task_opening(how, &task);
        if needs_plan && let Some(task_text) = blocks.first_mut() {
            let note = match self.cfg.runtime.kind {
                crate::runtime::RuntimeKind::Native => crate::prompts::PLAN_FIRST,
                _ => crate::prompts::agent::PLAN_FIRST,
            };
            task_text.push_str(&format!("\n\n{note}"));
        }
        if let Some(tree) = &tree {
            // Right under the task, before a previous owner's note.
            blocks.insert(1, tree.opening());
        }
        if let Some(held) = self.held.as_mut() {
            held.tree = tree;
        }
        Ok(blocks)
    }

    /// Cancelled once the held task's claim is gone; never, when none is held.
    pub(crate) fn lost_token(&self) -> CancellationToken {
        self.held
            .as_ref()
            .map(|h| h.heartbeat.lost.clone())
            .unwrap_or_default()
    }

    /// Why the held task's claim was lost, for the transcript and the model.
    pub(crate) fn why_lost(&self) -> String {
        match &self.held {
            Some(h) => h
                .heartbeat
                .why_lost()
                .unwrap_or_else(|| format!("boardd took #{} back", h.id)),
            None => "the task is no longer held".to_string(),
        }
    }

    /// Records the plan the held claim submitted as request `id`; `who_waits`
    /// for the transcript.
    pub(crate) fn plan_submitted(&mut self, id: RequestId, plan: String, who_waits: &str) {
        let Some(held) = self.held.as_mut() else {
            return;
        };
        held.plan = PlanState::Pending { id, plan };
        let text = format!(
            "plan submitted for #{} (request r{id}); {who_waits} for the lead",
            held.id
        );
        self.lifecycle(&text);
    }

    /// Forgets the held task: its heartbeat stops, and the tools work in the
    /// teammate's own directory again.
    pub(crate) fn drop_held(&mut self) {
        self.held = None;
    }

    /// Forgets a task that did not complete and may now run elsewhere: its
    /// commands' background jobs end too, so that a task's commands never run
    /// under two owners at once.
    pub(crate) fn let_go(&mut self) {
        self.drop_held();
        self.home.guards.kill_all();
    }

    /// Gives the held task back to the board. With a reason, the attempt counts
    /// (the task went wrong); without, it does not (the teammate is leaving).
    pub(crate) async fn release(&mut self, why: Option<&str>) {
        self.give_back(why, None).await;
    }

    /// Gives the held task back without using up its attempt, with `note` in its
    /// history and for its next owner.
    pub(crate) async fn release_with_note(&mut self, note: &str) {
        self.give_back(None, Some((note, true))).await;
    }

    /// [`Teammate::release_with_note`], where a refusal that leaves the claim
    /// with this teammate keeps it held, and says why: the caller may try again
    /// (a model approving a shutdown, which boardd refuses while the task is
    /// held).
    pub(crate) async fn try_release_with_note(&mut self, note: &str) -> Result<(), ClientError> {
        match self.give_back(None, Some((note, true))).await {
            Some((mut held, e)) => {
                held.heartbeat = Heartbeat::start(self.session.clone(), held.id, held.epoch).await;
                self.held = Some(held);
                Err(e)
            }
            None => Ok(()),
        }
    }

    /// [`Teammate::release_with_note`] with a note that says why this teammate
    /// let go (its own setup failed), which is in the history only: the next
    /// owner must not read it as how far the task got.
    pub(crate) async fn release_aside(&mut self, why: &str) {
        self.give_back(None, Some((why, false))).await;
    }

    /// `note`: the text, and whether it is a handoff for the next owner.
    /// Answers the claim, with boardd's refusal, when boardd refused the
    /// release and the claim is still this teammate's (boardd said no to the
    /// request itself, not to a claim that is gone); it is not held any more
    /// either way, and its commands' background jobs are stopped.
    async fn give_back(
        &mut self,
        error: Option<&str>,
        note: Option<(&str, bool)>,
    ) -> Option<(Held, ClientError)> {
        // Out of `held`, its heartbeat stopped, before boardd hears of it: the
        // tools work in the teammate's own directory again.
        let held = self.held.take()?;
        held.heartbeat.stop();
        let (id, epoch) = (held.id, held.epoch);
        // Before boardd hears of it: the moment it does, the task may be claimed
        // by someone else, and its commands must not run under two owners.
        self.stop_background().await;
        let given = match note {
            Some((note, true)) => {
                self.session
                    .call(|c| async move { c.release_task_with_note(id, epoch, note).await })
                    .await
            }
            Some((why, false)) => {
                self.session
                    .call(|c| async move { c.release_task_aside(id, epoch, why).await })
                    .await
            }
            None => {
                self.session
                    .call(|c| async move { c.release_task(id, epoch, error).await })
                    .await
            }
        };
        let e = given.err()?;
        tracing::warn!(task = id, error = %e, "cannot release the task");
        let kept = e
            .code()
            .is_some_and(|c| !matches!(c, ErrorCode::StaleEpoch | ErrorCode::NotFound));
        kept.then_some((held, e))
    }

    /// Gives back a task still held once the work on it has ended, rather than
    /// leave it in progress: with boardd's reason when it refused to end the
    /// task (a failed check, a conflict, a result it would not take), so that
    /// the evidence is in the history, else `otherwise`. The attempt counts.
    pub(crate) async fn give_back_unfinished(&mut self, otherwise: &str) {
        let Some(held) = &self.held else { return };
        let why = match &held.refused {
            Some(r) => format!("the teammate could not complete it: {r}"),
            None => otherwise.to_string(),
        };
        self.release(Some(&why)).await;
    }

    /// After work that failed: the held task goes back, using up an attempt
    /// when `attempt` is set, else with `why` in its history (the teammate's
    /// own setup failed: no handoff); and the lead is told `told`, with `idle`
    /// for what failed when no task was held.
    pub(crate) async fn work_failed(&mut self, why: &str, attempt: bool, told: &str, idle: &str) {
        let what = match self.task_id() {
            Some(id) => format!("released #{id}"),
            None => idle.to_string(),
        };
        if attempt {
            self.release(Some(why)).await;
        } else {
            self.release_aside(why).await;
        }
        let text = format!("{} {what}: {told}", self.cfg.name);
        self.tell_lead(teamboard_protocol::MessageKind::Error, text)
            .await;
    }

    /// Stops the background jobs of the held task's commands and waits until they
    /// are gone.
    pub(crate) async fn stop_background(&self) {
        self.home.guards.stop_all(STOP_BACKGROUND_WITHIN).await;
    }
}
