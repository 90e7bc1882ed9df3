//! `teamctl lead` end to end, driven through stdin: a real boardd, the real teamctl
//! and teammated binaries, the scripted lead and scripted teammates. The lead turns
//! the person's plan into a task graph, spawns the teammates, and the team completes
//! the work; slash commands are answered without the model.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "test code: a panic fails the test, and the harness captures what it prints"
)]

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex};
use teamboard_protocol::{Sandbox, SandboxMode, TaskStatus};
use teamboard_testkit::{Daemon, PATIENCE, eventually, lead, short_tempdir, workspace_bin};

const PLAN: &str = "````plan
teammate ada role=dev
teammate brook role=dev
task a: Write a
    ```sh
    sleep 0.3; echo a > a.txt; echo wrote a
    ```
task b: Write b
    ```sh
    sleep 0.3; echo b > b.txt; echo wrote b
    ```
task c after=a,b: Join them
    ```sh
    cat a.txt b.txt > c.txt; echo joined
    ```
````
";

/// The lead's stdout, collected by a thread as it comes.
#[derive(Clone, Default)]
struct Output(Arc<Mutex<String>>);

impl Output {
    fn collect(child: &mut Child) -> Output {
        let out = Output::default();
        let stdout = child.stdout.take().expect("piped stdout");
        let text = out.0.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                let mut t = text.lock().unwrap_or_else(|p| p.into_inner());
                t.push_str(&line);
                t.push('\n');
            }
        });
        out
    }

    fn text(&self) -> String {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    async fn wait_for(&self, what: &str) -> String {
        eventually(
            format!("the lead to print {what:?}; it printed:\n{}", self.text()),
            PATIENCE,
            || async {
                let t = self.text();
                t.contains(what).then_some(t)
            },
        )
        .await
    }
}

/// Stops the teammates the lead spawned (it printed their pids), however the test
/// ends: they run with no idle timeout.
struct StopTeammates(Output);

impl Drop for StopTeammates {
    fn drop(&mut self) {
        for line in self
            .0
            .text()
            .lines()
            .filter(|l| l.contains("spawn_teammate"))
        {
            let pid = line
                .split_once(", pid ")
                .and_then(|(_, r)| r.split(')').next())
                .and_then(|p| p.parse::<i32>().ok());
            if let Some(pid) = pid {
                // SAFETY: kill(2) on a teammate this test started; no memory involved.
                unsafe { libc::kill(pid, libc::SIGTERM) };
            }
        }
    }
}

fn say(stdin: &mut ChildStdin, text: &str) {
    stdin
        .write_all(text.as_bytes())
        .expect("the lead reads stdin");
    stdin.flush().expect("flush");
}

/// `teamctl lead ARGS --workdir WORK` on this board, with this build's
/// teammated and none of the caller's team or provider settings.
fn lead_command(socket: &Path, state: &Path, work: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(workspace_bin("teamctl"));
    cmd.arg("--socket")
        .arg(socket)
        .arg("--state-dir")
        .arg(state)
        .arg("lead")
        .args(args)
        .arg("--workdir")
        .arg(work)
        .env("TEAMMATED_BIN", workspace_bin("teammated"))
        .env_remove("TEAMBOARD_TEAM")
        .env_remove("TEAMMATE_PROVIDER");
    cmd
}

fn start_lead(socket: &Path, state: &Path, work: &Path) -> Child {
    lead_command(socket, state, work, &["--teammate-idle-timeout", "0"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("teamctl lead starts")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lead_driven_through_stdin_builds_the_graph_spawns_the_team_and_sums_up() {
    let dir = short_tempdir();
    let (socket, state, work) = (
        dir.path().join("s"),
        dir.path().join("state"),
        dir.path().join("work"),
    );
    std::fs::create_dir_all(&work).unwrap();
    let _daemon = Daemon::start(&socket, &state, &[]).await;
    let mut child = start_lead(&socket, &state, &work);
    let out = Output::collect(&mut child);
    let _stop = StopTeammates(out.clone());
    let mut stdin = child.stdin.take().expect("piped stdin");
    // It names the scripted model for what it is.
    out.wait_for("provider scripted (an offline stand-in, not a model; its tokens are estimates)")
        .await;

    // A slash command is answered without the model.
    say(&mut stdin, "/tasks\n");
    out.wait_for("no tasks").await;
    say(&mut stdin, "Split the work: a and b in parallel, then c.\n");
    out.wait_for("not a model").await;
    say(&mut stdin, PLAN);
    out.wait_for("Say \"start\"").await;
    let boss = lead(&socket).await;
    assert!(
        boss.list_tasks(None).await.unwrap().is_empty(),
        "nothing happens before start"
    );
    say(&mut stdin, "start\n");

    let done = eventually("the team to complete the three tasks", PATIENCE, || async {
        let tasks = boss.list_tasks(None).await.ok()?;
        (tasks.len() == 3 && tasks.iter().all(|t| t.status == TaskStatus::Completed))
            .then_some(tasks)
    })
    .await;
    let id = |subject: &str| done.iter().find(|t| t.subject == subject).unwrap().id;
    let c = done.iter().find(|t| t.subject == "Join them").unwrap();
    let mut blockers = c.blocked_by.clone();
    blockers.sort();
    assert_eq!(blockers, vec![id("Write a"), id("Write b")], "{done:?}");
    assert_eq!(
        std::fs::read_to_string(work.join("c.txt")).unwrap(),
        "a\nb\n"
    );

    out.wait_for("Summary of the team's work: 3 task(s): 3 completed")
        .await;
    // The summary's last line, from the task's result.
    out.wait_for("#3 Join them: completed by").await;
    out.wait_for("— joined").await;
    // The teammates it spawned (the start turn ended before the summary's), on the
    // roster; the lead is not.
    let team = boss.team().await.unwrap();
    let names: Vec<&str> = team.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, ["ada", "brook"], "{team:?}");
    assert!(team.iter().all(|m| m.connected && m.role == "dev"));
    say(&mut stdin, "/team\n");
    out.wait_for("brook        dev").await;
    say(&mut stdin, "/quit\n");
    let status = child.wait().expect("the lead exits");
    assert!(status.success(), "{status:?}");

    // Its tokens, by cause: the planning turns and one summary, no coordination
    // (no plan or error needed a decision).
    let usage: serde_json::Value = serde_json::from_slice(
        &std::fs::read(state.join("teammates/default/lead/usage.json")).unwrap(),
    )
    .unwrap();
    assert!(usage["planning"]["calls"].as_u64().unwrap() >= 4, "{usage}");
    assert_eq!(usage["summary"]["calls"], 1, "{usage}");
    assert_eq!(usage["coordination"]["calls"], 0, "{usage}");
    // The scripted lead's counts are its own estimates, and say so.
    assert_eq!(usage["estimated"], true, "{usage}");
    // The same count, for the person: the conversation's last line, on stdout.
    out.wait_for("lead tokens (estimated by the scripted model): planning")
        .await;
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert!(!stderr.contains("lead tokens"), "{stderr}");
}

/// `teamctl lead --goal` without `--yes` asks for "start" on stdin, and its exit
/// status says whether every task completed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_goal_waits_for_start_and_the_exit_status_tells_the_outcome() {
    let dir = short_tempdir();
    let (socket, state, work) = (
        dir.path().join("s"),
        dir.path().join("state"),
        dir.path().join("work"),
    );
    std::fs::create_dir_all(&work).unwrap();
    let _daemon = Daemon::start(&socket, &state, &["--max-attempts", "1"]).await;
    let goal = "Try it.\n\n````plan\nteammate ada\ntask good\n    ```sh\n    echo fine\n    ```\ntask bad\n    ```sh\n    echo broken; exit 3\n    ```\n````";
    // Neither task writes or fetches: the strictest sandbox runs them.
    let args = [
        "--goal",
        goal,
        "--teammate-idle-timeout",
        "0",
        "--teammate-sandbox",
        "read-only",
        "--teammate-no-network",
    ];
    let mut child = lead_command(&socket, &state, &work, &args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("teamctl lead starts");
    let out = Output::collect(&mut child);
    let _stop = StopTeammates(out.clone());
    let mut stdin = child.stdin.take().expect("piped stdin");
    out.wait_for("Type \"start\"").await;
    let boss = lead(&socket).await;
    assert!(boss.list_tasks(None).await.unwrap().is_empty());
    say(&mut stdin, "start\n");
    let status = tokio::task::spawn_blocking(move || child.wait())
        .await
        .unwrap()
        .expect("the lead exits");
    assert_eq!(status.code(), Some(1), "{}", out.text());
    // The reader thread may still be on the last lines.
    out.wait_for("1 of 2 task(s) completed").await;
    out.wait_for("#2 bad: failed").await;
    // The teammate the lead spawned runs under the sandbox it was given.
    let team = boss.team().await.unwrap();
    let sandboxes: Vec<_> = team.iter().map(|m| (m.name.as_str(), m.sandbox)).collect();
    let read_only = Sandbox {
        mode: SandboxMode::ReadOnly,
        network: false,
    };
    assert_eq!(sandboxes, [("ada", Some(read_only))], "{team:?}");
}

/// A goal whose teammates cannot start does not wait for ever: here `teamctl
/// spawn` refuses the claude runtime, since `claude` is not on PATH. The lead
/// gives up after `--give-up-after`, exits 1 and says why; the task stays.
///
/// `teamctl lead` itself starts `claude --version` before the lead runs (see
/// the next test): the stand-in here answers it and removes itself, so that the
/// agent is gone by the time the lead spawns.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_goal_whose_teammates_cannot_start_gives_up_and_says_why() {
    let dir = short_tempdir();
    let (socket, state, work, empty) = (
        dir.path().join("s"),
        dir.path().join("state"),
        dir.path().join("work"),
        dir.path().join("empty-path"),
    );
    std::fs::create_dir_all(&work).unwrap();
    std::fs::create_dir_all(&empty).unwrap();
    let claude = empty.join("claude");
    std::fs::write(
        &claude,
        "#!/bin/sh\n/bin/rm -- \"$0\"\necho '2.1.0 (Claude Code)'\n",
    )
    .unwrap();
    std::fs::set_permissions(&claude, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let _daemon = Daemon::start(&socket, &state, &[]).await;
    let goal = "Try it.\n\n````plan\nteammate ada\ntask only\n    Say done.\n````";
    let args = [
        "--goal",
        goal,
        "--yes",
        "--teammate-runtime",
        "claude",
        "--give-up-after",
        "2",
    ];
    let child = lead_command(&socket, &state, &work, &args)
        .env("PATH", &empty)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("teamctl lead starts");
    let waited = tokio::task::spawn_blocking(move || child.wait_with_output());
    let out = tokio::time::timeout(PATIENCE, waited)
        .await
        .expect("the lead to give up")
        .unwrap()
        .expect("the lead exits");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(
        stderr.contains(
            "gave up: no teammate has been on the team for 2s while 1 task(s) are open (#1)"
        ),
        "{stdout}\n{stderr}"
    );
    // The spawn's own refusal is in the lead's output, for the person to act on.
    assert!(
        stdout.contains("runs `claude`, which is not on PATH"),
        "{stdout}"
    );
    let boss = lead(&socket).await;
    let tasks = boss.list_tasks(None).await.unwrap();
    assert_eq!(tasks.len(), 1);
    assert_eq!(tasks[0].status, TaskStatus::Pending);
}

/// One lead per team at a time: a second `teamctl lead` on the team is refused
/// with words that name the first (its pid, since when); once the first is
/// killed, the next one starts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_lead_on_a_team_is_refused_until_the_first_is_gone() {
    let dir = short_tempdir();
    let (socket, state, work) = (
        dir.path().join("s"),
        dir.path().join("state"),
        dir.path().join("work"),
    );
    std::fs::create_dir_all(&work).unwrap();
    let _daemon = Daemon::start(&socket, &state, &[]).await;
    let mut first = start_lead(&socket, &state, &work);
    let out = Output::collect(&mut first);
    let mut stdin = first.stdin.take().expect("piped stdin");
    // It answers, so it took its seat (before reading anything).
    say(&mut stdin, "/tasks\n");
    out.wait_for("no tasks").await;

    let (s, st, w) = (socket.clone(), state.clone(), work.clone());
    let second = tokio::task::spawn_blocking(move || {
        lead_command(&s, &st, &w, &["--goal", "x", "--yes"])
            .stdin(Stdio::null())
            .output()
            .expect("teamctl lead runs")
    })
    .await
    .unwrap();
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert_eq!(second.status.code(), Some(1), "{stderr}");
    // teamctl execs the lead, so the first lead's pid is its child's.
    let named = format!(
        "team 'default' already has a lead (pid {}, since ",
        first.id()
    );
    assert!(stderr.contains(&named), "{stderr}");
    assert!(stderr.contains("one lead per team at a time"), "{stderr}");
    let boss = lead(&socket).await;
    assert!(boss.list_tasks(None).await.unwrap().is_empty());

    // A lead that died does not block the next one.
    first.kill().unwrap();
    first.wait().unwrap();
    let mut third = start_lead(&socket, &state, &work);
    let out = Output::collect(&mut third);
    let mut stdin = third.stdin.take().expect("piped stdin");
    say(&mut stdin, "/tasks\n");
    out.wait_for("no tasks").await;
    say(&mut stdin, "/quit\n");
    let status = tokio::task::spawn_blocking(move || third.wait())
        .await
        .unwrap()
        .expect("the lead exits");
    assert!(status.success(), "{status:?}");
}

/// `--review-plans person`: the scripted lead leaves a teammate's plan to the
/// person. The plan waits, pending, while the lead has heard of it; `teamctl
/// approve rN` decides it, the teammate proceeds, and the lead never called
/// `review_plan`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lead_that_leaves_plans_to_the_person_does_not_review_them() {
    let dir = short_tempdir();
    let (socket, state, work) = (
        dir.path().join("s"),
        dir.path().join("state"),
        dir.path().join("work"),
    );
    std::fs::create_dir_all(&work).unwrap();
    let _daemon = Daemon::start(&socket, &state, &[]).await;
    let goal = "Say hi.\n\n````plan\nteammate ada\ntask hi plan\n    ```sh\n    echo hi > hi.txt\n    ```\n````";
    let args = [
        "--goal",
        goal,
        "--yes",
        "--review-plans",
        "person",
        "--teammate-idle-timeout",
        "0",
    ];
    let mut child = lead_command(&socket, &state, &work, &args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("teamctl lead starts");
    let out = Output::collect(&mut child);
    let _stop = StopTeammates(out.clone());
    // The lead hears of the plan, as the person's to decide.
    let notice = out.wait_for("[Plan for the person r").await;
    assert!(
        notice.contains("The person decides it (`teamctl approve r"),
        "{notice}"
    );
    let boss = lead(&socket).await;
    let plans = boss
        .list_requests(teamboard_protocol::request::ListRequestsArgs {
            kind: Some(teamboard_protocol::RequestKind::Plan),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(plans.len(), 1, "{plans:?}");
    assert!(plans[0].is_pending(), "the lead decided it: {plans:?}");
    let id = format!("r{}", plans[0].id);

    let approve = tokio::task::spawn_blocking({
        let socket = socket.clone();
        move || {
            let (key_var, key) = teamboard_testkit::lead_key_env(&socket);
            Command::new(workspace_bin("teamctl"))
                .arg("--socket")
                .arg(&socket)
                .args(["approve", &id])
                .env(key_var, key)
                .output()
                .expect("teamctl approve runs")
        }
    })
    .await
    .unwrap();
    assert!(
        approve.status.success(),
        "{}",
        String::from_utf8_lossy(&approve.stderr)
    );
    let status = tokio::task::spawn_blocking(move || child.wait())
        .await
        .unwrap()
        .expect("the lead exits");
    assert!(status.success(), "{}", out.text());
    assert_eq!(
        std::fs::read_to_string(work.join("hi.txt")).unwrap(),
        "hi\n"
    );
    let transcript =
        std::fs::read_to_string(state.join("teammates/default/lead/transcript.jsonl")).unwrap();
    assert!(
        !transcript.contains("review_plan"),
        "the lead reviewed a plan:\n{transcript}"
    );
}
