//! The real `boardd` binary on PostgreSQL (`--database postgres://…`): what it
//! acknowledged outlives `kill -9`, read back by a boardd with a new state
//! directory and the same lead, and a second boardd on the same database is
//! refused; and a boardd reaches a server that requires TLS. Skipped (printing
//! `skipped: …`) without a server, unless `TEAMBOARD_REQUIRE_PG=1`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "test code: a panic fails the test, and the harness captures what it prints"
)]

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;
use teamboard_protocol::TaskStatus;
use teamboard_testkit::pg::{database_or_skip, tls_database_or_skip};
use teamboard_testkit::{Daemon, lead, lead_key, short_tempdir, task, teammate};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_board_outlives_kill_9_in_the_database_and_one_boardd_holds_it() {
    let Some(url) = database_or_skip() else {
        return;
    };
    let flags = ["--database", url.as_str()];
    let first_dir = short_tempdir();
    let socket = first_dir.path().join("s");
    let mut first = Daemon::start(&socket, &first_dir.path().join("state"), &flags).await;
    assert!(first.log().contains("postgres database"), "{}", first.log());
    let boss = lead(&socket).await;
    let mut added = Vec::new();
    for subject in ["one", "two", "three"] {
        added.push(boss.add_task(task(subject)).await.expect("add_task").id);
    }
    let ana = teammate(&socket, "ana", "dev").await;
    let claim = ana
        .claim_next()
        .await
        .expect("claim")
        .expect("a ready task");
    assert_eq!(claim.task.id, added[0]);
    let key = lead_key(&socket);
    drop((boss, ana));
    first.kill9();

    // Another state directory: everything comes from the database.
    let second_dir = short_tempdir();
    let state = second_dir.path().join("state");
    let socket = second_dir.path().join("s");
    let _second = Daemon::start(&socket, &state, &flags).await;
    assert_eq!(
        lead_key(&socket),
        key,
        "the lead's credential is the database's"
    );
    let mode = std::fs::metadata(state.join("lead.key"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600, "lead.key is {mode:o}");
    let boss = lead(&socket).await;
    let tasks = boss.list_tasks(None).await.expect("list");
    let ids: Vec<u64> = tasks.iter().map(|t| t.id).collect();
    assert_eq!(ids, added);
    let claimed = &tasks[0];
    assert_eq!(claimed.status, TaskStatus::InProgress, "{claimed:?}");
    assert_eq!(claimed.owner.as_deref(), Some("ana"));
    assert_eq!(claimed.epoch, claim.epoch);

    // A second boardd on the same database is refused, saying why.
    let third_dir = short_tempdir();
    let mut third = Daemon::spawn(
        &third_dir.path().join("s"),
        &third_dir.path().join("state"),
        &flags,
        &[],
    );
    let status = third.wait_exit(Duration::from_secs(20)).await;
    assert!(!status.success());
    let log = third.log();
    assert!(log.contains("in use by another boardd"), "{log}");
    assert!(log.contains("postgres database 'tb_"), "{log}");
}

#[test]
fn a_database_url_boardd_does_not_know_is_refused() {
    let dir = short_tempdir();
    let mut d = Daemon::spawn(
        &dir.path().join("s"),
        &dir.path().join("state"),
        &["--database", "mysql://ana:secret@db/board"],
        &[],
    );
    let status = tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(d.wait_exit(Duration::from_secs(20)));
    assert!(!status.success());
    let log = d.log();
    assert!(log.contains("postgres://"), "{log}");
    assert!(!log.contains("secret"), "{log}");
}

/// `--database` with `sslmode=verify-full` and the server's CA: boardd's own
/// connection is TLS, as the server sees it, and a task added through it is
/// on the board.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn boardd_keeps_the_board_on_a_server_it_reaches_over_tls() {
    let Some(db) = tls_database_or_skip() else {
        return;
    };
    let url = format!(
        "{}?sslmode=verify-full&sslrootcert={}",
        db.url,
        db.certs.ca.display()
    );
    let dir = short_tempdir();
    let socket = dir.path().join("s");
    let _boardd = Daemon::start(&socket, &dir.path().join("state"), &["--database", &url]).await;
    let boss = lead(&socket).await;
    let id = boss.add_task(task("over TLS")).await.expect("add_task").id;
    let tasks = boss.list_tasks(None).await.expect("list");
    assert_eq!(tasks.iter().map(|t| t.id).collect::<Vec<_>>(), vec![id]);
    let psql = teamboard_testkit::pg::bin_dir().expect("psql").join("psql");
    let out = std::process::Command::new(psql)
        .arg(&db.url)
        .args(["-tAc", "SELECT ssl FROM pg_stat_ssl JOIN pg_stat_activity USING (pid) WHERE application_name = 'boardd'"])
        .output()
        .expect("run psql");
    assert!(out.status.success(), "psql: {out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "t",
        "boardd's connection is not TLS"
    );
}
