//! End-to-end tests of the `teamctl` binary against a real boardd running in-process.
//!
//! Each test starts its own daemon (socket and state in a short directory under
//! /tmp: Linux socket paths must stay under 108 bytes), runs the real binary with
//! `--socket`, and checks stdout, stderr and the exit code. Teammates are played by
//! protocol clients inside the test.

use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;
use teamboard_protocol::{Claim, Client, MessageKind};

const TEAMCTL: &str = env!("CARGO_BIN_EXE_teamctl");

/// A boardd running on its own runtime, stopped when dropped.
struct Daemon {
    rt: Option<tokio::runtime::Runtime>,
    running: Option<boardd::Running>,
    socket: PathBuf,
    _dir: tempfile::TempDir,
}

impl Daemon {
    fn start() -> Daemon {
        Daemon::start_with(|_| {})
    }

    fn start_with(tune: impl FnOnce(&mut boardd::Config)) -> Daemon {
        let dir = tempfile::Builder::new()
            .prefix("tb")
            .tempdir_in("/tmp")
            .expect("temp dir");
        let socket = dir.path().join("s");
        let mut config = boardd::Config::new(socket.clone(), dir.path().join("state"));
        tune(&mut config);
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let running = rt.block_on(boardd::start(config)).expect("boardd starts");
        Daemon {
            rt: Some(rt),
            running: Some(running),
            socket,
            _dir: dir,
        }
    }

    /// Runs `teamctl --socket <ours> ARGS...` to completion.
    fn run(&self, args: &[&str]) -> Output {
        teamctl(&self.socket, args)
    }

    /// Runs teamctl and insists that it succeeds; returns stdout.
    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "teamctl {args:?} failed ({:?}):\nstdout: {}\nstderr: {}",
            out.status.code(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("utf-8 stdout")
    }

    /// Runs teamctl with `--json` and parses stdout.
    fn json(&self, args: &[&str]) -> Value {
        let mut all = args.to_vec();
        all.push("--json");
        let out = self.ok(&all);
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?}: bad JSON ({e}):\n{out}"))
    }

    /// A teammate: a registered protocol session that stays connected.
    fn teammate(&self, name: &str, role: &str) -> Client {
        self.block_on(async {
            let c = Client::connect(&self.socket, "test", name, "default")
                .await
                .expect("teammate connects");
            c.register(role, Some(4242)).await.expect("registers");
            c
        })
    }

    fn block_on<F: std::future::Future>(&self, f: F) -> F::Output {
        self.rt.as_ref().expect("daemon is running").block_on(f)
    }

    /// Stops the daemon the way a process exit would: a graceful shutdown, then the
    /// runtime goes away and with it every open connection. (`Running::shutdown`
    /// alone leaves accepted connections open, answering `shutting_down`.)
    fn stop(&mut self) {
        let Some(rt) = self.rt.take() else { return };
        if let Some(running) = self.running.take() {
            rt.block_on(running.shutdown());
        }
        rt.shutdown_timeout(Duration::from_secs(5));
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        self.stop();
    }
}

fn teamctl(socket: &Path, args: &[&str]) -> Output {
    base_command(socket)
        .args(args)
        .output()
        .expect("teamctl runs")
}

fn base_command(socket: &Path) -> Command {
    let mut cmd = Command::new(TEAMCTL);
    cmd.arg("--socket")
        .arg(socket)
        .env_remove("TEAMBOARD_SOCKET")
        .env_remove("TEAMBOARD_TEAM")
        .env_remove("LINES")
        .stdin(Stdio::null());
    cmd
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The line of task `id` in a listing (`[ ] #id  subject ...`).
fn line_of(listing: &str, id: &str) -> String {
    let tag = format!("#{id}");
    listing
        .lines()
        .find(|l| l.get(4..).and_then(|r| r.split_whitespace().next()) == Some(tag.as_str()))
        .unwrap_or_else(|| panic!("no line for {tag} in:\n{listing}"))
        .to_string()
}

#[test]
fn task_add_prints_just_the_id() {
    let d = Daemon::start();
    assert_eq!(d.ok(&["task", "add", "first"]), "1\n");
    assert_eq!(
        d.ok(&["task", "add", "second", "-d", "details", "--priority", "-2"]),
        "2\n"
    );
    let t = d.json(&[
        "task",
        "add",
        "third",
        "--blocked-by",
        "1",
        "--role",
        "coder",
    ]);
    assert_eq!(t["id"], 3);
    assert_eq!(t["subject"], "third");
    assert_eq!(t["status"], "pending");
    assert_eq!(t["blocked_by"], serde_json::json!([1]));
    assert_eq!(t["role"], "coder");
}

#[test]
fn tasks_show_markers_owners_and_open_blockers() {
    let d = Daemon::start_with(|c| c.board.max_attempts = 1);
    let a = d.ok(&["task", "add", "design"]).trim().to_string();
    let b = d
        .ok(&["task", "add", "build", "--blocked-by", &a])
        .trim()
        .to_string();
    let c = d
        .ok(&["task", "add", "test", "--blocked-by", &format!("{a},{b}")])
        .trim()
        .to_string();
    let e = d.ok(&["task", "add", "doomed"]).trim().to_string();
    let f = d.ok(&["task", "add", "dropped"]).trim().to_string();

    let listing = d.ok(&["tasks"]);
    assert!(line_of(&listing, &a).starts_with("[ ] #1"), "{listing}");
    assert!(
        line_of(&listing, &c).ends_with("blocked by #1, #2"),
        "{listing}"
    );

    // A teammate finishes #1 (so it no longer blocks) and starts on #2.
    let alice = d.teammate("alice", "coder");
    d.block_on(async {
        let claim: Claim = alice.claim_task(1).await.expect("claim #1");
        alice
            .complete_task(1, claim.epoch, "done")
            .await
            .expect("complete #1");
        alice.claim_task(2).await.expect("claim #2");
    });
    // Another one fails #4 on its only attempt.
    let bob = d.teammate("bob", "coder");
    d.block_on(async {
        let claim = bob.claim_task(4).await.expect("claim #4");
        bob.fail_task(4, claim.epoch, "it broke")
            .await
            .expect("fail #4");
    });
    let cancelled = d.ok(&["task", "cancel", &f]);
    assert!(cancelled.starts_with("[-] #5"), "{cancelled}");

    let listing = d.ok(&["tasks"]);
    assert!(line_of(&listing, &a).starts_with("[x] #1"), "{listing}");
    let line_b = line_of(&listing, &b);
    assert!(line_b.starts_with("[>] #2"), "{listing}");
    assert!(line_b.contains("@alice"), "{listing}");
    assert!(!line_b.contains("blocked by"), "{listing}");
    let line_c = line_of(&listing, &c);
    assert!(line_c.starts_with("[ ] #3"), "{listing}");
    assert!(
        line_c.ends_with("blocked by #2"),
        "only the open blocker: {listing}"
    );
    assert!(line_of(&listing, &e).starts_with("[!] #4"), "{listing}");
    assert!(line_of(&listing, &f).starts_with("[-] #5"), "{listing}");

    // Filters, both spellings, in text and JSON.
    let pending = d.ok(&["tasks", "--status", "pending"]);
    assert_eq!(pending.lines().count(), 1, "{pending}");
    assert!(pending.contains("blocked by #2"), "{pending}");
    let in_progress = d.json(&["tasks", "--status", "in-progress"]);
    let ids: Vec<_> = in_progress
        .as_array()
        .expect("array")
        .iter()
        .map(|t| t["id"].clone())
        .collect();
    assert_eq!(ids, vec![serde_json::json!(2)]);

    // Retry brings the failed task back.
    let retried = d.ok(&["task", "retry", &e]);
    assert!(retried.starts_with("[ ] #4"), "{retried}");
    let retried = d.json(&["task", "retry", &f]);
    assert_eq!(retried["status"], "pending");
}

#[test]
fn bad_status_is_a_usage_error() {
    let d = Daemon::start();
    let out = d.run(&["tasks", "--status", "done"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("unknown status 'done'"), "{err}");
    assert!(err.contains("in_progress"), "{err}");
}

#[test]
fn dependency_cycle_is_refused() {
    let d = Daemon::start();
    d.ok(&["task", "add", "a"]);
    d.ok(&["task", "add", "b", "--blocked-by", "1"]);
    let out = d.run(&["task", "depend", "1", "--on", "2"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = stderr(&out);
    assert!(err.starts_with("teamctl: "), "{err}");
    assert!(err.contains("cycle"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    assert!(stdout(&out).is_empty());

    // A good edge prints the task line, with the blocker still open.
    d.ok(&["task", "add", "c"]);
    let line = d.ok(&["task", "depend", "3", "--on", "#1", "2"]);
    assert!(line.starts_with("[ ] #3"), "{line}");
    assert!(line.trim_end().ends_with("blocked by #1, #2"), "{line}");
    let t = d.json(&["task", "depend", "3", "--on", "1"]);
    assert_eq!(t["id"], 3);

    // A task that does not exist.
    let out = d.run(&["task", "cancel", "99"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).starts_with("teamctl: "), "{}", stderr(&out));
}

#[test]
fn send_to_unknown_teammate_fails() {
    let d = Daemon::start();
    let out = d.run(&["send", "nobody", "hello"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.starts_with("teamctl: "), "{err}");
    assert!(err.contains("no teammate named"), "{err}");
}

#[test]
fn daemon_not_running_says_how_to_start_it() {
    let dir = tempfile::Builder::new()
        .prefix("tb")
        .tempdir_in("/tmp")
        .expect("temp dir");
    let out = teamctl(&dir.path().join("s"), &["tasks"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.starts_with("teamctl: "), "{err}");
    assert!(err.contains("systemctl --user start boardd"), "{err}");
}

#[test]
fn a_daemon_that_never_answers_times_out_with_a_clear_line() {
    // A listener that accepts and then says nothing: a wedged daemon.
    let dir = tempfile::Builder::new()
        .prefix("tb")
        .tempdir_in("/tmp")
        .expect("temp dir");
    let socket = dir.path().join("s");
    let listener = std::os::unix::net::UnixListener::bind(&socket).expect("bind");
    let started = std::time::Instant::now();
    let out = teamctl(&socket, &["--timeout", "1", "status"]);
    drop(listener);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("did not answer within 1 s"), "{err}");
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
}

#[test]
fn messages_inbox_and_broadcast() {
    let d = Daemon::start();
    let alice = d.teammate("alice", "coder");
    let _bob = d.teammate("bob", "tester");

    let sent = d.ok(&["send", "alice", "please start with #1"]);
    assert!(sent.contains("alice"), "{sent}");
    let m = d.json(&["send", "alice", "stop", "--kind", "shutdown-request"]);
    assert_eq!(m["kind"], "shutdown_request");
    assert_eq!(m["to"], "alice");
    assert_eq!(m["from"], "lead");
    let all = d.json(&["broadcast", "standup in 5"]);
    let mut to: Vec<_> = all
        .as_array()
        .expect("array")
        .iter()
        .filter_map(|m| m["to"].as_str().map(str::to_string))
        .collect();
    to.sort();
    assert_eq!(to, vec!["alice", "bob"]);
    let inbox = d.block_on(alice.inbox()).expect("alice's inbox");
    assert_eq!(inbox.len(), 3);

    // Alice writes to the lead.
    d.block_on(alice.send("lead", MessageKind::Message, "done with #1\nsee PR", None))
        .expect("send to lead");
    let shown = d.ok(&["inbox"]);
    assert!(shown.contains("from alice"), "{shown}");
    assert!(shown.contains("done with #1"), "{shown}");
    let json = d.json(&["inbox"]);
    assert_eq!(json.as_array().map(Vec::len), Some(1));
    // --ack acknowledges what it showed; afterwards the inbox is empty.
    let shown = d.ok(&["inbox", "--ack"]);
    assert!(shown.contains("see PR"), "{shown}");
    let json = d.json(&["inbox"]);
    assert_eq!(json, serde_json::json!([]));
}

#[test]
fn json_outputs_have_the_documented_fields() {
    let d = Daemon::start();
    d.ok(&["task", "add", "one", "-d", "the first"]);
    d.ok(&["task", "add", "two", "--blocked-by", "1"]);
    let alice = d.teammate("alice", "coder");
    d.block_on(alice.claim_task(1)).expect("claim");

    let tasks = d.json(&["tasks"]);
    let tasks = tasks.as_array().expect("array");
    assert_eq!(tasks.len(), 2);
    for field in [
        "id",
        "subject",
        "description",
        "status",
        "owner",
        "blocked_by",
        "priority",
        "role",
        "attempts",
        "result",
        "created_at",
        "updated_at",
    ] {
        assert!(
            tasks[0].get(field).is_some(),
            "task lacks {field}: {}",
            tasks[0]
        );
    }
    assert_eq!(tasks[0]["owner"], "alice");
    assert_eq!(tasks[0]["status"], "in_progress");
    assert_eq!(tasks[1]["blocked_by"], serde_json::json!([1]));

    let team = d.json(&["team"]);
    let members = team.as_array().expect("array");
    assert_eq!(members.len(), 1);
    let m = &members[0];
    for field in ["name", "role", "status", "pid", "task", "tokens"] {
        assert!(m.get(field).is_some(), "member lacks {field}: {m}");
    }
    assert_eq!(m["name"], "alice");
    assert_eq!(m["role"], "coder");
    assert_eq!(m["pid"], 4242);
    assert_eq!(m["task"], 1);
    assert!(
        m["tokens"]["input"].is_u64() && m["tokens"]["output"].is_u64(),
        "{m}"
    );

    let status = d.json(&["status"]);
    assert!(status["version"].is_string(), "{status}");
    assert!(status["teams"].is_array(), "{status}");

    // Text forms of the same.
    let team = d.ok(&["team"]);
    assert!(team.contains("alice"), "{team}");
    assert!(team.contains("coder"), "{team}");
    assert!(team.contains("pid 4242"), "{team}");
    assert!(team.contains("#1 one"), "{team}");
    let status = d.ok(&["status"]);
    assert!(status.starts_with("boardd "), "{status}");
    assert!(status.contains(&d.socket.display().to_string()), "{status}");
    assert!(status.contains("team default"), "{status}");
}

#[test]
fn task_show_has_history() {
    let d = Daemon::start();
    d.ok(&["task", "add", "one", "-d", "line one\nline two"]);
    let alice = d.teammate("alice", "coder");
    d.block_on(async {
        let c = alice.claim_task(1).await.expect("claim");
        alice
            .complete_task(1, c.epoch, "shipped")
            .await
            .expect("complete");
    });

    let detail = d.json(&["task", "show", "1"]);
    assert_eq!(detail["id"], 1);
    assert_eq!(detail["status"], "completed");
    assert_eq!(detail["result"], "shipped");
    let history = detail["history"].as_array().expect("history array");
    let kinds: Vec<_> = history.iter().filter_map(|e| e["kind"].as_str()).collect();
    assert!(kinds.contains(&"task_created"), "{kinds:?}");
    assert!(kinds.contains(&"task_claimed"), "{kinds:?}");
    assert!(kinds.contains(&"task_completed"), "{kinds:?}");
    for e in history {
        assert!(
            e["at"].is_i64() && e["actor"].is_string() && e["detail"].is_string(),
            "{e}"
        );
    }

    let text = d.ok(&["task", "show", "#1"]);
    assert!(text.starts_with("[x] #1  one"), "{text}");
    assert!(text.contains("result:"), "{text}");
    assert!(text.contains("shipped"), "{text}");
    assert!(text.contains("line two"), "{text}");
    assert!(text.contains("history:"), "{text}");
    assert!(text.contains("lead"), "{text}");
    assert!(text.contains("alice"), "{text}");

    let out = d.run(&["task", "show", "42"]);
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn events_prints_history_as_text_and_json_lines() {
    let d = Daemon::start();
    d.ok(&["task", "add", "one"]);
    d.ok(&["task", "add", "two"]);
    d.ok(&["task", "cancel", "2"]);

    let text = d.ok(&["events"]);
    assert_eq!(text.lines().count(), 3, "{text}");
    assert!(text.contains("task_created"), "{text}");
    assert!(text.contains("task_cancelled"), "{text}");

    let out = d.ok(&["events", "--json"]);
    let events: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect();
    assert_eq!(events.len(), 3);
    let first_seq = events[0]["seq"].as_u64().expect("seq");

    let only_two = d.ok(&["events", "--task", "2", "--json"]);
    assert_eq!(only_two.lines().count(), 2, "{only_two}");
    let since = d.ok(&["events", "--since", &first_seq.to_string()]);
    assert_eq!(since.lines().count(), 2, "{since}");
    let limited = d.ok(&["events", "--limit", "1"]);
    assert_eq!(limited.lines().count(), 1, "{limited}");
    assert!(limited.contains("task_cancelled"), "newest: {limited}");
}

#[test]
fn events_since_pages_through_long_histories() {
    let d = Daemon::start();
    // 1,100 events: more than one page (boardd answers at most 1,000 by default).
    d.block_on(async {
        let lead = std::sync::Arc::new(
            Client::connect(&d.socket, "test", "lead", "default")
                .await
                .expect("connects"),
        );
        for batch in 0..11 {
            let mut set = tokio::task::JoinSet::new();
            for i in 0..100 {
                let lead = lead.clone();
                set.spawn(async move {
                    lead.add_task(teamboard_protocol::request::NewTask {
                        subject: format!("task {batch}-{i}"),
                        ..Default::default()
                    })
                    .await
                });
            }
            while let Some(r) = set.join_next().await {
                r.expect("joins").expect("task added");
            }
        }
    });
    let newest = d.ok(&["events"]);
    assert_eq!(newest.lines().count(), 1000, "newest page only");
    let all = d.ok(&["events", "--since", "0"]);
    assert_eq!(all.lines().count(), 1100, "--since pages forward");
    let some = d.ok(&["events", "--since", "1050"]);
    assert_eq!(some.lines().count(), 50);
    let limited = d.ok(&["events", "--since", "0", "--limit", "10"]);
    assert!(
        limited
            .lines()
            .next()
            .is_some_and(|l| l.trim_start().starts_with("1 ")),
        "{limited}"
    );
    assert_eq!(limited.lines().count(), 10);
}

#[test]
fn team_option_and_env_select_the_team() {
    let d = Daemon::start();
    d.ok(&["task", "add", "in default"]);
    assert_eq!(d.ok(&["--team", "other", "task", "add", "in other"]), "1\n");
    let other = d.ok(&["tasks", "--team", "other"]);
    assert!(
        other.contains("in other") && !other.contains("in default"),
        "{other}"
    );
    let out = base_command(&d.socket)
        .env("TEAMBOARD_TEAM", "other")
        .args(["tasks", "--json"])
        .output()
        .expect("runs");
    let tasks: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(tasks[0]["subject"], "in other");
    // A bad team name is boardd's to refuse, with a clear message.
    let out = d.run(&["--team", "no spaces", "tasks"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).starts_with("teamctl: "), "{}", stderr(&out));
}

#[test]
fn events_follow_streams_new_events() {
    let d = Daemon::start();
    d.ok(&["task", "add", "before"]);
    let mut child = base_command(&d.socket)
        .args(["events", "--follow", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn events --follow");
    let (tx, rx) = mpsc::channel::<Value>();
    let stdout = child.stdout.take().expect("stdout");
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            let v: Value = serde_json::from_str(&line).expect("JSON line");
            if tx.send(v).is_err() {
                break;
            }
        }
    });
    let next = || rx.recv_timeout(Duration::from_secs(10)).expect("an event");
    // History first...
    assert_eq!(next()["task"], 1);
    // ...then live events, in order and without duplicates.
    d.ok(&["task", "add", "after"]);
    d.ok(&["task", "cancel", "2"]);
    let e = next();
    assert_eq!(
        (e["kind"].as_str(), e["task"].as_u64()),
        (Some("task_created"), Some(2))
    );
    let e = next();
    assert_eq!(
        (e["kind"].as_str(), e["task"].as_u64()),
        (Some("task_cancelled"), Some(2))
    );
    let _ = child.kill();
    let _ = child.wait();
    let _ = reader.join();
}

#[test]
fn events_follow_ends_when_the_daemon_goes_away() {
    let mut d = Daemon::start();
    d.ok(&["task", "add", "one"]);
    let mut child = base_command(&d.socket)
        .args(["events", "--follow"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn events --follow");
    // The history is printed after subscribing: once it shows, the stream is live.
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let first = lines.next().expect("a line").expect("readable");
    assert!(first.contains("task_created"), "{first}");
    d.stop();
    let out = child.wait_with_output().expect("exits");
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.starts_with("teamctl: "), "{err}");
    assert!(err.contains("closed"), "{err}");
}

#[test]
fn watch_once_renders_board_team_and_events() {
    let d = Daemon::start();
    d.ok(&["task", "add", "design"]);
    d.ok(&["task", "add", "build", "--blocked-by", "1"]);
    let alice = d.teammate("alice", "coder");
    d.block_on(alice.claim_task(1)).expect("claim");

    let out = d.ok(&["watch", "--once"]);
    assert!(out.contains("TASKS"), "{out}");
    assert!(out.contains("TEAM"), "{out}");
    assert!(out.contains("EVENTS"), "{out}");
    assert!(out.contains("[>] #1  design  @alice"), "{out}");
    assert!(out.contains("[ ] #2  build  blocked by #1"), "{out}");
    assert!(out.contains("alice"), "{out}");
    assert!(out.contains("task_claimed"), "{out}");
    // Not a terminal: no escape sequences.
    assert!(!out.contains('\x1b'), "{out:?}");
}

#[test]
fn watch_redraws_on_events_and_exits_when_the_daemon_goes_away() {
    let mut d = Daemon::start();
    let mut child = base_command(&d.socket)
        .args(["watch"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn watch");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = mpsc::channel::<String>();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let wait_for = |needle: &str| {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match rx.recv_timeout(left) {
                Ok(line) if line.contains(needle) => return,
                Ok(_) => {}
                Err(e) => panic!("watch never showed {needle:?}: {e}"),
            }
        }
    };
    wait_for("Ctrl-C to quit");
    d.ok(&["task", "add", "appears live"]);
    wait_for("appears live");

    d.stop();
    let status = child.wait().expect("watch exits");
    assert_eq!(status.code(), Some(1));
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        use std::io::Read;
        let _ = e.read_to_string(&mut err);
    }
    assert!(err.contains("boardd went away"), "{err}");
    let _ = reader.join();
}

#[test]
fn help_teaches_with_examples() {
    let out = Command::new(TEAMCTL).arg("--help").output().expect("runs");
    assert!(out.status.success());
    let help = stdout(&out);
    assert!(help.contains("Examples:"), "{help}");
    assert!(help.contains("teamctl task add"), "{help}");
    let out = Command::new(TEAMCTL)
        .args(["task", "add", "--help"])
        .output()
        .expect("runs");
    let help = stdout(&out);
    assert!(help.contains("--blocked-by"), "{help}");
    assert!(help.contains("id=$(teamctl task add"), "{help}");
}
