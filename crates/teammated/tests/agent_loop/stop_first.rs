//! A task goes back to the board only once its agent has stopped: the moment
//! boardd hears of it, someone else may take the task, and two agents must
//! never work on one task at once.

use super::*;

/// alice with an agent that takes a while to end once its input closes (the
/// fake agent under a shell that sleeps on after it), so that the order of
/// "agent stopped" and "task given back" shows.
fn spawn_slow_to_stop(board: &Board, name: &str) -> Teammate {
    let agent = workspace_bin("fake-acp-agent").display().to_string();
    let home = fake_home(board).display().to_string();
    let script = format!("{agent}; sleep 2");
    board.spawn_with_env(
        name,
        "dev",
        &[
            UNSANDBOXED[0],
            UNSANDBOXED[1],
            "--runtime",
            "acp",
            "--agent-cmd",
            "/bin/sh",
            "--agent-arg=-c",
            &format!("--agent-arg={script}"),
        ],
        &[("FAKE_ACP_HOME", home.as_str())],
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shutdown_request_stops_the_agent_before_the_task_is_given_back() {
    let mut board = Board::start(TEAMMATED).await;
    let mut alice = spawn_slow_to_stop(&board, "alice");
    let t = board.add("long", "SLEEP: 60\nANSWER: no", &[]).await;
    board.wait_claimed(t.id).await;
    until("the agent took the task", || async {
        prompts(&board).iter().any(|p| p.contains("SLEEP: 60"))
    })
    .await;
    board
        .lead
        .request_shutdown(ShutdownArgs {
            to: "alice".into(),
            ..ShutdownArgs::default()
        })
        .await
        .expect("request");
    let home = fake_home(&board).display().to_string();
    let agent_env = format!("FAKE_ACP_HOME={home}");
    let alice_pid = alice.pid();
    eventually("the task given back", PATIENCE, || async {
        let task = board.task(t.id).await;
        if task.status != TaskStatus::Pending {
            return None;
        }
        assert!(
            others_with_env(&agent_env, alice_pid).is_empty(),
            "#{} was given back while its agent still ran",
            t.id
        );
        Some(())
    })
    .await;
    let code = tokio::time::timeout(PATIENCE, alice.exit_code())
        .await
        .expect("alice leaves");
    assert_eq!(code, Some(0), "{}", alice.log_text());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agents_fail_task_stops_the_agent_before_the_task_is_given_back() {
    let mut board = Board::start(TEAMMATED).await;
    let _alice = spawn_slow_to_stop(&board, "alice");
    let teamctl = workspace_bin("teamctl").display().to_string();
    let t = board
        .add(
            "give up",
            &format!("RUN: {teamctl} task fail 1 --reason 'cannot do it'\nANSWER: gave up"),
            &[],
        )
        .await;
    assert_eq!(t.id, 1);
    board.wait_claimed(t.id).await;
    // The agent's process (its guard's, under a guard): the first one, not
    // the one a re-claim of the task starts.
    let agent = eventually("the agent's pid", PATIENCE, || async {
        agent_pids(&board.transcript("alice")).first().copied()
    })
    .await;
    eventually("the task given back", PATIENCE, || async {
        let task = board.task(t.id).await;
        // Given back: pending, or claimed again (a new epoch).
        if task.status == TaskStatus::InProgress && task.epoch == 1 {
            return None;
        }
        assert!(
            !alive(agent),
            "#{} was given back while its agent still ran: {task:#?}",
            t.id
        );
        Some(task)
    })
    .await;
    let events = board
        .lead
        .events(teamboard_protocol::request::EventsArgs {
            task: Some(t.id),
            ..Default::default()
        })
        .await
        .expect("events");
    assert!(
        events
            .iter()
            .any(|e| e.kind == EventKind::TaskReleased && e.detail.contains("cannot do it")),
        "{events:#?}"
    );
}

/// The pids of the agents the transcript reports started, in order.
fn agent_pids(transcript: &str) -> Vec<u32> {
    transcript
        .lines()
        .filter_map(|l| {
            let v: Value = serde_json::from_str(l).ok()?;
            let text = v["text"].as_str()?;
            text.strip_prefix("agent: acp session ")?;
            let (_, pid) = text.split_once(", pid ")?;
            pid.split(|c: char| !c.is_ascii_digit())
                .next()?
                .parse()
                .ok()
        })
        .collect()
}

/// Live processes other than `but` with `needle` in their environment: the
/// agent and what it started (teammated itself has the variable too).
fn others_with_env(needle: &str, but: u32) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| pid != but && alive(pid))
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .map(|b| String::from_utf8_lossy(&b).contains(needle))
                .unwrap_or(false)
        })
        .collect()
}
