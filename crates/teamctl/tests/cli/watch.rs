//! `teamctl watch`: the live view, once and continuously.

use crate::{Cli, base_command};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;
use teamboard_protocol::request::RegisterArgs;

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

/// A member's runtime shows as in `teamctl team`, a column after the role, and
/// within the first 80 columns: on a terminal, watch clips long lines at the
/// edge, which would cut off anything at the end of a working member's line.
#[test]
fn watch_shows_each_members_runtime_up_front() {
    let d = Cli::start();
    d.ok(&[
        "task",
        "add",
        "Write the parser for the configuration files and its tests",
    ]);
    let bob = d.block_on(async {
        let bob = teamboard_testkit::connect(&d.socket, "bob").await;
        bob.register_with(RegisterArgs {
            role: "backend".into(),
            pid: Some(4242),
            runtime: Some("claude".into()),
            ..RegisterArgs::default()
        })
        .await
        .expect("register");
        bob
    });
    d.block_on(bob.claim_task(1)).expect("claim");
    let _alice = d.teammate("alice", "backend");

    let out = d.ok(&["watch", "--once"]);
    let member = |name: &str| {
        out.lines()
            .map(str::trim_start)
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("no {name} in:\n{out}"))
            .to_string()
    };
    let visible: String = member("bob").chars().take(80).collect();
    assert!(
        visible.starts_with("bob    backend  claude  working"),
        "{visible}\n{out}"
    );
    // Registered, and has not asked for work yet.
    assert!(
        member("alice").starts_with("alice  backend  native  starting for"),
        "{out}"
    );
    // The same columns as `teamctl team` (up to the state's age, which may have
    // ticked between the two).
    let team = d.ok(&["team"]);
    let in_team = team
        .lines()
        .find(|l| l.starts_with("bob"))
        .expect("bob in team");
    let head = |l: &str| l.split_whitespace().take(5).collect::<Vec<_>>().join(" ");
    assert_eq!(head(&member("bob")), head(in_team));
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

/// Between events the clock and the ages tick: a member that nothing happens to
/// is seen growing older, frame after frame, with no event to redraw it.
#[test]
fn watch_ticks_its_clock_and_ages_without_events() {
    let d = Cli::start();
    let _alice = d.teammate("alice", "coder");
    let mut child = base_command(&d.socket)
        .args(["watch"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn watch");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut clocks = std::collections::BTreeSet::new();
    let mut ages = std::collections::BTreeSet::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while ages.len() < 3 || clocks.len() < 3 {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let Ok(line) = rx.recv_timeout(left) else {
            panic!("watch froze: clocks {clocks:?}, ages {ages:?}");
        };
        if line.starts_with("teamboard  team") {
            clocks.insert(line);
        } else if let Some(age) = line
            .trim_start()
            .strip_prefix("alice  coder  starting for ")
        {
            ages.insert(
                age.split_whitespace()
                    .next()
                    .unwrap_or_default()
                    .to_string(),
            );
        }
    }
    let _ = child.kill();
    let _ = child.wait();
}
