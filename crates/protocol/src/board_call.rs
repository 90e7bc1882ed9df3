//! The seven board tools, typed: what a [`MemberCall`] asks for once its
//! arguments are read. The board's MCP server (`teamctl mcp`), the member-side
//! `teamctl` commands and teammated's side of the member socket all read calls
//! through [`BoardCall::parse`], so that a call is accepted, or refused with the
//! same words, wherever it is carried out.
//!
//! The arguments are the MCP tools' input schemas (`teamboard-mcp` has them).
//! Reading is strict where a slip would be silent (an unknown argument, a blank
//! result) and lenient where the meaning is plain (`"#3"` for a task id, one
//! check given as a lone string), since a refusal costs the model a turn.

use crate::member::MemberCall;
use crate::request::NewTask;
use crate::{TaskId, TaskStatus};
use serde_json::{Map, Value, json};
use strum::VariantNames;

/// The tools, in the order `tools/list` gives them.
pub const BOARD_TOOLS: [&str; 7] = [
    "list_tasks",
    "get_task",
    "create_task",
    "send_message",
    "complete_task",
    "fail_task",
    "submit_plan",
];

/// One board tool call, its arguments read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BoardCall {
    /// The board, optionally only the tasks of one status.
    ListTasks {
        status: Option<TaskStatus>,
    },
    /// One task with its history; `claim` also takes it (a person's own session).
    GetTask {
        id: TaskId,
        claim: bool,
    },
    CreateTask(NewTask),
    SendMessage {
        to: String,
        text: String,
    },
    /// Ends the held task with `result`. `task`, when given, must be the held
    /// one: the `teamctl` twins name it, so that a script cannot end another.
    CompleteTask {
        task: Option<TaskId>,
        result: String,
    },
    FailTask {
        task: Option<TaskId>,
        reason: String,
    },
    SubmitPlan {
        task: Option<TaskId>,
        plan: String,
    },
}

/// A call that cannot be carried out as sent, and what to send instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct BadCall(pub String);

impl BoardCall {
    /// Reads a call. Refuses an unknown tool, an unknown or missing argument, and
    /// a value of the wrong kind, saying what the tool takes.
    pub fn parse(call: &MemberCall) -> Result<BoardCall, BadCall> {
        let tool = call.tool.as_str();
        let Some(known) = BOARD_TOOLS.iter().find(|t| **t == tool) else {
            return Err(BadCall(format!(
                "unknown board tool '{tool}'; the tools are: {}",
                BOARD_TOOLS.join(", ")
            )));
        };
        let empty = Map::new();
        let args = match &call.arguments {
            Value::Object(map) => map,
            Value::Null => &empty,
            other => {
                return Err(BadCall(format!(
                    "the arguments of {tool} must be a JSON object, not {other}"
                )));
            }
        };
        let a = Args { tool: known, args };
        let parsed = match tool {
            "list_tasks" => {
                a.only(&["status"])?;
                BoardCall::ListTasks {
                    status: a.status()?,
                }
            }
            "get_task" => {
                a.only(&["id", "claim"])?;
                BoardCall::GetTask {
                    id: a
                        .id("id")?
                        .ok_or_else(|| a.missing("id", "the task's id"))?,
                    claim: a.flag("claim")?,
                }
            }
            "create_task" => {
                a.only(&CREATE_ARGS)?;
                BoardCall::CreateTask(a.new_task()?)
            }
            "send_message" => {
                a.only(&["to", "text"])?;
                BoardCall::SendMessage {
                    to: a.text("to", "a teammate's name, or lead")?,
                    text: a.text("text", "the message")?,
                }
            }
            "complete_task" => {
                a.only(&["result", "id"])?;
                BoardCall::CompleteTask {
                    task: a.id("id")?,
                    result: a.text("result", "what you did, for the lead")?,
                }
            }
            "fail_task" => {
                a.only(&["reason", "id"])?;
                BoardCall::FailTask {
                    task: a.id("id")?,
                    reason: a.text("reason", "why the task cannot be done")?,
                }
            }
            _ => {
                a.only(&["plan", "id"])?;
                BoardCall::SubmitPlan {
                    task: a.id("id")?,
                    plan: a.text("plan", "what you will do, step by step")?,
                }
            }
        };
        Ok(parsed)
    }

    /// The tool's name.
    pub fn tool(&self) -> &'static str {
        match self {
            BoardCall::ListTasks { .. } => "list_tasks",
            BoardCall::GetTask { .. } => "get_task",
            BoardCall::CreateTask(_) => "create_task",
            BoardCall::SendMessage { .. } => "send_message",
            BoardCall::CompleteTask { .. } => "complete_task",
            BoardCall::FailTask { .. } => "fail_task",
            BoardCall::SubmitPlan { .. } => "submit_plan",
        }
    }

    /// The wire call that [`BoardCall::parse`] reads back as this one.
    pub fn to_call(&self) -> MemberCall {
        let with_task = |task: &Option<TaskId>, key: &str, text: &str| {
            let mut m = Map::new();
            if let Some(id) = task {
                m.insert("id".into(), json!(id));
            }
            m.insert(key.into(), json!(text));
            Value::Object(m)
        };
        let arguments = match self {
            BoardCall::ListTasks { status: None } => json!({}),
            BoardCall::ListTasks { status: Some(s) } => json!({"status": s.to_string()}),
            BoardCall::GetTask { id, claim } => json!({"id": id, "claim": claim}),
            BoardCall::CreateTask(t) => json!({
                "subject": t.subject,
                "description": t.description,
                "blocked_by": t.blocked_by,
                "priority": t.priority,
                "role": t.role,
                "require_plan": t.require_plan,
                "checks": t.checks,
                "no_worktree": t.no_worktree,
            }),
            BoardCall::SendMessage { to, text } => json!({"to": to, "text": text}),
            BoardCall::CompleteTask { task, result } => with_task(task, "result", result),
            BoardCall::FailTask { task, reason } => with_task(task, "reason", reason),
            BoardCall::SubmitPlan { task, plan } => with_task(task, "plan", plan),
        };
        MemberCall {
            tool: self.tool().to_string(),
            arguments,
        }
    }
}

/// What `create_task` takes. `priority` is not in the MCP schema (the lead
/// orders the board), but a call that gives it is not refused for it.
const CREATE_ARGS: [&str; 8] = [
    "subject",
    "description",
    "blocked_by",
    "role",
    "require_plan",
    "checks",
    "no_worktree",
    "priority",
];

/// One call's arguments, read with errors that name the tool.
struct Args<'a> {
    tool: &'a str,
    args: &'a Map<String, Value>,
}

impl Args<'_> {
    /// Refuses an argument the tool does not take: a misspelt one would
    /// otherwise be dropped without a word.
    fn only(&self, known: &[&str]) -> Result<(), BadCall> {
        match self.args.keys().find(|k| !known.contains(&k.as_str())) {
            None => Ok(()),
            Some(k) => Err(BadCall(format!(
                "{} takes no argument '{k}'; it takes: {}",
                self.tool,
                known.join(", ")
            ))),
        }
    }

    /// The argument, `None` when absent or `null`.
    fn get(&self, key: &str) -> Option<&Value> {
        self.args.get(key).filter(|v| !v.is_null())
    }

    fn missing(&self, key: &str, what: &str) -> BadCall {
        BadCall(format!("{} needs '{key}': {what}", self.tool))
    }

    fn bad(&self, key: &str, want: &str, got: &Value) -> BadCall {
        BadCall(format!(
            "'{key}' of {} must be {want}, not {got}",
            self.tool
        ))
    }

    /// A required string with something in it.
    fn text(&self, key: &str, what: &str) -> Result<String, BadCall> {
        match self.get(key) {
            None => Err(self.missing(key, what)),
            Some(Value::String(s)) if s.trim().is_empty() => Err(BadCall(format!(
                "'{key}' of {} is empty; give {what}",
                self.tool
            ))),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(other) => Err(self.bad(key, "a string", other)),
        }
    }

    fn opt_string(&self, key: &str) -> Result<Option<String>, BadCall> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(self.bad(key, "a string", other)),
        }
    }

    fn flag(&self, key: &str) -> Result<bool, BadCall> {
        match self.get(key) {
            None => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(other) => Err(self.bad(key, "true or false", other)),
        }
    }

    /// A task id: `3`, or `"3"` / `"#3"` as models sometimes send it.
    fn id(&self, key: &str) -> Result<Option<TaskId>, BadCall> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => match task_id(v) {
                Some(id) => Ok(Some(id)),
                None => Err(self.bad(key, "a task id (a number like 3)", v)),
            },
        }
    }

    fn status(&self) -> Result<Option<TaskStatus>, BadCall> {
        let Some(s) = self.opt_string("status")? else {
            return Ok(None);
        };
        s.trim()
            .to_ascii_lowercase()
            .parse()
            .map(Some)
            .map_err(|_| {
                BadCall(format!(
                    "unknown status '{s}'; use one of: {}",
                    TaskStatus::VARIANTS.join(", ")
                ))
            })
    }

    fn new_task(&self) -> Result<NewTask, BadCall> {
        let blocked_by = match self.get("blocked_by") {
            None => Vec::new(),
            Some(Value::Array(ids)) => ids
                .iter()
                .map(|v| task_id(v).ok_or_else(|| self.bad("blocked_by", "a list of task ids", v)))
                .collect::<Result<_, _>>()?,
            Some(one) => {
                vec![task_id(one).ok_or_else(|| {
                    self.bad("blocked_by", "a list of task ids, e.g. [1, 2]", one)
                })?]
            }
        };
        let checks = match self.get("checks") {
            None => Vec::new(),
            Some(Value::String(one)) => vec![one.clone()],
            Some(Value::Array(list)) => list
                .iter()
                .map(|c| match c {
                    Value::String(s) => Ok(s.clone()),
                    other => Err(self.bad("checks", "a list of shell commands", other)),
                })
                .collect::<Result<_, _>>()?,
            Some(other) => {
                return Err(self.bad(
                    "checks",
                    "a list of shell commands, e.g. [\"cargo test\"]",
                    other,
                ));
            }
        };
        let priority = match self.get("priority") {
            None => 0,
            Some(v) => v
                .as_i64()
                .ok_or_else(|| self.bad("priority", "a whole number", v))?,
        };
        let task = NewTask {
            subject: self.text("subject", "a short title for the task")?,
            description: self.opt_string("description")?.unwrap_or_default(),
            blocked_by,
            priority,
            role: self
                .opt_string("role")?
                .map(|r| r.trim().to_string())
                .filter(|r| !r.is_empty()),
            require_plan: self.flag("require_plan")?,
            checks,
            no_worktree: self.flag("no_worktree")?,
        };
        if task.no_worktree && !task.checks.is_empty() {
            return Err(BadCall(
                "a task with no_worktree completes without checks; drop one of them".into(),
            ));
        }
        Ok(task)
    }
}

/// `3`, `"3"` or `"#3"`; never 0.
fn task_id(v: &Value) -> Option<TaskId> {
    let id = match v {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.trim().trim_start_matches('#').parse().ok(),
        _ => None,
    };
    id.filter(|id| *id > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(tool: &str, arguments: Value) -> Result<BoardCall, BadCall> {
        BoardCall::parse(&MemberCall {
            tool: tool.into(),
            arguments,
        })
    }

    #[test]
    fn every_call_reads_back_from_its_wire_form() {
        let calls = [
            BoardCall::ListTasks { status: None },
            BoardCall::ListTasks {
                status: Some(TaskStatus::InProgress),
            },
            BoardCall::GetTask { id: 3, claim: true },
            BoardCall::CreateTask(NewTask {
                subject: "s".into(),
                description: "d".into(),
                blocked_by: vec![1, 2],
                priority: -1,
                role: Some("dev".into()),
                require_plan: true,
                checks: vec!["make test".into()],
                no_worktree: false,
            }),
            BoardCall::SendMessage {
                to: "lead".into(),
                text: "hi".into(),
            },
            BoardCall::CompleteTask {
                task: Some(4),
                result: "done".into(),
            },
            BoardCall::FailTask {
                task: None,
                reason: "no".into(),
            },
            BoardCall::SubmitPlan {
                task: Some(2),
                plan: "1. x".into(),
            },
        ];
        for call in calls {
            assert_eq!(BoardCall::parse(&call.to_call()), Ok(call.clone()));
        }
        assert_eq!(BOARD_TOOLS.len(), 7);
    }

    #[test]
    fn lenient_where_the_meaning_is_plain() {
        assert_eq!(
            parse("get_task", json!({"id": "#7"})),
            Ok(BoardCall::GetTask {
                id: 7,
                claim: false
            })
        );
        assert_eq!(
            parse("list_tasks", Value::Null),
            Ok(BoardCall::ListTasks { status: None })
        );
        assert_eq!(
            parse("list_tasks", json!({"status": "In-Progress"})),
            Ok(BoardCall::ListTasks {
                status: Some(TaskStatus::InProgress)
            })
        );
        let Ok(BoardCall::CreateTask(t)) = parse(
            "create_task",
            json!({"subject": "x", "checks": "cargo test", "blocked_by": 2, "role": " "}),
        ) else {
            panic!("a task");
        };
        assert_eq!(
            (t.checks, t.blocked_by, t.role),
            (vec!["cargo test".to_string()], vec![2], None)
        );
    }

    #[test]
    fn refusals_say_what_the_tool_takes() {
        let cases = [
            (
                "make_coffee",
                json!({}),
                "unknown board tool 'make_coffee'; the tools are: list_tasks",
            ),
            ("list_tasks", json!([1]), "must be a JSON object"),
            (
                "send_message",
                json!({"to": "bob", "content": "hi"}),
                "send_message takes no argument 'content'; it takes: to, text",
            ),
            (
                "complete_task",
                json!({}),
                "complete_task needs 'result': what you did",
            ),
            (
                "fail_task",
                json!({"reason": "  "}),
                "'reason' of fail_task is empty",
            ),
            ("get_task", json!({"id": 0}), "must be a task id"),
            (
                "get_task",
                json!({"id": 1, "claim": "yes"}),
                "true or false",
            ),
            (
                "list_tasks",
                json!({"status": "done"}),
                "unknown status 'done'",
            ),
            (
                "create_task",
                json!({"subject": "x", "checks": [1]}),
                "'checks' of create_task must be a list of shell commands, not 1",
            ),
            (
                "create_task",
                json!({"subject": "x", "checks": ["t"], "no_worktree": true}),
                "drop one of them",
            ),
        ];
        for (tool, args, want) in cases {
            let err = parse(tool, args.clone()).expect_err(tool);
            assert!(err.0.contains(want), "{tool} {args}: {err}");
        }
    }
}
