//! The edges a client written from `docs/protocol.md` alone found when it pushed
//! boardd: the in-flight limit as a client can count it, slow subscribers and
//! clients that stop reading, memory per connection, the connection limit, and
//! the modes of the files boardd writes.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "test code: a panic fails the test, and the harness captures what it prints"
)]

use serde_json::json;
use std::os::fd::AsRawFd;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use teamboard_protocol::{Client, ClientError};
use teamboard_testkit::raw::{self, request};
use teamboard_testkit::{Daemon, InProc, TEAM, eventually, lead, short_tempdir, task, teammate};
use tokio::io::AsyncWriteExt;
use tokio::net::UnixStream;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio::time::Instant;

/// Bytes waiting to be read on this end (`FIONREAD`).
fn readable(s: &UnixStream) -> usize {
    let mut n: libc::c_int = 0;
    // SAFETY: a valid socket descriptor and a pointer to an int, as the ioctl wants.
    let rc = unsafe { libc::ioctl(s.as_raw_fd(), libc::FIONREAD, &mut n) };
    assert_eq!(rc, 0, "FIONREAD: {}", std::io::Error::last_os_error());
    usize::try_from(n).unwrap_or(0)
}

/// Frames for `requests`, ready for one write.
fn frames(requests: impl IntoIterator<Item = serde_json::Value>) -> Vec<u8> {
    let mut out = Vec::new();
    for r in requests {
        let payload = serde_json::to_vec(&r).expect("JSON");
        out.extend_from_slice(&u32::try_from(payload.len()).expect("small").to_be_bytes());
        out.extend_from_slice(&payload);
    }
    out
}

/// A client that keeps at most 200 requests outstanding, and sends the next one
/// only once it has read an answer, stays within the documented limit of 256 as
/// it can count it: boardd must never answer it `busy`.
///
/// Large answers are the edge: boardd writes its answers in batches larger than
/// the socket takes at once, and the client reads (and follows up) the start of a
/// batch while boardd is still writing its end. The test starts with the worst
/// case on purpose: 200 answers made before the client reads any.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_within_the_in_flight_limit_never_gets_busy() {
    const OUTSTANDING: u64 = 200;
    const REQUESTS: u64 = 3000;
    let add = |id: u64| {
        let args = json!({"subject": format!("task {id}"), "description": "d".repeat(2048)});
        request(id, "add_task", args)
    };
    let daemon = InProc::start().await;
    let observer = lead(&daemon.socket).await;
    let mut s = raw::connect_hello(&daemon.socket, "lead").await;
    s.write_all(&frames((1..=OUTSTANDING).map(add)))
        .await
        .expect("send the first requests");
    eventually(
        "the first requests to be committed",
        Duration::from_secs(10),
        || async {
            let status = observer.status().await.expect("status");
            let pending = status.teams.first().map_or(0, |t| t.pending);
            (pending == OUTSTANDING).then_some(())
        },
    )
    .await;
    eventually(
        "boardd to fill the socket with answers",
        Duration::from_secs(10),
        || async { (readable(&s) >= 64 << 10).then_some(()) },
    )
    .await;
    let (mut sent, mut read, mut busy) = (OUTSTANDING, 0, Vec::new());
    while read < REQUESTS {
        let answer = raw::read(&mut s).await.expect("an answer");
        read += 1;
        match answer["error"]["code"].as_str() {
            None => assert!(answer["result"]["id"].is_u64(), "{answer}"),
            Some("busy") => busy.push(answer["id"].as_u64().expect("an id")),
            Some(other) => panic!("unexpected error {other}: {answer}"),
        }
        if sent < REQUESTS {
            sent += 1;
            raw::send_json(&mut s, &add(sent)).await;
        }
    }
    assert!(
        busy.is_empty(),
        "{} of {REQUESTS} requests were refused as busy with at most {OUTSTANDING} outstanding: {busy:?}",
        busy.len()
    );
    daemon.stop().await;
}

/// A daemon in this test's runtime that commits on its own task, so that tokio's
/// paused clock only moves when everything waits (see `boardd::Config`).
async fn paused_daemon() -> InProc {
    InProc::start_with(|c| c.inline_commits = true).await
}

/// A client that pipelines requests and never reads is closed by boardd, and the
/// close reaches the client: its sends fail instead of blocking forever, and the
/// session no longer counts in `status`.
#[tokio::test(start_paused = true)]
async fn a_connection_boardd_closes_is_closed_for_the_client_too() {
    let daemon = paused_daemon().await;
    let observer = lead(&daemon.socket).await;
    let (_unread, mut write) = raw::connect_hello(&daemon.socket, "deaf")
        .await
        .into_split();
    let chunk = frames((1..=1000).map(|id| request(id, "status", json!({}))));
    let started = Instant::now();
    let sending = async {
        loop {
            if let Err(e) = write.write_all(&chunk).await {
                return e;
            }
        }
    };
    let error = tokio::time::timeout(Duration::from_secs(60), sending)
        .await
        .expect("send() fails within a minute instead of blocking forever");
    assert!(
        matches!(
            error.kind(),
            std::io::ErrorKind::BrokenPipe | std::io::ErrorKind::ConnectionReset
        ),
        "{error}"
    );
    eprintln!("send() failed after {:?}: {error}", started.elapsed());
    eventually(
        "status to stop counting the closed session",
        Duration::from_secs(10),
        || async {
            let sessions = observer.status().await.expect("status").sessions;
            (sessions == 1).then_some(())
        },
    )
    .await;
    daemon.stop().await;
}

/// Adds `n` tasks, with up to 200 requests outstanding.
async fn add_tasks(client: &Arc<Client>, n: usize) {
    add_tasks_described(client, n, "").await
}

/// Adds `n` tasks with `description`, with up to 200 requests outstanding.
async fn add_tasks_described(client: &Arc<Client>, n: usize, description: &str) {
    let slots = Arc::new(Semaphore::new(200));
    let mut calls = JoinSet::new();
    for i in 0..n {
        let slot = slots.clone().acquire_owned().await.expect("semaphore open");
        let client = client.clone();
        let mut new = task(format!("task {i}"));
        new.description = description.to_string();
        calls.spawn(async move {
            client.add_task(new).await.expect("add_task");
            drop(slot);
        });
        while let Some(done) = calls.try_join_next() {
            done.expect("no panic");
        }
    }
    while let Some(done) = calls.join_next().await {
        done.expect("no panic");
    }
}

/// A subscriber that stops reading while the board changes fast is cut off, and
/// told so: once it reads again (within the time boardd gives it) it gets every
/// event boardd had queued for it, in order, then a `busy` error frame, then the
/// end of the stream.
#[tokio::test(start_paused = true)]
async fn a_slow_subscriber_gets_its_events_then_busy_then_the_end() {
    const TASKS: usize = 15_000;
    let daemon = paused_daemon().await;
    let adder = Arc::new(lead(&daemon.socket).await);
    let mut sub = raw::connect_hello(&daemon.socket, "watcher").await;
    raw::send_json(&mut sub, &request(1, "subscribe", json!({}))).await;
    let subscribed = raw::read(&mut sub).await.expect("subscribe answered");
    assert_eq!(subscribed["id"], 1, "{subscribed}");
    let started = Instant::now();
    add_tasks(&adder, TASKS).await;
    let took = started.elapsed();
    assert!(
        took < Duration::from_secs(5),
        "adding took {took:?} of virtual time: the test no longer resumes reading in time"
    );
    let mut last_seq = None;
    let mut events = 0;
    let end = loop {
        let frame = raw::read(&mut sub)
            .await
            .expect("a busy frame before the end");
        if frame["type"] != "event" {
            break frame;
        }
        let seq = frame["event"]["seq"].as_u64().expect("a seq");
        if let Some(last) = last_seq {
            assert_eq!(seq, last + 1, "events skipped between {last} and {seq}");
        }
        last_seq = Some(seq);
        events += 1;
    };
    assert_eq!(end["type"], "error", "{end}");
    assert_eq!(end["error"]["code"], "busy", "{end}");
    assert!(
        (8192..TASKS).contains(&events),
        "{events} events before the cut"
    );
    raw::expect_closed(&mut sub).await;
    daemon.stop().await;
}

/// The resident memory of a process (`VmRSS`), in bytes.
fn rss(pid: i32) -> usize {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc status");
    let kib = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<usize>().ok())
        .expect("a VmRSS line");
    kib << 10
}

/// One connection that asks for the whole board 256 times and reads nothing
/// cannot make boardd hold a gigabyte of answers for it, nor keep others waiting.
///
/// The bound: 32 MiB of answers may wait for one connection. boardd holds them as
/// objects until it encodes them, and the write task's encoded chunk on top, so
/// the daemon grows by well under 100 MiB over its resting size; 200 MiB leaves
/// room for the allocator's slack without letting the old behaviour (over 1 GiB)
/// pass.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_that_reads_nothing_cannot_take_boardds_memory() {
    const BOUND: usize = 200 << 20;
    let dir = short_tempdir();
    let daemon = Daemon::start(&dir.path().join("s"), &dir.path().join("state"), &[]).await;
    let adder = Arc::new(lead(&daemon.socket).await);
    // Each `list_tasks` answer is about 4.6 MB.
    add_tasks_described(&adder, 2000, &"d".repeat(2048)).await;
    let resting = rss(daemon.pid());
    let observer = lead(&daemon.socket).await;
    let mut greedy = raw::connect_hello(&daemon.socket, "greedy").await;
    let asks = frames((1..=256).map(|id| request(id, "list_tasks", json!({}))));
    greedy.write_all(&asks).await.expect("send the requests");
    // For four seconds: boardd's memory every few milliseconds, and how long
    // another client waits for a `status`.
    let watching = Duration::from_secs(4);
    let pid = daemon.pid();
    let sampler = tokio::spawn(async move {
        let (started, mut peak) = (std::time::Instant::now(), 0);
        while started.elapsed() < watching {
            peak = peak.max(rss(pid));
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        peak
    });
    let (started, mut slowest) = (std::time::Instant::now(), Duration::ZERO);
    while started.elapsed() < watching {
        let asked = std::time::Instant::now();
        let answered = tokio::time::timeout(Duration::from_secs(5), observer.status()).await;
        slowest = slowest.max(asked.elapsed());
        if let Ok(status) = answered {
            status.expect("status");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let peak = sampler.await.expect("no panic");
    eprintln!(
        "resting {} MiB, peak {} MiB, slowest status {slowest:?}",
        resting >> 20,
        peak >> 20
    );
    assert!(
        peak < BOUND,
        "boardd grew from {} MiB to {} MiB",
        resting >> 20,
        peak >> 20
    );
    // Before the budget, it waited more than 5 s; the margin is for a loaded CI
    // machine.
    assert!(
        slowest < Duration::from_secs(3),
        "another client waited {slowest:?} for status"
    );
    // The greedy client gets an answer to every request: the board for those
    // within its budget, `busy` for the rest, saying how much waits.
    let (mut lists, mut busy) = (0, 0);
    for _ in 0..256 {
        let answer = raw::read(&mut greedy).await.expect("an answer");
        match answer["error"]["code"].as_str() {
            None => {
                assert_eq!(answer["result"].as_array().map(Vec::len), Some(2000));
                lists += 1;
            }
            Some("busy") => {
                let message = answer["error"]["message"].as_str().unwrap_or_default();
                assert!(message.contains("MiB"), "{answer}");
                busy += 1;
            }
            Some(other) => panic!("unexpected error {other}: {answer}"),
        }
    }
    eprintln!("{lists} lists, {busy} busy");
    assert!(lists > 0 && busy > 0, "{lists} lists, {busy} busy");
}

/// Connects and says hello; the first frame boardd answers with, if any. A
/// connection boardd refuses may be closed before the hello is written.
async fn hello(socket: &Path, name: &str) -> (UnixStream, Option<serde_json::Value>) {
    let mut s = raw::connect(socket).await;
    let hello = raw::hello(name, teamboard_protocol::PROTOCOL_VERSION);
    let _ = s.write_all(&frames([hello])).await;
    let first = raw::read(&mut s).await;
    (s, first)
}

/// Past the connection limit, a client is refused at once with a `reject` that
/// says why, and the connection closes; once a connection closes, there is room
/// for a new one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_past_the_limit_are_refused_at_once() {
    let daemon = InProc::start_with(|c| c.max_connections = Some(4)).await;
    let mut open = Vec::new();
    for i in 0..4 {
        open.push(raw::connect_hello(&daemon.socket, &format!("c{i}")).await);
    }
    let asked = std::time::Instant::now();
    let mut fifth = raw::connect(&daemon.socket).await;
    // Before it says anything.
    let reject = raw::read(&mut fifth).await.expect("a reject");
    // Left in the listen queue, it would get nothing at all; the margin is for a
    // loaded CI machine.
    assert!(
        asked.elapsed() < Duration::from_secs(3),
        "{:?}",
        asked.elapsed()
    );
    assert_eq!(reject["type"], "reject", "{reject}");
    let reason = reject["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("at most 4 connections"), "{reason}");
    raw::expect_closed(&mut fifth).await;
    // Those within the limit are served as before.
    raw::send_json(&mut open[0], &request(1, "status", json!({}))).await;
    let status = raw::read(&mut open[0]).await.expect("status answered");
    assert_eq!(status["result"]["sessions"], 4, "{status}");
    // One leaves: a newcomer is welcomed.
    drop(open.pop());
    let welcomed = eventually(
        "a newcomer to be welcomed",
        Duration::from_secs(5),
        || async {
            let (s, first) = hello(&daemon.socket, "newcomer").await;
            first.is_some_and(|f| f["type"] == "welcome").then_some(s)
        },
    )
    .await;
    drop(welcomed);
    daemon.stop().await;
}

/// With few file descriptors, boardd serves as many clients as it has room for
/// and refuses the rest at once: no client waits in the listen queue for an
/// answer that never comes, and boardd goes on serving.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_few_descriptors_every_client_is_welcomed_or_refused_at_once() {
    let dir = short_tempdir();
    let state = dir.path().join("state");
    let socket = dir.path().join("s");
    let boardd = started("ulimit -n 64", &socket, &state, &[]).await;
    hundred_clients(&boardd, "at most").await;
}

/// The same when boardd runs out of descriptors below its connection limit
/// (here set above what the descriptor limit allows): the client `accept` finds
/// no descriptor for is still taken, refused and closed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn out_of_descriptors_a_client_is_refused_not_left_waiting() {
    let dir = short_tempdir();
    let state = dir.path().join("state");
    let extra = ["--max-connections", "1000"];
    let socket = dir.path().join("s");
    let boardd = started("ulimit -n 64", &socket, &state, &extra).await;
    hundred_clients(&boardd, "file descriptors").await;
}

/// 100 clients at once: each is welcomed or refused (with a reason that
/// contains `refusal`) within 3 s; those welcomed are served, and once they are
/// gone a newcomer is too.
async fn hundred_clients(boardd: &Daemon, refusal: &str) {
    const CLIENTS: usize = 100;
    let mut attempts = JoinSet::new();
    for i in 0..CLIENTS {
        let socket = boardd.socket.clone();
        let key = teamboard_testkit::lead_key(&socket);
        attempts.spawn(async move {
            let name = format!("c{i}");
            let connecting = Client::connect(&socket, "test", &name, TEAM, Some(&key));
            tokio::time::timeout(Duration::from_secs(3), connecting).await
        });
    }
    let (mut welcomed, mut refused) = (Vec::new(), 0);
    while let Some(attempt) = attempts.join_next().await {
        match attempt.expect("no panic") {
            Ok(Ok(client)) => welcomed.push(client),
            Ok(Err(ClientError::Rejected(reason))) => {
                assert!(reason.contains(refusal), "{reason}");
                refused += 1;
            }
            Ok(Err(other)) => panic!("neither welcomed nor refused: {other}"),
            Err(_) => panic!("a client waited 3 s for an answer; log:\n{}", boardd.log()),
        }
    }
    eprintln!("{} welcomed, {refused} refused", welcomed.len());
    assert!(
        !welcomed.is_empty() && refused > 0,
        "{} welcomed, {refused} refused",
        welcomed.len()
    );
    for client in &welcomed {
        client.status().await.expect("a welcomed client is served");
    }
    drop(welcomed);
    let client = eventually(
        "boardd to serve a newcomer",
        Duration::from_secs(5),
        || async {
            let key = teamboard_testkit::lead_key(&boardd.socket);
            Client::connect(&boardd.socket, "test", "newcomer", TEAM, Some(&key))
                .await
                .ok()
        },
    )
    .await;
    client.status().await.expect("status");
}

/// The permission bits of a file or directory, in octal.
fn mode(path: &Path) -> String {
    let meta = std::fs::metadata(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    format!("{:o}", meta.permissions().mode() & 0o7777)
}

fn set_mode(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}

/// The state directory and every file boardd keeps in it are its user's alone.
fn assert_private(state: &Path) {
    assert_eq!(mode(state), "700", "state directory");
    for file in ["board.sqlite3", "board.sqlite3-wal", "boardd.lock"] {
        assert_eq!(mode(&state.join(file)), "600", "{file}");
    }
}

/// Started by hand with `umask 022`, in a state directory that exists with mode
/// 0755, boardd still keeps the board to its user: the directory becomes 0700,
/// and the database, its WAL and the lock file are 0600. Files an earlier run
/// left readable to others are made private again at the next start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_are_private_whatever_the_umask() {
    if teamboard_testkit::pg::sqlite_only("the modes of board.sqlite3 and its WAL") {
        return;
    }
    let dir = short_tempdir();
    let state = dir.path().join("state");
    std::fs::create_dir(&state).expect("state dir");
    set_mode(&state, 0o755);
    let socket = dir.path().join("s");
    {
        let boardd = started("umask 022", &socket, &state, &[]).await;
        let client = lead(&boardd.socket).await;
        client.add_task(task("on disk")).await.expect("add_task");
        assert_private(&state);
    }
    set_mode(&state, 0o755);
    for file in ["board.sqlite3", "board.sqlite3-wal", "boardd.lock"] {
        set_mode(&state.join(file), 0o644);
    }
    let boardd = started("umask 022", &socket, &state, &[]).await;
    let client = lead(&boardd.socket).await;
    assert_eq!(client.list_tasks(None).await.expect("list").len(), 1);
    assert_private(&state);
}

/// The socket's directory: created 0700 when it is missing; when it exists,
/// made 0700 only if it is boardd's own (its user's, and named `teamboard` like
/// the default `$XDG_RUNTIME_DIR/teamboard`); any other directory the socket is
/// put in keeps its mode. The socket itself is 0600 wherever it is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_socket_directory_is_made_private_only_when_it_is_boardds_own() {
    let dir = short_tempdir();
    let missing = dir.path().join("new").join("teamboard");
    let own = dir.path().join("own").join("teamboard");
    let shared = dir.path().join("shared");
    for existing in [&own, &shared] {
        std::fs::create_dir_all(existing).expect("create");
        set_mode(existing, 0o755);
    }
    for (i, socket_dir) in [&missing, &own, &shared].into_iter().enumerate() {
        let socket = socket_dir.join("s");
        let state = dir.path().join(format!("state{i}"));
        let _boardd = started("umask 022", &socket, &state, &[]).await;
        assert_eq!(mode(&socket), "600", "{}", socket.display());
    }
    assert_eq!(mode(&missing), "700", "a directory boardd made");
    assert_eq!(mode(&own), "700", "boardd's own directory");
    assert_eq!(mode(&shared), "755", "a directory that is not boardd's own");
}

/// A real boardd that `sh` starts after `setup` (a limit, a umask), once it
/// answers.
async fn started(setup: &str, socket: &Path, state_dir: &Path, extra: &[&str]) -> Daemon {
    let mut boardd = Daemon::spawn_after(setup, socket, state_dir, extra);
    boardd.wait_ready().await;
    boardd
}

/// Bytes this end wrote that the peer has not read yet (`SIOCOUTQ`).
fn unread_by_peer(s: &UnixStream) -> usize {
    let mut n: libc::c_int = 0;
    // SAFETY: a valid socket descriptor and a pointer to an int, as the ioctl wants.
    let rc = unsafe { libc::ioctl(s.as_raw_fd(), libc::TIOCOUTQ, &mut n) };
    assert_eq!(rc, 0, "SIOCOUTQ: {}", std::io::Error::last_os_error());
    usize::try_from(n).unwrap_or(0)
}

/// The error frame that ends a connection which stopped reading, if it comes
/// within its next `frames` frames; the large ones are not decoded. A client
/// that boardd cuts off finds at most the answer it had begun to read before it
/// (a socket's buffer holds less than one answer of a large board).
async fn cut_within(s: &mut UnixStream, frames: usize) -> Option<serde_json::Value> {
    use tokio::io::AsyncReadExt;
    for _ in 0..frames {
        let mut len = [0u8; 4];
        s.read_exact(&mut len)
            .await
            .expect("an answer or an error frame before the end");
        let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
        s.read_exact(&mut body).await.expect("a whole frame");
        if body.len() > 64 << 10 {
            continue;
        }
        let frame: serde_json::Value = serde_json::from_slice(&body).expect("JSON");
        match frame["type"].as_str() {
            Some("response") => {}
            Some("error") => {
                raw::expect_closed(s).await;
                return Some(frame);
            }
            _ => panic!("unexpected frame {frame}"),
        }
    }
    None
}

/// Clients that never read cannot deny service to those that do. Nine
/// connections each leave 64 answers of the whole board (a few hundred tasks)
/// unread: together more than the 256 MiB boardd holds for all connections.
/// A teammate that reads its answers still heartbeats and completes its claim,
/// and its subscription is not cut off. The limit falls on the connections
/// that hold the memory: boardd cuts off the one that holds the most, with a
/// `busy` error frame that says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_that_never_read_cannot_deny_service_to_those_that_do() {
    const GREEDY: usize = 9;
    const ASKS: usize = 64;
    let daemon = InProc::start().await;
    let adder = Arc::new(lead(&daemon.socket).await);
    add_tasks_described(&adder, 400, &"d".repeat(1500)).await;
    let size = serde_json::to_vec(&adder.list_tasks(None).await.expect("list_tasks"))
        .expect("JSON")
        .len();
    assert!(
        GREEDY * ASKS * size > 300 << 20,
        "the board is too small to reach the limit: {size} bytes a list"
    );
    let holder = teammate(&daemon.socket, "holder", "dev").await;
    holder.subscribe().await.expect("subscribe");
    let claim = holder
        .claim_next()
        .await
        .expect("claim_next")
        .expect("a ready task");
    let mut greedy = Vec::new();
    for i in 0..GREEDY {
        let mut s = raw::connect_hello(&daemon.socket, &format!("greedy{i}")).await;
        let asks = frames((1..=ASKS as u64).map(|id| request(id, "list_tasks", json!({}))));
        s.write_all(&asks).await.expect("send the requests");
        greedy.push(s);
    }
    // Once boardd has read every request, the holder's come after them.
    for s in &greedy {
        eventually(
            "boardd to read the requests of every greedy client",
            Duration::from_secs(30),
            || async { (unread_by_peer(s) == 0).then_some(()) },
        )
        .await;
    }
    let beat = holder.heartbeat(claim.task.id, claim.epoch).await;
    assert!(beat.is_ok(), "the holder's heartbeat was refused: {beat:?}");
    let added = adder.add_task(task("one more")).await.expect("add_task");
    let heard = tokio::time::timeout(Duration::from_secs(5), async {
        while let Some(event) = holder.next_event().await {
            if event.task == Some(added.id) {
                return true;
            }
        }
        false
    })
    .await;
    assert_eq!(
        heard,
        Ok(true),
        "the subscriber that reads did not hear of #{}",
        added.id
    );
    holder
        .complete_task(claim.task.id, claim.epoch, "done")
        .await
        .expect("the completion of a client that reads");
    let mut cut = Vec::new();
    for (i, s) in greedy.iter_mut().enumerate() {
        if let Some(error) = cut_within(s, 8).await {
            assert_eq!(error["error"]["code"], "busy", "{error}");
            let message = error["error"]["message"].as_str().unwrap_or_default();
            assert!(message.contains("the most"), "{message}");
            cut.push(i);
        }
    }
    eprintln!("{size} bytes a list; greedy clients cut off: {cut:?}");
    assert!(!cut.is_empty(), "no client that never reads was cut off");
    // Gone, so that boardd does not linger over what they never read.
    drop(greedy);
    daemon.stop().await;
}
