//! `teamctl web`'s command line; the page itself is tested in a browser
//! (`crates/web/tests/browser`).

use crate::spawn::{mode, script};
use crate::{Cli, base_command, stderr, stdout};
use teamboard_testkit::short_tempdir;

#[test]
fn web_refuses_an_address_off_loopback_without_tls_and_says_why() {
    let d = Cli::start();
    let out = base_command(&d.socket)
        .args(["web", "--listen", "0.0.0.0:0"])
        .output()
        .expect("teamctl runs");
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("not a loopback address"), "{err}");
    assert!(err.contains("--tls-cert and --tls-key"), "{err}");
    assert!(stdout(&out).is_empty());
}

#[test]
fn web_systemd_writes_private_settings_and_restarts_the_unit() {
    let d = Cli::start();
    let dir = short_tempdir();
    let config = dir.path().join("config");
    let record = dir.path().join("systemctl-args");
    let systemctl = script(
        dir.path(),
        "systemctl",
        &format!("printf '%s\\n' \"$@\" > '{}'\n", record.display()),
    );
    let out = base_command(&d.socket)
        .env("XDG_CONFIG_HOME", &config)
        .env("TEAMCTL_SYSTEMCTL", &systemctl)
        .env_remove("TEAMBOARD_STATE_DIR")
        .args([
            "--team",
            "t1",
            "web",
            "--systemd",
            "--listen",
            "127.0.0.1:0",
        ])
        .output()
        .expect("teamctl runs");
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        std::fs::read_to_string(&record).expect("systemctl ran"),
        "--user\nrestart\nteamctl-web\n"
    );
    let env_file = config.join("teamboard/web.env");
    assert_eq!(mode(&env_file), 0o600);
    let text = std::fs::read_to_string(&env_file).expect("settings");
    let setting = |key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{key}=")))
            .unwrap_or_else(|| panic!("no {key} in {text}"))
            .to_string()
    };
    // A real port was picked, so that the address survives restarts of the unit,
    // and the address printed first is the unit's, with its token.
    let listen = setting("TEAMBOARD_WEB_LISTEN");
    assert!(
        listen.starts_with("127.0.0.1:") && !listen.ends_with(":0"),
        "{listen}"
    );
    let token = setting("TEAMBOARD_WEB_TOKEN");
    assert_eq!(token.len(), 32);
    let first = stdout(&out).lines().next().unwrap_or_default().to_string();
    assert_eq!(first, format!("http://{listen}/?token={token}"));
    assert_eq!(setting("TEAMBOARD_TEAM"), "t1");
    assert_eq!(setting("TEAMBOARD_SOCKET"), d.socket.display().to_string());

    // Off loopback without TLS: refused before anything is written or started.
    std::fs::remove_file(&record).expect("rm");
    let out = base_command(&d.socket)
        .env("XDG_CONFIG_HOME", &config)
        .env("TEAMCTL_SYSTEMCTL", &systemctl)
        .args(["web", "--systemd", "--listen", "0.0.0.0:8080"])
        .output()
        .expect("teamctl runs");
    assert!(!out.status.success());
    assert!(stderr(&out).contains("not a loopback address"));
    assert!(!record.exists());
}

#[test]
fn web_refuses_a_team_no_one_made() {
    let d = Cli::start();
    let out = base_command(&d.socket)
        .args(["--team", "tpyo", "web", "--listen", "127.0.0.1:0"])
        .output()
        .expect("teamctl runs");
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("no team 'tpyo'; known teams: default. Use --new-team tpyo to create it"),
        "{err}"
    );
    assert!(stdout(&out).is_empty());
    // Nothing was made by the refused attempt.
    let teams = base_command(&d.socket)
        .args(["--team", "tpyo", "tasks"])
        .output()
        .expect("teamctl runs");
    assert!(!teams.status.success(), "{}", stdout(&teams));
}
