//! How a held task is settled after an agent's phase.

use super::*;

impl Teammate {
    /// Settles the held task after the phase. `Some(exit)` when the teammate
    /// should stop.
    pub(super) async fn settle_agent(&mut self, end: AgentEnd) -> Result<Option<Exit>, Error> {
        let kind = self
            .agent
            .as_ref()
            .map(|a| a.spec.kind.into())
            .unwrap_or("agent");
        match end {
            AgentEnd::Done => {
                self.log(EntryKind::Lifecycle, None, false, "work: ended");
            }
            AgentEnd::GaveUp(reason) => {
                // The agent has stopped: the task may go to its next owner.
                match Outcome::Fail(reason.clone()).end(self).await {
                    Ok((task, what)) => self.log(
                        EntryKind::Lifecycle,
                        None,
                        false,
                        &format!("work: ended (the agent gave #{} up: {what})", task.id),
                    ),
                    Err(not) => {
                        self.log(
                            EntryKind::Lifecycle,
                            None,
                            true,
                            &format!(
                                "work: ended (the agent gave the task up, but it could not be failed: {})",
                                not.text
                            ),
                        );
                        if self.held.is_some() {
                            self.release(Some(&reason)).await;
                        }
                    }
                }
            }
            AgentEnd::Stop(exit) => return Ok(Some(exit)),
            AgentEnd::Leave { asked, session } => {
                return Ok(Some(self.leave_for(asked, session).await));
            }
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
                // Not the task's fault: give it back without using up an attempt.
                self.agent_failed(&why, why.clone(), "could not read its messages", false)
                    .await;
                return Ok(None);
            }
            AgentEnd::Failed(why) => {
                let told = format!("{kind} agent: {why}");
                self.agent_failed(&why, told, "could not answer", true)
                    .await;
                return Ok(None);
            }
        }
        // The agent worked: IDLE takes the next task without resting (the rest
        // after failures reads `llm_failures`, which the native loop clears
        // after every model call that worked).
        self.agent_failures = 0;
        self.llm_failures = 0;
        if let Some(held) = &self.held {
            let why = match &held.refused {
                Some(r) => format!("the teammate could not complete it: {r}"),
                None => "the agent ended without a result the board took".to_string(),
            };
            self.release(Some(&why)).await;
        }
        Ok(None)
    }

    /// After an agent that failed: the held task goes back (using up an attempt
    /// when `attempt` is set, else with `why` as a note), the lead is told
    /// (`told`, or `idle` for what failed when no task was held), and the
    /// next phase waits for the failures' rest.
    async fn agent_failed(&mut self, why: &str, told: String, idle: &str, attempt: bool) {
        self.log(
            EntryKind::Lifecycle,
            None,
            true,
            &format!("work: ended ({why})"),
        );
        let what = match self.task_id() {
            Some(id) => format!("released #{id}"),
            None => idle.to_string(),
        };
        if attempt {
            self.release(Some(why)).await;
        } else {
            self.release_with_note(why).await;
        }
        self.tell_lead(
            MessageKind::Error,
            format!("{} {what}: {told}", self.cfg.name),
        )
        .await;
        self.agent_failures += 1;
        self.llm_failures = self.agent_failures;
    }

    /// Leaves at a shutdown request that came while the agent worked: the task
    /// goes back without using up an attempt (the teammate approves for the
    /// agent, which has no such tool), and the request is approved.
    async fn leave_for(
        &mut self,
        asked: crate::teammate::AskedToLeave,
        session: Option<String>,
    ) -> Exit {
        let note = format!(
            "interrupted by a shutdown request from {}; the agent's session {} is kept with {} for this task",
            asked.from,
            session.as_deref().unwrap_or("(none yet)"),
            self.cfg.name
        );
        self.release(None).await;
        let id = asked.id;
        if let Err(e) = self.session.approve_shutdown(id).await {
            tracing::warn!(error = %e, request = id, "cannot answer the shutdown request");
        }
        self.log(EntryKind::Lifecycle, None, false, &note);
        let exit = Exit::ShutdownRequested { by: asked.from };
        self.shutdown = Some(exit.clone());
        exit
    }
}
