//! The lead's tools: the board and the team, through its session with boardd.
//! Every refusal goes back to the model as a tool error with boardd's words.
//! Until the person says "start", only the reading tools answer, whatever the
//! model does. Refused rather than left out of the list, so that the model hears
//! why and the tool list (and with it the prompt cache) stays the same all session.

use super::spawn;
use super::turn::Desk;
use crate::board_view::{refused, task_line, task_lines, task_text};
use crate::prompts::lead;
use crate::tools::ToolOutput;
use serde_json::Value;
use teamboard_protocol::board_call::{BoardCall, LeadCall};
use teamboard_protocol::request::NewTask;
use teamboard_protocol::{LEAD, MessageKind};

impl Desk {
    /// Runs one of the lead's tools.
    pub(super) async fn tool(&mut self, name: &str, input: &Value) -> ToolOutput {
        match LeadCall::read(name, input) {
            Ok(call) => self.answer(call).await.map_or_else(|e| e, ToolOutput::ok),
            Err(bad) => ToolOutput::error(bad.0),
        }
    }

    async fn answer(&mut self, call: LeadCall) -> Result<String, ToolOutput> {
        let reads = matches!(
            call,
            LeadCall::Board(BoardCall::ListTasks { .. } | BoardCall::GetTask { .. })
                | LeadCall::ListTeam
        );
        if !reads && !self.started {
            return Err(ToolOutput::error(lead::NOT_STARTED));
        }
        let client = &self.client;
        Ok(match call {
            LeadCall::Board(BoardCall::CreateTask(task)) => self.create_task(task).await?,
            LeadCall::Board(BoardCall::ListTasks { status }) => {
                task_lines(&client.list_tasks(status).await.map_err(refused)?)
            }
            LeadCall::Board(BoardCall::GetTask { id, .. }) => {
                task_text(&client.get_task(id).await.map_err(refused)?, true)
            }
            LeadCall::Board(BoardCall::SendMessage { to, text }) => {
                let sent = client.send(&to, MessageKind::Message, &text, None).await;
                let m = sent.map_err(refused)?;
                format!("sent message {} to {}", m.id, m.to)
            }
            // `LeadCall::read` refuses the tools the lead is not offered.
            LeadCall::Board(other) => {
                let tool = other.tool();
                return Err(ToolOutput::error(format!(
                    "{tool} is not one of the lead's tools"
                )));
            }
            LeadCall::AddDependency(id, on) => {
                task_line(&client.add_dependency(id, on).await.map_err(refused)?)
            }
            LeadCall::CancelTask(id) => {
                let t = client.cancel_task(id).await.map_err(refused)?;
                format!("cancelled {}", task_line(&t))
            }
            LeadCall::SpawnTeammate { name, role } => self.spawn_teammate(name, role).await?,
            LeadCall::ListTeam => self.list_team().await?,
            LeadCall::Broadcast(text) => {
                let sent = client.broadcast(&text).await.map_err(refused)?;
                format!("broadcast to {} teammate(s)", sent.len())
            }
            LeadCall::RequestShutdown(args) => {
                let r = client.request_shutdown(args).await.map_err(refused)?;
                format!(
                    "shutdown request r{} to {} is {}; the answer comes as an event",
                    r.id, r.to, r.state
                )
            }
            LeadCall::ReviewPlan { request, .. }
                if self.cfg.review_plans == super::PlanReviewer::Person =>
            {
                return Err(ToolOutput::error(format!(
                    "plans are the person's to decide in this session (--review-plans \
                     person): leave r{request} to them (`teamctl approve r{request}` or \
                     `teamctl reject r{request}`)"
                )));
            }
            LeadCall::ReviewPlan {
                request,
                approve,
                feedback,
            } => {
                let r = client.review_plan(request, approve, feedback.as_deref());
                let r = r.await.map_err(refused)?;
                format!("plan request r{} from {} is {}", r.id, r.from, r.state)
            }
            LeadCall::AcceptChecks { id, reject } => {
                let t = client.accept_checks(id, reject).await.map_err(refused)?;
                let what = if reject { "dropped" } else { "accepted" };
                format!("{what} the proposed checks: {}", task_line(&t))
            }
        })
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
        let pid = spawn::spawn(&self.cfg, &self.client, &name, &role)
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
                let mut s = format!("{} ({}) {}", m.name, m.role, m.status);
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
}
