//! The lead's tools: the board and the team, through its session with boardd.
//! Every refusal goes back to the model as a tool error with boardd's words.

use super::spawn;
use super::turn::Desk;
use crate::board_view::{refused, task_line};
use crate::tools::ToolOutput;
use serde_json::Value;
use teamboard_protocol::board_call::LeadCall;
use teamboard_protocol::request::{NewTask, ShutdownArgs};
use teamboard_protocol::{LEAD, MessageKind, RequestId, TaskId, TaskStatus};

impl Desk {
    /// Runs one of the lead's tools.
    pub(super) async fn tool(&mut self, name: &str, input: &Value) -> ToolOutput {
        let call = match LeadCall::read(name, input) {
            Ok(call) => call,
            Err(bad) => return ToolOutput::error(bad.0),
        };
        let out = match call {
            LeadCall::CreateTask(task) => self.create_task(task).await,
            LeadCall::AddDependency { id, on } => self
                .client
                .add_dependency(id, on)
                .await
                .map(|t| task_line(&t))
                .map_err(refused),
            LeadCall::ListTasks { status } => self.list_tasks(status).await,
            LeadCall::GetTask { id } => self.get_task(id).await,
            LeadCall::CancelTask { id } => match self.client.cancel_task(id).await {
                Ok(t) => Ok(format!("cancelled {}", task_line(&t))),
                Err(e) => Err(refused(e)),
            },
            LeadCall::SpawnTeammate { name, role } => self.spawn_teammate(name, role).await,
            LeadCall::ListTeam => self.list_team().await,
            LeadCall::SendMessage { to, text } => self.send_message(&to, &text).await,
            LeadCall::Broadcast { text } => match self.client.broadcast(&text).await {
                Ok(sent) => Ok(format!("broadcast to {} teammate(s)", sent.len())),
                Err(e) => Err(refused(e)),
            },
            LeadCall::RequestShutdown { to, reason, force } => {
                self.request_shutdown(ShutdownArgs {
                    to,
                    reason,
                    timeout_ms: None,
                    force,
                })
                .await
            }
            LeadCall::ReviewPlan {
                request,
                approve,
                feedback,
            } => self.review_plan(request, approve, feedback).await,
        };
        out.map_or_else(|e| e, ToolOutput::ok)
    }

    async fn create_task(&self, task: NewTask) -> Result<String, ToolOutput> {
        let t = self.client.add_task(task).await.map_err(refused)?;
        let mut s = format!("created task #{}: {}", t.id, t.subject);
        if !t.blocked_by.is_empty() {
            let ids: Vec<String> = t.blocked_by.iter().map(|b| format!("#{b}")).collect();
            s.push_str(&format!(" (blocked by {})", ids.join(", ")));
        }
        Ok(s)
    }

    async fn list_tasks(&self, status: Option<TaskStatus>) -> Result<String, ToolOutput> {
        let tasks = self.client.list_tasks(status).await.map_err(refused)?;
        if tasks.is_empty() {
            return Ok("no tasks".to_string());
        }
        Ok(tasks.iter().map(task_line).collect::<Vec<_>>().join("\n"))
    }

    async fn get_task(&self, id: TaskId) -> Result<String, ToolOutput> {
        let detail = self.client.get_task(id).await.map_err(refused)?;
        let t = &detail.task;
        let mut s = task_line(t);
        if !t.description.is_empty() {
            s.push_str(&format!("\n\n{}", t.description));
        }
        if let Some(r) = &t.result {
            s.push_str(&format!("\n\nresult: {r}"));
        }
        if let Some(e) = &t.last_error {
            s.push_str(&format!("\n\nlast error: {e}"));
        }
        for p in &detail.plans {
            s.push_str(&format!(
                "\n\nplan request #{} by {} ({}): {}",
                p.id,
                p.from,
                p.state.as_str(),
                p.plan.as_deref().unwrap_or_default()
            ));
            if let Some(f) = &p.feedback {
                s.push_str(&format!("\nfeedback: {f}"));
            }
        }
        s.push_str("\n\nhistory:");
        for e in &detail.history {
            s.push_str(&format!(
                "\n- {} {}: {}",
                e.actor,
                e.kind.as_str(),
                e.detail
            ));
        }
        Ok(s)
    }

    async fn spawn_teammate(&mut self, name: String, role: String) -> Result<String, ToolOutput> {
        // teamctl checks the name too, but a leading '-' would reach it as a flag.
        if name.is_empty()
            || name.starts_with('-')
            || name == LEAD
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err(ToolOutput::error(format!(
                "'{name}' cannot be a teammate's name: use letters, digits, '-' and '_', \
                 not starting with '-', and not '{LEAD}'"
            )));
        }
        if role.is_empty() || role.starts_with('-') {
            return Err(ToolOutput::error(
                "the role must be a word such as dev or tester",
            ));
        }
        let pid = spawn::spawn(&self.cfg, &name, &role)
            .await
            .map_err(|e| ToolOutput::error(format!("the spawn failed: {e}")))?;
        Ok(format!(
            "spawned {name} (role {role}, pid {pid}); it is connected and claims ready tasks on its own"
        ))
    }

    async fn list_team(&self) -> Result<String, ToolOutput> {
        let team = self.client.team().await.map_err(refused)?;
        if team.is_empty() {
            return Ok("no teammates yet".to_string());
        }
        Ok(team
            .iter()
            .map(|m| {
                let mut s = format!("{} ({}) {}", m.name, m.role, m.status.as_str());
                if !m.connected {
                    s.push_str(", disconnected");
                }
                if let Some(t) = m.task {
                    s.push_str(&format!(", on #{t}"));
                }
                s.push_str(&format!(", {} tokens", m.tokens.total()));
                s
            })
            .collect::<Vec<_>>()
            .join("\n"))
    }

    async fn send_message(&self, to: &str, content: &str) -> Result<String, ToolOutput> {
        let m = self
            .client
            .send(to, MessageKind::Message, content, None)
            .await
            .map_err(refused)?;
        Ok(format!("sent message {} to {}", m.id, m.to))
    }

    async fn request_shutdown(&self, args: ShutdownArgs) -> Result<String, ToolOutput> {
        let r = self.client.request_shutdown(args).await.map_err(refused)?;
        Ok(format!(
            "shutdown request #{} to {} is {}; the answer comes as an event",
            r.id,
            r.to,
            r.state.as_str()
        ))
    }

    async fn review_plan(
        &self,
        request: RequestId,
        approve: bool,
        feedback: Option<String>,
    ) -> Result<String, ToolOutput> {
        let feedback = feedback.as_deref();
        let r = self
            .client
            .review_plan(request, approve, feedback)
            .await
            .map_err(refused)?;
        Ok(format!(
            "plan request #{} from {} is {}",
            r.id,
            r.from,
            r.state.as_str()
        ))
    }
}
