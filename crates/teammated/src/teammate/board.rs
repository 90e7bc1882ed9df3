//! The native loop's board tools, carried out: the model's view of the board.
//! Their arguments are read by `TeammateCall::read` (the protocol crate), as
//! the lead's and the MCP server's are.

use super::{Outcome, Teammate};
use crate::board_view::{refused, task_lines, task_text};
use crate::tools::ToolOutput;
use teamboard_protocol::board_call::{BoardCall, TeammateCall};
use teamboard_protocol::{ClientError, Member, MessageKind, Task, TaskId, TaskStatus};

impl Teammate {
    /// Carries out a call of one of the native loop's board tools.
    pub(crate) async fn board_tool(&mut self, call: TeammateCall) -> ToolOutput {
        let session = &self.session;
        match call {
            TeammateCall::Board(BoardCall::ListTasks { status }) => words(
                session
                    .call(|c| async move { c.list_tasks(status).await })
                    .await,
                |tasks| task_lines(&tasks),
            ),
            TeammateCall::Board(BoardCall::GetTask { id, .. }) => words(
                session.call(|c| async move { c.get_task(id).await }).await,
                |detail| task_text(&detail, false),
            ),
            TeammateCall::Board(BoardCall::CreateTask(task)) => {
                let task = &task;
                words(
                    session
                        .call(|c| async move { c.add_task(task.clone()).await })
                        .await,
                    |t| match t.proposed_checks.len() {
                        0 => format!("created task #{}: {}", t.id, t.subject),
                        n => format!(
                            "created task #{}: {}; its {n} check(s) are proposed, and run \
                             only once the lead accepts them",
                            t.id, t.subject
                        ),
                    },
                )
            }
            TeammateCall::Board(BoardCall::SendMessage { to, text }) => {
                let (to, text) = (&to, &text);
                let sent = session
                    .call(|c| async move { c.send(to, MessageKind::Message, text, None).await });
                words(sent.await, |m| {
                    format!("sent message #{} to {}", m.id, m.to)
                })
            }
            TeammateCall::Broadcast { text } => {
                let text = &text;
                words(
                    session
                        .call(|c| async move { c.broadcast(text).await })
                        .await,
                    |sent| format!("broadcast to {} teammate(s)", sent.len()),
                )
            }
            TeammateCall::Board(BoardCall::CompleteTask { result, .. }) => {
                Outcome::Complete(result).report(self).await
            }
            TeammateCall::Board(BoardCall::FailTask { reason, .. }) => {
                Outcome::Fail(reason).report(self).await
            }
            TeammateCall::Board(BoardCall::SubmitPlan { plan, .. }) => self.submit_plan(plan).await,
            TeammateCall::ClaimTask { id } => self.claim_task(id).await,
            TeammateCall::RespondShutdown { approve, note } => {
                self.respond_shutdown(approve, note).await
            }
            TeammateCall::ListTeam => self.list_team().await,
            TeammateCall::Idle => ToolOutput::ok(
                "Going idle after this round. You will be woken for new messages or tasks.",
            ),
        }
    }

    async fn claim_task(&mut self, id: TaskId) -> ToolOutput {
        if let Some(h) = &self.held {
            return ToolOutput::error(format!(
                "you already hold task #{}; complete_task or fail_task it before claiming another",
                h.id
            ));
        }
        let claim = match self
            .session
            .call(|c| async move { c.claim_task(id).await })
            .await
        {
            Ok(claim) => claim,
            Err(e) => return refused(e),
        };
        let subject = claim.task.subject.clone();
        // The opening goes into the tool's result: as a user turn of its own it
        // would come between the call and its result, and both APIs refuse a
        // conversation like that.
        match self.hold(claim, "Claimed").await {
            Ok(opening) => ToolOutput::ok(format!(
                "you now hold task #{id}: {subject}\n\n{}",
                opening.join("\n\n")
            )),
            Err(why) => ToolOutput::error(format!("you claimed task #{id}, but {why}")),
        }
    }

    /// The roster, one member a line, with the subjects of the tasks held.
    async fn list_team(&self) -> ToolOutput {
        let members = match self.session.call(|c| async move { c.team().await }).await {
            Ok(members) => members,
            Err(e) => return refused(e),
        };
        if members.is_empty() {
            return ToolOutput::ok("no teammates");
        }
        // A subject makes a held task mean something; without one (the board
        // could not be read) the id alone still says who is busy.
        let held = self
            .session
            .call(|c| async move { c.list_tasks(Some(TaskStatus::InProgress)).await })
            .await
            .unwrap_or_default();
        let lines: Vec<String> = members
            .iter()
            .map(|m| member_line(m, &held, &self.cfg.name))
            .collect();
        ToolOutput::ok(lines.join("\n"))
    }
}

/// boardd's answer in words, or its refusal.
fn words<T>(answer: Result<T, ClientError>, say: impl FnOnce(T) -> String) -> ToolOutput {
    answer.map_or_else(refused, |v| ToolOutput::ok(say(v)))
}

/// `bob [working] role dev, holds #3 parse the config, connected`, with `(you)`
/// after the teammate's own line.
fn member_line(m: &Member, held: &[Task], me: &str) -> String {
    let mut s = format!("{} [{}] role {}", m.name, m.status, m.role);
    if let Some(id) = m.task {
        match held.iter().find(|t| t.id == id) {
            Some(t) => s.push_str(&format!(", holds #{id} {}", t.subject)),
            None => s.push_str(&format!(", holds #{id}")),
        }
    }
    s.push_str(if m.connected {
        ", connected"
    } else {
        ", not connected"
    });
    if m.name == me {
        s.push_str(" (you)");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use teamboard_protocol::{MemberStatus, TokenUsage};

    fn member(name: &str, status: MemberStatus, task: Option<u64>, connected: bool) -> Member {
        Member {
            name: name.into(),
            role: "dev".into(),
            status,
            last_seen: 0,
            pid: Some(7),
            task,
            tokens: TokenUsage::default(),
            cost: Default::default(),
            waiting: None,
            connected,
            joined_at: 0,
            require_plan: false,
            runtime: None,
            model: None,
            tokens_estimated: false,
            liveness: None,
            sandbox: None,
        }
    }

    #[test]
    fn a_member_line_says_status_role_task_and_connection() {
        let held: [Task; 1] = [serde_json::from_value(serde_json::json!({
            "id": 3, "subject": "parse the config", "status": "in_progress",
            "created_at": 0, "updated_at": 0,
        }))
        .expect("a task")];
        let bob = member("bob", MemberStatus::Working, Some(3), true);
        assert_eq!(
            member_line(&bob, &held, "alice"),
            "bob [working] role dev, holds #3 parse the config, connected"
        );
        assert_eq!(
            member_line(&bob, &[], "bob"),
            "bob [working] role dev, holds #3, connected (you)"
        );
        let cat = member("cat", MemberStatus::Offline, None, false);
        assert_eq!(
            member_line(&cat, &held, "alice"),
            "cat [offline] role dev, not connected"
        );
    }
}
