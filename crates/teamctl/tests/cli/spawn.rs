//! `teamctl spawn`: detached teammates (played by a shell-script stand-in for
//! teammated) and systemd units (with a stand-in for systemctl).

use crate::{Cli, TEAMCTL, base_command, stderr, stdout};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;
use teamboard_testkit::mock_llm::{MockLlm, MockReply};
use teamboard_testkit::{Teamctl, alive, eventually_blocking, short_tempdir, workspace_bin};

/// Writes an executable `/bin/sh` script.
pub(crate) fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt as _;
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}")).expect("write script");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    path
}

pub(crate) fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::metadata(path)
        .expect("metadata")
        .permissions()
        .mode()
        & 0o777
}

/// Kills a process the test caused to be started, however the test ends.
pub(crate) struct KillOnDrop(pub(crate) u32);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-9", &self.0.to_string()])
            .stderr(Stdio::null())
            .status();
    }
}

/// The teammate `spawn --json` says it started, if any, killed when this is
/// dropped: a spawn that should have failed leaves nothing running.
pub(crate) fn kill_spawned(out: &Output) -> Option<KillOnDrop> {
    serde_json::from_slice::<Value>(&out.stdout)
        .ok()
        .and_then(|v| v["pid"].as_u64())
        .and_then(|pid| u32::try_from(pid).ok())
        .map(KillOnDrop)
}

/// A stand-in teammated that, if it is ever run, leaves the file `ran` behind,
/// for the checks that spawn refuses before it starts anything: (its
/// program, the file).
pub(crate) fn tripwire_teammated(dir: &Path) -> (PathBuf, PathBuf) {
    let marker = dir.join("ran");
    let fake = script(dir, "teammated", &format!("touch '{}'\n", marker.display()));
    (fake, marker)
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
        .arg("--carry-context")
        .arg("--require-plan")
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
         --workdir {} --max-rounds 7 --carry-context --require-plan",
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

/// The real teammated checks the model API before it connects; a server that
/// wants a key it was not given makes spawn fail with the URL and what to set.
/// (A server without the model list is only a warning: see teammated's tests.)
#[test]
fn spawn_fails_with_teammateds_word_on_a_refused_key() {
    let d = Cli::start();
    let dir = short_tempdir();
    // On the daemon's runtime, which keeps running between the test's calls.
    let mock = d.block_on(async { MockLlm::start(Vec::new()) });
    mock.set_models(MockReply::status(401));
    let url = mock.url();
    let out = base_command(&d.socket)
        .env("TEAMMATED_BIN", workspace_bin("teammated"))
        .env("OPENAI_BASE_URL", &url)
        .env_remove("OPENAI_API_KEY")
        .env_remove("TEAMMATE_BASE_URL")
        .arg("--state-dir")
        .arg(dir.path().join("state"))
        .args([
            "spawn",
            "erin",
            "--role",
            "coder",
            "--provider",
            "openai",
            "--json",
        ])
        .arg("--workdir")
        .arg(dir.path())
        .output()
        .expect("teamctl runs");
    // Should the spawn wrongly succeed, the teammate must not outlive the test.
    let _cleanup = kill_spawned(&out);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!(
            "{url}/models is reachable, but it wants an API key (HTTP 401"
        )) && err.contains("set OPENAI_API_KEY"),
        "{err}"
    );
    assert_eq!(mock.model_list_requests().len(), 1);
    assert_eq!(mock.calls(), 0);
}

/// `--base-url`, `--context-budget`, `--max-tokens-field` and `--carry-context` reach the real
/// teammated, which names what it got in its transcript's first line.
#[test]
fn spawn_passes_the_base_url_and_the_context_budget_to_teammated() {
    let d = Cli::start();
    let dir = short_tempdir();
    let state = dir.path().join("state");
    let mock = d.block_on(async { MockLlm::start(Vec::new()) });
    let url = format!("{}/v1", mock.url());
    let out = base_command(&d.socket)
        .env("TEAMMATED_BIN", workspace_bin("teammated"))
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("TEAMMATE_BASE_URL")
        .env_remove("TEAMMATE_CONTEXT_BUDGET")
        .arg("--state-dir")
        .arg(&state)
        .args(["spawn", "fred", "--role", "coder", "--provider", "openai"])
        .args(["--base-url", &url, "--context-budget", "5000"])
        .args(["--max-tokens-field", "max_completion_tokens", "--json"])
        .arg("--carry-context")
        .arg("--workdir")
        .arg(dir.path())
        .output()
        .expect("teamctl runs");
    let _cleanup = kill_spawned(&out);
    assert!(out.status.success(), "{}", stderr(&out));
    // The check at start went to the base URL given.
    assert_eq!(mock.model_list_requests()[0].path, "/v1/models");
    let logs = Teamctl::new(TEAMCTL, &d.socket)
        .with_state_dir(&state)
        .ok(&["logs", "fred"]);
    let started = logs
        .lines()
        .find(|l| l.contains("started:"))
        .unwrap_or_else(|| panic!("no start line in:\n{logs}"));
    assert!(
        started.contains(&format!(
            "provider openai (model gpt-4o-mini at {url}, output limit in max_completion_tokens)"
        )),
        "{started}"
    );
    assert!(
        started.contains("context budget 5000 tokens, carried from task to task"),
        "{started}"
    );
}

#[test]
fn spawn_refuses_a_bad_base_url_or_context_budget_before_starting_anything() {
    let d = Cli::start();
    let dir = short_tempdir();
    let (fake, marker) = tripwire_teammated(dir.path());
    let refused = |args: &[&str], needle: &str| {
        let out = base_command(&d.socket)
            .env("TEAMMATED_BIN", &fake)
            .arg("--state-dir")
            .arg(dir.path().join("state"))
            .args(["spawn", "gus", "--role", "coder"])
            .args(args)
            .output()
            .expect("teamctl runs");
        assert!(!out.status.success(), "{args:?} was taken");
        let err = stderr(&out);
        assert!(err.contains(needle), "{needle:?} not in: {err}");
    };
    refused(
        &["--base-url", "localhost:11434/v1"],
        "give it with http:// or https://",
    );
    refused(&["--base-url", "http://"], "no host");
    refused(&["--base-url", "http://local host/v1"], "spaces");
    refused(
        &[
            "--provider",
            "scripted",
            "--base-url",
            "http://localhost:1/v1",
        ],
        "--base-url is for --provider anthropic or openai",
    );
    refused(&["--context-budget", "10"], "at least 1000");
    refused(&["--context-budget", "lots"], "a number of tokens");
    assert!(!marker.exists(), "teammated ran although spawn refused");
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
    let (fake, marker) = tripwire_teammated(dir.path());
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
    let (key_var, key) = teamboard_testkit::lead_key_env(&d.socket);
    let mut tries = 0;
    let out = loop {
        let result = Command::new(&lonely)
            .arg("--socket")
            .arg(&d.socket)
            .args(["spawn", "x", "--role", "r"])
            .env(key_var, &key)
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
        .args(["--new-team", "t1", "spawn", "dave", "--role", "backend"])
        .args(["--provider", "openai", "--model", "gpt-4.1"])
        .args(["--idle-timeout", "600", "--max-rounds", "40", "--systemd"])
        .args([
            "--base-url",
            "http://localhost:11434/v1",
            "--context-budget",
            "50000",
        ])
        .args(["--max-tokens-field", "max_tokens", "--carry-context"])
        .arg("--require-plan")
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
            "TEAMMATE_BASE_URL=http://localhost:11434/v1".to_string(),
            "TEAMMATE_CONTEXT_BUDGET=50000".to_string(),
            "TEAMMATE_MAX_TOKENS_FIELD=max_tokens".to_string(),
            "TEAMMATE_CARRY_CONTEXT=true".to_string(),
            "TEAMMATE_REQUIRE_PLAN=true".to_string(),
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
    for absent in [
        "PROVIDER",
        "MODEL",
        "IDLE_TIMEOUT",
        "MAX_ROUNDS",
        "BASE_URL",
        "CONTEXT_BUDGET",
        "MAX_TOKENS_FIELD",
        "CARRY_CONTEXT",
        "REQUIRE_PLAN",
    ] {
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

/// Sends `signal` to a process the test started.
fn signal(pid: u32, signal: libc::c_int) {
    // SAFETY: kill(2) has no memory-safety preconditions; the pid is our own child.
    unsafe { libc::kill(pid as libc::pid_t, signal) };
}

#[test]
fn spawn_says_so_when_the_teammate_connected_and_then_exited() {
    let d = Cli::start();
    let dir = short_tempdir();
    let marker = dir.path().join("pid");
    let go = dir.path().join("go");
    // A stand-in that says where it is, waits until told, and leaves; the test
    // registers for it in between, as the real teammated would.
    let fake = script(
        dir.path(),
        "teammated",
        &format!(
            "echo $$ > '{m}'\nwhile [ ! -e '{g}' ]; do sleep 0.01; done\n\
             echo 'a shutdown request was waiting; leaving' >&2\nexit 0\n",
            m = marker.display(),
            g = go.display()
        ),
    );
    let teamctl = base_command(&d.socket)
        .env("TEAMMATED_BIN", &fake)
        .arg("--state-dir")
        .arg(dir.path().join("state"))
        .args(["spawn", "dave", "--role", "coder"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn teamctl");
    let pid = wait_for_pid(&marker);
    let _cleanup = KillOnDrop(pid);
    // teamctl is held still while dave connects and leaves, so that it cannot
    // happen to see him connected: what it finds afterwards must tell the story.
    signal(teamctl.id(), libc::SIGSTOP);
    let dave = d.teammate_with_pid("dave", "coder", pid);
    drop(dave);
    let lead = d.block_on(teamboard_testkit::lead(&d.socket));
    eventually_blocking("dave to be disconnected", Duration::from_secs(10), || {
        let team = d.block_on(lead.team()).ok()?;
        team.iter()
            .any(|m| m.name == "dave" && !m.connected)
            .then_some(())
    });
    std::fs::write(&go, "").expect("tell the stand-in to leave");
    eventually_blocking("the stand-in to exit", Duration::from_secs(10), || {
        (!alive(pid)).then_some(())
    });
    signal(teamctl.id(), libc::SIGCONT);

    let out = teamctl.wait_with_output().expect("teamctl exits");
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let err = stderr(&out);
    assert!(
        err.contains("'dave' connected to boardd, then exited (exit status: 0)"),
        "{err}"
    );
    assert!(!err.contains("before it connected"), "{err}");
    assert!(err.contains("a shutdown request was waiting"), "{err}");
}

#[test]
fn a_shutdown_request_to_an_offline_teammate_is_refused_and_the_next_spawn_stays_up() {
    let d = Cli::start();
    // Known to the board, but not running.
    let erin = d.teammate("erin", "coder");
    d.block_on(erin.close());
    let lead = d.block_on(teamboard_testkit::lead(&d.socket));
    eventually_blocking("erin to be offline", Duration::from_secs(10), || {
        let team = d.block_on(lead.team()).ok()?;
        team.iter()
            .any(|m| m.name == "erin" && !m.connected)
            .then_some(())
    });
    let out = d.run(&["shutdown", "erin"]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let err = stderr(&out);
    assert!(err.starts_with("teamctl: "), "{err}");
    assert!(err.contains("'erin' is not connected"), "{err}");
    assert!(err.contains("nothing to shut down"), "{err}");

    // A real teammated under that name starts, and nothing waiting stops it.
    let dir = short_tempdir();
    let state = dir.path().join("state");
    let out = base_command(&d.socket)
        .env("TEAMMATED_BIN", workspace_bin("teammated"))
        .arg("--state-dir")
        .arg(&state)
        .args(["spawn", "erin", "--role", "coder", "--json"])
        .arg("--workdir")
        .arg(dir.path())
        .output()
        .expect("teamctl runs");
    assert!(out.status.success(), "{}", stderr(&out));
    let shown: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let pid = u32::try_from(shown["pid"].as_u64().expect("pid")).expect("a pid");
    let _cleanup = KillOnDrop(pid);
    // Up and waiting for work (its transcript says so once its first wait has
    // found nothing), and still connected after that.
    let transcript = teamboard_protocol::transcript::transcript_path(&state, "default", "erin");
    eventually_blocking("erin to go idle", Duration::from_secs(30), || {
        let text = std::fs::read_to_string(&transcript).ok()?;
        text.contains("idle: waiting").then_some(())
    });
    let team = d.block_on(lead.team()).expect("team");
    let erin = team.iter().find(|m| m.name == "erin").expect("erin");
    assert!(erin.connected, "{erin:?}");
    assert_eq!(erin.pid, Some(pid));
    assert!(alive(pid));
    let inbox = d.block_on(lead.inbox()).expect("inbox");
    assert!(
        inbox
            .iter()
            .all(|m| m.kind != teamboard_protocol::MessageKind::ShutdownResponse),
        "{inbox:#?}"
    );
}

/// A teammate on the scripted model (teammated's default) is named as such:
/// `spawn` says so when it starts it, `team` shows `scripted` up front, and its
/// tokens read as estimates there and in `--json`.
#[test]
fn a_scripted_teammate_is_named_at_spawn_and_its_tokens_read_as_estimates() {
    let d = Cli::start();
    d.ok(&[
        "task",
        "add",
        "Say hi",
        "--description",
        "```sh\necho hi\n```",
    ]);
    let dir = short_tempdir();
    let state = dir.path().join("state");
    let out = base_command(&d.socket)
        .env("TEAMMATED_BIN", workspace_bin("teammated"))
        .env_remove("TEAMMATE_PROVIDER")
        .env_remove("TEAMMATE_MODEL")
        .arg("--state-dir")
        .arg(&state)
        .args(["spawn", "gil", "--role", "coder"])
        .arg("--workdir")
        .arg(dir.path())
        .output()
        .expect("teamctl runs");
    let team = d.json(&["team"]);
    let _cleanup = team[0]["pid"]
        .as_u64()
        .and_then(|p| u32::try_from(p).ok())
        .map(KillOnDrop);
    assert!(out.status.success(), "{}", stderr(&out));
    let said = stdout(&out);
    assert!(
        said.starts_with("spawned gil (pid ")
            && said.contains(", on the scripted model: offline, canned answers, estimated tokens;"),
        "{said}"
    );
    eventually_blocking("gil to complete the task", Duration::from_secs(30), || {
        let tasks = d.json(&["tasks"]);
        (tasks[0]["status"] == "completed").then_some(())
    });
    let team = d.json(&["team"]);
    assert_eq!(team[0]["model"], "scripted", "{team}");
    assert_eq!(team[0]["tokens_estimated"], true, "{team}");
    assert!(team[0].get("runtime").is_none(), "{team}");
    let shown = d.ok(&["team"]);
    let line = shown
        .lines()
        .find(|l| l.starts_with("gil"))
        .unwrap_or_else(|| panic!("no line for gil in:\n{shown}"));
    assert!(line.starts_with("gil  coder  scripted  "), "{line}");
    assert!(line.contains("  ~"), "{line}");
    assert!(line.contains(" tokens (estimated: "), "{line}");
}
