//! The sandbox, through the real binaries: a scripted teammate's ```sh blocks
//! try each way out of it (boardd's socket, through `teamctl` and as a raw
//! client naming itself `lead`; the key file; `$HOME`; another teammate's
//! worktree; the teammate's own process) and each fails its task, leaving the
//! board as it was. Work inside the worktree still builds and tests, checks
//! run in the owner's sandbox, and a machine without bubblewrap refuses.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "test code: a panic fails the test, and the harness captures what it prints"
)]

use std::path::PathBuf;
use teamboard_protocol::request::NewTask;
use teamboard_protocol::{Task, TaskStatus};
use teamboard_testkit::{Board, Teamctl, workspace_bin};

/// The binary under test, built by cargo for this package's tests.
const TEAMMATED: &str = env!("CARGO_BIN_EXE_teammated");

/// A task for a teammate of `role` that runs `block`, then must pass `checks`.
async fn add(board: &Board, role: &str, block: &str, checks: &[&str]) -> Task {
    board
        .lead
        .add_task(NewTask {
            subject: block
                .lines()
                .next()
                .unwrap_or_default()
                .chars()
                .take(60)
                .collect(),
            description: format!("Run this.\n```sh\n{block}\n```\n"),
            role: Some(role.into()),
            checks: checks.iter().map(|c| c.to_string()).collect(),
            ..NewTask::default()
        })
        .await
        .expect("add_task")
}

/// A home outside /tmp (which the sandbox replaces with a private one), so
/// that writing into it meets the read-only system rather than an empty /tmp;
/// its `~/.config/teamboard/keys.env` holds a key.
fn home() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("home");
    let config = dir.path().join(".config/teamboard");
    std::fs::create_dir_all(&config).expect("config dir");
    let keys = config.join("keys.env");
    std::fs::write(&keys, "ANTHROPIC_API_KEY=sk-secret-never-read\n").expect("keys.env");
    (dir, keys)
}

/// What of the board an escape would change: every task but the escapes
/// themselves, with its status and owner, and the roster.
async fn board_state(board: &Board, escapes: &[u64]) -> (Vec<String>, Vec<String>) {
    let tasks = board.lead.list_tasks(None).await.expect("tasks");
    let tasks = tasks
        .iter()
        .filter(|t| !escapes.contains(&t.id))
        .map(|t| format!("#{} {} {} {:?}", t.id, t.subject, t.status, t.owner))
        .collect();
    let members = board.lead.team().await.expect("members");
    let members = members
        .iter()
        .map(|m| format!("{} {} {:?}", m.name, m.role, m.pid))
        .collect();
    (tasks, members)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_way_out_of_the_sandbox_fails_its_task_and_leaves_the_board_as_it_was() {
    let mut board = Board::start(TEAMMATED).await;
    let _repo = board.attach_repo().await;
    let (home, keys) = home();
    let home_path = home.path().display().to_string();
    let env = [("HOME", home_path.as_str())];
    let _bob = board.spawn_with_env("bob", "other", &[], &env);
    board.wait_idle("bob").await;
    // bob holds a task in a worktree of its own until the test lets it go.
    let held = add(
        &board,
        "other",
        "while [ ! -e release ]; do sleep 0.05; done; echo released",
        &[],
    )
    .await;
    board.wait_claimed(held.id).await;
    let bob_tree =
        teamboard_testkit::eventually("bob's worktree", teamboard_testkit::PATIENCE, || async {
            let t = board.task(held.id).await;
            let path = PathBuf::from(t.worktree?.path);
            path.is_dir().then_some(path)
        })
        .await;

    let alice = board.spawn_with_env("alice", "dev", &[], &env);
    board.wait_idle("alice").await;
    let before = board_state(&board, &[]).await;
    let socket = board.daemon.socket.display().to_string();
    let teamctl = workspace_bin("teamctl").display().to_string();
    let raw_lead = format!(
        "python3 - <<'EOF'\n\
         import json, socket, struct\n\
         s = socket.socket(socket.AF_UNIX)\n\
         s.connect('{socket}')\n\
         def send(o):\n    b = json.dumps(o).encode(); s.sendall(struct.pack('>I', len(b)) + b)\n\
         def recv():\n    n = struct.unpack('>I', s.recv(4))[0]; return json.loads(s.recv(n))\n\
         send({{'type': 'hello', 'protocol': 1, 'client': 'escape', 'name': 'lead'}})\n\
         assert recv()['type'] == 'welcome'\n\
         send({{'type': 'request', 'id': 1, 'op': 'add_task', 'args': {{'subject': 'escaped'}}}})\n\
         print(recv())\n\
         EOF"
    );
    // Each way out, and how it is stopped: the socket is not one inside, the
    // key file's directory is empty, $HOME is read-only, the other worktree's
    // directory is hidden, and no process outside the sandbox exists in it.
    let escapes = [
        (
            format!("{teamctl} --socket {socket} task add escaped"),
            "is not a socket",
        ),
        (raw_lead, "ConnectionRefusedError"),
        (
            format!("cat {}", keys.display()),
            "keys.env: No such file or directory",
        ),
        (
            "echo escaped > \"$HOME/escaped\"".to_string(),
            "Read-only file system",
        ),
        (
            format!("echo escaped > {}/escaped", bob_tree.display()),
            "No such file or directory",
        ),
        (format!("kill -STOP {}", alice.pid()), "No such process"),
    ];
    let mut ids = Vec::new();
    for (block, _) in &escapes {
        let t = add(&board, "dev", block, &[]).await;
        ids.push(t.id);
    }
    let done = board.wait_done(&ids).await;
    let done: Vec<&Task> = ids
        .iter()
        .map(|id| done.iter().find(|t| t.id == *id).expect("listed"))
        .collect();
    for (t, (block, why)) in done.iter().zip(&escapes) {
        assert_eq!(t.status, TaskStatus::Failed, "`{block}`: {t:#?}");
        let error = t.last_error.clone().unwrap_or_default();
        assert!(error.contains(why), "`{block}` failed otherwise: {error}");
    }
    assert_eq!(board_state(&board, &ids).await, before);
    assert!(!home.path().join("escaped").exists());
    assert!(!bob_tree.join("escaped").exists());
    let log = board.transcript("alice");
    assert!(!log.contains("sk-secret-never-read"), "{log}");
    // alice was never stopped: she still answers.
    assert!(teamboard_testkit::alive(alice.pid()));
    let probe = add(&board, "dev", "echo alive", &[]).await;
    board.wait_done(&[probe.id]).await;
    let probe = board.task(probe.id).await;
    assert_eq!(probe.status, TaskStatus::Completed, "{probe:#?}");

    std::fs::write(bob_tree.join("release"), "").expect("let bob go");
    board.wait_done(&[held.id]).await;
    let held = board.task(held.id).await;
    assert_eq!(held.status, TaskStatus::Completed, "{held:#?}");
    board.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn work_in_the_worktree_builds_and_tests_rust_and_python_and_its_checks_run_sandboxed() {
    let mut board = Board::start(TEAMMATED).await;
    let _repo = board.attach_repo().await;
    let _alice = board.spawn("alice", "dev", &["--shell-timeout", "300"]);
    board.wait_idle("alice").await;
    let rust = "printf 'target/\\n__pycache__/\\n' > .gitignore\n\
         mkdir -p demo/src\n\
         printf '[package]\\nname = \"demo\"\\nversion = \"0.1.0\"\\nedition = \"2021\"\\n' > demo/Cargo.toml\n\
         printf 'pub fn add(a: i32, b: i32) -> i32 { a + b }\\n#[test]\\nfn adds() { assert_eq!(add(2, 2), 4); }\\n' > demo/src/lib.rs\n\
         cd demo && export CARGO_TARGET_DIR=target && cargo build --offline && cargo test --offline";
    let python = "mkdir -p py && cd py\n\
         printf 'def add(a, b):\\n    return a + b\\n' > calc.py\n\
         printf 'import unittest\\nfrom calc import add\\nclass T(unittest.TestCase):\\n    def test_add(self):\\n        self.assertEqual(add(2, 2), 4)\\n' > test_calc.py\n\
         python3 -m unittest -v 2>&1 && echo python-ok";
    // The checks see the worktree, and nothing of boardd's.
    let state = board.state_dir().join("board.sqlite3");
    let confined = format!(
        "test -f demo/Cargo.toml && test ! -e {} && test ! -S {} && touch /tmp/scratch",
        state.display(),
        board.daemon.socket.display()
    );
    let t = board
        .lead
        .add_task(NewTask {
            subject: "build and test".into(),
            description: format!("Build.\n```sh\n{rust}\n```\nTest.\n```sh\n{python}\n```\n"),
            checks: vec![confined],
            ..NewTask::default()
        })
        .await
        .expect("add_task");
    board.wait_done(&[t.id]).await;
    let done = board.task(t.id).await;
    let log = board.transcript("alice");
    assert_eq!(done.status, TaskStatus::Completed, "{done:#?}\n{log}");
    assert!(log.contains("test adds ... ok"), "{log}");
    assert!(log.contains("python-ok"), "{log}");
    board.stop().await;
}

/// `teamctl team`'s line for `name`.
fn team_line(teamctl: &Teamctl, name: &str) -> String {
    let out = teamctl.ok(&["team"]);
    out.lines()
        .find(|l| l.starts_with(name))
        .unwrap_or_else(|| panic!("no line for {name}:\n{out}"))
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_roster_shows_each_sandbox_and_says_off_plainly() {
    let mut board = Board::start(TEAMMATED).await;
    let _alice = board.spawn("alice", "dev", &[]);
    let _bob = board.spawn("bob", "dev", &["--sandbox", "off"]);
    let _carol = board.spawn("carol", "dev", &["--sandbox", "read-only", "--no-network"]);
    for name in ["alice", "bob", "carol"] {
        board.wait_idle(name).await;
    }
    let socket = board.daemon.socket.clone();
    let teamctl = Teamctl::new(workspace_bin("teamctl"), &socket);
    let lines = tokio::task::spawn_blocking(move || {
        let lines: Vec<String> = ["alice", "bob", "carol"]
            .iter()
            .map(|n| team_line(&teamctl, n))
            .collect();
        (lines, teamctl.json(&["team"]))
    });
    let (lines, json) = lines.await.expect("teamctl");
    assert!(lines[0].ends_with("  sandbox workspace-write"), "{lines:?}");
    assert!(
        lines[1].ends_with("  sandbox OFF: commands run with your full rights"),
        "{lines:?}"
    );
    assert!(
        lines[2].ends_with("  sandbox read-only, no network"),
        "{lines:?}"
    );
    let text = json.to_string();
    assert!(
        text.contains(r#""sandbox":{"mode":"read-only","network":false}"#),
        "{text}"
    );
    board.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_bubblewrap_the_spawn_refuses_with_the_package_unless_the_sandbox_is_off() {
    let mut board = Board::start(TEAMMATED).await;
    let missing = [("TEAMBOARD_BWRAP", "/nonexistent/bwrap")];
    let mut alice = board.spawn_with_env("alice", "dev", &[], &missing);
    assert_eq!(alice.exit_code().await, Some(1));
    let log = alice.log_text();
    assert!(log.contains("apt install bubblewrap"), "{log}");
    assert!(log.contains("--sandbox off"), "{log}");
    let _bob = board.spawn_with_env("bob", "dev", &["--sandbox", "off"], &missing);
    board.wait_idle("bob").await;

    let teamctl = Teamctl::new(workspace_bin("teamctl"), &board.daemon.socket);
    let workdir = board.workdir("carol");
    let out = tokio::task::spawn_blocking(move || {
        teamctl
            .command()
            .args(["spawn", "carol", "--role", "dev", "--workdir"])
            .arg(&workdir)
            .env("TEAMBOARD_BWRAP", "/nonexistent/bwrap")
            .output()
            .expect("teamctl runs")
    })
    .await
    .expect("teamctl");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("apt install bubblewrap"), "{stderr}");
    let members = board.lead.team().await.expect("team");
    assert!(!members.iter().any(|m| m.name == "carol"), "{members:?}");
    board.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_teammates_sandboxed_commands_die_with_it_even_those_that_left_its_group() {
    let mut board = Board::start(TEAMMATED).await;
    let alice = board.spawn("alice", "dev", &[]);
    board.wait_idle("alice").await;
    let marker = format!("tb-sandboxed-{}", std::process::id());
    let block = format!(
        "sh -c 'sleep 60; :' {marker}-child > /dev/null 2>&1 &\n\
         setsid sh -c 'sleep 60; :' {marker}-escaped > /dev/null 2>&1 &\n\
         sleep 60"
    );
    let t = add(&board, "dev", &block, &[]).await;
    board.wait_claimed(t.id).await;
    alice.wait_for_process(&format!("{marker}-escaped")).await;
    alice.wait_for_process(&format!("{marker}-child")).await;
    alice.kill9();
    teamboard_testkit::eventually(
        "the sandboxed commands to die",
        std::time::Duration::from_secs(2),
        || async {
            teamboard_testkit::with_marker(&marker)
                .is_empty()
                .then_some(())
        },
    )
    .await;
    board.stop().await;
}
