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
    let out = cli
        .teamctl
        .command()
        .env("TEAMMATED_BIN", &fake)
        .args(["lead", "--teammate-runtime", "claude"])
        .output()
        .expect("teamctl runs");
    assert!(out.status.success(), "{}", stderr_of(&out));
    let args = std::fs::read_to_string(&record).expect("the stand-in ran");
    assert!(args.contains("\n--teammate-runtime\nclaude\n"), "{args}");

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
