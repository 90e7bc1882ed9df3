//! The kit's own checks, for the parts that the workspace's tests do not all
//! exercise yet: the paused-clock daemon, restarts, raw sessions, and the
//! processes found by a marker (the agents' tests skip without the agents).

mod netns;
mod ownership;

use crate::raw::Session;
use crate::{InProc, lead, task, teammate};
use std::time::Duration;
use teamboard_protocol::request::{RegisterArgs, TaskRef, WaitArgs};
use teamboard_protocol::{ErrorCode, Request, TaskStatus, Work};

const TTL: Duration = Duration::from_secs(30);
const GRACE: Duration = Duration::from_secs(10);

fn register(role: &str) -> Request {
    Request::Register(RegisterArgs {
        role: role.into(),
        pid: None,
        ..RegisterArgs::default()
    })
}

#[tokio::test(start_paused = true)]
async fn a_paused_daemon_keeps_the_lease_in_virtual_time_and_restarts_on_its_state() {
    let mut daemon = InProc::start_paused(|c| {
        c.board.lease_ttl = TTL;
        c.board.restart_grace = GRACE;
    })
    .await;
    assert!(daemon.config().inline_commits);
    let boss = lead(&daemon.socket).await;
    let kept = boss.add_task(task("kept")).await.expect("add");
    let alice = teammate(&daemon.socket, "alice", "dev").await;
    let claim = alice.claim_task(kept.id).await.expect("claim");

    // Just short of the TTL the claim holds; the clock is virtual.
    tokio::time::advance(TTL - Duration::from_secs(1)).await;
    let t = boss.get_task(kept.id).await.expect("get").task;
    assert_eq!(t.status, TaskStatus::InProgress);

    // A restart restores the claim from disk, and its owner may come back
    // within the grace period and finish it.
    daemon.restart().await;
    assert!(
        alice.status().await.is_err(),
        "the old connection is closed"
    );
    let alice = teammate(&daemon.socket, "alice", "dev").await;
    tokio::time::advance(GRACE + Duration::from_secs(1)).await;
    let done = alice
        .complete_task(kept.id, claim.epoch, "done")
        .await
        .expect("complete after the restart");
    assert_eq!(done.status, TaskStatus::Completed);
    daemon.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_raw_session_reads_answers_by_id_and_keeps_the_rest() {
    let daemon = InProc::start_paused(|_| {}).await;
    let mut w = Session::open(&daemon.socket, "w1").await;
    let mut boss = Session::open(&daemon.socket, "lead").await;
    assert_ne!(w.id(), boss.id(), "each connection has its own session");
    w.call(register("dev")).await.expect("register");

    // Parked: the answer comes when a task does, not when the clock runs.
    let wait = w
        .send(Request::WaitForWork(WaitArgs {
            timeout_ms: Some(60_000),
        }))
        .await;
    let status = w.send(Request::Status(Default::default())).await;
    w.answer(status).await.expect("status while parked");
    let added = boss.call(Request::AddTask(task("new"))).await.expect("add");
    let work: Work = serde_json::from_value(w.answer(wait).await.expect("woken")).expect("work");
    match work {
        Work::Task { claim } => assert_eq!(claim.task.id, added["id"]),
        other => panic!("expected a task, got {other:?}"),
    }

    // An error comes back as its code.
    let missing = boss.call(Request::GetTask(TaskRef { id: 99 })).await;
    assert_eq!(missing, Err(ErrorCode::NotFound));
    daemon.stop().await;
}

#[test]
fn a_blocking_daemon_serves_clients_across_calls_and_stops() {
    let mut daemon = crate::blocking::InProc::start();
    let boss = daemon.block_on(lead(&daemon.socket));
    daemon.block_on(boss.add_task(task("one"))).expect("add");
    let tasks = daemon.block_on(boss.list_tasks(None)).expect("list");
    assert_eq!(tasks.len(), 1);
    daemon.stop();
    assert!(
        !daemon.socket.exists(),
        "the socket is gone once it stopped"
    );
}

#[tokio::test]
async fn processes_are_found_by_marker_and_environment_and_waited_out() {
    use std::os::unix::process::CommandExt as _;
    let marker = format!("testkit-marker-{}", std::process::id());
    // A shell that waits for its `sleep`: the marker is on the shell's command
    // line, and in the environment of both.
    let mut child = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("sleep 300; : {marker}"))
        .env("TESTKIT_MARK", &marker)
        .process_group(0)
        .spawn()
        .expect("sh starts");
    let shell = child.id();
    crate::eventually("the sleep under the shell", crate::PATIENCE, || async {
        (crate::with_env("TESTKIT_MARK", &marker).len() == 2).then_some(())
    })
    .await;
    let marked: Vec<u32> = crate::with_marker(&marker).iter().map(|p| p.0).collect();
    assert_eq!(marked, [shell]);
    assert!(crate::with_env("TESTKIT_MARK", "other").is_empty());

    // A wait that runs out names what is still running.
    let left = marker.clone();
    let waited = tokio::spawn(async move {
        crate::wait_gone("the marked shell", Duration::from_millis(50), || {
            crate::with_marker(&left)
        })
        .await
    });
    let failed = waited.await.expect_err("the shell still runs").into_panic();
    let said = failed.downcast_ref::<String>().expect("a message");
    assert!(
        said.contains("the marked shell to end; still running: [(")
            && said.contains(&shell.to_string()),
        "{said}"
    );

    // SAFETY: kill(2) of the process group this test started.
    unsafe { libc::kill(-(shell as i32), libc::SIGKILL) };
    let _ = child.wait();
    crate::wait_gone("the marked processes", crate::PATIENCE, || {
        crate::with_env("TESTKIT_MARK", &marker)
    })
    .await;
}
