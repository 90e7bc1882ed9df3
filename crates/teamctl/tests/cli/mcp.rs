//! `teamctl mcp` for a person's own session: the real binary on a pipe, as an MCP
//! client starts it, against a real boardd. Each tool's answer is the JSON its
//! `teamctl` twin prints with `--json`.
//!
//! The member-socket mode (inside a teammate's agent) and the twins that go
//! through it (`task complete`, `task fail`, `task submit-plan`) are tested with
//! the teammate's side, in teammated's `member` tests.

use crate::{Cli, TEAMCTL, stderr};
use serde_json::{Value, json};
use std::io::{BufRead as _, BufReader, Write as _};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Output, Stdio};
use std::sync::mpsc;
use teamboard_testkit::{PATIENCE, eventually_blocking};

/// `teamctl mcp` on a pipe.
struct Mcp {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    next_id: u64,
}

impl Mcp {
    fn start(d: &Cli, args: &[&str]) -> Mcp {
        let (key_var, key) = teamboard_testkit::lead_key_env(&d.socket);
        let mut cmd = Command::new(TEAMCTL);
        cmd.env(key_var, key)
            .arg("--socket")
            .arg(&d.socket)
            .arg("mcp")
            .args(args)
            .env_remove("TEAMBOARD_SOCKET")
            .env_remove("TEAMBOARD_TEAM")
            .env_remove("TEAMBOARD_MEMBER_SOCKET")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("teamctl mcp starts");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        Mcp {
            stdin: child.stdin.take(),
            child,
            lines,
            next_id: 1,
        }
    }

    fn send(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(line.as_bytes()).expect("written");
        stdin.write_all(b"\n").expect("written");
        stdin.flush().expect("flushed");
    }

    fn answer(&self) -> Value {
        let line = self
            .lines
            .recv_timeout(PATIENCE)
            .expect("teamctl mcp answers");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
    }

    /// A request, and its answer's `result` (or `error`).
    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send(&msg.to_string());
        let answer = self.answer();
        assert_eq!(answer["id"], id, "{answer}");
        assert_eq!(answer["jsonrpc"], "2.0");
        answer
            .get("result")
            .or_else(|| answer.get("error"))
            .cloned()
            .unwrap_or_else(|| panic!("neither result nor error: {answer}"))
    }

    /// A tool's value: the text the client shows the model, parsed. It is the
    /// twin's `--json` output, which is pretty-printed the same way.
    fn tool(&mut self, name: &str, arguments: Value) -> Value {
        self.tool_with_notes(name, arguments).0
    }

    /// A tool's value, and the notes that came after it.
    fn tool_with_notes(&mut self, name: &str, arguments: Value) -> (Value, Vec<String>) {
        let result = self.request("tools/call", json!({"name": name, "arguments": arguments}));
        assert_eq!(result["isError"], false, "{name}: {result}");
        let content = result["content"].as_array().expect("content");
        let text = content[0]["text"].as_str().expect("a text block");
        let value: Value = serde_json::from_str(text).expect("the text is JSON");
        assert_eq!(
            text,
            serde_json::to_string_pretty(&value).expect("JSON"),
            "pretty, as teamctl --json prints it"
        );
        let notes: Vec<String> = content[1..]
            .iter()
            .filter_map(|c| c["text"].as_str().map(str::to_string))
            .collect();
        if value.is_object() && notes.is_empty() {
            assert_eq!(result["structuredContent"], value);
        } else {
            assert!(result.get("structuredContent").is_none(), "{result}");
        }
        (value, notes)
    }

    /// Closes stdin and waits for the exit, which must be clean.
    fn finish(mut self) {
        drop(self.stdin.take());
        let status = self.child.wait().expect("teamctl mcp exits");
        let mut err = String::new();
        if let Some(mut e) = self.child.stderr.take() {
            let _ = std::io::Read::read_to_string(&mut e, &mut err);
        }
        assert!(status.success(), "{status}: {err}");
    }
}

impl Drop for Mcp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn initialize(mcp: &mut Mcp) {
    // Claude Code's probe of a newer protocol, then the handshake it falls back to.
    let probe = mcp.request("server/discover", json!({}));
    assert_eq!(probe["code"], -32601, "{probe}");
    let init = mcp.request(
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "test", "version": "0"}}),
    );
    assert_eq!(init["protocolVersion"], "2025-11-25");
    assert_eq!(init["serverInfo"]["name"], "teamboard");
    mcp.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
}

#[test]
fn each_tool_answers_with_its_twins_json() {
    let d = Cli::start();
    let first = d.json(&["task", "add", "Write the parser", "-d", "in src/parse.rs"]);
    let mut mcp = Mcp::start(&d, &["--name", "me", "--role", "dev"]);
    initialize(&mut mcp);

    let tools = mcp.request("tools/list", json!({}));
    let names: Vec<&str> = tools["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(
        names,
        [
            "list_tasks",
            "get_task",
            "create_task",
            "send_message",
            "complete_task",
            "fail_task",
            "submit_plan"
        ]
    );

    // The member is on the board from the start, with its role.
    let team = d.json(&["team"]);
    assert_eq!(team[0]["name"], "me", "{team}");
    assert_eq!(team[0]["role"], "dev");

    let created = mcp.tool(
        "create_task",
        json!({"subject": "Review the parser", "blocked_by": [first["id"]], "role": "dev"}),
    );
    let id = created["id"].as_u64().expect("an id");
    let twin = d.json(&["task", "add", "Twin", "--blocked-by", "1", "--role", "dev"]);
    assert_eq!(
        keys(&created),
        keys(&twin),
        "create_task and `task add --json` give the same object"
    );

    assert_eq!(mcp.tool("list_tasks", json!({})), d.json(&["tasks"]));
    assert_eq!(
        mcp.tool("list_tasks", json!({"status": "pending"})),
        d.json(&["tasks", "--status", "pending"])
    );
    assert_eq!(
        mcp.tool("get_task", json!({"id": id})),
        d.json(&["task", "show", &id.to_string()])
    );

    let claimed = mcp.tool("get_task", json!({"id": 1, "claim": true}));
    assert_eq!(
        (claimed["owner"].clone(), claimed["status"].clone()),
        (json!("me"), json!("in_progress"))
    );
    assert_eq!(claimed, d.json(&["task", "show", "1"]));

    let sent = mcp.tool(
        "send_message",
        json!({"to": "lead", "text": "starting on #1"}),
    );
    let inbox = d.json(&["inbox"]);
    assert_eq!(inbox[0], sent, "the message as the lead's inbox has it");
    let twin = d.json(&["send", "me", "thanks"]);
    assert_eq!(keys(&sent), keys(&twin));

    // The lead's message comes with the next result, after the value.
    let (done, notes) =
        mcp.tool_with_notes("complete_task", json!({"result": "parser in src/parse.rs"}));
    assert_eq!(notes, ["Messages for me:\n- from lead: thanks"]);
    assert_eq!(done["status"], "completed");
    let board = d.json(&["tasks"]);
    let listed = board
        .as_array()
        .expect("tasks")
        .iter()
        .find(|t| t["id"] == 1)
        .expect("task 1");
    assert_eq!(&done, listed, "the task as the board lists it");
    mcp.finish();
    // The session ends with the server.
    eventually_blocking("me's session to end", PATIENCE, || {
        (d.json(&["team"])[0]["connected"] == false).then_some(())
    });
}

#[test]
fn a_task_held_when_the_client_goes_goes_back_without_using_up_an_attempt() {
    let d = Cli::start();
    d.ok(&["task", "add", "One"]);
    d.ok(&["task", "add", "Two"]);
    for (task, how) in [("1", "stdin closed"), ("2", "SIGTERM")] {
        let mut mcp = Mcp::start(&d, &["--name", "me"]);
        let id: u64 = task.parse().expect("an id");
        let claimed = mcp.tool("get_task", json!({"id": id, "claim": true}));
        assert_eq!(claimed["owner"], "me", "{how}");
        if how == "SIGTERM" {
            // SAFETY: kill(2) on our own child's pid.
            let sent = unsafe { libc::kill(mcp.child.id() as i32, libc::SIGTERM) };
            assert_eq!(sent, 0);
            let status = mcp.child.wait().expect("exits");
            assert!(status.success(), "{how}: {status}");
        } else {
            mcp.finish();
        }
        let task = d.json(&["task", "show", task]);
        assert_eq!(
            (task["status"].clone(), task["attempts"].clone()),
            (json!("pending"), json!(0)),
            "{how}: {task}"
        );
        assert!(
            task["handoff"]
                .as_str()
                .is_some_and(|h| h.contains("me's session ended")),
            "{how}: {task}"
        );
    }
}

#[test]
fn bad_input_is_answered_and_the_server_goes_on_until_stdin_ends() {
    let d = Cli::start();
    let mut mcp = Mcp::start(&d, &["--name", "me"]);
    mcp.send("{not json");
    assert_eq!(mcp.answer()["error"]["code"], -32700);
    mcp.send(r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#);
    assert_eq!(mcp.answer()["error"]["code"], -32600);
    let unknown = mcp.request(
        "tools/call",
        json!({"name": "claim_task", "arguments": {"id": 1}}),
    );
    assert_eq!(unknown["code"], -32602, "{unknown}");
    let refused = mcp.request(
        "tools/call",
        json!({"name": "get_task", "arguments": {"id": 42}}),
    );
    assert_eq!(refused["isError"], true);
    let text = refused["content"][0]["text"].as_str().expect("text");
    assert!(text.starts_with("boardd refused: "), "{text}");
    assert_eq!(mcp.request("ping", json!({})), json!({}));
    mcp.finish();
}

/// `teamctl --socket SOCKET GLOBAL... mcp --name me` with `input` on its
/// stdin, run to its end.
fn mcp_with_input(socket: &Path, global: &[&str], input: &[u8]) -> Output {
    Command::new(TEAMCTL)
        .arg("--socket")
        .arg(socket)
        .args(global)
        .args(["mcp", "--name", "me"])
        .env_remove("TEAMBOARD_MEMBER_SOCKET")
        .env_remove("TEAMBOARD_TIMEOUT")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            let mut stdin = child.stdin.take().expect("stdin");
            stdin.write_all(input)?;
            drop(stdin);
            child.wait_with_output()
        })
        .expect("runs")
}

/// One `tools/call` of `list_tasks`, as a client sends it.
const LIST_TASKS: &[u8] =
    br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_tasks"}}"#;

#[test]
fn without_boardd_the_tools_say_how_to_start_it() {
    let dir = teamboard_testkit::short_tempdir();
    let out = mcp_with_input(&dir.path().join("none.sock"), &[], LIST_TASKS);
    assert!(out.status.success(), "{}", stderr(&out));
    let answer: Value = serde_json::from_slice(&out.stdout).expect("one answer");
    assert_eq!(answer["result"]["isError"], true);
    let text = answer["result"]["content"][0]["text"]
        .as_str()
        .expect("text");
    assert!(text.contains("boardd is not running"), "{text}");
    // And a line on stderr for whoever reads the client's logs.
    assert!(
        stderr(&out).contains("teamctl mcp: boardd is not running"),
        "{}",
        stderr(&out)
    );
}

/// The global flags: `--json` is refused (the output is JSON-RPC in any case),
/// and `--timeout` bounds joining the board and the tools' calls to it.
#[test]
fn json_is_refused_and_the_timeout_bounds_the_calls_to_boardd() {
    let dir = teamboard_testkit::short_tempdir();
    // A boardd that takes connections and never answers: the kernel accepts
    // them into the backlog.
    let silent = dir.path().join("silent.sock");
    let _listener = std::os::unix::net::UnixListener::bind(&silent).expect("bound");
    let out = mcp_with_input(&silent, &["--json"], b"");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(out.stdout.is_empty(), "nothing for the client to misread");
    assert!(
        stderr(&out).contains("`teamctl mcp` speaks JSON-RPC on stdout in any case"),
        "{}",
        stderr(&out)
    );

    let out = mcp_with_input(&silent, &["--timeout", "1"], LIST_TASKS);
    assert!(out.status.success(), "{}", stderr(&out));
    let said = "did not answer within 1 s (teamctl mcp --timeout)";
    assert!(stderr(&out).contains(said), "joining: {}", stderr(&out));
    let answer: Value = serde_json::from_slice(&out.stdout).expect("one answer");
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    let text = answer["result"]["content"][0]["text"]
        .as_str()
        .expect("text");
    assert!(text.contains(said), "{text}");
}

#[test]
fn the_member_operations_say_where_they_belong() {
    let d = Cli::start();
    for args in [
        &["task", "complete", "1", "--result", "x"][..],
        &["task", "fail", "1", "--reason", "x"],
        &["task", "submit-plan", "1", "--plan", "x"],
    ] {
        let out = d.run(args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = stderr(&out);
        assert!(
            err.contains("is a teammate's own operation: run it inside a teammate's agent, where TEAMBOARD_MEMBER_SOCKET is set"),
            "{args:?}: {err}"
        );
    }
}

fn keys(v: &Value) -> Vec<&str> {
    v.as_object()
        .expect("an object")
        .keys()
        .map(String::as_str)
        .collect()
}
