//! A person's own session (`OwnBoard`) against a real boardd in this test's
//! runtime: the claim it takes, the lease it keeps, the task it ends, the
//! messages it passes on, and what it says when something is in the way.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "test code: a panic fails the test, and the harness captures what it prints"
)]

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::Duration;
use teamboard_mcp::{Board, OwnBoard, OwnConfig};
use teamboard_protocol::member::{MemberCall, MemberReply};
use teamboard_protocol::{Client, Credential, ErrorCode, MessageKind, Task, TaskId, TaskStatus};
use teamboard_testkit::{GitRepo, InProc, lead, lead_key, task, teammate};

/// Member `me`'s own session on the boardd at `socket`, vouched for by `key`,
/// its calls to boardd bounded by `timeout`.
fn own(socket: &Path, key: Credential, timeout: Option<Duration>) -> OwnBoard {
    let key = Ok(key);
    OwnBoard::new(OwnConfig {
        endpoint: teamboard_protocol::Endpoint::Unix(socket.to_path_buf()),
        team: "default".into(),
        new_team: false,
        name: "me".into(),
        role: "member".into(),
        timeout,
        credential: key,
    })
}

fn me(daemon: &InProc) -> OwnBoard {
    let key = lead_key(&daemon.socket);
    own(&daemon.socket, key, Some(Duration::from_secs(30)))
}

fn call(tool: &str, arguments: Value) -> MemberCall {
    MemberCall {
        tool: tool.into(),
        arguments,
    }
}

fn ok(reply: MemberReply) -> Value {
    match reply {
        MemberReply::Ok { value } => value,
        MemberReply::Error { message, .. } => panic!("refused: {message}"),
    }
}

fn refused(reply: MemberReply) -> (Option<ErrorCode>, String) {
    match reply {
        MemberReply::Error { code, message } => (code, message),
        MemberReply::Ok { value } => panic!("not refused: {value}"),
    }
}

/// Thirty seconds of lease, under the paused clock.
async fn paused() -> InProc {
    InProc::start_paused(|c| c.board.lease_ttl = Duration::from_secs(30)).await
}

/// A [`paused`] daemon, the lead, a task `subject` the lead added, and `me`
/// (not joined yet).
async fn a_task_for_me(subject: &str) -> (InProc, Client, Task, OwnBoard) {
    let daemon = paused().await;
    let lead = lead(&daemon.socket).await;
    let t = lead.add_task(task(subject)).await.expect("added");
    let board = me(&daemon);
    (daemon, lead, t, board)
}

/// Calls `tool`, which must answer; its value.
async fn ask(board: &mut OwnBoard, tool: &str, arguments: Value) -> Value {
    ok(board.call(call(tool, arguments)).await.reply)
}

/// Calls `tool`, which must refuse: its code and message.
async fn ask_refused(
    board: &mut OwnBoard,
    tool: &str,
    arguments: Value,
) -> (Option<ErrorCode>, String) {
    refused(board.call(call(tool, arguments)).await.reply)
}

/// Claims task `id` (`get_task` with `claim`); the task as the tool shows it.
async fn claim(board: &mut OwnBoard, id: TaskId) -> Value {
    ask(board, "get_task", json!({"id": id, "claim": true})).await
}

#[tokio::test(start_paused = true)]
async fn a_claim_outlives_its_lease_while_the_server_runs_and_ends_with_a_result() {
    let (daemon, lead, t, mut board) = a_task_for_me("Write the parser").await;
    board.join().await.expect("joined");

    let claimed = claim(&mut board, t.id).await;
    assert_eq!(claimed["status"], "in_progress");
    assert_eq!(claimed["owner"], "me");
    assert!(claimed["history"].is_array(), "a TaskDetail: {claimed}");

    // Five leases long, with nothing said: the server heartbeats.
    tokio::time::sleep(Duration::from_secs(150)).await;
    let now = lead.get_task(t.id).await.expect("read").task;
    assert_eq!((now.status, now.epoch), (TaskStatus::InProgress, 1));
    assert_eq!(board.held(), Some(t.id));

    let done = ask(
        &mut board,
        "complete_task",
        json!({"result": "parser in src/parse.rs"}),
    )
    .await;
    assert_eq!(done["status"], "completed");
    assert_eq!(done["result"], "parser in src/parse.rs");
    assert_eq!(board.held(), None);
    // The lead hears it as from a teammate.
    let inbox = lead.inbox().await.expect("inbox");
    assert_eq!(inbox.len(), 1, "{inbox:#?}");
    assert_eq!(inbox[0].kind, MessageKind::Result);
    assert_eq!(
        inbox[0].content,
        format!(
            "#{} Write the parser: completed by me\nparser in src/parse.rs",
            t.id
        )
    );
    board.leave().await;
    daemon.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_claim_the_lead_cancels_is_said_to_be_gone_at_the_next_call() {
    let (daemon, lead, t, mut board) = a_task_for_me("Doomed").await;
    claim(&mut board, t.id).await;
    lead.cancel_task(t.id).await.expect("cancelled");
    // The next heartbeat finds out.
    tokio::time::sleep(Duration::from_secs(11)).await;

    let answer = board
        .call(call("complete_task", json!({"result": "done"})))
        .await;
    let (_, message) = refused(answer.reply);
    assert!(message.contains("you hold no task"), "{message}");
    assert_eq!(answer.notes.len(), 1, "{:?}", answer.notes);
    assert!(
        answer.notes[0].starts_with(&format!(
            "Your claim on #{} (Doomed) is gone: boardd took it back",
            t.id
        )),
        "{}",
        answer.notes[0]
    );
    board.leave().await;
    daemon.stop().await;
}

#[tokio::test(start_paused = true)]
async fn one_task_at_a_time_and_only_the_one_held() {
    let daemon = paused().await;
    let lead = lead(&daemon.socket).await;
    let a = lead.add_task(task("a")).await.expect("added");
    let b = lead.add_task(task("b")).await.expect("added");
    let mut board = me(&daemon);

    let (_, none) = ask_refused(&mut board, "fail_task", json!({"reason": "no"})).await;
    assert!(
        none.contains("get_task {\"id\": N, \"claim\": true}"),
        "{none}"
    );

    claim(&mut board, a.id).await;
    // Claiming the held one again is no change.
    claim(&mut board, a.id).await;
    let (_, second) = ask_refused(&mut board, "get_task", json!({"id": b.id, "claim": true})).await;
    assert!(
        second.contains(&format!("you already hold task #{} (a)", a.id)),
        "{second}"
    );
    let (_, other) = ask_refused(
        &mut board,
        "complete_task",
        json!({"id": b.id, "result": "x"}),
    )
    .await;
    assert!(
        other.contains(&format!("you hold task #{}, not #{}", a.id, b.id)),
        "{other}"
    );
    // A refusal by boardd keeps its code.
    let (code, unknown) = ask_refused(&mut board, "get_task", json!({"id": 99})).await;
    assert_eq!(code, Some(ErrorCode::NotFound), "{unknown}");
    // A bad call never reaches boardd, and says what the tool takes.
    let (code, bad) = ask_refused(&mut board, "send_message", json!({"to": "lead"})).await;
    assert_eq!(code, None);
    assert!(bad.contains("send_message needs 'text'"), "{bad}");

    let failed = ask(&mut board, "fail_task", json!({"id": a.id, "reason": "no"})).await;
    assert_eq!(
        (failed["status"].clone(), failed["last_error"].clone()),
        (json!("pending"), json!("no"))
    );
    board.leave().await;
    daemon.stop().await;
}

#[tokio::test(start_paused = true)]
async fn leaving_gives_the_held_task_back_without_using_up_an_attempt() {
    let (daemon, lead, t, mut board) = a_task_for_me("Half done").await;
    claim(&mut board, t.id).await;
    board.leave().await;
    let detail = lead.get_task(t.id).await.expect("read");
    assert_eq!(
        (detail.task.status, detail.task.attempts),
        (TaskStatus::Pending, 0)
    );
    assert!(
        detail
            .task
            .handoff
            .as_deref()
            .is_some_and(|h| h.contains("me's session ended")),
        "{:?}",
        detail.task.handoff
    );
    daemon.stop().await;
}

#[tokio::test(start_paused = true)]
async fn messages_for_the_member_come_with_the_next_result_once() {
    let daemon = paused().await;
    let lead = lead(&daemon.socket).await;
    let mut board = me(&daemon);
    board.join().await.expect("joined");
    lead.send("me", MessageKind::Message, "look at #4 first", None)
        .await
        .expect("sent");
    let first = board.call(call("list_tasks", json!({}))).await;
    assert_eq!(ok(first.reply), json!([]));
    assert_eq!(
        first.notes,
        ["Messages for me:\n- from lead: look at #4 first"]
    );
    let second = board.call(call("list_tasks", json!({}))).await;
    assert!(second.notes.is_empty(), "{:?}", second.notes);
    // And the member can answer.
    let sent = ask(
        &mut board,
        "send_message",
        json!({"to": "lead", "text": "on it"}),
    )
    .await;
    assert_eq!(
        (sent["from"].clone(), sent["to"].clone()),
        (json!("me"), json!("lead"))
    );
    board.leave().await;
    daemon.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_name_taken_by_a_live_session_says_what_to_do() {
    let daemon = paused().await;
    let _alive = teammate(&daemon.socket, "me", "dev").await;
    let mut board = me(&daemon);
    let why = board.join().await.expect_err("taken");
    assert!(
        why.contains("start this server with another --name"),
        "{why}"
    );
    let (_, again) = ask_refused(&mut board, "list_tasks", json!({})).await;
    assert_eq!(again, why);
    daemon.stop().await;
}

#[tokio::test]
async fn the_completion_gate_refuses_with_what_to_do_and_the_task_stays_held() {
    let daemon = InProc::start().await;
    let repo = GitRepo::new(daemon.dir());
    let lead = lead(&daemon.socket).await;
    lead.set_repo(repo.repo_args()).await.expect("repo set");
    let mut t = task("Must pass");
    t.checks = vec!["test -f must-exist".into()];
    let t = lead.add_task(t).await.expect("added");
    let mut board = me(&daemon);

    let claimed = claim(&mut board, t.id).await;
    let path = claimed["worktree"]["path"]
        .as_str()
        .expect("a worktree")
        .to_string();
    assert!(Path::new(&path).is_dir(), "opened: {path}");

    let (code, message) = ask_refused(&mut board, "complete_task", json!({"result": "done"})).await;
    assert_eq!(code, Some(ErrorCode::CheckFailed));
    assert!(
        message.starts_with("complete_task was refused: "),
        "{message}"
    );
    assert!(
        message.contains("fix the problem in your worktree and call complete_task again"),
        "{message}"
    );
    assert_eq!(board.held(), Some(t.id));

    std::fs::write(Path::new(&path).join("must-exist"), "").expect("written");
    let done = ask(&mut board, "complete_task", json!({"result": "done"})).await;
    assert_eq!(done["status"], "completed");
    assert!(done["worktree"]["merged"].is_string(), "{done}");
    board.leave().await;
    daemon.stop().await;
}

/// A way to boardd that passes everything on until it is told to stall; from
/// then on, what the client sends is dropped, as by a boardd that hangs.
struct Proxy {
    path: PathBuf,
    stalled: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Proxy {
    /// Listens at `path`, and passes on to `to`.
    fn start(path: PathBuf, to: &Path) -> Proxy {
        use std::sync::atomic::{AtomicBool, Ordering};
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        let listener = tokio::net::UnixListener::bind(&path).expect("bound");
        let stalled = std::sync::Arc::new(AtomicBool::new(false));
        let (to, flag) = (to.to_path_buf(), stalled.clone());
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let server = tokio::net::UnixStream::connect(&to).await.expect("boardd");
                let (mut client_r, mut client_w) = client.into_split();
                let (mut server_r, mut server_w) = server.into_split();
                let flag = flag.clone();
                tokio::spawn(async move {
                    let mut buf = vec![0; 64 * 1024];
                    while let Ok(n @ 1..) = client_r.read(&mut buf).await {
                        if !flag.load(Ordering::SeqCst) {
                            let _ = server_w.write_all(&buf[..n]).await;
                        }
                    }
                });
                tokio::spawn(async move {
                    let _ = tokio::io::copy(&mut server_r, &mut client_w).await;
                });
            }
        });
        Proxy { path, stalled }
    }

    fn stall(&self) {
        self.stalled
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

/// `teamctl mcp --timeout`: a boardd that stops answering costs a bounded call
/// the timeout and an answer that says so, while the calls on the held task
/// wait for their answer.
#[tokio::test(start_paused = true)]
async fn a_boardd_that_stops_answering_costs_a_bounded_call_the_timeout() {
    let (daemon, _lead, t, _) = a_task_for_me("Write the parser").await;
    let dir = teamboard_testkit::short_tempdir();
    let proxy = Proxy::start(dir.path().join("proxy.sock"), &daemon.socket);
    let key = lead_key(&daemon.socket);
    let mut board = own(&proxy.path, key, Some(Duration::from_secs(5)));
    board.join().await.expect("joined");
    ask(&mut board, "list_tasks", json!({})).await;

    proxy.stall();
    let started = tokio::time::Instant::now();
    let answer = board.call(call("list_tasks", json!({}))).await;
    assert_eq!(started.elapsed(), Duration::from_secs(5));
    let (code, message) = refused(answer.reply);
    assert_eq!(code, None);
    assert!(
        message.starts_with("boardd did not answer within 5 s (teamctl mcp --timeout)"),
        "{message}"
    );
    // Taking a task is not cut short: the server must know whether it holds it.
    let claim = board.call(call("get_task", json!({"id": t.id, "claim": true})));
    assert!(
        tokio::time::timeout(Duration::from_secs(3600), claim)
            .await
            .is_err(),
        "the claim gave up"
    );
    daemon.stop().await;
}

/// Joining the board waits as long as `--timeout` says, and no longer.
#[tokio::test(start_paused = true)]
async fn joining_a_boardd_that_does_not_answer_gives_up_after_the_timeout() {
    let dir = teamboard_testkit::short_tempdir();
    let path = dir.path().join("silent.sock");
    let listener = tokio::net::UnixListener::bind(&path).expect("bound");
    let silent = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = listener.accept().await {
            held.push(stream);
        }
    });
    let key = Credential::new("nobody's");
    let mut board = own(&path, key, Some(Duration::from_secs(42)));
    let started = tokio::time::Instant::now();
    let why = board.join().await.expect_err("no answer");
    assert_eq!(started.elapsed(), Duration::from_secs(42));
    assert!(
        why.ends_with("did not answer within 42 s (teamctl mcp --timeout)"),
        "{why}"
    );
    silent.abort();
}
