//! The real `boardd` binary as a process: socket permissions, single instance,
//! stale sockets, SIGTERM, `--version`, systemd readiness, and what a client says
//! when no daemon runs.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "test code: a panic fails the test, and the harness captures what it prints"
)]

use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::os::unix::net::{UnixDatagram, UnixListener};
use std::time::Duration;
use teamboard_protocol::{Client, ClientError, TaskStatus};
use teamboard_testkit::{Daemon, boardd_bin, lead, short_tempdir, task};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn socket_is_private_to_the_user() {
    let dir = short_tempdir();
    let socket = dir.path().join("s");
    let d = Daemon::start(&socket, &dir.path().join("state"), &[]).await;
    let meta = std::fs::metadata(&d.socket).unwrap();
    assert!(meta.file_type().is_socket());
    assert_eq!(
        meta.permissions().mode() & 0o777,
        0o600,
        "socket mode is {:o}",
        meta.permissions().mode() & 0o777
    );
    // The state directory (database and lock) is private too.
    let state = std::fs::metadata(dir.path().join("state")).unwrap();
    assert_eq!(
        state.permissions().mode() & 0o077,
        0,
        "state dir is private"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn second_daemon_on_the_same_state_dir_refuses_to_start() {
    let dir = short_tempdir();
    let state = dir.path().join("state");
    let first = Daemon::start(&dir.path().join("one"), &state, &[]).await;

    // Same state directory, different socket: the lock file says no.
    let mut second = Daemon::spawn(&dir.path().join("two"), &state, &[], &[]);
    let status = second.wait_exit(Duration::from_secs(20)).await;
    assert!(!status.success(), "the second boardd exited with {status}");
    let log = second.log();
    assert!(
        log.contains("already running"),
        "the second boardd says why: {log}"
    );
    assert!(
        !dir.path().join("two").exists(),
        "the refused daemon left no socket behind"
    );

    // Same socket, different state directory: the live socket is not stolen.
    let mut third = Daemon::spawn(&first.socket, &dir.path().join("other"), &[], &[]);
    let status = third.wait_exit(Duration::from_secs(20)).await;
    assert!(!status.success(), "the third boardd exited with {status}");
    let log = third.log();
    assert!(log.contains("already listening"), "{log}");

    // The first one is unharmed.
    let client = lead(&first.socket).await;
    client
        .status()
        .await
        .expect("the first boardd still serves");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stale_socket_file_is_cleaned_up() {
    let dir = short_tempdir();
    let socket = dir.path().join("s");
    // A socket file nobody listens on, as a crashed daemon leaves it.
    drop(UnixListener::bind(&socket).unwrap());
    assert!(socket.exists());
    match Client::connect(&socket, "test", "lead", teamboard_testkit::TEAM, None).await {
        Err(ClientError::NotRunning { .. }) => {}
        Err(other) => panic!("expected NotRunning for a stale socket, got {other}"),
        Ok(_) => panic!("connected to a socket nobody listens on"),
    }

    let d = Daemon::start(&socket, &dir.path().join("state"), &[]).await;
    let client = lead(&d.socket).await;
    client
        .status()
        .await
        .expect("boardd serves on the old path");
    assert!(
        d.log().contains("stale"),
        "the log mentions the stale socket"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn never_deletes_a_file_that_is_not_a_socket() {
    // A mistyped --socket that names someone's file must not cost them the file.
    let dir = short_tempdir();
    let notes = dir.path().join("notes.txt");
    std::fs::write(&notes, "precious").unwrap();
    let mut d = Daemon::spawn(&notes, &dir.path().join("state"), &[], &[]);
    let status = d.wait_exit(Duration::from_secs(20)).await;
    assert!(!status.success(), "boardd exited with {status}");
    assert!(d.log().contains("not a socket"), "{}", d.log());
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "precious");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refuses_a_socket_path_linux_cannot_bind() {
    let dir = short_tempdir();
    let long = dir.path().join("x".repeat(120));
    let mut d = Daemon::spawn(&long, &dir.path().join("state"), &[], &[]);
    let status = d.wait_exit(Duration::from_secs(20)).await;
    assert!(!status.success(), "boardd exited with {status}");
    assert!(d.log().contains("shorter --socket"), "{}", d.log());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigint_exits_cleanly() {
    let dir = short_tempdir();
    let socket = dir.path().join("s");
    let mut d = Daemon::start(&socket, &dir.path().join("state"), &[]).await;
    d.signal(libc::SIGINT);
    let status = d.wait_exit(Duration::from_secs(10)).await;
    assert_eq!(status.code(), Some(0), "exit after SIGINT: {status}");
    assert!(!socket.exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_exits_cleanly_and_keeps_the_data() {
    let dir = short_tempdir();
    let socket = dir.path().join("s");
    let state = dir.path().join("state");
    let mut d = Daemon::start(&socket, &state, &[]).await;

    let client = lead(&d.socket).await;
    // For a role nobody here has, so it stays pending.
    let mut new = task("persist me");
    new.role = Some("reviewer".into());
    let created = client.add_task(new).await.unwrap();
    let worker = teamboard_testkit::teammate(&d.socket, "wk", "dev").await;
    let other = client.add_task(task("finished before stop")).await.unwrap();
    let claim = worker.claim_task(other.id).await.unwrap();
    worker
        .complete_task(other.id, claim.epoch, "all good")
        .await
        .unwrap();
    let msg = client
        .send(
            "wk",
            teamboard_protocol::MessageKind::Message,
            "read me",
            None,
        )
        .await
        .unwrap();

    // A teammate parked in wait_for_work is answered, not left hanging.
    let idle = teamboard_testkit::teammate(&d.socket, "idle", "dev").await;
    let parked = teamboard_testkit::park(&idle).await;

    d.signal(libc::SIGTERM);
    let answer = tokio::time::timeout(Duration::from_secs(10), parked)
        .await
        .expect("the parked waiter hears back after SIGTERM");
    // docs/protocol.md §5: a parked wait gets `shutting_down`, not a closed
    // connection.
    match answer {
        Err(ClientError::Server(e)) => {
            assert_eq!(e.code, teamboard_protocol::ErrorCode::ShuttingDown, "{e}")
        }
        other => panic!("expected shutting_down, got {other:?}"),
    }
    let status = d.wait_exit(Duration::from_secs(10)).await;
    assert_eq!(status.code(), Some(0), "exit after SIGTERM: {status}");
    assert!(
        !socket.exists(),
        "the socket file is removed on a clean stop"
    );
    // The open connections learn that the daemon went away.
    assert!(client.status().await.is_err());
    drop((client, worker, idle));

    let d = Daemon::start(&socket, &state, &[]).await;
    let client = lead(&d.socket).await;
    let t = client.get_task(created.id).await.unwrap().task;
    assert_eq!(t.subject, "persist me");
    assert_eq!(t.role.as_deref(), Some("reviewer"));
    assert_eq!(t.status, TaskStatus::Pending);
    let t = client.get_task(other.id).await.unwrap().task;
    assert_eq!(t.status, TaskStatus::Completed);
    assert_eq!(t.result.as_deref(), Some("all good"));
    let wk = teamboard_testkit::connect(&d.socket, "wk").await;
    assert_eq!(wk.inbox().await.unwrap(), vec![msg]);
}

#[test]
fn version_flag_prints_the_version() {
    let out = std::process::Command::new(boardd_bin())
        .arg("--version")
        .output()
        .expect("run boardd --version");
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        stdout.trim(),
        format!("boardd {}", env!("CARGO_PKG_VERSION")),
        "{stdout}"
    );
}

#[test]
fn help_shows_the_flags() {
    let out = std::process::Command::new(boardd_bin())
        .arg("--help")
        .output()
        .expect("run boardd --help");
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    for flag in ["--socket", "--state-dir", "--lease-ttl", "--restart-grace"] {
        assert!(stdout.contains(flag), "--help mentions {flag}: {stdout}");
    }
}

#[test]
fn bad_flag_values_are_refused() {
    let dir = short_tempdir();
    let out = std::process::Command::new(boardd_bin())
        .arg("--socket")
        .arg(dir.path().join("s"))
        .arg("--state-dir")
        .arg(dir.path().join("state"))
        .args(["--lease-ttl", "0"])
        .output()
        .expect("run boardd");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("lease-ttl"), "{stderr}");
}

/// One datagram from boardd's notify socket. Trap: the blocking `recv` runs on
/// a thread that may take a signal (the SIGCHLD of another test's child, which
/// tokio handles), and a socket call with a receive timeout is never restarted
/// after a handler, `SA_RESTART` or not (signal(7)): it fails with EINTR. An
/// interrupted call is not a missing message, so it is asked again; the read
/// timeout still bounds each wait.
fn recv_notify(notify: &UnixDatagram, buf: &mut [u8]) -> std::io::Result<usize> {
    loop {
        match notify.recv(buf) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            other => return other,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tells_systemd_when_ready_and_when_stopping() {
    let dir = short_tempdir();
    let notify_path = dir.path().join("n");
    let notify = UnixDatagram::bind(&notify_path).unwrap();
    notify
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let socket = dir.path().join("s");
    let mut d = Daemon::spawn(
        &socket,
        &dir.path().join("state"),
        &[],
        &[("NOTIFY_SOCKET", notify_path.to_str().unwrap())],
    );

    let mut buf = [0u8; 1024];
    let n = recv_notify(&notify, &mut buf)
        .unwrap_or_else(|e| panic!("no READY=1 within 20 s ({e}); log:\n{}", d.log()));
    let msg = String::from_utf8_lossy(&buf[..n]).to_string();
    assert!(msg.lines().any(|l| l == "READY=1"), "{msg:?}");
    // Ready means ready: a client is served at once, without polling.
    let client = lead(&socket).await;
    client.status().await.expect("served as soon as READY=1");

    d.signal(libc::SIGTERM);
    let n = recv_notify(&notify, &mut buf).expect("STOPPING=1 after SIGTERM");
    let msg = String::from_utf8_lossy(&buf[..n]).to_string();
    assert!(msg.lines().any(|l| l == "STOPPING=1"), "{msg:?}");
    let status = d.wait_exit(Duration::from_secs(10)).await;
    assert_eq!(status.code(), Some(0));
}

#[tokio::test]
async fn client_says_how_to_start_boardd_when_none_runs() {
    let dir = short_tempdir();
    let socket = dir.path().join("nobody-home");
    let err = match Client::connect(&socket, "test", "lead", teamboard_testkit::TEAM, None).await {
        Err(e) => e,
        Ok(_) => panic!("connected to nothing"),
    };
    assert!(
        matches!(err, ClientError::NotRunning { ref path } if *path == socket),
        "{err:?}"
    );
    // Not the default socket, which is the only one the user unit serves.
    let text = err.to_string();
    let start = format!("boardd --socket {}", socket.display());
    assert!(text.contains(&start), "{text}");
    assert!(!text.contains("systemctl"), "{text}");

    // A regular file where the socket should be: nothing will ever listen there.
    std::fs::write(&socket, "not a socket").unwrap();
    let err = match Client::connect(&socket, "test", "lead", teamboard_testkit::TEAM, None).await {
        Err(e) => e,
        Ok(_) => panic!("connected to a regular file"),
    };
    assert!(
        matches!(err, ClientError::NotASocket { ref path } if *path == socket),
        "{err:?}"
    );
    assert!(err.to_string().contains("is not a socket"), "{err}");
}

/// boardd stopping while a client connects resets the connection it had queued
/// but not accepted. When the reset lands in the connect itself, rather than in
/// the hello after it, the client still says the connection closed: the words do
/// not depend on the race, and `teamctl events --follow`, which reconnects when
/// its stream ends, says boardd went away either way.
#[tokio::test]
async fn a_daemon_that_stops_while_a_client_connects_closed_the_connection() {
    let dir = short_tempdir();
    let socket = dir.path().join("s");
    // Queued by a listener that never accepts, which closes before the client's
    // runtime has seen the connection: the runtime has one thread, so it cannot
    // look in between.
    let listener = UnixListener::bind(&socket).unwrap();
    let mut connecting = std::pin::pin!(Client::connect(&socket, "test", "lead", "t", None));
    tokio::select! {
        biased;
        r = &mut connecting => panic!("a listener that never accepts answered: {:?}", r.err()),
        () = std::future::ready(()) => {}
    }
    drop(listener);
    let err = match connecting.await {
        Err(e) => e,
        Ok(_) => panic!("connected to a closed listener"),
    };
    assert!(matches!(err, ClientError::Closed(_)), "{err:?}");
    assert!(
        err.to_string()
            .starts_with("the connection to boardd closed"),
        "{err}"
    );
}

/// A peer running as another user is refused with a `reject` that names both uids,
/// even when the socket's file mode would let it connect. The mode is the first
/// line of defence; this is the second.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refuses_peers_of_another_user() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: only root can run a client as another uid");
        return;
    }
    let dir = short_tempdir();
    let socket = dir.path().join("s");
    let d = Daemon::start(&socket, &dir.path().join("state"), &[]).await;
    // Open the way for uid 65534 through the file modes.
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&d.socket, std::fs::Permissions::from_mode(0o777)).unwrap();
    // The other user's client: connect and print the first frame. boardd rejects
    // before reading anything, so no hello is sent (it could meet a closed socket).
    let script = r#"
import json, socket, struct, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
head = s.recv(4)
n = struct.unpack(">I", head)[0]
body = b""
while len(body) < n:
    body += s.recv(n - len(body))
print(body.decode())
"#;
    let socket_arg = d.socket.clone();
    let out = tokio::task::spawn_blocking(move || {
        use std::os::unix::process::CommandExt;
        std::process::Command::new("python3")
            .arg("-c")
            .arg(script)
            .arg(&socket_arg)
            .uid(65534)
            .gid(65534)
            .output()
    })
    .await
    .unwrap();
    let out = match out {
        Ok(out) => out,
        Err(e) => {
            eprintln!("skipped: cannot run python3 as uid 65534: {e}");
            return;
        }
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "client failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let frame: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(frame["type"], "reject", "{frame}");
    let reason = frame["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("uid 65534"), "{reason}");
    // The daemon goes on serving its own user.
    let me = lead(&d.socket).await;
    me.add_task(task("still here")).await.unwrap();
}
