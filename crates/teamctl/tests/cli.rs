//! End-to-end tests of the `teamctl` binary against a real boardd running in-process.
//!
//! Each test starts its own daemon (the test kit's [`blocking::InProc`]: socket and
//! state in a short directory under /tmp, on a runtime of its own, so that the test
//! can block on the binary), runs the real binary with `--socket`, and checks
//! stdout, stderr and the exit code. Teammates are played by protocol clients
//! inside the test.

use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;
use teamboard_protocol::{Claim, Client, MessageKind};
use teamboard_testkit::{
    Teamctl, alive, blocking, eventually_blocking, short_tempdir, teammate_with_pid,
};

/// The binary under test, built by cargo for this package's tests.
const TEAMCTL: &str = env!("CARGO_BIN_EXE_teamctl");

/// The pid the protocol-client teammates report, as a real teammated would its own.
const FAKE_PID: u32 = 4242;

/// A boardd on its own runtime and `teamctl` pointed at it. The daemon stops when
/// this is dropped.
struct Cli {
    daemon: blocking::InProc,
    teamctl: Teamctl,
    socket: PathBuf,
}

impl Cli {
    fn start() -> Cli {
        Cli::start_with(|_| {})
    }

    fn start_with(tune: impl FnOnce(&mut teamboard_testkit::boardd::Config)) -> Cli {
        let daemon = blocking::InProc::start_with(tune);
        Cli {
            teamctl: Teamctl::new(TEAMCTL, &daemon.socket),
            socket: daemon.socket.clone(),
            daemon,
        }
    }

    /// Runs `teamctl --socket <ours> ARGS...` to completion.
    fn run(&self, args: &[&str]) -> Output {
        self.teamctl.run(args)
    }

    /// Runs teamctl and insists that it succeeds; returns stdout.
    fn ok(&self, args: &[&str]) -> String {
        self.teamctl.ok(args)
    }

    /// Runs teamctl with `--json` and parses stdout.
    fn json(&self, args: &[&str]) -> Value {
        self.teamctl.json(args)
    }

    /// A teammate: a registered protocol session that stays connected.
    fn teammate(&self, name: &str, role: &str) -> Client {
        self.teammate_with_pid(name, role, FAKE_PID)
    }

    /// A teammate that reports `pid` as its process, as a real teammated would.
    fn teammate_with_pid(&self, name: &str, role: &str, pid: u32) -> Client {
        self.block_on(teammate_with_pid(&self.socket, name, role, Some(pid)))
    }

    fn block_on<F: std::future::Future>(&self, f: F) -> F::Output {
        self.daemon.block_on(f)
    }

    /// Stops the daemon the way a process exit would; see [`blocking::InProc::stop`].
    fn stop(&mut self) {
        self.daemon.stop();
    }
}

/// Runs `teamctl --socket SOCKET ARGS...` to completion.
fn teamctl(socket: &Path, args: &[&str]) -> Output {
    Teamctl::new(TEAMCTL, socket).run(args)
}

/// `teamctl --socket SOCKET`, for a test to add to and run.
fn base_command(socket: &Path) -> Command {
    Teamctl::new(TEAMCTL, socket).command()
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
    let d = Cli::start();
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
    let d = Cli::start_with(|c| c.board.max_attempts = 1);
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
    let d = Cli::start();
    let out = d.run(&["tasks", "--status", "done"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("unknown status 'done'"), "{err}");
    assert!(err.contains("in_progress"), "{err}");
}

#[test]
fn dependency_cycle_is_refused() {
    let d = Cli::start();
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
    let d = Cli::start();
    let out = d.run(&["send", "nobody", "hello"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.starts_with("teamctl: "), "{err}");
    assert!(err.contains("no teammate named"), "{err}");
}

#[test]
fn an_empty_message_or_broadcast_is_refused_before_anything_is_sent() {
    let d = Cli::start();
    for args in [
        &["send", "nobody", ""][..],
        &["send", "nobody", "  "],
        &["broadcast", ""],
    ] {
        let out = d.run(args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = stderr(&out);
        assert!(
            err.contains("is empty, so nothing was sent"),
            "{args:?}: {err}"
        );
    }
    // A kind that means something by itself may come without text: this one
    // gets as far as boardd, which knows no "nobody".
    let out = d.run(&["send", "nobody", "", "--kind", "shutdown_request"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("no teammate named"),
        "{}",
        stderr(&out)
    );
    let events = stdout(&d.run(&["events"]));
    assert!(!events.contains("message_sent"), "{events}");
}

#[test]
fn daemon_not_running_says_how_to_start_it() {
    let dir = short_tempdir();
    let socket = dir.path().join("s");
    let out = teamctl(&socket, &["tasks"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.starts_with("teamctl: "), "{err}");
    let start = format!("boardd --socket {}", socket.display());
    assert!(err.contains(&start), "{err}");

    // At the default path the user unit is the way to start it.
    let out = Command::new(TEAMCTL)
        .arg("tasks")
        .env("XDG_RUNTIME_DIR", dir.path())
        .env_remove("TEAMBOARD_SOCKET")
        .stdin(Stdio::null())
        .output()
        .expect("run teamctl");
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("systemctl --user start boardd"), "{err}");
}

#[test]
fn a_daemon_that_never_answers_times_out_with_a_clear_line() {
    // A listener that accepts and then says nothing: a wedged daemon.
    let dir = short_tempdir();
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
    let d = Cli::start();
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
    let d = Cli::start();
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
    let d = Cli::start();
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
    let d = Cli::start();
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
    let d = Cli::start();
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
    let d = Cli::start();
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
    // A bad team name is refused before boardd is asked, with the naming rule.
    let out = d.run(&["--team", "no spaces", "tasks"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("use only letters, digits"), "{err}");
}

#[test]
fn events_of_a_task_that_does_not_exist_is_an_error() {
    let d = Cli::start();
    d.ok(&["task", "add", "one"]);
    let out = d.run(&["events", "--task", "99"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("#99 does not exist"), "{err}");
    assert!(d.ok(&["events", "--task", "1"]).contains("one"));
}

#[test]
fn events_follow_streams_new_events() {
    let d = Cli::start();
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
    let mut d = Cli::start();
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
    let d = Cli::start();
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

/// `timeout` and `kill` stop watch with SIGTERM. Handled, it leaves through the
/// same path as Ctrl-C, which restores the terminal (alternate screen, cursor, line
/// wrap); unhandled, the process would die with the terminal left broken.
#[test]
fn watch_stopped_by_sigterm_exits_cleanly() {
    let d = Cli::start();
    let mut child = base_command(&d.socket)
        .args(["watch"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn watch");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout).lines();
    // The first frame is drawn after the signal handlers are installed.
    loop {
        match lines.next() {
            Some(Ok(line)) if line.contains("Ctrl-C to quit") => break,
            Some(Ok(_)) => {}
            other => panic!("watch ended before its first frame: {other:?}"),
        }
    }
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("run kill");
    assert!(killed.success());
    let status = child.wait().expect("watch exits");
    assert_eq!(status.code(), Some(0), "{status:?}");
}

#[test]
fn watch_redraws_on_events_and_exits_when_the_daemon_goes_away() {
    let mut d = Cli::start();
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

// ---------------------------------------------------------------- team --json

#[test]
fn team_json_members_have_name_role_status_pid_task_and_tokens() {
    let d = Cli::start();
    d.ok(&["task", "add", "build it"]);
    let _alice = d.teammate("alice", "coder");
    let bob = d.teammate("bob", "tester");
    d.block_on(bob.claim_task(1)).expect("claim");

    let team = d.json(&["team"]);
    let members = team.as_array().expect("an array of members");
    let member = |name: &str| {
        members
            .iter()
            .find(|m| m["name"] == name)
            .unwrap_or_else(|| panic!("no {name} in {team}"))
    };
    for m in members {
        for field in ["name", "role", "status", "pid", "task", "tokens"] {
            assert!(m.get(field).is_some(), "member lacks {field}: {m}");
        }
        assert!(m["status"].is_string(), "{m}");
        assert!(m["tokens"]["input"].is_u64(), "{m}");
        assert!(m["tokens"]["output"].is_u64(), "{m}");
    }
    // A member without a task has `task: null`, not a missing field.
    assert_eq!(member("alice")["task"], Value::Null);
    assert_eq!(member("alice")["role"], "coder");
    assert_eq!(member("alice")["pid"], 4242);
    assert_eq!(member("bob")["task"], 1);
    assert_eq!(member("bob")["status"], "working");

    let text = d.ok(&["team"]);
    let line = |name: &str| {
        text.lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("no line for {name} in:\n{text}"))
            .to_string()
    };
    let alice = line("alice");
    assert!(alice.contains("pid 4242"), "{text}");
    assert!(alice.contains("no task"), "{text}");
    assert!(alice.contains("tokens"), "{text}");
    let bob = line("bob");
    assert!(bob.contains("working"), "{text}");
    assert!(bob.contains("#1 build it"), "{text}");
}

// ---------------------------------------------------------------- logs

/// `teamctl` for commands that must not need boardd: the socket does not exist.
fn offline(state: &Path, args: &[&str]) -> Output {
    let mut all = vec!["--state-dir", state.to_str().expect("utf-8 path")];
    all.extend_from_slice(args);
    teamctl(&state.join("no-boardd-here.sock"), &all)
}

fn transcript_file(state: &Path, team: &str, name: &str) -> PathBuf {
    let path = state
        .join("teammates")
        .join(team)
        .join(name)
        .join("transcript.jsonl");
    std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
    path
}

/// Five entries of every kind, as JSON lines; the last is a 60-line tool result.
fn sample_entries() -> Vec<String> {
    let long: Vec<String> = (1..=60).map(|i| format!("out {i}")).collect();
    [
        serde_json::json!({"at": 3_723_000, "kind": "lifecycle", "text": "started"}),
        serde_json::json!({"at": 3_724_000, "kind": "user", "task": 3,
            "text": "Task #3: Write the parser\nSee the spec."}),
        serde_json::json!({"at": 3_725_000, "kind": "assistant", "task": 3,
            "text": "Reading the code first."}),
        serde_json::json!({"at": 3_726_000, "kind": "tool_use", "tool": "bash", "task": 3,
            "text": "{\"command\":\"cargo test\"}"}),
        serde_json::json!({"at": 3_727_000, "kind": "tool_result", "tool": "bash", "task": 3,
            "is_error": true, "text": long.join("\n")}),
    ]
    .iter()
    .map(|v| v.to_string())
    .collect()
}

#[test]
fn logs_prints_a_transcript_readably() {
    let dir = short_tempdir();
    let state = dir.path();
    let entries = sample_entries();
    let mut text = String::new();
    for (i, e) in entries.iter().enumerate() {
        text.push_str(e);
        text.push('\n');
        if i == 1 {
            text.push_str("this is not json\n\n");
        }
    }
    // A line teammated is still writing: never shown.
    text.push_str(r#"{"at": 3728000, "kind": "assistant", "text": "PARTIAL"#);
    std::fs::write(transcript_file(state, "default", "alice"), text).expect("write");

    let out = offline(state, &["logs", "alice"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let shown = stdout(&out);
    let lines: Vec<&str> = shown.lines().collect();
    assert_eq!(lines[0], "01:02:03      -  lifecycle    started", "{shown}");
    assert_eq!(lines[1], "01:02:04     #3  user", "{shown}");
    assert_eq!(lines[2], "    Task #3: Write the parser", "{shown}");
    assert_eq!(lines[3], "    See the spec.", "{shown}");
    assert_eq!(
        lines[4], "!! line 3 is not a transcript entry: this is not json",
        "{shown}"
    );
    assert_eq!(
        lines[5], "01:02:05     #3  assistant    Reading the code first.",
        "{shown}"
    );
    assert_eq!(
        lines[6], r#"01:02:06     #3  tool_use     bash  {"command":"cargo test"}"#,
        "{shown}"
    );
    assert_eq!(
        lines[7], "01:02:07     #3  tool_result  bash  [error]",
        "{shown}"
    );
    assert_eq!(lines[8], "    out 1", "{shown}");
    assert!(
        shown.contains("    … 25 more lines (--raw shows them)\n"),
        "{shown}"
    );
    assert!(!shown.contains("    out 30\n"), "shortened: {shown}");
    assert_eq!(lines.last(), Some(&"    out 60"), "{shown}");
    assert!(!shown.contains("PARTIAL"), "{shown}");

    let raw = stdout(&offline(state, &["logs", "alice", "--raw"]));
    assert!(raw.contains("    out 30\n"), "{raw}");
    assert!(!raw.contains("more lines"), "{raw}");

    // --lines counts entries, not printed lines.
    let last_two = stdout(&offline(state, &["logs", "alice", "--lines", "2"]));
    assert!(
        last_two.starts_with("01:02:06     #3  tool_use"),
        "{last_two}"
    );
    assert!(last_two.contains("tool_result"), "{last_two}");
    assert!(!last_two.contains("assistant"), "{last_two}");

    // --json: the entries exactly as written, one per line; the bad line is
    // reported on stderr and left out, so stdout stays valid JSON Lines.
    let out = offline(state, &["logs", "alice", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let printed: Vec<String> = stdout(&out).lines().map(str::to_string).collect();
    assert_eq!(printed, entries);
    assert!(stderr(&out).contains("line 3"), "{}", stderr(&out));
    let newest = stdout(&offline(state, &["logs", "alice", "--json", "-n", "1"]));
    assert_eq!(newest.trim_end(), entries[4]);
}

#[test]
fn logs_without_a_transcript_names_the_path_and_the_way_out() {
    let dir = short_tempdir();
    let out = offline(dir.path(), &["logs", "nobody"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    let path = dir.path().join("teammates/default/nobody/transcript.jsonl");
    assert!(err.starts_with("teamctl: "), "{err}");
    assert!(err.contains(&path.display().to_string()), "{err}");
    assert!(err.contains("teamctl team"), "{err}");

    let out = offline(dir.path(), &["logs", "nobody", "--process-log"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("teammated.log"), "{err}");
    assert!(
        err.contains("journalctl --user -u teammated@nobody"),
        "{err}"
    );

    // Names become path components: `..` and friends are refused.
    let out = offline(dir.path(), &["logs", "../../etc"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("bad teammate name"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn logs_process_log_prints_teammateds_output() {
    let dir = short_tempdir();
    let log = dir.path().join("teammates/t1/alice/teammated.log");
    std::fs::create_dir_all(log.parent().expect("parent")).expect("mkdir");
    std::fs::write(&log, "starting\nconnected to boardd\n").expect("write");
    let all = stdout(&offline(
        dir.path(),
        &["--team", "t1", "logs", "alice", "--process-log"],
    ));
    assert_eq!(all, "starting\nconnected to boardd\n");
    let last = stdout(&offline(
        dir.path(),
        &[
            "--team",
            "t1",
            "logs",
            "alice",
            "--process-log",
            "--lines",
            "1",
        ],
    ));
    assert_eq!(last, "connected to boardd\n");
}

#[test]
fn logs_follow_waits_for_the_file_and_prints_complete_lines_as_they_come() {
    use std::io::Write as _;
    let dir = short_tempdir();
    let state = dir.path();
    let path = state.join("teammates/default/alice/transcript.jsonl");
    let mut child = base_command(&state.join("no-boardd-here.sock"))
        .arg("--state-dir")
        .arg(state)
        .args(["logs", "alice", "--follow", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn logs --follow");
    let (tx, rx) = mpsc::channel::<String>();
    let out = child.stdout.take().expect("stdout");
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(out).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let next = || rx.recv_timeout(Duration::from_secs(10)).expect("a line");
    let entries = sample_entries();

    // The file does not exist yet: follow waits for it.
    std::thread::sleep(Duration::from_millis(300));
    let mut file = {
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .expect("create the transcript")
    };
    writeln!(file, "{}", entries[0]).expect("append");
    assert_eq!(next(), entries[0]);

    // Half a line is held back until its newline arrives.
    let (head, rest) = entries[2].split_at(20);
    write!(file, "{head}").expect("append");
    file.flush().expect("flush");
    assert!(
        rx.recv_timeout(Duration::from_millis(700)).is_err(),
        "a partial line was printed"
    );
    writeln!(file, "{rest}").expect("append");
    assert_eq!(next(), entries[2]);
    drop(file);

    // Truncated in place (shorter than what was read): read again from the start.
    std::fs::write(&path, format!("{}\n", entries[3])).expect("truncate");
    assert_eq!(next(), entries[3]);

    // Replaced by a new file (rotation): the new file is read from its start.
    let fresh = state.join("fresh.jsonl");
    std::fs::write(&fresh, format!("{}\n{}\n", entries[1], entries[4])).expect("write");
    std::fs::rename(&fresh, &path).expect("rotate");
    assert_eq!(next(), entries[1]);
    assert_eq!(next(), entries[4]);

    let _ = child.kill();
    let _ = child.wait();
    let _ = reader.join();
}

// ---------------------------------------------------------------- spawn

/// Writes an executable `/bin/sh` script.
fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt as _;
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}")).expect("write script");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    path
}

fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::metadata(path)
        .expect("metadata")
        .permissions()
        .mode()
        & 0o777
}

/// Kills a process the test caused to be started, however the test ends.
struct KillOnDrop(u32);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-9", &self.0.to_string()])
            .stderr(Stdio::null())
            .status();
    }
}

/// The pid a fake teammated wrote to `marker`, once it has.
fn wait_for_pid(marker: &Path) -> u32 {
    eventually_blocking(
        "the fake teammated to start",
        Duration::from_secs(10),
        || std::fs::read_to_string(marker).ok()?.trim().parse().ok(),
    )
}

#[test]
fn spawn_fails_with_the_exit_status_and_the_end_of_the_log() {
    let d = Cli::start();
    let dir = short_tempdir();
    let state = dir.path().join("state");
    let fake = script(
        dir.path(),
        "teammated",
        "echo \"fake teammated $*\"\necho 'cannot reach the board' >&2\nexit 3\n",
    );
    let out = base_command(&d.socket)
        .env("TEAMMATED_BIN", &fake)
        .env_remove("TEAMBOARD_STATE_DIR")
        .arg("--state-dir")
        .arg(&state)
        .args(["spawn", "bob", "--role", "coder", "--max-rounds", "7"])
        .arg("--workdir")
        .arg(dir.path())
        .output()
        .expect("teamctl runs");
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let err = stderr(&out);
    assert!(err.starts_with("teamctl: "), "{err}");
    assert!(err.contains("exit status: 3"), "{err}");
    assert!(err.contains("cannot reach the board"), "{err}");
    // The log tail also shows the arguments teammated was given.
    let expected = format!(
        "fake teammated --name bob --role coder --team default --socket {} --state-dir {} \
         --workdir {} --max-rounds 7",
        d.socket.display(),
        state.display(),
        dir.path().display()
    );
    assert!(err.contains(&expected), "{expected}\nnot in:\n{err}");
    let log = state.join("teammates/default/bob/teammated.log");
    assert_eq!(mode(&log), 0o600);
    let text = std::fs::read_to_string(&log).expect("the log");
    assert!(text.contains("cannot reach the board"), "{text}");
    assert!(stdout(&out).is_empty());
}

#[test]
fn spawn_returns_once_the_teammate_connects_and_leaves_it_running() {
    let d = Cli::start();
    let dir = short_tempdir();
    let state = dir.path().join("state");
    let marker = dir.path().join("pid");
    // A stand-in that says where it is and then just stays up; the test registers
    // for it below, as the real teammated would.
    let fake = script(
        dir.path(),
        "teammated",
        &format!("echo $$ > '{}'\nexec sleep 60\n", marker.display()),
    );
    let teamctl = base_command(&d.socket)
        .env("TEAMMATED_BIN", &fake)
        .arg("--state-dir")
        .arg(&state)
        .args(["spawn", "alice", "--role", "coder", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn teamctl");
    let pid = wait_for_pid(&marker);
    let _cleanup = KillOnDrop(pid);
    // Registered for the spawned process: spawn checks the pid, not just the name.
    let _alice = d.teammate_with_pid("alice", "coder", pid);
    let out = teamctl.wait_with_output().expect("teamctl exits");
    assert!(out.status.success(), "{}", stderr(&out));
    let shown: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(shown["name"], "alice");
    assert_eq!(shown["team"], "default");
    assert_eq!(shown["pid"], pid);
    let log = state.join("teammates/default/alice/teammated.log");
    assert_eq!(shown["log"], log.display().to_string());

    // teamctl is gone; the teammate is not, and leads its own process group.
    assert!(alive(pid), "the teammate died with teamctl");
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("stat");
    let after_name = stat.rsplit_once(')').expect("(comm)").1;
    let pgrp: u32 = after_name
        .split_whitespace()
        .nth(2)
        .and_then(|f| f.parse().ok())
        .expect("pgrp");
    assert_eq!(pgrp, pid, "{stat}");

    // Now that alice is connected, a second spawn under her name is refused.
    let out = base_command(&d.socket)
        .env("TEAMMATED_BIN", &fake)
        .arg("--state-dir")
        .arg(&state)
        .args(["spawn", "alice", "--role", "coder"])
        .output()
        .expect("teamctl runs");
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("'alice' is already connected"), "{err}");
    assert!(err.contains(&format!("pid {pid}")), "{err}");
}

#[test]
fn spawn_stops_a_teammate_that_does_not_connect_in_time() {
    let d = Cli::start();
    let dir = short_tempdir();
    let marker = dir.path().join("pid");
    let fake = script(
        dir.path(),
        "teammated",
        &format!(
            "echo $$ > '{}'\necho 'still thinking'\nexec sleep 60\n",
            marker.display()
        ),
    );
    let started = std::time::Instant::now();
    let out = base_command(&d.socket)
        .env("TEAMMATED_BIN", &fake)
        .arg("--state-dir")
        .arg(dir.path().join("state"))
        .args(["--timeout", "1", "spawn", "carol", "--role", "coder"])
        .output()
        .expect("teamctl runs");
    let pid = wait_for_pid(&marker);
    let _cleanup = KillOnDrop(pid);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("did not connect to boardd within 1 s"),
        "{err}"
    );
    assert!(err.contains("still thinking"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(!alive(pid), "the stalled teammate was left running");
}

#[test]
fn spawn_checks_names_boardd_and_the_binary_before_starting_anything() {
    let d = Cli::start();
    let dir = short_tempdir();
    let marker = dir.path().join("ran");
    let fake = script(
        dir.path(),
        "teammated",
        &format!("touch '{}'\n", marker.display()),
    );
    let spawn = |socket: &Path, args: &[&str]| {
        base_command(socket)
            .env("TEAMMATED_BIN", &fake)
            .arg("--state-dir")
            .arg(dir.path().join("state"))
            .arg("spawn")
            .args(args)
            .output()
            .expect("teamctl runs")
    };
    let fails_with = |out: Output, needle: &str| {
        assert_eq!(out.status.code(), Some(1), "{needle}: {out:?}");
        let err = stderr(&out);
        assert!(err.starts_with("teamctl: "), "{err}");
        assert!(err.contains(needle), "{needle:?} not in: {err}");
    };
    fails_with(
        spawn(&d.socket, &["lead", "--role", "coder"]),
        "'lead' is the name of the person at teamctl",
    );
    fails_with(
        spawn(&d.socket, &["a b", "--role", "coder"]),
        "bad teammate name",
    );
    fails_with(spawn(&d.socket, &["x", "--role", "two words"]), "bad role");
    fails_with(
        spawn(
            &d.socket,
            &["x", "--role", "r", "--workdir", "/no/such/dir"],
        ),
        "not a directory",
    );
    let out = spawn(&d.socket, &["x"]);
    assert_eq!(out.status.code(), Some(2), "--role is required");
    fails_with(
        spawn(&dir.path().join("nothing.sock"), &["x", "--role", "r"]),
        "boardd is not running",
    );
    let out = base_command(&d.socket)
        .env("TEAMMATED_BIN", dir.path().join("missing"))
        .args(["spawn", "x", "--role", "r"])
        .output()
        .expect("teamctl runs");
    fails_with(out, "not an executable file");
    assert!(!marker.exists(), "teammated ran although spawn refused");
}

#[test]
fn spawn_without_teammated_says_how_to_build_it() {
    let d = Cli::start();
    // A teamctl with no teammated beside it and none on PATH.
    let dir = short_tempdir();
    let lonely = dir.path().join("teamctl");
    std::fs::copy(TEAMCTL, &lonely).expect("copy teamctl");
    let mut tries = 0;
    let out = loop {
        let result = Command::new(&lonely)
            .arg("--socket")
            .arg(&d.socket)
            .args(["spawn", "x", "--role", "r"])
            .env_remove("TEAMMATED_BIN")
            .env("PATH", "/usr/bin:/bin")
            .stdin(Stdio::null())
            .output();
        match result {
            // A fork elsewhere in this test process may still hold the copy's write
            // handle for a moment ("text file busy").
            Err(e) if e.raw_os_error() == Some(26) && tries < 50 => {
                tries += 1;
                std::thread::sleep(Duration::from_millis(20));
            }
            other => break other.expect("the copy runs"),
        }
    };
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("cannot find the teammated binary"), "{err}");
    assert!(err.contains("cargo build"), "{err}");
    assert!(err.contains("cargo xtask install"), "{err}");
}

#[test]
fn spawn_systemd_writes_private_settings_and_starts_the_unit() {
    let d = Cli::start();
    let dir = short_tempdir();
    let config = dir.path().join("config");
    let record = dir.path().join("systemctl-args");
    let systemctl = script(
        dir.path(),
        "systemctl",
        // Not running yet (`is-active` says 3, "inactive"); records the start.
        &format!(
            "[ \"$2\" = is-active ] && exit 3\nprintf '%s\\n' \"$@\" > '{}'\n",
            record.display()
        ),
    );
    let workdir = dir.path().join("work dir");
    std::fs::create_dir(&workdir).expect("mkdir");
    let out = base_command(&d.socket)
        .env("XDG_CONFIG_HOME", &config)
        .env("TEAMCTL_SYSTEMCTL", &systemctl)
        .env_remove("TEAMBOARD_STATE_DIR")
        .args(["--team", "t1", "spawn", "dave", "--role", "backend"])
        .args(["--provider", "openai", "--model", "gpt-4.1"])
        .args(["--idle-timeout", "600", "--max-rounds", "40", "--systemd"])
        .arg("--workdir")
        .arg(&workdir)
        .output()
        .expect("teamctl runs");
    assert!(out.status.success(), "{}", stderr(&out));
    let env_dir = config.join("teamboard/teammates");
    let env_file = env_dir.join("dave.env");
    let shown = stdout(&out);
    assert!(shown.contains("teammated@dave"), "{shown}");
    assert!(shown.contains(&env_file.display().to_string()), "{shown}");
    assert_eq!(
        std::fs::read_to_string(&record).expect("systemctl ran"),
        "--user\nstart\nteammated@dave\n"
    );
    assert_eq!(mode(&env_dir), 0o700);
    assert_eq!(mode(&env_file), 0o600);
    let text = std::fs::read_to_string(&env_file).expect("settings");
    let settings: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(
        settings,
        vec![
            "TEAMMATE_ROLE=backend".to_string(),
            "TEAMMATE_PROVIDER=openai".to_string(),
            "TEAMMATE_MODEL=gpt-4.1".to_string(),
            format!("TEAMMATE_WORKDIR=\"{}\"", workdir.display()),
            "TEAMBOARD_TEAM=t1".to_string(),
            "TEAMMATE_IDLE_TIMEOUT=600".to_string(),
            "TEAMMATE_MAX_ROUNDS=40".to_string(),
            format!("TEAMBOARD_SOCKET={}", d.socket.display()),
        ]
    );

    // Only what was given: teammated's own defaults apply to the rest. Spawning
    // again replaces the settings.
    let out = base_command(&d.socket)
        .env("XDG_CONFIG_HOME", &config)
        .env("TEAMCTL_SYSTEMCTL", &systemctl)
        .env_remove("TEAMBOARD_STATE_DIR")
        .args(["spawn", "dave", "--role", "qa", "--systemd", "--json"])
        .arg("--workdir")
        .arg(dir.path())
        .output()
        .expect("teamctl runs");
    assert!(out.status.success(), "{}", stderr(&out));
    let shown: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(shown["unit"], "teammated@dave");
    assert_eq!(shown["env_file"], env_file.display().to_string());
    let text = std::fs::read_to_string(&env_file).expect("settings");
    assert!(text.contains("TEAMMATE_ROLE=qa\n"), "{text}");
    assert!(text.contains("TEAMBOARD_TEAM=default\n"), "{text}");
    for absent in ["PROVIDER", "MODEL", "IDLE_TIMEOUT", "MAX_ROUNDS"] {
        assert!(!text.contains(absent), "{absent} in:\n{text}");
    }
}

#[test]
fn spawn_systemd_refuses_a_unit_that_is_already_running() {
    let dir = short_tempdir();
    let record = dir.path().join("systemctl-args");
    let systemctl = script(
        dir.path(),
        "systemctl",
        &format!("printf '%s\\n' \"$@\" >> '{}'\n", record.display()),
    );
    let config = dir.path().join("config");
    let out = base_command(&dir.path().join("nothing.sock"))
        .env("XDG_CONFIG_HOME", &config)
        .env("TEAMCTL_SYSTEMCTL", &systemctl)
        .args(["spawn", "gina", "--role", "coder", "--systemd"])
        .output()
        .expect("teamctl runs");
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("teammated@gina is already running"), "{err}");
    let calls = std::fs::read_to_string(&record).expect("systemctl ran");
    assert!(!calls.contains("start"), "{calls}");
    assert!(!config.join("teamboard/teammates/gina.env").exists());
}

#[test]
fn spawn_systemd_reports_systemctls_failure() {
    // No boardd here: under systemd the unit's Requires= starts it, so that is no
    // reason to refuse; systemctl's answer is what counts.
    let dir = short_tempdir();
    let systemctl = script(
        dir.path(),
        "systemctl",
        "echo 'Failed to start teammated@frank.service: Unit teammated@frank.service not found.' >&2\nexit 5\n",
    );
    let out = base_command(&dir.path().join("nothing.sock"))
        .env("XDG_CONFIG_HOME", dir.path().join("config"))
        .env("TEAMCTL_SYSTEMCTL", &systemctl)
        .args(["spawn", "frank", "--role", "coder", "--systemd"])
        .output()
        .expect("teamctl runs");
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.starts_with("teamctl: "), "{err}");
    assert!(
        err.contains("systemctl --user start teammated@frank"),
        "{err}"
    );
    assert!(err.contains("exit status: 5"), "{err}");
    assert!(
        err.contains("Unit teammated@frank.service not found"),
        "{err}"
    );
    assert!(err.contains("cargo xtask install"), "{err}");
}

#[test]
fn spawn_and_logs_help_teach_with_examples() {
    for (args, needles) in [
        (
            ["spawn", "--help"],
            &[
                "teamctl spawn alice --role coder",
                "--systemd",
                "TEAMMATED_BIN",
            ][..],
        ),
        (
            ["logs", "--help"],
            &["teamctl logs alice --follow", "--process-log", "--raw"][..],
        ),
    ] {
        let out = Command::new(TEAMCTL).args(args).output().expect("runs");
        assert!(out.status.success());
        let help = stdout(&out);
        assert!(help.contains("Examples:"), "{help}");
        for n in needles {
            assert!(help.contains(n), "{n:?} not in:\n{help}");
        }
    }
}
