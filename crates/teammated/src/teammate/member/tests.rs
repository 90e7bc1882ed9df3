//! The member socket end to end, short of an agent: a teammate, built as
//! teammated builds it against a real boardd, holds a task and answers the calls
//! on its member socket as its work loop does, while the real `teamctl mcp` and
//! the `teamctl` twins call it as an agent's processes would. Each tool's JSON
//! is compared with its twin's `--json` output. The end of the task a call asks
//! for is carried out as the work loop does it once the agent's turn is over
//! ([`Fixture::turn_ended`]).

use crate::config::Config;
use crate::member::MemberServer;
use crate::teammate::{Outcome, PlanState, Teammate};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use teamboard_protocol::member::MEMBER_SOCKET_ENV;
use teamboard_protocol::request::NewTask;
use teamboard_protocol::{Client, MessageKind, TaskId};
use teamboard_testkit::{InProc, lead, workspace_bin};
use tokio_util::sync::CancellationToken;

struct Fixture {
    daemon: InProc,
    lead: Client,
    alice: Teammate,
    member: MemberServer,
    teamctl: PathBuf,
    /// The end of the held task the last call asked for, not carried out yet.
    ends: Option<Outcome>,
}

impl Fixture {
    async fn start() -> Fixture {
        let daemon = InProc::start().await;
        let lead = lead(&daemon.socket).await;
        let (alice, _, _) = crate::run::open(Config::for_tests(&daemon), CancellationToken::new())
            .await
            .expect("alice starts")
            .expect("not cancelled");
        Fixture {
            lead,
            alice,
            member: MemberServer::bind("alice").expect("the member socket"),
            teamctl: workspace_bin("teamctl"),
            ends: None,
            daemon,
        }
    }

    /// A new task, claimed and held by alice as her IDLE phase takes one.
    async fn hold(&mut self, task: NewTask) -> TaskId {
        let id = self.lead.add_task(task).await.expect("added").id;
        let claim = self
            .alice
            .session
            .call(|c| async move { c.claim_task(id).await })
            .await
            .expect("claimed");
        self.alice.hold(claim, "Claimed").await.expect("held");
        id
    }

    /// `teamctl` as the agent's processes run it: with the member socket and
    /// the board's socket in the environment.
    fn teamctl(&self) -> Command {
        let mut cmd = Command::new(&self.teamctl);
        let (key_var, key) = teamboard_testkit::lead_key_env(&self.daemon.socket);
        cmd.env("TEAMBOARD_SOCKET", &self.daemon.socket)
            .env(key_var, key)
            .env(MEMBER_SOCKET_ENV, self.member.path())
            .env_remove("TEAMBOARD_TEAM")
            .stdin(Stdio::null());
        cmd
    }

    /// Runs `cmd` to its end while alice answers the calls on her member
    /// socket, as her work loop does.
    async fn run(&mut self, mut cmd: Command, stdin: Option<String>) -> Output {
        let mut job = tokio::task::spawn_blocking(move || {
            use std::io::Write as _;
            if stdin.is_some() {
                cmd.stdin(Stdio::piped());
            }
            let mut child = cmd
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("teamctl starts");
            if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
                pipe.write_all(text.as_bytes()).expect("written");
            }
            child.wait_with_output().expect("teamctl ends")
        });
        loop {
            tokio::select! {
                out = &mut job => return out.expect("the job ran"),
                incoming = self.member.next() => {
                    let answered = self.alice.member_call(incoming.call).await;
                    let _ = incoming.reply.send(answered.reply);
                    if answered.ends.is_some() {
                        self.ends = answered.ends;
                    }
                }
            }
        }
    }

    /// Carries out the end the agent asked for, as the work loop does when the
    /// agent's turn is over: the task as boardd ended it.
    async fn turn_ended(&mut self) -> Value {
        let outcome = self.ends.take().expect("an end was asked for");
        match outcome.end(&mut self.alice).await {
            Ok((task, _)) => serde_json::to_value(task).expect("JSON"),
            Err(not) => panic!("the task did not end: {}", not),
        }
    }

    /// A twin with `--json`; its output, parsed. It must succeed.
    async fn twin(&mut self, args: &[&str]) -> Value {
        let mut cmd = self.teamctl();
        cmd.args(args).arg("--json");
        let out = self.run(cmd, None).await;
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{args:?}: {e}"))
    }

    /// A twin that must be refused; its stderr.
    async fn refused(&mut self, args: &[&str]) -> String {
        let mut cmd = self.teamctl();
        cmd.args(args);
        let out = self.run(cmd, None).await;
        assert_eq!(
            out.status.code(),
            Some(1),
            "{args:?}: {}",
            text(&out.stdout)
        );
        text(&out.stderr)
    }

    /// One `teamctl mcp` session with these tool calls (after the handshake):
    /// each call's result.
    async fn mcp(&mut self, calls: &[(&str, Value)]) -> (Value, Vec<Value>) {
        let mut lines = vec![
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                   "params": {"protocolVersion": "2025-06-18", "capabilities": {}}}),
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        ];
        for (i, (name, args)) in calls.iter().enumerate() {
            lines.push(
                json!({"jsonrpc": "2.0", "id": i + 2, "method": "tools/call",
                              "params": {"name": name, "arguments": args}}),
            );
        }
        let input: String = lines.iter().map(|l| format!("{l}\n")).collect();
        let mut cmd = self.teamctl();
        cmd.args(["mcp", "--name", "alice", "--team", "default"]);
        let out = self.run(cmd, Some(input)).await;
        assert!(out.status.success(), "{}", text(&out.stderr));
        let answers: Vec<Value> = text(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).expect("JSON"))
            .collect();
        assert_eq!(answers.len(), calls.len() + 2, "{answers:#?}");
        assert_eq!(answers[0]["result"]["protocolVersion"], "2025-06-18");
        let tools = answers[1]["result"].clone();
        (
            tools,
            answers[2..].iter().map(|a| a["result"].clone()).collect(),
        )
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The value of a tool result: its text, which is the twin's pretty JSON.
fn value(result: &Value) -> Value {
    assert_eq!(result["isError"], false, "{result}");
    let text = result["content"][0]["text"].as_str().expect("text");
    serde_json::from_str(text).expect("JSON")
}

fn error_text(result: &Value) -> &str {
    assert_eq!(result["isError"], true, "{result}");
    result["content"][0]["text"].as_str().expect("text")
}

/// The task `id` in `teamctl tasks --json`.
fn listed(board: &Value, id: TaskId) -> Value {
    board
        .as_array()
        .expect("tasks")
        .iter()
        .find(|t| t["id"] == id)
        .cloned()
        .expect("listed")
}

#[tokio::test]
async fn an_agents_tools_act_with_the_teammates_claim_and_answer_like_their_twins() {
    let mut f = Fixture::start().await;
    let id = f
        .hold(NewTask {
            subject: "Migrate the schema".into(),
            require_plan: true,
            ..NewTask::default()
        })
        .await;
    let task = id.to_string();

    let (tools, results) = f
        .mcp(&[
            ("list_tasks", json!({})),
            ("get_task", json!({"id": id})),
            ("get_task", json!({"id": id, "claim": true})),
            ("get_task", json!({"id": 99, "claim": true})),
        ])
        .await;
    let get_task = &tools["tools"][1];
    assert!(
        get_task["inputSchema"]["properties"].get("claim").is_none(),
        "a teammate's agent is not offered the claim: {get_task}"
    );
    assert_eq!(value(&results[0]), f.twin(&["tasks"]).await);
    assert_eq!(value(&results[1]), f.twin(&["task", "show", &task]).await);
    assert_eq!(value(&results[2]), value(&results[1]), "its own task");
    assert!(
        error_text(&results[3]).contains("alice claims tasks for you"),
        "{}",
        results[3]
    );

    // The plan: submitted at once, recorded as pending, not submitted twice.
    let plan = "1. add the column\n2. backfill it";
    let request = f
        .twin(&["task", "submit-plan", &task, "--plan", plan])
        .await;
    assert_eq!(
        (request["state"].clone(), request["task"].clone()),
        (json!("pending"), json!(id))
    );
    let req = request["id"].as_u64().expect("a request id");
    let pending = f.alice.held.as_ref().map(|h| h.plan.clone());
    assert_eq!(
        pending,
        Some(PlanState::Pending {
            id: req,
            plan: plan.into()
        })
    );
    let (_, again) = f.mcp(&[("submit_plan", json!({"plan": plan}))]).await;
    assert_eq!(value(&again[0]), request);

    // Before the lead approves, a completion is refused, and the task stays.
    let early = f
        .refused(&["task", "complete", &task, "--result", "done"])
        .await;
    assert!(
        early.contains(&format!(
            "task #{id} needs an approved plan before it completes: the plan (request r{req}) is still pending"
        )),
        "{early}"
    );
    assert!(f.alice.held.is_some());
    assert!(f.ends.is_none());
    let other = f
        .refused(&["task", "complete", "99", "--result", "done"])
        .await;
    assert!(
        other.contains(&format!("you hold task #{id}, not #99")),
        "{other}"
    );

    f.lead.review_plan(req, true, None).await.expect("approved");
    if let Some(h) = f.alice.held.as_mut() {
        // The work loop reads the decision from the inbox.
        h.plan = PlanState::Approved { id: req };
    }
    // The completion is taken, not carried out: the agent still runs.
    let (_, taken) = f
        .mcp(&[("complete_task", json!({"result": "migrated"}))])
        .await;
    let taken = value(&taken[0]);
    assert_eq!(
        (taken["task"].clone(), taken["end"].clone()),
        (json!(id), json!("complete")),
        "{taken}"
    );
    assert!(
        taken["next"]
            .as_str()
            .is_some_and(|n| n.contains("when your turn ends")),
        "{taken}"
    );
    assert_eq!(
        taken,
        f.twin(&["task", "complete", &task, "--result", "migrated"])
            .await
    );
    assert!(f.alice.held.is_some(), "the task is still held: {taken}");
    let listed_before = listed(&f.twin(&["tasks"]).await, id);
    assert_eq!(listed_before["status"], "in_progress");
    let done = f.turn_ended().await;
    assert_eq!(done["status"], "completed");
    assert_eq!(
        done,
        listed(&f.twin(&["tasks"]).await, id),
        "as the board lists it"
    );
    assert!(f.alice.held.is_none(), "the teammate let the task go");
    // The lead heard it from the teammate, as from its native loop.
    let inbox = f.lead.inbox().await.expect("inbox");
    let result = inbox
        .iter()
        .find(|m| m.kind == MessageKind::Result)
        .expect("a result");
    assert_eq!(
        result.content,
        format!("#{id} Migrate the schema: completed by alice\nmigrated")
    );
    let after = f.refused(&["task", "fail", &task, "--reason", "x"]).await;
    assert!(
        after.contains("you hold no task, so there is nothing to fail"),
        "{after}"
    );
}

#[tokio::test]
async fn a_failed_task_goes_back_with_the_reason_and_the_twins_agree() {
    let mut f = Fixture::start().await;
    let id = f
        .hold(NewTask {
            subject: "Find the bug".into(),
            ..NewTask::default()
        })
        .await;
    let taken = f
        .twin(&[
            "task",
            "fail",
            &id.to_string(),
            "--reason",
            "cannot reproduce",
        ])
        .await;
    assert_eq!(
        (taken["task"].clone(), taken["end"].clone()),
        (json!(id), json!("fail")),
        "{taken}"
    );
    assert!(f.alice.held.is_some(), "failed before the agent stopped");
    let failed = f.turn_ended().await;
    assert_eq!(
        (failed["status"].clone(), failed["last_error"].clone()),
        (json!("pending"), json!("cannot reproduce"))
    );
    assert_eq!(failed, listed(&f.twin(&["tasks"]).await, id));
    assert!(f.alice.held.is_none());

    // The agent's own messages and tasks go out as alice's.
    let (_, results) = f
        .mcp(&[
            (
                "send_message",
                json!({"to": "lead", "text": "#1 needs a repro"}),
            ),
            (
                "create_task",
                json!({"subject": "Write a repro", "blocked_by": []}),
            ),
            ("complete_task", json!({"result": "nothing held"})),
        ])
        .await;
    let sent = value(&results[0]);
    assert_eq!(
        (sent["from"].clone(), sent["to"].clone()),
        (json!("alice"), json!("lead"))
    );
    let created = value(&results[1]);
    let created_id = created["id"].as_u64().expect("an id");
    assert_eq!(created, listed(&f.twin(&["tasks"]).await, created_id));
    assert!(
        error_text(&results[2]).contains("you hold no task"),
        "{}",
        results[2]
    );
    // Every call is in alice's transcript.
    let transcript = std::fs::read_to_string(teamboard_protocol::transcript::transcript_path(
        f.daemon.state_dir.as_path(),
        "default",
        "alice",
    ))
    .expect("a transcript");
    for tool in ["send_message", "create_task", "complete_task", "fail_task"] {
        assert!(
            transcript.contains(&format!("\"{tool}\"")),
            "{tool}: {transcript}"
        );
    }
}

#[tokio::test]
async fn the_socket_directory_is_private_and_goes_with_the_server() {
    use std::os::unix::fs::PermissionsExt as _;
    let server = MemberServer::bind("a-name-longer-than-twenty-four-chars").expect("binds");
    let dir = server.path().parent().expect("a directory").to_path_buf();
    let name = dir
        .file_name()
        .expect("named")
        .to_string_lossy()
        .into_owned();
    assert!(
        name.starts_with("teamboard-member-a-name-longer-than-twent-"),
        "{name}"
    );
    let mode = std::fs::metadata(&dir)
        .expect("exists")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o700);
    assert!(server.path().as_os_str().len() < 108);
    drop(server);
    assert!(!dir.exists(), "{} is left behind", dir.display());
}
