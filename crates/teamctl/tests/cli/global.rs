//! What every command shares: finding and reaching boardd, `--timeout`, `--team`
//! and `TEAMBOARD_TEAM`, and `--help`.

use crate::{Cli, TEAMCTL, base_command, stderr, stdout, teamctl};
use serde_json::Value;
use std::process::{Command, Stdio};
use teamboard_testkit::short_tempdir;

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
fn a_lead_key_that_cannot_be_read_is_named_with_what_to_do() {
    let d = Cli::start();
    let missing = d.socket.with_file_name("nowhere.key");
    let out = d
        .teamctl
        .command()
        .env("TEAMBOARD_LEAD_KEY", &missing)
        .arg("tasks")
        .output()
        .expect("run teamctl");
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    let expected = format!("cannot read the lead's credential at {}", missing.display());
    assert!(err.contains(&expected), "{err}");
    assert!(err.contains("TEAMBOARD_LEAD_KEY"), "{err}");
    // Another file's text is not the key: boardd refuses, saying where it is.
    std::fs::write(&missing, "not the key\n").unwrap();
    let out = d
        .teamctl
        .command()
        .env("TEAMBOARD_LEAD_KEY", &missing)
        .arg("tasks")
        .output()
        .expect("run teamctl");
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("not the lead's credential"), "{err}");
    assert!(err.contains("lead.key"), "{err}");
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
fn team_option_and_env_select_the_team() {
    let d = Cli::start();
    d.ok(&["task", "add", "in default"]);
    // A team no one made is refused, not made: the words name the teams there
    // are and how to make one.
    let out = d.run(&["--team", "other", "task", "add", "in other"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        "teamctl: boardd refused the connection: no team 'other'; known teams: default. \
         Use --new-team other to create it\n"
    );
    assert_eq!(d.json(&["tasks"]).as_array().map(Vec::len), Some(1));
    assert_eq!(
        d.ok(&["--new-team", "other", "task", "add", "in other"]),
        "1\n"
    );
    // Once made, it is known, and named to the next typo.
    let out = d.run(&["--team", "othre", "tasks"]);
    assert!(
        stderr(&out).contains("no team 'othre'; known teams: default, other. Use --new-team othre"),
        "{}",
        stderr(&out)
    );
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
