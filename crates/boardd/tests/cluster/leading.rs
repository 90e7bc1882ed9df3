//! The loop of a boardd on a shared database: it follows, takes the board,
//! leads, and hands it over when deposed, stopped or unable to renew.

use super::*;

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
