//! `teamctl lead`: what it refuses before it hands the terminal to the lead. The
//! lead itself is tested end to end in the workspace's `tests/lead.rs`.

use super::Cli;

fn stderr_of(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn yes_needs_a_goal_and_json_is_refused() {
    let cli = Cli::start();
    let out = cli.run(&["lead", "--yes"]);
    assert!(!out.status.success());
    assert!(stderr_of(&out).contains("--goal"), "{}", stderr_of(&out));
    let out = cli.run(&["lead", "--json"]);
    assert!(!out.status.success());
    assert!(
        stderr_of(&out).contains("`teamctl lead` talks to a person; it has no --json output"),
        "{}",
        stderr_of(&out)
    );
}

#[test]
fn a_teammated_that_is_not_there_is_named() {
    let cli = Cli::start();
    let mut cmd = cli.teamctl.command();
    let out = cmd
        .env("TEAMMATED_BIN", "/nonexistent/teammated")
        .args(["lead", "--goal", "x", "--yes"])
        .output()
        .expect("teamctl runs");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr_of(&out)
            .contains("TEAMMATED_BIN is /nonexistent/teammated, which is not an executable file"),
        "{}",
        stderr_of(&out)
    );
}

#[test]
fn the_teammates_runtime_is_passed_to_the_lead() {
    let cli = Cli::start();
    let dir = teamboard_testkit::short_tempdir();
    let record = dir.path().join("args");
    let fake = crate::spawn::script(
        dir.path(),
        "teammated",
        &format!("printf '%s\\n' \"$@\" > '{}'\n", record.display()),
    );
    // The lead's check starts the agent once (`--version`).
    crate::spawn::script(dir.path(), "claude", "echo '2.1.0 (Claude Code)'\n");
    let out = cli
        .teamctl
        .command()
        .env("TEAMMATED_BIN", &fake)
        .env("PATH", dir.path())
        .args(["lead", "--teammate-runtime", "claude"])
        .output()
        .expect("teamctl runs");
    assert!(out.status.success(), "{}", stderr_of(&out));
    let args = std::fs::read_to_string(&record).expect("the stand-in ran");
    assert!(args.contains("\n--teammate-runtime\nclaude\n"), "{args}");
    assert!(!args.contains("--teammate-sandbox"), "{args}");
    assert!(!args.contains("--teammate-no-network"), "{args}");

    // The teammates' sandbox goes the same way.
    let out = cli
        .teamctl
        .command()
        .env("TEAMMATED_BIN", &fake)
        .args(["lead", "--teammate-sandbox", "off", "--teammate-no-network"])
        .output()
        .expect("teamctl runs");
    assert!(out.status.success(), "{}", stderr_of(&out));
    let args = std::fs::read_to_string(&record).expect("the stand-in ran");
    assert!(args.contains("\n--teammate-sandbox\noff\n"), "{args}");
    assert!(args.ends_with("\n--teammate-no-network\n"), "{args}");

    let out = cli.run(&["lead", "--teammate-runtime", "acp"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr_of(&out).contains("--teammate-runtime acp needs the agent's program"),
        "{}",
        stderr_of(&out)
    );
}

#[test]
fn the_native_loops_settings_are_refused_for_agent_teammates() {
    let cli = Cli::start();
    let out = cli.run(&[
        "lead",
        "--teammate-runtime",
        "codex",
        "--teammate-provider",
        "openai",
        "--teammate-base-url",
        "http://127.0.0.1:9/v1",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr_of(&out).contains(
            "--teammate-provider and --teammate-base-url are for native teammates; an agent \
             teammate uses its agent's own settings"
        ),
        "{}",
        stderr_of(&out)
    );
}

/// A lead whose teammates' agent is missing, or does not start, is refused
/// before the lead runs, so before it creates a task or spawns anyone; the
/// words name the program and how to install it.
#[test]
fn the_teammates_agent_is_checked_before_the_lead_starts() {
    let cli = Cli::start();
    let dir = teamboard_testkit::short_tempdir();
    let record = dir.path().join("args");
    let fake = crate::spawn::script(
        dir.path(),
        "teammated",
        &format!("printf '%s\\n' \"$@\" > '{}'\n", record.display()),
    );
    let lead = |runtime: &str| {
        cli.teamctl
            .command()
            .env("TEAMMATED_BIN", &fake)
            .env("PATH", dir.path())
            .args([
                "lead",
                "--goal",
                "x",
                "--yes",
                "--teammate-runtime",
                runtime,
            ])
            .output()
            .expect("teamctl runs")
    };
    let out = lead("claude");
    assert_eq!(out.status.code(), Some(1));
    let err = stderr_of(&out);
    assert!(
        err.contains(
            "--teammate-runtime claude runs `claude`, which is not on PATH; install Claude Code"
        ),
        "{err}"
    );
    assert!(err.contains("`cargo xtask install-agents`"), "{err}");
    assert!(err.contains("docs/runtimes.md"), "{err}");
    assert!(
        !record.exists(),
        "the lead ran although its teammates cannot"
    );

    crate::spawn::script(
        dir.path(),
        "codex",
        "echo 'codex: error while loading shared libraries: libssl.so.3' >&2\nexit 127\n",
    );
    let out = lead("codex");
    assert_eq!(out.status.code(), Some(1));
    let err = stderr_of(&out);
    assert!(err.contains("--teammate-runtime codex runs "), "{err}");
    assert!(
        err.contains("which does not start (`--version` exit status: 127: codex: error while loading shared libraries: libssl.so.3)"),
        "{err}"
    );
    assert!(err.contains("`cargo xtask install-agents`"), "{err}");
    assert!(
        !record.exists(),
        "the lead ran although its teammates cannot"
    );
    assert_eq!(
        cli.json(&["tasks"]),
        serde_json::json!([]),
        "a task was created"
    );
}
