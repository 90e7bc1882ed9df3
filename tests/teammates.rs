//! Real teammates end to end: `teamctl spawn` starts detached `teammated` processes
//! against a real `boardd` process, they do the work, `teamctl team` and `teamctl
//! logs` show it, and a teammate keeps its claim across a `kill -9` of boardd.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "test code: a panic fails the test, and the harness captures what it prints"
)]

use std::path::Path;
use teamboard_protocol::request::NewTask;
use teamboard_protocol::{EventKind, MessageKind, TaskStatus};
use teamboard_testkit::{
    Daemon, PATIENCE, Teamctl, Teammated, alive, eventually, lead, short_tempdir, workspace_bin,
};

/// `teamctl --socket S --state-dir D`, the binary built for this test's profile.
fn teamctl(socket: &Path, state: &Path) -> Teamctl {
    Teamctl::new(workspace_bin("teamctl"), socket).with_state_dir(state)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spawned_teammates_do_the_work_and_show_in_team_and_logs() {
    let dir = short_tempdir();
    let (socket, state) = (dir.path().join("s"), dir.path().join("state"));
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let _daemon = Daemon::start(&socket, &state, &[]).await;
    let teamctl = teamctl(&socket, &state);
    let mut pids = Vec::new();
    for name in ["alice", "bob"] {
        let spawned = teamctl.json(&[
            "spawn",
            name,
            "--role",
            "dev",
            "--workdir",
            work.to_str().unwrap(),
        ]);
        let pid = spawned["pid"].as_i64().expect("pid") as i32;
        // Detached: its own process group, not ours.
        // SAFETY: getpgid(2) only reads a pid.
        assert_eq!(unsafe { libc::getpgid(pid) }, pid, "{spawned}");
        pids.push(pid);
    }
    let mut ids = Vec::new();
    for n in 1..=3 {
        let desc = format!("```sh\nsleep 0.2; echo part-{n} | tee part-{n}.txt\n```");
        let out = teamctl.ok(&["task", "add", &format!("part {n}"), "-d", &desc]);
        ids.push(out.trim().to_string());
    }
    let boss = lead(&socket).await;
    eventually("all three tasks to complete", PATIENCE, || async {
        let tasks = boss.list_tasks(Some(TaskStatus::Completed)).await.ok()?;
        (tasks.len() == 3).then_some(())
    })
    .await;
    for n in 1..=3 {
        let text = std::fs::read_to_string(work.join(format!("part-{n}.txt"))).unwrap();
        assert_eq!(text, format!("part-{n}\n"));
    }
    // `team --json`: name, role, status, pid, task and tokens for each member.
    let team = eventually("both to be idle again", PATIENCE, || async {
        let team = teamctl.json(&["team"]);
        let all_idle = team
            .as_array()?
            .iter()
            .all(|m| m["status"] == "idle" && m["task"].is_null());
        all_idle.then_some(team)
    })
    .await;
    let members = team.as_array().unwrap();
    assert_eq!(members.len(), 2, "{team}");
    for m in members {
        assert_eq!(m["role"], "dev");
        let pid = m["pid"].as_i64().unwrap() as i32;
        assert!(pids.contains(&pid), "{m}");
        assert!(m["tokens"]["input"].as_u64().unwrap() > 0, "{m}");
    }
    let human = teamctl.ok(&["team"]);
    assert!(human.contains("alice") && human.contains("pid"), "{human}");
    // The transcript shows what the model saw and did.
    let logs = teamctl.ok(&["logs", "alice"]);
    assert!(logs.contains("idle"), "{logs}");
    let both = logs + &teamctl.ok(&["logs", "bob"]);
    assert!(both.contains("Auto-claimed task #"), "{both}");
    assert!(both.contains("complete_task"), "{both}");
    // A shutdown request each: idle, they approve and leave.
    for name in ["alice", "bob"] {
        let said = teamctl.ok(&["shutdown", name]);
        assert!(
            said.starts_with(&format!("{name} approved the shutdown")),
            "{said}"
        );
    }
    for pid in pids {
        eventually("the teammate to exit", PATIENCE, || async {
            (!alive(pid as u32)).then_some(())
        })
        .await;
    }
    let inbox = boss.inbox().await.unwrap();
    for name in ["alice", "bob"] {
        assert!(
            inbox.iter().any(|m| m.from == name
                && m.kind == MessageKind::ShutdownResponse
                && m.content.starts_with("approved")),
            "{inbox:#?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_teammate_keeps_its_claim_across_a_boardd_crash() {
    let dir = short_tempdir();
    let (socket, state) = (dir.path().join("s"), dir.path().join("state"));
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let mut daemon = Daemon::start(&socket, &state, &["--restart-grace", "30"]).await;
    let mut alice = Teammated::new(workspace_bin("teammated"), &socket, &state).spawn(
        "alice",
        "dev",
        &work,
        &dir.path().join("alice.log"),
        &[],
        &[],
    );
    let boss = lead(&socket).await;
    let t = boss
        .add_task(NewTask {
            subject: "survive a crash".into(),
            description: "```sh\ntouch started; sleep 2; echo survived\n```".into(),
            ..NewTask::default()
        })
        .await
        .unwrap();
    eventually("alice to start the work", PATIENCE, || async {
        work.join("started").exists().then_some(())
    })
    .await;
    drop(boss);
    daemon.kill9();
    let _daemon = Daemon::start(&socket, &state, &["--restart-grace", "30"]).await;
    let boss = lead(&socket).await;
    let done = eventually("the task to complete", PATIENCE, || async {
        let task = boss.get_task(t.id).await.ok()?.task;
        (task.status == TaskStatus::Completed).then_some(task)
    })
    .await;
    assert_eq!(done.owner.as_deref(), Some("alice"));
    assert_eq!(done.attempts, 1, "the same attempt went on: {done:#?}");
    assert_eq!(done.result.as_deref(), Some("survived"));
    let events = boss.events(Default::default()).await.unwrap();
    assert!(
        events.iter().any(|e| e.kind == EventKind::MemberRegistered
            && e.detail.contains(&format!("kept #{}", t.id))),
        "{events:#?}"
    );
    alice.child.start_kill().ok();
    let _ = alice.child.wait().await;
}
