//! Which team a command works in: one that does not exist is refused, naming
//! the teams there are, and `--new-team` makes one. The teammates `teamctl
//! spawn --new-team` starts (real teammated processes) join the team it made;
//! one started by hand into a mistyped team is refused.

use crate::{Cli, base_command, stderr};
use std::process::Command;
use std::time::Duration;
use teamboard_testkit::{eventually_blocking, short_tempdir, workspace_bin};

#[test]
fn a_new_team_takes_its_teammates_and_a_mistyped_one_is_refused() {
    let mut d = Cli::start();
    let dir = short_tempdir();
    let state = dir.path().join("state");
    let out = base_command(&d.socket)
        .env("TEAMMATED_BIN", workspace_bin("teammated"))
        .env_remove("TEAMMATE_PROVIDER")
        .env_remove("TEAMBOARD_TEAM")
        .arg("--state-dir")
        .arg(&state)
        .args([
            "--new-team",
            "web",
            "spawn",
            "ada",
            "--role",
            "dev",
            "--json",
        ])
        .arg("--workdir")
        .arg(dir.path())
        .output()
        .expect("teamctl runs");
    let _ada = crate::spawn::kill_spawned(&out);
    assert!(out.status.success(), "{}", stderr(&out));
    let team = d.json(&["--team", "web", "team"]);
    assert_eq!(team[0]["name"], "ada", "{team}");
    assert_eq!(team[0]["connected"], true, "{team}");

    // By hand, with a typo: refused at once, with the teams there are. (Its
    // state directory is not boardd's: it is told where the lead's key is.)
    let (key_var, key) = teamboard_testkit::lead_key_env(&d.socket);
    let out = Command::new(workspace_bin("teammated"))
        .args(["--name", "bo", "--role", "dev", "--team", "wbe", "--socket"])
        .arg(&d.socket)
        .arg("--state-dir")
        .arg(&state)
        .arg("--workdir")
        .arg(dir.path())
        .env_remove("TEAMMATE_PROVIDER")
        .env(key_var, key)
        .output()
        .expect("teammated runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains(
            "boardd refused the connection: no team 'wbe'; known teams: default, web. \
             Use --new-team wbe to create it"
        ),
        "{err}"
    );
    assert!(
        d.json(&["--team", "web", "team"])
            .as_array()
            .is_some_and(|t| t.len() == 1)
    );

    // A team made and left empty is still there after a restart.
    d.ok(&["--new-team", "empty", "status"]);
    drop(_ada);
    d.restart();
    eventually_blocking("boardd to answer again", Duration::from_secs(10), || {
        d.run(&["status"]).status.success().then_some(())
    });
    let out = d.run(&["--team", "nope", "tasks"]);
    assert!(
        stderr(&out).contains("known teams: default, empty, web."),
        "{}",
        stderr(&out)
    );
    assert!(d.run(&["--team", "empty", "tasks"]).status.success());
}

/// `teamctl mcp` in a mistyped team says why it cannot join.
#[test]
fn the_mcp_server_is_refused_a_team_that_does_not_exist() {
    let d = Cli::start();
    let out = base_command(&d.socket)
        .args(["--team", "wbe", "mcp", "--name", "me"])
        .stdin(std::process::Stdio::null())
        .output()
        .expect("teamctl runs");
    let err = stderr(&out);
    assert!(
        err.contains("no team 'wbe'; known teams: default. Use --new-team wbe to create it"),
        "{err}"
    );
}
