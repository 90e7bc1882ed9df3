//! Several boardd on one PostgreSQL database: the lease row, a follower's watch on
//! it, and a follower's socket forwarding to the leader. Skipped (saying so)
//! without PostgreSQL, unless `TEAMBOARD_REQUIRE_PG=1`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "test code: a panic fails the test, and the harness captures what it prints"
)]

use boardd::cluster::leadership::{self, Leader, Renewal};
use boardd::cluster::{proxy, role, watch};
use std::path::Path;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};
use teamboard_protocol::{Client, ClientError, ErrorCode};
use teamboard_testkit::{
    InProc, PATIENCE, TEAM, code_of, eventually, eventually_blocking, lead_key, short_tempdir, task,
};
use tokio_util::sync::CancellationToken;

/// A fresh database, or `None` after saying why the test is skipped.
fn database() -> Option<String> {
    match teamboard_testkit::pg::fresh_database() {
        Ok(url) => Some(url),
        Err(e) if std::env::var_os("TEAMBOARD_REQUIRE_PG").is_none() => {
            eprintln!("skipped: {e}");
            None
        }
        Err(e) => panic!("TEAMBOARD_REQUIRE_PG=1 but {e}"),
    }
}

fn connect(url: &str) -> postgres::Client {
    leadership::connect(url, "test").expect("connect")
}

const LONG: Duration = Duration::from_secs(60);

#[test]
fn take_renew_release_and_deposed() {
    let Some(url) = database() else { return };
    let mut db = connect(&url);
    let first = leadership::current(&mut db).expect("current");
    assert_eq!((first.term, first.live()), (0, false), "{first:?}");

    let a = leadership::take(&mut db, "a", "addr-a", LONG).expect("take");
    let Some(a) = a else {
        panic!("an unheld board is taken")
    };
    assert_eq!(
        leadership::take(&mut db, "b", "addr-b", LONG).expect("take"),
        None
    );
    assert_eq!(
        leadership::renew(&mut db, a, LONG).expect("renew"),
        Renewal::Held
    );
    let now = leadership::current(&mut db).expect("current");
    assert_eq!(
        (now.term, now.node.as_str(), now.addr.as_str()),
        (a, "a", "addr-a")
    );
    assert!(now.live(), "{now:?}");

    leadership::release(&mut db, a).expect("release");
    assert!(!leadership::current(&mut db).expect("current").live());
    let b = leadership::take(&mut db, "b", "addr-b", LONG).expect("take");
    let Some(b) = b else {
        panic!("a released board is taken at once")
    };
    assert!(b > a);
    assert_eq!(
        leadership::renew(&mut db, a, LONG).expect("renew"),
        Renewal::Deposed { term_now: b }
    );
    // A deposed term's release changes nothing.
    leadership::release(&mut db, a).expect("release");
    let now = leadership::current(&mut db).expect("current");
    assert_eq!((now.term, now.node.as_str(), now.live()), (b, "b", true));
}

#[test]
fn two_takers_at_once_one_wins() {
    let Some(url) = database() else { return };
    let rounds = 20;
    let barrier = Arc::new(Barrier::new(2));
    let takers: Vec<_> = ["a", "b"]
        .into_iter()
        .map(|node| {
            let (url, barrier) = (url.clone(), barrier.clone());
            std::thread::spawn(move || {
                let mut db = connect(&url);
                (0..rounds)
                    .map(|_| {
                        barrier.wait();
                        let won = leadership::take(&mut db, node, node, LONG).expect("take");
                        barrier.wait();
                        // Each round starts from a free board: the winner gives it up.
                        if let Some(term) = won {
                            leadership::release(&mut db, term).expect("release");
                        }
                        barrier.wait();
                        won
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let results: Vec<Vec<Option<i64>>> = takers
        .into_iter()
        .map(|t| t.join().expect("taker"))
        .collect();
    let mut terms = Vec::new();
    for round in 0..rounds {
        let won: Vec<i64> = results.iter().filter_map(|r| r[round]).collect();
        assert_eq!(won.len(), 1, "round {round}: {results:?}");
        terms.extend(won);
    }
    let expected: Vec<i64> = (1..=i64::try_from(rounds).expect("rounds")).collect();
    assert_eq!(terms, expected, "one new term per round");
}

#[test]
fn an_expired_lease_is_taken_and_its_term_deposed() {
    let Some(url) = database() else { return };
    let mut db = connect(&url);
    let lease = Duration::from_millis(300);
    let a = leadership::take(&mut db, "a", "addr-a", lease).expect("take");
    let Some(a) = a else { panic!("taken") };
    assert_eq!(
        leadership::take(&mut db, "b", "addr-b", lease).expect("take"),
        None
    );
    let taken_at = Instant::now();
    let b = eventually_blocking("the lease to run out", PATIENCE, || {
        leadership::take(&mut db, "b", "addr-b", LONG).expect("take")
    });
    assert!(
        taken_at.elapsed() >= lease / 2,
        "taken before the lease ran out"
    );
    assert_eq!(b, a + 1);
    assert_eq!(
        leadership::renew(&mut db, a, lease).expect("renew"),
        Renewal::Deposed { term_now: b }
    );
}

/// A runtime for waiting on the watch from a blocking test.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

/// Waits up to `within` for the watch to publish a leader that `ok` accepts.
fn wait_leader(
    leaders: &mut watch::Leaders,
    within: Duration,
    ok: impl FnMut(&Option<Leader>) -> bool,
) -> Leader {
    let seen = runtime().block_on(async {
        let seen = tokio::time::timeout(within, leaders.wait_for(ok)).await;
        seen.map(|l| l.map(|l| l.clone()))
    });
    let Ok(seen) = seen else {
        panic!("no such leader within {within:?}: {:?}", *leaders.borrow());
    };
    let leader = seen.expect("the watch thread runs");
    leader.expect("a leader was read")
}

#[test]
fn a_take_reaches_a_follower_by_notify() {
    let Some(url) = database() else { return };
    let mut leaders = watch::spawn(url.clone(), LONG).expect("watch");
    wait_leader(&mut leaders, PATIENCE, |l| l.is_some());
    let mut db = connect(&url);
    // Listening is in place once the first read is published; the take's NOTIFY
    // is the only thing that can wake the watch well before its 60 s re-read.
    let term = leadership::take(&mut db, "a", "addr-a", LONG)
        .expect("take")
        .expect("taken");
    let sent = Instant::now();
    let seen = wait_leader(&mut leaders, Duration::from_secs(5), |l| {
        l.as_ref().is_some_and(|l| l.term == term)
    });
    eprintln!("NOTIFY to follower: {:?}", sent.elapsed());
    assert_eq!((seen.node.as_str(), seen.live()), ("a", true));
    leadership::release(&mut db, term).expect("release");
    let seen = wait_leader(&mut leaders, Duration::from_secs(5), |l| {
        l.as_ref().is_some_and(|l| !l.live())
    });
    assert_eq!(seen.term, term);
}

#[test]
fn a_follower_sees_a_lease_run_out_without_any_announcement() {
    let Some(url) = database() else { return };
    let mut db = connect(&url);
    let lease = Duration::from_millis(300);
    let term = leadership::take(&mut db, "a", "addr-a", lease)
        .expect("take")
        .expect("taken");
    let mut leaders = watch::spawn(url.clone(), LONG).expect("watch");
    wait_leader(&mut leaders, PATIENCE, |l| {
        l.as_ref().is_some_and(Leader::live)
    });
    let seen = wait_leader(&mut leaders, Duration::from_secs(5), |l| {
        l.as_ref().is_some_and(|l| !l.live())
    });
    assert_eq!(seen.term, term);
}

#[test]
fn a_follower_catches_up_after_its_connection_is_killed() {
    let Some(url) = database() else { return };
    let mut leaders = watch::spawn(url.clone(), LONG).expect("watch");
    wait_leader(&mut leaders, PATIENCE, |l| l.is_some());
    let mut db = connect(&url);
    // The row changes, with no announcement, in the transaction that kills the
    // watch's connection; the table lock holds the watch's re-read until the
    // change is committed. Only the re-read after reconnecting can find it: the
    // next timed one is a minute away.
    let mut tx = db.transaction().expect("begin");
    tx.batch_execute(
        "LOCK TABLE leadership IN ACCESS EXCLUSIVE MODE;
         UPDATE leadership SET term = 7, node = 'x', addr = 'addr-x',
                expires = now() + interval '1 hour' WHERE id = 1",
    )
    .expect("change the row");
    let killed = tx
        .query_one(
            // OFFSET 0 keeps the filter apart from the kill: the planner may
            // otherwise call it on every row, this connection's too.
            "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid, 5000))
               FROM (SELECT pid FROM pg_stat_activity WHERE application_name = $1
                        AND datname = current_database() OFFSET 0) AS watching",
            &[&watch::PURPOSE],
        )
        .expect("kill the watch's connection");
    assert_eq!(killed.get::<_, i64>(0), 1);
    tx.commit().expect("commit");
    let seen = wait_leader(&mut leaders, Duration::from_secs(10), |l| {
        l.as_ref().is_some_and(|l| l.term == 7)
    });
    assert_eq!((seen.node.as_str(), seen.live()), ("x", true));
}

/// Runs a blocking leadership call off the runtime's workers.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(f).await.expect("blocking call")
}

async fn take_for(url: &str, node: &'static str, addr: &Path) -> i64 {
    let (url, addr) = (url.to_string(), addr.display().to_string());
    blocking(move || {
        let mut db = connect(&url);
        let term = leadership::take(&mut db, node, &addr, LONG).expect("take");
        term.expect("taken")
    })
    .await
}

async fn release(url: &str, term: i64) {
    let url = url.to_string();
    blocking(move || leadership::release(&mut connect(&url), term).expect("release")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_through_a_follower_reaches_the_leader_and_follows_it() {
    let Some(url) = database() else { return };
    let first = InProc::start().await;
    let second = InProc::start().await;
    let dir = short_tempdir();
    let socket = dir.path().join("f");
    let leaders = watch::spawn(url.clone(), LONG).expect("watch");
    let listener = boardd::server::bind(&socket).await.expect("bind");
    let stop = CancellationToken::new();
    let proxy = tokio::spawn(proxy::run(
        listener,
        None,
        leaders.clone(),
        proxy::dialler(None),
        "follower".to_string(),
        stop.clone(),
    ));

    // No leader yet: the client is told so, in words, and may try again.
    let refused = Client::connect(
        &socket,
        "test",
        "lead",
        TEAM,
        Some(&lead_key(&first.socket)),
    )
    .await;
    assert_refused(
        refused,
        "no boardd holds the board",
        "connected with no leader",
    );

    let term = take_for(&url, "first", &first.socket).await;
    let mut seen = leaders.clone();
    seen.wait_for(|l| l.as_ref().is_some_and(|l| l.term == term))
        .await
        .expect("watch");
    let key = lead_key(&first.socket);
    let through = Client::connect(&socket, "test", "lead", TEAM, Some(&key))
        .await
        .expect("connect");
    let direct = Client::connect(&first.socket, "test", "lead", TEAM, Some(&key))
        .await
        .expect("connect");
    let made = through
        .add_task(task("through the follower"))
        .await
        .expect("add");
    let listed = direct.list_tasks(None).await.expect("list");
    assert_eq!(
        listed.iter().map(|t| t.id).collect::<Vec<_>>(),
        vec![made.id]
    );
    // The same refusals: one board decides them.
    let missing = made.id + 100;
    assert_eq!(
        code_of(through.claim_task(missing).await),
        code_of(direct.claim_task(missing).await)
    );

    // The board moves: the forwarded connection is closed, and a new one reaches
    // the new leader.
    release(&url, term).await;
    let moved = take_for(&url, "second", &second.socket).await;
    seen.wait_for(|l| l.as_ref().is_some_and(|l| l.term == moved))
        .await
        .expect("watch");
    eventually("the forwarded connection to close", PATIENCE, || {
        let closed = through.is_closed();
        async move { closed.then_some(()) }
    })
    .await;
    assert!(
        !direct.is_closed(),
        "the old leader itself still serves its own clients"
    );
    let again = Client::connect(
        &socket,
        "test",
        "lead",
        TEAM,
        Some(&lead_key(&second.socket)),
    )
    .await
    .expect("reconnect");
    assert!(
        again.list_tasks(None).await.expect("list").is_empty(),
        "the second board"
    );

    stop.cancel();
    proxy.await.expect("proxy");
}

/// One boardd of a cluster in this process: its settings, and a core on SQLite
/// in its own state directory (the routing is under test here, not the store).
struct Node {
    settings: role::Settings,
    state_dir: std::path::PathBuf,
    stop: CancellationToken,
}

impl Node {
    fn new(dir: &Path, name: &str, url: &str, lease: Duration) -> Node {
        let socket = dir.join(name);
        Node {
            settings: role::Settings {
                url: url.to_string(),
                node: name.to_string(),
                advertise: socket.display().to_string(),
                lease,
                follower_only: false,
                socket,
                tcp: None,
            },
            state_dir: dir.join(format!("{name}-state")),
            stop: CancellationToken::new(),
        }
    }

    fn spawn(&self) -> tokio::task::JoinHandle<Result<(), role::RoleError>> {
        self.spawn_starting_in(Duration::ZERO)
    }

    /// [`Node::spawn`], with a core that takes `slow` to start, as the restore
    /// of a large board does.
    fn spawn_starting_in(
        &self,
        slow: Duration,
    ) -> tokio::task::JoinHandle<Result<(), role::RoleError>> {
        let (socket, state_dir) = (self.settings.socket.clone(), self.state_dir.clone());
        let start: role::StartCore = Arc::new(move |_term| {
            let config = boardd::Config::new(socket.clone(), state_dir.clone());
            Box::pin(async move {
                tokio::time::sleep(slow).await;
                boardd::start(config).await
            })
        });
        let run = role::run(
            self.settings.clone(),
            start,
            proxy::dialler(None),
            self.stop.clone(),
        );
        tokio::spawn(run)
    }

    fn key(&self) -> teamboard_protocol::Credential {
        let path = self
            .state_dir
            .join(teamboard_protocol::lead_key::LEAD_KEY_FILE);
        teamboard_protocol::lead_key::read_lead_key(&path).expect("lead key")
    }

    /// A lead's client on this node's socket, for the board of `core`.
    async fn client(&self, core: &Node) -> Result<Client, ClientError> {
        Client::connect(
            &self.settings.socket,
            "test",
            "lead",
            TEAM,
            Some(&core.key()),
        )
        .await
    }
}

async fn current(url: &str) -> Leader {
    let url = url.to_string();
    blocking(move || leadership::current(&mut connect(&url)).expect("current")).await
}

/// Waits until the row names `node` with a live lease, and its core serves:
/// its term.
async fn leading(url: &str, node: &Node) -> i64 {
    let name = &node.settings.node;
    let key = node
        .state_dir
        .join(teamboard_protocol::lead_key::LEAD_KEY_FILE);
    eventually(format!("{name} to lead"), PATIENCE, || async {
        let now = current(url).await;
        (now.node == *name && now.live() && key.exists()).then_some(now.term)
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deposed_leader_stops_and_forwards_and_a_stopped_one_hands_over_at_once() {
    let Some(url) = database() else { return };
    let dir = short_tempdir();
    let lease = Duration::from_secs(3);
    let a = Node::new(dir.path(), "a", &url, lease);
    let b = Node::new(dir.path(), "b", &url, lease);
    let a_role = a.spawn();
    leading(&url, &a).await;
    let b_role = b.spawn();
    // b follows: its socket reaches a's board.
    let through_b = eventually("b to forward", PATIENCE, || async {
        b.client(&a).await.ok()
    })
    .await;
    let made = through_b
        .add_task(task("made through b"))
        .await
        .expect("add");
    let on_a = a.client(&a).await.expect("connect to a");
    let ids: Vec<u64> = on_a
        .list_tasks(None)
        .await
        .expect("list")
        .iter()
        .map(|t| t.id)
        .collect();
    assert_eq!(ids, vec![made.id]);

    // The row moves under a's feet, as it would if a were cut off and c took
    // over: a's next renewal finds itself deposed, and a stops deciding.
    let gone = dir.path().join("c-is-unreachable");
    let moved_url = url.clone();
    let c_addr = gone.display().to_string();
    let c = blocking(move || {
        let mut db = connect(&moved_url);
        db.execute(
            "UPDATE leadership SET term = term + 1, node = 'c', addr = $1,
                    expires = now() + interval '1 hour' WHERE id = 1",
            &[&c_addr],
        )
        .expect("move the row");
        db.execute("SELECT pg_notify('teamboard_leader', 'c')", &[])
            .expect("notify");
        leadership::current(&mut db).expect("current").term
    })
    .await;
    eventually("a's core to stop", PATIENCE, || {
        let closed = on_a.is_closed() && through_b.is_closed();
        async move { closed.then_some(()) }
    })
    .await;
    // a now forwards, like b, to c, which cannot be reached.
    for node in [&a, &b] {
        let refused = eventually("a to follow", PATIENCE, || async {
            match node.client(&a).await {
                Err(ClientError::Server(body)) if body.message.contains("boardd c holds") => {
                    Some(body)
                }
                _ => None,
            }
        })
        .await;
        assert_eq!(refused.code, ErrorCode::ShuttingDown);
    }

    // c gives the board up; one of a and b takes it, and the other forwards to it.
    let released_url = url.clone();
    blocking(move || leadership::release(&mut connect(&released_url), c).expect("release")).await;
    let winner = eventually("a or b to lead", PATIENCE, || async {
        let now = current(&url).await;
        (now.term > c && now.live()).then_some(now.node)
    })
    .await;
    let (leader, follower) = if winner == "a" { (&a, &b) } else { (&b, &a) };
    leading(&url, leader).await;
    let mine = eventually("the follower to forward", PATIENCE, || async {
        follower.client(leader).await.ok()
    })
    .await;
    mine.add_task(task("through the follower"))
        .await
        .expect("add");

    // The leader stops: it releases the lease, and the follower takes the board
    // at once, long before the lease would have run out.
    let stopped = Instant::now();
    leader.stop.cancel();
    let (leader_role, follower_role) = if winner == "a" {
        (a_role, b_role)
    } else {
        (b_role, a_role)
    };
    leader_role.await.expect("role").expect("role");
    leading(&url, follower).await;
    assert!(
        stopped.elapsed() < lease / 2,
        "handed over in {:?}",
        stopped.elapsed()
    );
    follower.stop.cancel();
    follower_role.await.expect("role").expect("role");
    assert!(
        !current(&url).await.live(),
        "the last leader released the board"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_that_cannot_renew_for_a_lease_stops_deciding() {
    let Some(url) = database() else { return };
    let dir = short_tempdir();
    let lease = Duration::from_secs(1);
    let a = Node::new(dir.path(), "a", &url, lease);
    let a_role = a.spawn();
    leading(&url, &a).await;
    let on_a = eventually("a to serve", PATIENCE, || async { a.client(&a).await.ok() }).await;
    // A table lock held by the test hangs every renewal, as a link that drops
    // packets would.
    let lock_url = url.clone();
    let (locked_tx, locked_rx) = std::sync::mpsc::channel();
    let (unlock_tx, unlock_rx) = std::sync::mpsc::channel::<()>();
    let locker = std::thread::spawn(move || {
        let mut db = connect(&lock_url);
        let mut tx = db.transaction().expect("begin");
        tx.batch_execute("LOCK TABLE leadership IN ACCESS EXCLUSIVE MODE")
            .expect("lock");
        locked_tx.send(Instant::now()).expect("locked");
        let _ = unlock_rx.recv();
        tx.rollback().expect("rollback");
    });
    let locked = blocking(move || locked_rx.recv().expect("locked")).await;
    eventually("a's core to stop", PATIENCE, || {
        let closed = on_a.is_closed();
        async move { closed.then_some(()) }
    })
    .await;
    let stopped_after = locked.elapsed();
    assert!(
        stopped_after <= lease + Duration::from_millis(500),
        "stopped after {stopped_after:?}"
    );
    unlock_tx.send(()).expect("unlock");
    locker.join().expect("locker");
    // The lease has run out meanwhile: a takes the board again, a new term.
    eventually("a to serve again", PATIENCE, || async {
        a.client(&a).await.ok()
    })
    .await;
    a.stop.cancel();
    a_role.await.expect("role").expect("role");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_only_boardd_never_takes_the_board() {
    let Some(url) = database() else { return };
    let dir = short_tempdir();
    let lease = Duration::from_millis(300);
    let mut f = Node::new(dir.path(), "f", &url, lease);
    f.settings.follower_only = true;
    let f_role = f.spawn();
    let a = Node::new(dir.path(), "a", &url, lease);
    let a_role = a.spawn();
    leading(&url, &a).await;
    let through_f = eventually("f to forward", PATIENCE, || async {
        f.client(&a).await.ok()
    })
    .await;
    through_f.add_task(task("through f")).await.expect("add");
    // a stops and releases: the board is free, and stays free for many of f's
    // chances to take it.
    a.stop.cancel();
    a_role.await.expect("role").expect("role");
    let free = current(&url).await;
    assert!(!free.live());
    tokio::time::sleep(lease * 5).await;
    assert_eq!(current(&url).await.term, free.term, "f took the board");
    f.stop.cancel();
    f_role.await.expect("role").expect("role");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_forwards_to_a_leader_over_tls() {
    let Some(url) = database() else { return };
    let dir = short_tempdir();
    let certs = teamboard_testkit::TestCerts::make(dir.path());
    let (cert, key) = (certs.cert.clone(), certs.key.clone());
    let leader = InProc::start_with(move |config| {
        config.tcp = Some(boardd::server::TcpListen {
            addr: "127.0.0.1:0".parse().expect("addr"),
            tls: Some(boardd::server::TlsFiles { cert, key }),
        });
    })
    .await;
    let port = (leader.running().and_then(|r| r.tcp))
        .expect("a TCP listener")
        .port();
    let addr = format!("tls://127.0.0.1:{port}");
    let socket = dir.path().join("f");
    let leaders = watch::spawn(url.clone(), LONG).expect("watch");
    let listener = boardd::server::bind(&socket).await.expect("bind");
    let stop = CancellationToken::new();
    let proxy = tokio::spawn(proxy::run(
        listener,
        None,
        leaders.clone(),
        proxy::dialler(Some(certs.ca.clone())),
        "follower".to_string(),
        stop.clone(),
    ));
    let term = take_for(&url, "leader", Path::new(&addr)).await;
    let mut seen = leaders.clone();
    seen.wait_for(|l| l.as_ref().is_some_and(|l| l.term == term))
        .await
        .expect("watch");
    let key = lead_key(&leader.socket);
    let through = Client::connect(&socket, "test", "lead", TEAM, Some(&key))
        .await
        .expect("connect through the follower");
    let made = through.add_task(task("over TLS")).await.expect("add");
    let direct = Client::connect(&leader.socket, "test", "lead", TEAM, Some(&key))
        .await
        .expect("connect");
    let listed: Vec<u64> = direct
        .list_tasks(None)
        .await
        .expect("list")
        .iter()
        .map(|t| t.id)
        .collect();
    assert_eq!(listed, vec![made.id]);

    // A certificate the follower does not trust: the client is told so.
    let untrusting = tokio::spawn(proxy::run(
        boardd::server::bind(&dir.path().join("u"))
            .await
            .expect("bind"),
        None,
        leaders.clone(),
        proxy::dialler(Some(certs.other_ca.clone())),
        "untrusting".to_string(),
        stop.clone(),
    ));
    let connected = Client::connect(&dir.path().join("u"), "test", "lead", TEAM, Some(&key)).await;
    assert_refused(
        connected,
        "cannot be reached",
        "forwarded to a leader it does not trust",
    );
    stop.cancel();
    proxy.await.expect("proxy");
    untrusting.await.expect("proxy");
}

#[test]
fn advertised_addresses_are_the_clients_forms() {
    use proxy::Addr;
    assert_eq!(
        Addr::parse("/run/tb/s").unwrap(),
        Addr::Unix("/run/tb/s".into())
    );
    assert_eq!(
        Addr::parse("tls://db.example:7433").unwrap(),
        Addr::Tls {
            host: "db.example".into(),
            port: 7433
        }
    );
    assert_eq!(
        Addr::parse("tcp://127.0.0.1:7433").unwrap(),
        Addr::Tcp("127.0.0.1:7433".parse().unwrap())
    );
    for bad in [
        "tcp://10.0.0.1:7433",
        "db.example:7433",
        "tls://db.example",
        "relative/path",
        "tls://:1",
    ] {
        assert!(Addr::parse(bad).is_err(), "{bad}");
    }
}

/// A leader advertised at an IPv6 address is dialled there: the follower
/// reaches its port (the handshake then fails here, against a listener that
/// speaks no TLS).
#[tokio::test]
async fn a_leader_at_an_ipv6_address_is_dialled() {
    let Ok(listener) = tokio::net::TcpListener::bind("[::1]:0").await else {
        eprintln!("skipped: no IPv6 loopback");
        return;
    };
    let port = listener.local_addr().expect("addr").port();
    let accepted = tokio::spawn(async move { listener.accept().await.map(|_| ()) });
    let dial = proxy::dialler(None);
    let dialled = tokio::time::timeout(PATIENCE, dial(format!("tls://[::1]:{port}"))).await;
    assert!(dialled.is_ok(), "the dial hung");
    tokio::time::timeout(PATIENCE, accepted)
        .await
        .expect("the follower never reached [::1]")
        .expect("accept task")
        .expect("accept");
}

/// A core that takes longer than the lease to start keeps the board: the lease
/// is renewed while it starts, so the leader does not give the board up the
/// moment it is ready (and take it again, and give it up, for ever).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_whose_core_starts_slowly_keeps_the_board() {
    let Some(url) = database() else { return };
    let dir = short_tempdir();
    let lease = Duration::from_millis(600);
    let a = Node::new(dir.path(), "a", &url, lease);
    let role = a.spawn_starting_in(lease * 5 / 2);
    let term = leading(&url, &a).await;
    tokio::time::sleep(lease * 3).await;
    let now = current(&url).await;
    assert_eq!(
        (now.term, now.node.as_str(), now.live()),
        (term, "a", true),
        "the slow leader gave the board up and took it again"
    );
    a.stop.cancel();
    role.await.expect("role").expect("run");
}

/// A follower's refusal of a client: `shutting_down`, saying `why`; `if_not`
/// is the failure when it let the client through.
fn assert_refused(connected: Result<Client, ClientError>, why: &str, if_not: &str) {
    match connected {
        Err(ClientError::Server(body)) => {
            assert_eq!(body.code, ErrorCode::ShuttingDown);
            assert!(body.message.contains(why), "{}", body.message);
        }
        Err(other) => panic!("expected a refusal, got {other}"),
        Ok(_) => panic!("{if_not}"),
    }
}
