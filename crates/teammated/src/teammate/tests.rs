//! Shutdown requests that meet a refusal from boardd: a teammate built as
//! teammated builds it, against a real boardd, behind a socket that answers a
//! chosen op with an error of its own a given number of times, as a boardd
//! that could not persist the change would.

use crate::config::Config;
use crate::teammate::{Exit, Teammate};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use teamboard_protocol::request::{NewTask, ShutdownArgs};
use teamboard_protocol::{Client, MemberStatus, RequestState, TaskStatus};
use teamboard_testkit::{InProc, lead};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::UnixStream;
use tokio::net::unix::OwnedWriteHalf;
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

/// A socket in front of boardd's that refuses the next `times` requests of
/// `op` with a `storage` error, and passes everything else both ways.
struct Refusing {
    path: PathBuf,
    left: Arc<AtomicUsize>,
}

impl Refusing {
    fn start(daemon: &InProc, op: &'static str, times: usize) -> Refusing {
        let path = daemon.dir().join("r");
        let listener = tokio::net::UnixListener::bind(&path).expect("bind");
        let left = Arc::new(AtomicUsize::new(times));
        let (back, count) = (daemon.socket.clone(), left.clone());
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let server = UnixStream::connect(&back).await.expect("boardd");
                tokio::spawn(pass(client, server, op, count.clone()));
            }
        });
        Refusing { path, left }
    }

    /// How many refusals are still to come.
    fn left(&self) -> usize {
        self.left.load(Ordering::SeqCst)
    }
}

async fn read(r: &mut (impl tokio::io::AsyncRead + Unpin)) -> Option<Vec<u8>> {
    let len = r.read_u32().await.ok()?;
    let mut frame = vec![0; len as usize];
    r.read_exact(&mut frame).await.ok()?;
    Some(frame)
}

async fn write(w: &Mutex<OwnedWriteHalf>, frame: &[u8]) -> Option<()> {
    let mut w = w.lock().await;
    w.write_u32(u32::try_from(frame.len()).ok()?).await.ok()?;
    w.write_all(frame).await.ok()
}

async fn pass(client: UnixStream, server: UnixStream, op: &'static str, left: Arc<AtomicUsize>) {
    let (mut from_client, to_client) = client.into_split();
    let (mut from_server, to_server) = server.into_split();
    let (to_client, to_server) = (Mutex::new(to_client), Mutex::new(to_server));
    let up = async {
        while let Some(frame) = read(&mut from_client).await {
            let v: serde_json::Value = serde_json::from_slice(&frame).unwrap_or_default();
            let refuse = v["op"] == op
                && left
                    .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                    .is_ok();
            if refuse {
                let answer = serde_json::json!({
                    "type": "response",
                    "id": v["id"],
                    "error": {"code": "storage", "message": "disk full (the test's refusal)"},
                });
                write(&to_client, answer.to_string().as_bytes()).await?;
            } else {
                write(&to_server, &frame).await?;
            }
        }
        None::<()>
    };
    let down = async {
        while let Some(frame) = read(&mut from_server).await {
            write(&to_client, &frame).await?;
        }
        None::<()>
    };
    tokio::select! {
        _ = up => {}
        _ = down => {}
    }
}

/// alice against `daemon`, through `socket`.
async fn alice(daemon: &InProc, socket: &Path) -> Teammate {
    let mut cfg = Config::for_tests(daemon);
    cfg.socket = socket.to_path_buf();
    let (alice, _, _) = crate::run::open(cfg, CancellationToken::new())
        .await
        .expect("alice starts")
        .expect("not cancelled");
    alice
}

/// Waits until `name` is on the roster with a session.
async fn connected(lead: &Client, name: &str) {
    loop {
        let team = lead.team().await.expect("team");
        if team
            .iter()
            .any(|m| m.name == name && m.connected && m.status != MemberStatus::Offline)
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// boardd refuses the release inside the model's approval, so it refuses the
/// approval too (the task is still held). The request is still pending, and
/// the model can answer it again: the task is still held, and the second
/// approval gives it back with the note and leaves.
#[tokio::test]
async fn a_refused_release_leaves_the_model_its_answer_to_the_shutdown() {
    let daemon = InProc::start().await;
    let refusing = Refusing::start(&daemon, "release_task", 1);
    let mut alice = alice(&daemon, &refusing.path).await;
    let lead = lead(&daemon.socket).await;
    let id = lead
        .add_task(NewTask {
            subject: "refactor auth".into(),
            ..Default::default()
        })
        .await
        .expect("added")
        .id;
    let claim = alice
        .session
        .call(|c| async move { c.claim_task(id).await })
        .await
        .expect("claimed");
    alice.hold(claim, "Claimed").await.expect("held");
    let asked = ShutdownArgs {
        to: "alice".into(),
        timeout_ms: Some(600_000),
        ..Default::default()
    };
    let req = lead.request_shutdown(asked).await.expect("asked");
    let inbox = alice
        .session
        .call(|c| async move { c.inbox().await })
        .await
        .expect("inbox");
    let read = super::read_messages(&mut alice, inbox).await.expect("read");
    assert!(
        read.texts.iter().any(|t| t.contains("respond_shutdown")),
        "{read:?}"
    );

    let first = alice.respond_shutdown(true, "half done".into()).await;
    assert!(first.is_error, "{first:?}");
    assert_eq!(refusing.left(), 0, "the release went to boardd");
    assert_eq!(alice.task_id(), Some(id), "the task is still held");
    let pending = lead.get_request(req.id).await.expect("request");
    assert_eq!(pending.state, RequestState::Pending);

    let second = alice
        .respond_shutdown(true, "parser done; lexer left".into())
        .await;
    assert!(!second.is_error, "{second:?}");
    let settled = lead.get_request(req.id).await.expect("request");
    assert_eq!(settled.state, RequestState::Approved, "{settled:#?}");
    assert_eq!(settled.answered_by.as_deref(), Some("alice"));
    let task = lead.get_task(id).await.expect("task").task;
    assert_eq!(task.status, TaskStatus::Pending);
    assert_eq!(task.handoff.as_deref(), Some("parser done; lexer left"));
    assert_eq!(
        alice.shutdown,
        Some(Exit::ShutdownRequested { by: "lead".into() })
    );
    drop(alice);
    daemon.stop().await;
}

/// A shutdown request whose request boardd refuses to give is not dropped:
/// it is read again, and an idle teammate approves it and leaves long before
/// its deadline would have stopped it.
#[tokio::test(start_paused = true)]
async fn a_shutdown_request_boardd_could_not_give_is_read_again() {
    let daemon = InProc::start_paused(|_| {}).await;
    let refusing = Refusing::start(&daemon, "get_request", 1);
    let mut cfg = Config::for_tests(&daemon);
    cfg.socket = refusing.path.clone();
    let teammate = tokio::spawn(crate::run(cfg, CancellationToken::new()));
    let lead = lead(&daemon.socket).await;
    connected(&lead, "alice").await;
    let asked = ShutdownArgs {
        to: "alice".into(),
        timeout_ms: Some(60_000),
        ..Default::default()
    };
    let req = lead.request_shutdown(asked).await.expect("asked");
    let exit = tokio::time::timeout(Duration::from_secs(50), teammate)
        .await
        .expect("alice leaves before the deadline")
        .expect("no panic")
        .expect("a clean exit");
    assert_eq!(exit, Exit::ShutdownRequested { by: "lead".into() });
    assert_eq!(refusing.left(), 0, "the first read was refused");
    let settled = lead.get_request(req.id).await.expect("request");
    assert_eq!(settled.state, RequestState::Approved, "{settled:#?}");
    assert_eq!(settled.answered_by.as_deref(), Some("alice"));
    assert!(!settled.forced, "{settled:#?}");
    daemon.stop().await;
}
