//! A small Agent Client Protocol agent for tests of teammated's agent runtime that
//! must run everywhere, fast and the same every time: the real agent CLIs come
//! from the npm registry and a model, this needs neither.
//!
//! Usage: `fake-acp-agent` (speaks ACP on stdin/stdout). Its sessions live in
//! `$FAKE_ACP_HOME` (default `$HOME/.fake-acp`), so a new process can load them,
//! and it appends every prompt it takes to `$FAKE_ACP_HOME/prompts.jsonl`
//! (`{"session", "text", "at_ms"}`) for tests to read.
//!
//! A prompt is a script, one instruction per line; other lines are ignored:
//!
//! - `RUN: CMD`: asks permission (`kind` execute), then runs `sh -c CMD` in the
//!   session's cwd, which a `session/cancel` kills;
//! - `SLEEP: SECS`: waits, unless cancelled;
//! - `PLAN: TEXT`: in plan mode, writes TEXT to a plan file and asks permission
//!   for `exit_plan_mode`; allowed, it goes on in the default mode, rejected, it
//!   ends the turn;
//! - `SUBMIT_PLAN: TEXT`: submits TEXT as its plan with the board's
//!   `submit_plan`, through the member socket (`$TEAMBOARD_MEMBER_SOCKET`), as
//!   an agent without a plan mode does through the board's MCP server;
//! - `CRASH`: says so on stderr and exits 3;
//! - `ANSWER: TEXT`: the final answer (else `done: N commands ran`);
//! - `NEXT: LINE`: LINE is run at the head of the session's next prompt,
//!   whatever that prompt says (a refusal of the completion gate, a note of
//!   the teammate's): how a script answers what the teammate tells it.
//!
//! With `FAKE_ACP_NO_PLAN_MODE` set, its sessions offer no plan mode. With
//! `FAKE_ACP_FAIL_START=TEXT` set, it answers no `initialize`: it writes TEXT
//! to stderr and exits 4, as an agent that cannot start does.
//!
//! A prompt that starts with `[Message` is answered `got: ` and its first line.
//! Every prompt ends with `stopReason` `end_turn` (`cancelled` after a cancel)
//! and a usage in `_meta.quota.token_count`, as Gemini CLI reports it.

#![allow(
    clippy::print_stderr,
    reason = "a stand-in for tests: stderr is its log"
)]

use serde_json::{Value, json};
use std::io::{BufRead as _, Write as _};
use std::path::PathBuf;
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

fn main() {
    let home = std::env::var_os("FAKE_ACP_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".fake-acp")))
        .unwrap_or_else(|| PathBuf::from(".fake-acp"));
    let _ = std::fs::create_dir_all(home.join("sessions"));
    let (tx, rx) = channel::<Value>();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            match serde_json::from_str::<Value>(&line) {
                Ok(v) => {
                    if tx.send(v).is_err() {
                        break;
                    }
                }
                Err(e) => eprintln!("fake-acp-agent: not JSON ({e}): {line}"),
            }
        }
    });
    let mut agent = Agent {
        home,
        rx,
        next_id: 1000,
        sessions: Default::default(),
    };
    agent.serve();
}

struct Session {
    cwd: PathBuf,
    plan_mode: bool,
    /// Every prompt and answer, for `session/load` to replay.
    history: Vec<(String, String)>,
    /// Script lines for the next prompt (`NEXT:`).
    next: Vec<String>,
}

impl Session {
    fn new(cwd: PathBuf, history: Vec<(String, String)>) -> Session {
        Session {
            cwd,
            plan_mode: false,
            history,
            next: Vec::new(),
        }
    }
}

struct Agent {
    home: PathBuf,
    rx: Receiver<Value>,
    next_id: u64,
    sessions: std::collections::HashMap<String, Session>,
}

/// How a turn ended.
enum TurnEnd {
    Answer(String),
    Cancelled,
}

impl Agent {
    fn serve(&mut self) {
        while let Ok(msg) = self.rx.recv() {
            self.handle(msg);
        }
    }

    fn handle(&mut self, msg: Value) {
        let id = msg.get("id").cloned();
        let method = msg["method"].as_str().unwrap_or_default().to_string();
        let params = msg.get("params").cloned().unwrap_or(Value::Null);
        match (method.as_str(), id) {
            ("initialize", Some(_)) if std::env::var_os("FAKE_ACP_FAIL_START").is_some() => {
                let why = std::env::var("FAKE_ACP_FAIL_START").unwrap_or_default();
                eprintln!("{why}");
                std::process::exit(4);
            }
            ("initialize", Some(id)) => respond(
                &id,
                json!({"protocolVersion": 1, "agentCapabilities": {"loadSession": true},
                       "authMethods": []}),
            ),
            ("session/new", Some(id)) => {
                let sid = format!("fake-{:x}", nanos());
                let cwd = PathBuf::from(params["cwd"].as_str().unwrap_or("."));
                self.sessions
                    .insert(sid.clone(), Session::new(cwd, Vec::new()));
                self.save(&sid);
                let modes = if std::env::var_os("FAKE_ACP_NO_PLAN_MODE").is_some() {
                    json!([{"id": "default"}])
                } else {
                    json!([{"id": "default"}, {"id": "plan"}])
                };
                respond(
                    &id,
                    json!({"sessionId": sid, "modes": {"currentModeId": "default",
                           "availableModes": modes}}),
                );
            }
            ("session/load", Some(id)) => {
                let sid = params["sessionId"].as_str().unwrap_or_default().to_string();
                match self.load(&sid, &params) {
                    Some(history) => {
                        for (prompt, answer) in history {
                            chunk(&sid, "user_message_chunk", &prompt);
                            chunk(&sid, "agent_message_chunk", &answer);
                        }
                        respond(&id, json!({}));
                    }
                    None => respond_error(
                        &id,
                        -32603,
                        &format!("Invalid session identifier \"{sid}\""),
                    ),
                }
            }
            ("session/set_mode", Some(id)) => {
                let sid = params["sessionId"].as_str().unwrap_or_default();
                if let Some(s) = self.sessions.get_mut(sid) {
                    s.plan_mode = params["modeId"] == "plan";
                }
                respond(&id, json!({}));
            }
            ("session/prompt", Some(id)) => self.prompt(id, &params),
            ("session/cancel", None) => {}
            (other, Some(id)) => respond_error(&id, -32601, &format!("no method {other}")),
            _ => {}
        }
    }

    fn prompt(&mut self, id: Value, params: &Value) {
        let sid = params["sessionId"].as_str().unwrap_or_default().to_string();
        let text: String = params["prompt"]
            .as_array()
            .map(|blocks| {
                blocks
                    .iter()
                    .filter_map(|b| b["text"].as_str())
                    .collect::<Vec<_>>()
                    .join("\n")
            })
            .unwrap_or_default();
        self.log_prompt(&sid, &text);
        if !self.sessions.contains_key(&sid) {
            respond_error(&id, -32602, "unknown session");
            return;
        }
        let queued = self
            .sessions
            .get_mut(&sid)
            .map(|s| std::mem::take(&mut s.next))
            .unwrap_or_default();
        let end = if !queued.is_empty() {
            self.run_script(&sid, &format!("{}\n{text}", queued.join("\n")))
        } else if text.starts_with("[Message") {
            TurnEnd::Answer(format!("got: {}", text.lines().next().unwrap_or_default()))
        } else {
            self.run_script(&sid, &text)
        };
        let usage = json!({"quota": {"token_count": {
            "input_tokens": text.len() / 4 + 1, "output_tokens": 10}}});
        match end {
            TurnEnd::Answer(answer) => {
                chunk(&sid, "agent_message_chunk", &answer);
                if let Some(s) = self.sessions.get_mut(&sid) {
                    s.history.push((text, answer));
                }
                self.save(&sid);
                respond(&id, json!({"stopReason": "end_turn", "_meta": usage}));
            }
            TurnEnd::Cancelled => respond(&id, json!({"stopReason": "cancelled"})),
        }
    }

    fn run_script(&mut self, sid: &str, text: &str) -> TurnEnd {
        let mut ran = 0;
        let mut answer = None;
        for line in text.lines() {
            let line = line.trim();
            if line == "CRASH" {
                eprintln!("fake-acp-agent: crashing as asked");
                std::process::exit(3);
            } else if let Some(cmd) = line.strip_prefix("RUN: ") {
                match self.ask(sid, "execute", cmd) {
                    Some(true) => {}
                    Some(false) => {
                        answer = Some(format!("not allowed to run: {cmd}"));
                        continue;
                    }
                    None => return TurnEnd::Cancelled,
                }
                let cwd = self.sessions.get(sid).map(|s| s.cwd.clone());
                match self.run(cmd, cwd) {
                    Some(status) => {
                        ran += 1;
                        update(
                            sid,
                            json!({"sessionUpdate": "tool_call_update",
                            "toolCallId": format!("run-{ran}"), "status": "completed",
                            "title": cmd, "kind": "execute",
                            "content": [{"type": "content", "content":
                                {"type": "text", "text": format!("exit {status}")}}]}),
                        );
                    }
                    None => return TurnEnd::Cancelled,
                }
            } else if let Some(secs) = line.strip_prefix("SLEEP: ") {
                let secs: f64 = secs.trim().parse().unwrap_or(1.0);
                if self.wait_for_cancel(Duration::from_secs_f64(secs)) {
                    return TurnEnd::Cancelled;
                }
            } else if let Some(plan) = line.strip_prefix("PLAN: ") {
                if !self.sessions.get(sid).is_some_and(|s| s.plan_mode) {
                    continue;
                }
                let file = self.home.join(format!("{sid}-plan.md"));
                let _ = std::fs::write(&file, plan);
                let title = format!("Requesting plan approval for: {}", file.display());
                match self.ask(sid, "other", &title) {
                    Some(true) => {
                        if let Some(s) = self.sessions.get_mut(sid) {
                            s.plan_mode = false;
                        }
                    }
                    Some(false) => return TurnEnd::Answer("plan rejected".into()),
                    None => return TurnEnd::Cancelled,
                }
            } else if let Some(plan) = line.strip_prefix("SUBMIT_PLAN: ") {
                let reply = submit_plan(plan);
                update(
                    sid,
                    json!({"sessionUpdate": "tool_call", "toolCallId": "submit-plan",
                    "status": "completed", "title": "submit_plan", "kind": "other",
                    "rawInput": {"plan": plan},
                    "content": [{"type": "content", "content": {"type": "text", "text": reply}}]}),
                );
            } else if let Some(text) = line.strip_prefix("ANSWER: ") {
                answer = Some(text.to_string());
            } else if let Some(next) = line.strip_prefix("NEXT: ")
                && let Some(s) = self.sessions.get_mut(sid)
            {
                s.next.push(next.to_string());
            }
        }
        TurnEnd::Answer(answer.unwrap_or_else(|| format!("done: {ran} commands ran")))
    }

    /// Asks the client for permission (`proceed_once` or `cancel`) and waits for
    /// the answer: whether it allowed it, or `None` when it cancelled the turn.
    fn ask(&mut self, sid: &str, kind: &str, title: &str) -> Option<bool> {
        self.next_id += 1;
        let id = self.next_id;
        let options = json!([
            {"optionId": "proceed_once", "name": "proceed_once", "kind": "allow_once"},
            {"optionId": "cancel", "name": "cancel", "kind": "reject_once"},
        ]);
        send(
            &json!({"jsonrpc": "2.0", "id": id, "method": "session/request_permission",
            "params": {"sessionId": sid, "options": options, "toolCall": {
                "toolCallId": format!("ask-{id}"), "status": "pending", "title": title,
                "kind": kind, "content": [], "locations": []}}}),
        );
        loop {
            let Ok(msg) = self.rx.recv() else {
                std::process::exit(0)
            };
            if msg["id"] == id && msg.get("method").is_none() {
                let outcome = &msg["result"]["outcome"];
                return (outcome["outcome"] == "selected")
                    .then(|| outcome["optionId"] == "proceed_once");
            }
            if msg["method"] == "session/cancel" {
                // The client still has to answer the request (ACP), which ends
                // the wait above; note the cancel and keep waiting for it.
                continue;
            }
            self.handle(msg);
        }
    }

    /// Runs a command, killing it on a cancel. `None` when cancelled.
    fn run(&mut self, cmd: &str, cwd: Option<PathBuf>) -> Option<i32> {
        let mut command = std::process::Command::new("sh");
        command
            .arg("-c")
            .arg(cmd)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null());
        if let Some(cwd) = cwd {
            command.current_dir(cwd);
        }
        let mut child = match command.spawn() {
            Ok(c) => c,
            Err(e) => {
                eprintln!("fake-acp-agent: cannot run {cmd}: {e}");
                return Some(127);
            }
        };
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                return Some(status.code().unwrap_or(-1));
            }
            match self.rx.recv_timeout(Duration::from_millis(20)) {
                Ok(msg) if msg["method"] == "session/cancel" => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return None;
                }
                Ok(msg) => self.handle(msg),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => {
                    let _ = child.kill();
                    std::process::exit(0);
                }
            }
        }
    }

    /// Waits `d`; true when a cancel came first.
    fn wait_for_cancel(&mut self, d: Duration) -> bool {
        let until = Instant::now() + d;
        loop {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            match self.rx.recv_timeout(left) {
                Ok(msg) if msg["method"] == "session/cancel" => return true,
                Ok(msg) => self.handle(msg),
                Err(RecvTimeoutError::Timeout) => return false,
                Err(RecvTimeoutError::Disconnected) => std::process::exit(0),
            }
        }
    }

    fn save(&self, sid: &str) {
        let Some(s) = self.sessions.get(sid) else {
            return;
        };
        let v = json!({"cwd": s.cwd, "history": s.history});
        let _ = std::fs::write(self.home.join("sessions").join(sid), v.to_string());
    }

    fn load(&mut self, sid: &str, params: &Value) -> Option<Vec<(String, String)>> {
        if sid.contains('/') || sid.is_empty() {
            return None;
        }
        let text = std::fs::read_to_string(self.home.join("sessions").join(sid)).ok()?;
        let v: Value = serde_json::from_str(&text).ok()?;
        let history: Vec<(String, String)> = serde_json::from_value(v["history"].clone()).ok()?;
        let cwd = params["cwd"]
            .as_str()
            .map(PathBuf::from)
            .or_else(|| v["cwd"].as_str().map(PathBuf::from))?;
        self.sessions
            .insert(sid.to_string(), Session::new(cwd, history.clone()));
        Some(history)
    }

    fn log_prompt(&self, sid: &str, text: &str) {
        let line = json!({"session": sid, "text": text, "at_ms": teamboard_protocol::now_ms()});
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.home.join("prompts.jsonl"))
        {
            let _ = writeln!(f, "{line}");
        }
    }
}

/// The board's `submit_plan`, through the member socket: the teammate's
/// answer line, or why there is none.
fn submit_plan(plan: &str) -> String {
    use std::io::BufRead as _;
    let Some(path) = std::env::var_os("TEAMBOARD_MEMBER_SOCKET") else {
        return "no member socket".into();
    };
    let call = json!({"tool": "submit_plan", "arguments": {"plan": plan}});
    let answer = (|| {
        let mut stream = std::os::unix::net::UnixStream::connect(&path)?;
        writeln!(stream, "{call}")?;
        let mut line = String::new();
        std::io::BufReader::new(stream).read_line(&mut line)?;
        Ok::<_, std::io::Error>(line)
    })();
    answer.unwrap_or_else(|e| format!("the member socket failed: {e}"))
}

fn send(v: &Value) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{v}");
    let _ = out.flush();
}

fn respond(id: &Value, result: Value) {
    send(&json!({"jsonrpc": "2.0", "id": id, "result": result}));
}

fn respond_error(id: &Value, code: i64, message: &str) {
    send(&json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}));
}

fn update(sid: &str, update: Value) {
    send(&json!({"jsonrpc": "2.0", "method": "session/update",
        "params": {"sessionId": sid, "update": update}}));
}

/// A message chunk of `kind` (`user_message_chunk`, `agent_message_chunk`).
fn chunk(sid: &str, kind: &str, text: &str) {
    update(
        sid,
        json!({"sessionUpdate": kind, "content": {"type": "text", "text": text}}),
    );
}

fn nanos() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
}
