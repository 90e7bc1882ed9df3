//! Real teammates end to end: `teamctl spawn` starts detached `teammated` processes
//! against a real `boardd` process, they do the work, `teamctl team` and `teamctl
//! logs` show it, and a teammate keeps its claim across a `kill -9` of boardd.

mod common;

use common::{Daemon, eventually, lead, short_tempdir, workspace_bin};
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;
use teamboard_protocol::request::NewTask;
use teamboard_protocol::{EventKind, TaskStatus};

const PATIENCE: Duration = Duration::from_secs(30);

fn teamctl(socket: &Path, state: &Path, args: &[&str]) -> String {
    let out = Command::new(workspace_bin("teamctl"))
        .arg("--socket")
        .arg(socket)
        .arg("--state-dir")
        .arg(state)
        .args(args)
        .env_remove("TEAMBOARD_SOCKET")
        .env_remove("TEAMBOARD_STATE_DIR")
        .stdin(Stdio::null())
        .output()
        .expect("run teamctl");
    assert!(
        out.status.success(),
        "teamctl {args:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn json(socket: &Path, state: &Path, args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.push("--json");
    let out = teamctl(socket, state, &all);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?}: {e}\n{out}"))
}

/// Whether `pid` is a live process (not gone, not a zombie awaiting its reaper).
fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit_once(") ").map(|(_, rest)| !rest.starts_with('Z')))
        .unwrap_or(false)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spawned_teammates_do_the_work_and_show_in_team_and_logs() {
    let dir = short_tempdir();
    let (socket, state) = (dir.path().join("s"), dir.path().join("state"));
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let _daemon = Daemon::start(&socket, &state, &[]).await;
    let mut pids = Vec::new();
    for name in ["alice", "bob"] {
        let spawned = json(
            &socket,
            &state,
            &[
                "spawn",
                name,
                "--role",
                "dev",
                "--workdir",
                work.to_str().unwrap(),
            ],
        );
        let pid = spawned["pid"].as_i64().expect("pid") as i32;
        // Detached: its own process group, not ours.
        assert_eq!(unsafe { libc::getpgid(pid) }, pid, "{spawned}");
        pids.push(pid);
    }
    let mut ids = Vec::new();
    for n in 1..=3 {
        let desc = format!("```sh\nsleep 0.2; echo part-{n} | tee part-{n}.txt\n```");
        let out = teamctl(
            &socket,
            &state,
            &["task", "add", &format!("part {n}"), "-d", &desc],
        );
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
        let team = json(&socket, &state, &["team"]);
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
    let human = teamctl(&socket, &state, &["team"]);
    assert!(human.contains("alice") && human.contains("pid"), "{human}");
    // The transcript shows what the model saw and did.
    let logs = teamctl(&socket, &state, &["logs", "alice"]);
    assert!(logs.contains("idle"), "{logs}");
    let both = logs + &teamctl(&socket, &state, &["logs", "bob"]);
    assert!(both.contains("Auto-claimed task #"), "{both}");
    assert!(both.contains("complete_task"), "{both}");
    // The handshake stops them.
    for name in ["alice", "bob"] {
        teamctl(
            &socket,
            &state,
            &[
                "send",
                name,
                "stop",
                "--kind",
                "shutdown_request",
                "--request-id",
                name,
            ],
        );
    }
    for pid in pids {
        eventually("the teammate to exit", PATIENCE, || async {
            (!alive(pid)).then_some(())
        })
        .await;
    }
    let inbox = boss.inbox().await.unwrap();
    for name in ["alice", "bob"] {
        assert!(
            inbox
                .iter()
                .any(|m| m.from == name && m.request_id.as_deref() == Some(name)),
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
    let log = std::fs::File::create(dir.path().join("alice.log")).unwrap();
    let mut alice = tokio::process::Command::new(workspace_bin("teammated"))
        .args(["--name", "alice", "--role", "dev"])
        .arg("--socket")
        .arg(&socket)
        .arg("--state-dir")
        .arg(&state)
        .arg("--workdir")
        .arg(&work)
        .stdin(Stdio::null())
        .stderr(log)
        .kill_on_drop(true)
        .spawn()
        .expect("teammated");
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
    alice.start_kill().ok();
    let _ = alice.wait().await;
}
