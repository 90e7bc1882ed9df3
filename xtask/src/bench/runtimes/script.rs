//! The scripted model of each measurement, in every runtime's terms.
//!
//! The mock answers from the request (`MockLlm::set_responder`), never from a
//! queue: how many calls an agent makes, and in which order, is its own
//! business. Each script is one conversation written once and said in each
//! runtime's dialect: a shell call is `bash` for the native loop, `Bash` for
//! Claude Code, `exec_command` for Codex and `run_shell_command` for Gemini;
//! the answer to a tool's result is read from where each API puts it.
//!
//! What the scripts share with the bench (which task, which wake) lives in
//! atomics the bench sets before it acts, so a responder never waits.

use super::runtime::Runtime;
use serde_json::{Value, json};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use teamboard_mock_llm::cache::Api;
use teamboard_mock_llm::responses::function_call_output;
use teamboard_mock_llm::{MockLlm, MockReply, RecordedRequest, gemini, messages};

/// How long the wake script holds a model call: past any step's timeout, so
/// the agent is always caught in it.
const HANG: Duration = Duration::from_secs(300);

/// The answer calling the runtime's shell tool with `command`, as call `id`.
fn shell(rt: Runtime, id: &str, command: &str) -> MockReply {
    match rt {
        Runtime::Native => MockReply::anthropic_tool_use(id, "bash", json!({ "command": command })),
        Runtime::Claude => MockReply::anthropic_tool_use(
            id,
            "Bash",
            json!({"command": command, "description": "as the task says"}),
        ),
        Runtime::NativeOpenai => {
            MockReply::openai_tool_call(id, "bash", &json!({ "command": command }).to_string())
        }
        Runtime::Codex => MockReply::responses_function_call(
            id,
            "exec_command",
            &json!({ "cmd": command }).to_string(),
            None,
        ),
        Runtime::Acp => MockReply::gemini_function_call(
            "run_shell_command",
            json!({"command": command, "description": "as the task says"}),
        ),
    }
}

/// A final text answer.
fn say(rt: Runtime, text: &str) -> MockReply {
    match rt.api() {
        Api::Anthropic => MockReply::anthropic_text(text),
        Api::OpenAi => MockReply::openai_text(text),
        Api::Responses => MockReply::responses_text(text),
        Api::Gemini => MockReply::gemini_text(text),
    }
}

/// The output of the tool whose result the request ends with, if it does:
/// the model is to go on from a tool call.
fn tool_output(rt: Runtime, body: &Value) -> Option<String> {
    match rt {
        Runtime::Native | Runtime::Claude => messages::tool_results(messages::last_user(body))
            .pop()
            .map(|(_, text, _)| text),
        Runtime::NativeOpenai => {
            let last = body["messages"].as_array()?.last()?;
            (last["role"] == "tool").then(|| match &last["content"] {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
        }
        Runtime::Codex => function_call_output(body).map(|(_, out)| out),
        Runtime::Acp => gemini::function_responses(body)
            .pop()
            .map(|(_, response)| response.to_string()),
    }
}

/// A call beside the conversation (Gemini's session title): answered with a
/// line of text, and counted as the runtime's own overhead.
pub fn is_side_call(rt: Runtime, req: &RecordedRequest) -> bool {
    rt == Runtime::Acp && !gemini::is_stream(&req.path)
}

/// The per-task script: one shell command that writes `task-N.txt`, then the
/// answer `DONE task-N`, for the task the bench set in `task`.
pub fn small_task(mock: &MockLlm, rt: Runtime, task: Arc<AtomicUsize>) {
    mock.set_responder(move |req| {
        if is_side_call(rt, req) {
            return Some(say(rt, "A task for the board"));
        }
        let n = task.load(Ordering::SeqCst);
        Some(match tool_output(rt, &req.body) {
            Some(_) => say(rt, &done(n)),
            None => shell(
                rt,
                &format!("call_task_{n}"),
                &format!("printf 'task {n}\\n' > {}", task_file(n)),
            ),
        })
    });
}

/// The file task `n` writes.
pub fn task_file(n: usize) -> String {
    format!("task-{n}.txt")
}

/// The answer of task `n`.
pub fn done(n: usize) -> String {
    format!("DONE task-{n}")
}

/// The busy state of the latency measurement: a step is a model call that
/// takes [`Busy::think`] (the mock holds its answer) and then a shell command
/// of [`Busy::run`], step after step.
#[derive(Debug)]
pub struct Busy {
    pub think: Duration,
    pub run: Duration,
    /// Every model call answered with a command, in order.
    pub steps: Mutex<Vec<Step>>,
    /// ACP: when each model call that ended a turn arrived.
    pub turn_ends: Mutex<Vec<Instant>>,
    commands: AtomicUsize,
}

/// One step of the busy state.
#[derive(Debug, Clone, Copy)]
pub struct Step {
    /// When its model call arrived at the mock.
    pub at: Instant,
    /// Its place in its turn, from 1 (ACP; 1 for the others, whose turn never
    /// ends).
    pub place: usize,
}

/// Steps in an ACP agent's turn: the model ends the turn after the result of
/// this many commands, since ACP takes a message only at a turn's end.
pub const TURN: usize = 3;

impl Busy {
    pub fn new(think: Duration, run: Duration) -> Busy {
        let (steps, turn_ends) = (Mutex::default(), Mutex::default());
        Busy {
            think,
            run,
            steps,
            turn_ends,
            commands: AtomicUsize::new(0),
        }
    }

    pub fn steps(&self) -> Vec<Step> {
        lock(&self.steps).clone()
    }

    pub fn turn_ends(&self) -> Vec<Instant> {
        lock(&self.turn_ends).clone()
    }
}

/// The text that ends the latency script's task.
pub const STOP: &str = "LAT-STOP";

/// Commands an ACP agent ran in the turn the request belongs to: the tool
/// results after the last prompt.
fn done_in_turn(body: &Value) -> usize {
    let contents = body["contents"].as_array().map_or(&[][..], Vec::as_slice);
    contents
        .iter()
        .rev()
        .take_while(|c| !gemini_prompt(c))
        .filter(|c| c.to_string().contains("\"functionResponse\""))
        .count()
}

/// Whether a Gemini content is a user prompt (text, no tool result).
fn gemini_prompt(c: &Value) -> bool {
    c["role"] == "user"
        && c["parts"]
            .as_array()
            .is_some_and(|p| p.iter().any(|p| p["text"].is_string()))
}

/// The latency script: steps of [`Busy`] until a message says [`STOP`]. An ACP
/// agent's turn ends after [`TURN`] steps with a line of text (after the same
/// thinking time); the next turn, with the message, goes on.
pub fn busy(mock: &MockLlm, rt: Runtime, state: Arc<Busy>) {
    let sleep = format!("{:.3}", state.run.as_secs_f64());
    mock.set_responder(move |req| {
        if is_side_call(rt, req) {
            return Some(say(rt, "A busy task"));
        }
        if req.body.to_string().contains(STOP) {
            return Some(say(rt, "stopped"));
        }
        let place = if rt == Runtime::Acp {
            let done = done_in_turn(&req.body);
            if done >= TURN {
                lock(&state.turn_ends).push(req.received_at);
                return Some(say(rt, "turn over").with_delay(state.think));
            }
            done + 1
        } else {
            1
        };
        lock(&state.steps).push(Step {
            at: req.received_at,
            place,
        });
        let k = state.commands.fetch_add(1, Ordering::SeqCst) + 1;
        Some(
            shell(
                rt,
                &format!("call_busy_{k}"),
                &format!("touch busy-{k} && sleep {sleep}"),
            )
            .with_delay(state.think),
        )
    })
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// What the wake script shares with the bench.
#[derive(Debug, Default)]
pub struct Wakes {
    /// The wake the agent is in (0: the first start).
    pub wake: AtomicUsize,
    /// 1 + the last wake whose agent is held in a model call (0: none yet).
    pub held: AtomicUsize,
    /// Set for the last wake: the agent finishes instead of being held.
    pub finish: AtomicBool,
}

/// What the command of wake `n` prints.
fn woke(n: usize) -> String {
    format!("woke {n}")
}

/// The command of wake `n`. Trap: it must not contain what it prints, or an
/// agent that echoes the command with its output would look done.
fn wake_command(n: usize) -> String {
    format!("printf 'woke %s\\n' {n} | tee -a wakes.txt")
}

/// The wake script: in every wake the agent runs one command (so that its
/// session has a tool call on disk, as a real one would), then its next model
/// call is held until the bench kills it; in the last wake it answers
/// `DONE wakes` instead.
pub fn wakes(mock: &MockLlm, rt: Runtime, state: Arc<Wakes>) {
    mock.set_responder(move |req| {
        if is_side_call(rt, req) {
            return Some(say(rt, "A task for the board"));
        }
        let n = state.wake.load(Ordering::SeqCst);
        let ran = tool_output(rt, &req.body).is_some_and(|out| out.contains(&woke(n)));
        Some(if !ran {
            shell(rt, &format!("call_wake_{n}"), &wake_command(n))
        } else if state.finish.load(Ordering::SeqCst) {
            say(rt, "DONE wakes")
        } else {
            state.held.store(n + 1, Ordering::SeqCst);
            say(rt, "still working").with_delay(HANG)
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ends_with_result(rt: Runtime, output: &str) -> Value {
        match rt {
            Runtime::Native | Runtime::Claude => json!({"messages": [
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": output}]},
            ]}),
            Runtime::NativeOpenai => json!({"messages": [
                {"role": "tool", "tool_call_id": "t", "content": output},
            ]}),
            Runtime::Codex => json!({"input": [
                {"type": "function_call_output", "call_id": "t", "output": output},
            ]}),
            Runtime::Acp => json!({"contents": [
                {"role": "user", "parts": [{"functionResponse": {"name": "run_shell_command", "response": {"output": output}}}]},
            ]}),
        }
    }

    #[test]
    fn a_tools_result_is_found_in_every_runtimes_request() {
        for rt in [
            Runtime::Native,
            Runtime::NativeOpenai,
            Runtime::Claude,
            Runtime::Codex,
            Runtime::Acp,
        ] {
            let body = ends_with_result(rt, "woke 2");
            assert!(
                tool_output(rt, &body).is_some_and(|o| o.contains(&woke(2))),
                "{rt:?}"
            );
            assert_eq!(tool_output(rt, &json!({})), None, "{rt:?}");
            assert!(!wake_command(2).contains(&woke(2)));
        }
    }

    #[test]
    fn an_acp_turn_counts_the_commands_since_its_prompt() {
        let prompt = |t: &str| json!({"role": "user", "parts": [{"text": t}]});
        let call = json!({"role": "model", "parts": [{"functionCall": {"name": "run_shell_command", "args": {}}}]});
        let result = json!({"role": "user", "parts": [{"functionResponse": {"name": "run_shell_command", "response": {}}}]});
        let body = json!({"contents": [
            prompt("task"), call, result, call, result, json!({"role": "model", "parts": [{"text": "turn over"}]}),
            prompt("LAT-000: a message"), call, result,
        ]});
        assert_eq!(done_in_turn(&body), 1);
        assert_eq!(done_in_turn(&json!({"contents": [prompt("task")]})), 0);
    }
}
