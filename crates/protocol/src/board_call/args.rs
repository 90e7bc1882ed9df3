//! One call's arguments, checked against its front end's schema and read with
//! errors that name the tool and say what to send.

use super::{BadCall, BoardCall, Front};
use crate::request::NewTask;
use crate::{TaskId, TaskStatus};
use serde_json::{Map, Value};
use strum::VariantNames;

pub(super) struct Args<'a> {
    pub front: Front,
    pub tool: &'a str,
    args: &'a Map<String, Value>,
}

/// The arguments of a call that sent none.
static NONE: std::sync::LazyLock<Map<String, Value>> = std::sync::LazyLock::new(Map::new);

impl<'a> Args<'a> {
    /// The arguments of a call of `tool` as `front` offers it. Refuses a tool it
    /// does not offer, arguments that are not an object, and an argument the
    /// tool's schema does not name: a misspelt one would otherwise be dropped
    /// without a word.
    pub fn of(front: Front, tool: &'a str, arguments: &'a Value) -> Result<Args<'a>, BadCall> {
        let specs = front.specs();
        let Some(spec) = specs.iter().find(|s| s.name == tool) else {
            let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
            return Err(BadCall(format!(
                "unknown board tool '{tool}'; the tools are: {}",
                names.join(", ")
            )));
        };
        let args = match arguments {
            Value::Object(map) => map,
            Value::Null => &NONE,
            other => {
                return Err(BadCall(format!(
                    "the arguments of {tool} must be a JSON object, not {other}"
                )));
            }
        };
        // Required first, as the schema lists them; then the rest.
        let schema = &spec.input_schema;
        let mut known: Vec<&str> = schema["required"]
            .as_array()
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if let Some(props) = schema["properties"].as_object() {
            for key in props.keys() {
                if !known.contains(&key.as_str()) {
                    known.push(key);
                }
            }
        }
        known.extend(front.unlisted(tool));
        if let Some(k) = args.keys().find(|k| !known.contains(&k.as_str())) {
            return Err(BadCall(format!(
                "{tool} takes no argument '{k}'; it takes: {}",
                known.join(", ")
            )));
        }
        Ok(Args { front, tool, args })
    }

    /// The seven tools every member has.
    pub fn board_call(&self) -> Result<BoardCall, BadCall> {
        Ok(match self.tool {
            "list_tasks" => BoardCall::ListTasks {
                status: self.status()?,
            },
            "get_task" => BoardCall::GetTask {
                id: self.task("id")?,
                claim: self.flag("claim")?,
            },
            "create_task" => BoardCall::CreateTask(self.new_task()?),
            "send_message" => {
                let (to, text) = self.message()?;
                BoardCall::SendMessage { to, text }
            }
            "complete_task" => BoardCall::CompleteTask {
                task: self.id("id")?,
                result: self.text("result", "what you did, for the lead")?,
            },
            "fail_task" => BoardCall::FailTask {
                task: self.id("id")?,
                reason: self.text("reason", "why the task cannot be done")?,
            },
            "submit_plan" => BoardCall::SubmitPlan {
                task: self.id("id")?,
                plan: self.text("plan", "what you will do, step by step")?,
            },
            other => {
                return Err(BadCall(format!("{other} is not one of the board's tools")));
            }
        })
    }

    /// The argument, `None` when absent or `null`.
    fn get(&self, key: &str) -> Option<&Value> {
        self.args.get(key).filter(|v| !v.is_null())
    }

    pub fn missing(&self, key: &str, what: &str) -> BadCall {
        BadCall(format!("{} needs '{key}': {what}", self.tool))
    }

    fn bad(&self, key: &str, want: &str, got: &Value) -> BadCall {
        BadCall(format!(
            "'{key}' of {} must be {want}, not {got}",
            self.tool
        ))
    }

    /// A required string with something in it.
    pub fn text(&self, key: &str, what: &str) -> Result<String, BadCall> {
        let s = self.string(key, what)?;
        if s.trim().is_empty() {
            return Err(BadCall(format!(
                "'{key}' of {} is empty; give {what}",
                self.tool
            )));
        }
        Ok(s)
    }

    /// A required string, which may be empty.
    pub fn string(&self, key: &str, what: &str) -> Result<String, BadCall> {
        self.opt_string(key)?.ok_or_else(|| self.missing(key, what))
    }

    pub fn opt_string(&self, key: &str) -> Result<Option<String>, BadCall> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(self.bad(key, "a string", other)),
        }
    }

    /// `false` when absent.
    pub fn flag(&self, key: &str) -> Result<bool, BadCall> {
        Ok(self.opt_flag(key)?.unwrap_or(false))
    }

    /// A required `true` or `false`.
    pub fn yes_no(&self, key: &str, what: &str) -> Result<bool, BadCall> {
        self.opt_flag(key)?.ok_or_else(|| self.missing(key, what))
    }

    fn opt_flag(&self, key: &str) -> Result<Option<bool>, BadCall> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(other) => Err(self.bad(key, "true or false", other)),
        }
    }

    /// A task id: `3`, or `"3"` / `"#3"` as models sometimes send it.
    pub fn id(&self, key: &str) -> Result<Option<TaskId>, BadCall> {
        self.number(key, "a task id (a number like 3)")
    }

    /// A required task id.
    pub fn task(&self, key: &str) -> Result<TaskId, BadCall> {
        self.id(key)?
            .ok_or_else(|| self.missing(key, "the task's id"))
    }

    /// An id (a task's, a request's): `3`, `"3"` or `"#3"`, never 0. `want`
    /// says what it is, for a refusal.
    pub fn number(&self, key: &str, want: &str) -> Result<Option<u64>, BadCall> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => match id_of(v) {
                Some(id) => Ok(Some(id)),
                None => Err(self.bad(key, want, v)),
            },
        }
    }

    /// A request's id: a number, or text as people and models write it (`r3`; the
    /// `#3` of older leads too).
    pub fn request_id(&self, key: &str, want: &str) -> Result<Option<u64>, BadCall> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => match s.trim().strip_prefix(['r', 'R']) {
                Some(rest) => id_of(&Value::String(rest.into()))
                    .map(Some)
                    .ok_or_else(|| self.bad(key, want, &Value::String(s.clone()))),
                None => self.number(key, want),
            },
            Some(_) => self.number(key, want),
        }
    }

    /// A list of task ids; one id alone is a list of one. Absent is empty.
    pub fn ids(&self, key: &str) -> Result<Vec<TaskId>, BadCall> {
        match self.get(key) {
            None => Ok(Vec::new()),
            Some(Value::Array(ids)) => ids
                .iter()
                .map(|v| id_of(v).ok_or_else(|| self.bad(key, "a list of task ids", v)))
                .collect(),
            Some(one) => {
                Ok(vec![id_of(one).ok_or_else(|| {
                    self.bad(key, "a list of task ids, e.g. [1, 2]", one)
                })?])
            }
        }
    }

    /// `send_message`'s recipient and text.
    pub fn message(&self) -> Result<(String, String), BadCall> {
        Ok((
            self.text("to", "a teammate's name, or lead")?,
            self.text(self.front.message_key(), "the message")?,
        ))
    }

    pub fn status(&self) -> Result<Option<TaskStatus>, BadCall> {
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

    pub fn new_task(&self) -> Result<NewTask, BadCall> {
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
            blocked_by: self.ids("blocked_by")?,
            priority,
            role: self
                .opt_string("role")?
                .map(|r| r.trim().to_string())
                .filter(|r| !r.is_empty()),
            require_plan: self.flag("require_plan")?,
            checks,
            no_worktree: self.flag("no_worktree")?,
            // A review is the person's to ask for (`teamctl task add --review`),
            // not a model's.
            review: false,
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
fn id_of(v: &Value) -> Option<u64> {
    let id = match v {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.trim().trim_start_matches('#').parse().ok(),
        _ => None,
    };
    id.filter(|id| *id > 0)
}
