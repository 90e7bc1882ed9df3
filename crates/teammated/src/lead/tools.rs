//! The lead's tools: the board and the team, through its session with boardd.
//! Every refusal goes back to the model as a tool error with boardd's words.

use super::spawn;
use super::turn::Lead;
use crate::board_view::{id_arg, ids_arg, new_task_arg, refused, task_line};
use crate::tools::{ToolOutput, str_arg};
use serde_json::Value;
use teamboard_protocol::request::ShutdownArgs;
use teamboard_protocol::{LEAD, MessageKind, TaskStatus};

impl Lead {
    /// Runs one of the lead's tools.
    pub(super) async fn run_tool(&mut self, name: &str, input: &Value) -> ToolOutput {
        let out = match name {
            "create_task" => self.create_task(input).await,
            "add_dependency" => self.add_dependency(input).await,
            "list_tasks" => self.list_tasks(input).await,
            "get_task" => self.get_task(input).await,
            "cancel_task" => match id_arg(input) {
                Ok(id) => match self.client.cancel_task(id).await {
                    Ok(t) => Ok(format!("cancelled {}", task_line(&t))),
                    Err(e) => Err(refused(e)),
                },
                Err(e) => Err(e),
            },
            "spawn_teammate" => self.spawn_teammate(input).await,
            "list_team" => self.list_team().await,
            "send_message" => self.send_message(input).await,
            "broadcast" => match str_arg(input, "content") {
                Ok(c) => match self.client.broadcast(c).await {
                    Ok(sent) => Ok(format!("broadcast to {} teammate(s)", sent.len())),
                    Err(e) => Err(refused(e)),
                },
                Err(e) => Err(e),
            },
            "request_shutdown" => self.request_shutdown(input).await,
            "review_plan" => self.review_plan(input).await,
            _ => Err(ToolOutput::error(format!(
                "unknown tool '{name}'; the tools are: {}",
                self.specs
                    .iter()
                    .map(|s| s.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))),
        };
        out.map_or_else(|e| e, ToolOutput::ok)
    }

    async fn create_task(&self, input: &Value) -> Result<String, ToolOutput> {
        let task = new_task_arg(input)?;
        let t = self.client.add_task(task).await.map_err(refused)?;
        let mut s = format!("created task #{}: {}", t.id, t.subject);
        if !t.blocked_by.is_empty() {
            let ids: Vec<String> = t.blocked_by.iter().map(|b| format!("#{b}")).collect();
            s.push_str(&format!(" (blocked by {})", ids.join(", ")));
        }
        Ok(s)
    }

    async fn add_dependency(&self, input: &Value) -> Result<String, ToolOutput> {
        let id = id_arg(input)?;
        let on = ids_arg(input, "on")?;
        if on.is_empty() {
            return Err(ToolOutput::error("'on' must name at least one task id"));
        }
        let t = self.client.add_dependency(id, on).await.map_err(refused)?;
        Ok(task_line(&t))
    }

    async fn list_tasks(&self, input: &Value) -> Result<String, ToolOutput> {
        let status = match input.get("status").and_then(Value::as_str) {
            None => None,
            Some(s) => Some(s.parse::<TaskStatus>().map_err(|_| {
                ToolOutput::error(format!(
                    "unknown status '{s}'; use pending, in_progress, completed, failed or cancelled"
                ))
            })?),
        };
        let tasks = self.client.list_tasks(status).await.map_err(refused)?;
        if tasks.is_empty() {
            return Ok("no tasks".to_string());
        }
        Ok(tasks.iter().map(task_line).collect::<Vec<_>>().join("\n"))
    }

    async fn get_task(&self, input: &Value) -> Result<String, ToolOutput> {
        let id = id_arg(input)?;
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
                p.state,
                p.plan.as_deref().unwrap_or_default()
            ));
            if let Some(f) = &p.feedback {
                s.push_str(&format!("\nfeedback: {f}"));
            }
        }
        s.push_str("\n\nhistory:");
        for e in &detail.history {
            s.push_str(&format!("\n- {} {}: {}", e.actor, e.kind, e.detail));
        }
        Ok(s)
    }

    async fn spawn_teammate(&mut self, input: &Value) -> Result<String, ToolOutput> {
        let name = str_arg(input, "name")?.trim().to_string();
        let role = str_arg(input, "role")?.trim().to_string();
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

    async fn send_message(&self, input: &Value) -> Result<String, ToolOutput> {
        let to = str_arg(input, "to")?;
        let content = str_arg(input, "content")?;
        let m = self
            .client
            .send(to, MessageKind::Message, content, None)
            .await
            .map_err(refused)?;
        Ok(format!("sent message {} to {}", m.id, m.to))
    }

    async fn request_shutdown(&self, input: &Value) -> Result<String, ToolOutput> {
        let args = ShutdownArgs {
            to: str_arg(input, "to")?.to_string(),
            reason: input
                .get("reason")
                .and_then(Value::as_str)
                .map(str::to_string),
            timeout_ms: None,
            force: input.get("force").and_then(Value::as_bool).unwrap_or(false),
        };
        let r = self.client.request_shutdown(args).await.map_err(refused)?;
        Ok(format!(
            "shutdown request #{} to {} is {}; the answer comes as an event",
            r.id, r.to, r.state
        ))
    }

    async fn review_plan(&self, input: &Value) -> Result<String, ToolOutput> {
        let request = input
            .get("request")
            .and_then(|v| {
                v.as_u64().or_else(|| {
                    v.as_str()
                        .and_then(|s| s.trim_start_matches('#').parse().ok())
                })
            })
            .ok_or_else(|| {
                ToolOutput::error(format!("missing or invalid 'request' id; got {input}"))
            })?;
        let approve = input
            .get("approve")
            .and_then(Value::as_bool)
            .ok_or_else(|| ToolOutput::error("'approve' must be true or false"))?;
        let feedback = input.get("feedback").and_then(Value::as_str);
        let r = self
            .client
            .review_plan(request, approve, feedback)
            .await
            .map_err(refused)?;
        Ok(format!(
            "plan request #{} from {} is {}",
            r.id, r.from, r.state
        ))
    }
}
