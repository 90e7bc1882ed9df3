//! `teamctl spawn --runtime ...`: the runtime and agent flags reach teammated (a
//! stand-in that records its arguments, and the real one with a stand-in agent),
//! in both modes, and `teamctl team` shows the runtime. No real agent is needed:
//! teammated checks its agent's program at start and runs it only for a task.

use crate::spawn::{KillOnDrop, kill_spawned, script, tripwire_teammated};
use crate::{Cli, base_command, stderr, stdout};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;
use teamboard_testkit::{Teamctl, eventually_blocking, short_tempdir, workspace_bin};

/// A stand-in teammated that writes its arguments to `args`, one a line, and
/// exits 3 (spawn then fails, which is all the test needs).
fn recording_teammated(dir: &Path) -> (PathBuf, PathBuf) {
    let record = dir.join("args");
    let fake = script(
        dir,
        "teammated",
        &format!("printf '%s\\n' \"$@\" > '{}'\nexit 3\n", record.display()),
    );
    (fake, record)
}

/// Runs `spawn`, which the stand-in fails (exit 1), and returns the
/// arguments it gave teammated after `--workdir DIR` (the runtime's come last).
fn runtime_args(spawn: &mut Command, record: &Path) -> Vec<String> {
    let out = spawn.output().expect("teamctl runs");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = std::fs::read_to_string(record).expect("the stand-in ran");
    let args: Vec<String> = text.lines().map(str::to_string).collect();
    let at = args
        .iter()
        .position(|a| a == "--workdir")
        .expect("--workdir");
    args[at + 2..].to_vec()
}

#[test]
fn spawn_passes_the_runtime_and_the_agent_flags_to_teammated() {
    let d = Cli::start();
    let dir = short_tempdir();
    let (fake, record) = recording_teammated(dir.path());
    let agent = script(dir.path(), "agent", "exit 0\n");
    // A relative --agent-cmd is made absolute: teammated starts in its workdir.
    let passed = runtime_args(
        base_command(&d.socket)
            .current_dir(dir.path())
            .env("TEAMMATED_BIN", &fake)
            .arg("--state-dir")
            .arg(dir.path().join("state"))
            .args(["spawn", "ann", "--role", "review", "--runtime", "acp"])
            .args(["--agent-cmd", "./agent", "--agent-arg=--acp"])
            .args(["--agent-arg", "two words", "--agent-arg", "--model=x"])
            .args(["--agent-policy", "read-only"]),
        &record,
    );
    assert_eq!(
        passed,
        [
            "--runtime",
            "acp",
            "--agent-cmd",
            &agent.display().to_string(),
            "--agent-arg=--acp",
            "--agent-arg=two words",
            "--agent-arg=--model=x",
            "--agent-policy",
            "read-only",
        ]
    );

    // claude's program defaults to `claude` on PATH, passed on as found.
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).expect("mkdir");
    let claude = script(&bin, "claude", "exit 0\n");
    let path = std::env::join_paths(std::iter::once(bin.clone()).chain(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    )))
    .expect("PATH");
    let passed = runtime_args(
        base_command(&d.socket)
            .env("TEAMMATED_BIN", &fake)
            .env("PATH", &path)
            .arg("--state-dir")
            .arg(dir.path().join("state"))
            .args(["spawn", "bob", "--role", "dev", "--runtime", "claude"])
            .args(["--agent-model", "sonnet"]),
        &record,
    );
    assert_eq!(
        passed,
        [
            "--runtime",
            "claude",
            "--agent-cmd",
            &claude.display().to_string(),
            "--agent-model",
            "sonnet",
        ]
    );
}

#[test]
fn spawn_refuses_bad_runtime_flags_before_starting_anything() {
    let d = Cli::start();
    let dir = short_tempdir();
    let (fake, marker) = tripwire_teammated(dir.path());
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).expect("mkdir");
    let refused = |args: &[&str], needle: &str| {
        let out = base_command(&d.socket)
            .env("TEAMMATED_BIN", &fake)
            // Nothing on PATH: no `claude`, no `codex`.
            .env("PATH", &empty)
            .env("XDG_CONFIG_HOME", dir.path().join("config"))
            .env("TEAMCTL_SYSTEMCTL", &fake)
            .arg("--state-dir")
            .arg(dir.path().join("state"))
            .args(["spawn", "gus", "--role", "coder"])
            .args(args)
            .output()
            .expect("teamctl runs");
        assert_eq!(out.status.code(), Some(1), "{args:?} was taken");
        let err = stderr(&out);
        assert!(err.starts_with("teamctl: "), "{err}");
        assert!(err.contains(needle), "{needle:?} not in: {err}");
    };
    refused(
        &["--agent-cmd", "/bin/sh"],
        "--agent-cmd is for an agent runtime; add --runtime claude, codex or acp",
    );
    refused(
        &[
            "--runtime",
            "native",
            "--agent-arg=-x",
            "--agent-policy",
            "read-only",
        ],
        "--agent-arg and --agent-policy are for an agent runtime",
    );
    refused(
        &["--runtime", "acp"],
        "--runtime acp needs the agent's program: --agent-cmd CMD",
    );
    // The native loop's model would not reach an agent; an agent's is its own flag.
    refused(
        &["--runtime", "claude", "--model", "sonnet"],
        "--model is the native loop's model and does not reach the claude agent; name \
         the agent's with --agent-model MODEL",
    );
    refused(
        &["--agent-model", "sonnet"],
        "--agent-model is for an agent runtime",
    );
    refused(
        &[
            "--runtime",
            "acp",
            "--agent-cmd",
            "/bin/sh",
            "--agent-model",
            "x",
        ],
        "ACP has no standard way to choose a model",
    );
    refused(
        &["--runtime", "acp", "--agent-cmd", "/no/such/agent"],
        "--agent-cmd: /no/such/agent is not an executable file",
    );
    refused(
        &["--runtime", "codex", "--agent-cmd", "codex"],
        "--agent-cmd: `codex` is not on PATH",
    );
    for systemd in [false, true] {
        let mut args = vec!["--runtime", "claude"];
        if systemd {
            args.push("--systemd");
        }
        refused(
            &args,
            "--runtime claude runs `claude`, which is not on PATH; install Claude Code \
             (`npm install -g @anthropic-ai/claude-code`, or the pinned version with \
             `cargo xtask install-agents`; see docs/runtimes.md) or name its program with \
             --agent-cmd",
        );
    }
    assert!(!marker.exists(), "teammated ran although spawn refused");
    assert!(!dir.path().join("config").exists(), "settings were written");
    let out = base_command(&d.socket)
        .env("TEAMMATED_BIN", &fake)
        .args(["spawn", "gus", "--role", "coder", "--runtime", "gpt"])
        .output()
        .expect("teamctl runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("[possible values: native, claude, codex, acp]"),
        "{}",
        stderr(&out)
    );
}

/// The real teammated with a stand-in agent: it registers with its runtime, and
/// the roster and its transcript say so.
#[test]
fn a_spawned_agent_teammate_shows_its_runtime_in_team() {
    let d = Cli::start();
    let dir = short_tempdir();
    let state = dir.path().join("state");
    let agent = script(dir.path(), "fake-acp-agent", "exit 0\n");
    let out = base_command(&d.socket)
        .env("TEAMMATED_BIN", workspace_bin("teammated"))
        .arg("--state-dir")
        .arg(&state)
        .args(["spawn", "ann", "--role", "review", "--runtime", "acp"])
        .arg("--agent-cmd")
        .arg(&agent)
        .args(["--agent-arg=--acp", "--agent-policy", "read-only", "--json"])
        .arg("--workdir")
        .arg(dir.path())
        .output()
        .expect("teamctl runs");
    let _cleanup = kill_spawned(&out);
    assert!(out.status.success(), "{}", stderr(&out));
    let _bob = d.teammate("bob", "dev");

    let team = d.ok(&["team"]);
    // A column after the role, once anyone runs an agent.
    let runtime = |name: &str| {
        let line = team.lines().find(|l| l.starts_with(name)).expect(name);
        line.split_whitespace().nth(2).map(str::to_string)
    };
    assert_eq!(runtime("ann").as_deref(), Some("acp"), "{team}");
    assert_eq!(runtime("bob").as_deref(), Some("native"), "{team}");
    let json = d.json(&["team"]);
    let by_name = |n: &str| {
        json.as_array()
            .and_then(|a| a.iter().find(|m| m["name"] == n).cloned())
            .unwrap_or_else(|| panic!("{n} not in {json}"))
    };
    assert_eq!(by_name("ann")["runtime"], "acp");
    assert!(by_name("bob").get("runtime").is_none(), "{json}");

    let logs = Teamctl::new(crate::TEAMCTL, &d.socket)
        .with_state_dir(&state)
        .ok(&["logs", "ann"]);
    assert!(
        logs.contains(&format!(
            "runtime acp ({}), policy read-only",
            agent.display()
        )),
        "{logs}"
    );
    d.ok(&["shutdown", "ann"]);
}

/// Reads a settings file the way systemd's `EnvironmentFile=` does, for the
/// values `teamctl spawn --systemd` writes: bare, or in double quotes where a
/// backslash escapes `"`, `\`, `` ` `` and `$` (and is kept before anything else).
fn systemd_env(text: &str) -> Vec<(String, String)> {
    let mut vars = Vec::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let (key, raw) = line.split_once('=').expect("KEY=value");
        let value = match raw.strip_prefix('"') {
            None => raw.to_string(),
            Some(quoted) => {
                let mut out = String::new();
                let mut chars = quoted.chars();
                while let Some(c) = chars.next() {
                    match c {
                        '"' => break,
                        '\\' => match chars.next() {
                            Some(e @ ('"' | '\\' | '`' | '$')) => out.push(e),
                            Some(e) => {
                                out.push('\\');
                                out.push(e);
                            }
                            None => out.push('\\'),
                        },
                        c => out.push(c),
                    }
                }
                out
            }
        };
        vars.push((key.to_string(), value));
    }
    vars
}

#[test]
fn spawn_systemd_writes_the_runtime_and_teammated_reads_it_back() {
    let d = Cli::start();
    let dir = short_tempdir();
    let state = dir.path().join("state");
    let config = dir.path().join("config");
    let systemctl = script(
        dir.path(),
        "systemctl",
        "[ \"$2\" = is-active ] && exit 3\nexit 0\n",
    );
    let agent = script(dir.path(), "my agent", "exit 0\n");
    let tricky = [
        "--allowedTools",
        "Bash(git *)",
        r#"say "hi" to $HOME with `ls` and \n"#,
        "--flag=x,y",
    ];
    let mut cmd = base_command(&d.socket);
    cmd.env("XDG_CONFIG_HOME", &config)
        .env("TEAMCTL_SYSTEMCTL", &systemctl)
        .arg("--state-dir")
        .arg(&state)
        .args([
            "spawn",
            "cy",
            "--role",
            "dev",
            "--runtime",
            "acp",
            "--systemd",
        ])
        .arg("--agent-cmd")
        .arg(&agent)
        .args(["--agent-policy", "read-only"])
        .arg("--workdir")
        .arg(dir.path());
    for a in tricky {
        cmd.arg(format!("--agent-arg={a}"));
    }
    let out = cmd.output().expect("teamctl runs");
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("teammated@cy"));
    let text =
        std::fs::read_to_string(config.join("teamboard/teammates/cy.env")).expect("settings");
    let vars = systemd_env(&text);
    let var = |k: &str| {
        vars.iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| panic!("no {k} in:\n{text}"))
    };
    assert_eq!(var("TEAMMATE_RUNTIME"), "acp");
    assert_eq!(var("TEAMMATE_AGENT_CMD"), agent.display().to_string());
    assert_eq!(var("TEAMMATE_AGENT_POLICY"), "read-only");
    let args: Vec<String> =
        serde_json::from_str(&var("TEAMMATE_AGENT_ARGS")).expect("a JSON array");
    assert_eq!(args, tricky);
    assert!(
        text.contains("TEAMMATE_AGENT_CMD=\""),
        "a path with a space is quoted:\n{text}"
    );
    assert!(
        !text.contains("MODEL"),
        "no model named, none written:\n{text}"
    );
    // An agent's model goes into its own variable, which teammated reads as
    // --agent-model (TEAMMATE_MODEL is the native loop's).
    let out = base_command(&d.socket)
        .env("XDG_CONFIG_HOME", &config)
        .env("TEAMCTL_SYSTEMCTL", &systemctl)
        .args(["spawn", "dee", "--role", "dev", "--runtime", "codex"])
        .args(["--systemd", "--agent-model", "o3", "--agent-cmd"])
        .arg(&agent)
        .output()
        .expect("teamctl runs");
    assert!(out.status.success(), "{}", stderr(&out));
    let dee = std::fs::read_to_string(config.join("teamboard/teammates/dee.env")).expect("dee");
    assert!(
        systemd_env(&dee).contains(&("TEAMMATE_AGENT_MODEL".to_string(), "o3".to_string())),
        "{dee}"
    );

    // The unit runs `teammated --name %i` with these settings; so does this test.
    // The unit's teammated finds the lead's key in the default state directory,
    // which is boardd's; this test's boardd has another, named here.
    let (key_var, key) = teamboard_testkit::lead_key_env(&d.socket);
    let teammated = |extra: &[(&str, &str)]| {
        let mut cmd = Command::new(workspace_bin("teammated"));
        cmd.args(["--name", "cy"])
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", dir.path())
            .env(key_var, &key)
            .envs(vars.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .envs(extra.iter().copied())
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd
    };
    // A broken variable is refused with its name: the variable is read.
    let out = teammated(&[("TEAMMATE_AGENT_ARGS", "--acp")])
        .output()
        .expect("teammated runs");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("TEAMMATE_AGENT_ARGS must be a JSON array of strings"),
        "{}",
        stderr(&out)
    );
    let child = teammated(&[]).spawn().expect("teammated starts");
    let _cleanup = KillOnDrop(child.id());
    let member = eventually_blocking("cy to register", Duration::from_secs(20), || {
        let team = d.json(&["team"]);
        team.as_array()?
            .iter()
            .find(|m| m["name"] == "cy" && m["connected"] == true)
            .cloned()
    });
    assert_eq!(member["runtime"], "acp");
    assert_eq!(member["pid"], child.id());
    d.ok(&["shutdown", "cy"]);
    let out = child.wait_with_output().expect("teammated exits");
    assert!(out.status.success(), "{}", stderr(&out));
}
