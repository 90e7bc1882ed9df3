//! The task and team tools: the model's view of the board.

use super::Outcome;
use crate::board_view::{id_arg, new_task_arg, refused, task_line};
use crate::teammate::Teammate;
use crate::tools::{ToolOutput, str_arg};
use serde_json::Value;
use teamboard_protocol::{MessageKind, TaskStatus};

impl Teammate {
    /// Runs a board tool. `None` when `name` is not one.
    pub(super) async fn board_tool(&mut self, name: &str, input: &Value) -> Option<ToolOutput> {
        let out = match name {
            "list_tasks" => self.list_tasks(input).await,
            "get_task" => self.get_task(input).await,
            "create_task" => self.create_task(input).await,
            "claim_task" => self.claim_task(input).await,
            "complete_task" => match str_arg(input, "result") {
                Ok(r) => Outcome::Complete(r.to_string()).report(self).await,
                Err(e) => e,
            },
            "fail_task" => match str_arg(input, "reason") {
                Ok(r) => Outcome::Fail(r.to_string()).report(self).await,
                Err(e) => e,
            },
            "send_message" => self.send_message(input).await,
            "broadcast" => self.broadcast(input).await,
            "idle" => {
                self.idle_requested = true;
                ToolOutput::ok(
                    "Going idle after this round. You will be woken for new messages or tasks.",
                )
            }
            _ => return None,
        };
        Some(out)
    }

    async fn list_tasks(&self, input: &Value) -> ToolOutput {
        let status = match input.get("status").and_then(Value::as_str) {
            None => None,
            Some(s) => match TaskStatus::parse(s) {
                Some(s) => Some(s),
                None => {
                    return ToolOutput::error(format!(
                        "unknown status '{s}'; use pending, in_progress, completed, failed or cancelled"
                    ));
                }
            },
        };
        match self
            .session
            .call(|c| async move { c.list_tasks(status).await })
            .await
        {
            Ok(tasks) if tasks.is_empty() => ToolOutput::ok("no tasks"),
            Ok(tasks) => ToolOutput::ok(tasks.iter().map(task_line).collect::<Vec<_>>().join("\n")),
            Err(e) => refused(e),
        }
    }

    async fn get_task(&self, input: &Value) -> ToolOutput {
        let id = match id_arg(input) {
            Ok(id) => id,
            Err(e) => return e,
        };
        match self
            .session
            .call(|c| async move { c.get_task(id).await })
            .await
        {
            Ok(detail) => {
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
                s.push_str("\n\nhistory:");
                for e in &detail.history {
                    s.push_str(&format!(
                        "\n- {} {}: {}",
                        e.actor,
                        e.kind.as_str(),
                        e.detail
                    ));
                }
                ToolOutput::ok(s)
            }
            Err(e) => refused(e),
        }
    }

    async fn create_task(&self, input: &Value) -> ToolOutput {
        let task = match new_task_arg(input) {
            Ok(t) => t,
            Err(e) => return e,
        };
        let task = &task;
        match self
            .session
            .call(|c| async move { c.add_task(task.clone()).await })
            .await
        {
            Ok(t) => ToolOutput::ok(format!("created task #{}: {}", t.id, t.subject)),
            Err(e) => refused(e),
        }
    }

    async fn claim_task(&mut self, input: &Value) -> ToolOutput {
        let id = match id_arg(input) {
            Ok(id) => id,
            Err(e) => return e,
        };
        if let Some(h) = &self.held {
            return ToolOutput::error(format!(
                "you already hold task #{}; complete_task or fail_task it before claiming another",
                h.id
            ));
        }
        match self
            .session
            .call(|c| async move { c.claim_task(id).await })
            .await
        {
            Ok(claim) => {
                let subject = claim.task.subject.clone();
                self.hold(claim, "Claimed").await;
                ToolOutput::ok(format!("you now hold task #{id}: {subject}"))
            }
            Err(e) => refused(e),
        }
    }

    async fn send_message(&self, input: &Value) -> ToolOutput {
        let (to, content) = match (str_arg(input, "to"), str_arg(input, "content")) {
            (Ok(t), Ok(c)) => (t, c),
            (Err(e), _) | (_, Err(e)) => return e,
        };
        match self
            .session
            .call(|c| async move { c.send(to, MessageKind::Message, content, None).await })
            .await
        {
            Ok(m) => ToolOutput::ok(format!("sent message #{} to {}", m.id, m.to)),
            Err(e) => refused(e),
        }
    }

    async fn broadcast(&self, input: &Value) -> ToolOutput {
        let content = match str_arg(input, "content") {
            Ok(c) => c,
            Err(e) => return e,
        };
        match self
            .session
            .call(|c| async move { c.broadcast(content).await })
            .await
        {
            Ok(sent) => ToolOutput::ok(format!("broadcast to {} teammate(s)", sent.len())),
            Err(e) => refused(e),
        }
    }
}
