//! Three real boardd processes on one PostgreSQL database, on one host: a client
//! on any socket, or any TLS port, sees one board; the leader is killed, or
//! paused until it is deposed, and the board carries on from what was
//! committed. Each port passes between a boardd's forwarding and its core as
//! it leads and follows, and a client given every port carries on past a dead
//! one. Skipped (saying so) without PostgreSQL, unless `TEAMBOARD_REQUIRE_PG=1`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "test code: a panic fails the test, and the harness captures what it prints"
)]

use boardd::cluster::leadership::{self, Leader};
use std::path::PathBuf;
use std::time::{Duration, Instant};
use teamboard_protocol::lead_key::{LEAD_KEY_FILE, read_lead_key};
use teamboard_protocol::{Client, Credential, Endpoint, ErrorCode};
use teamboard_testkit::{
    Daemon, PATIENCE, TEAM, TestCerts, code_of, eventually, short_tempdir, task,
};

/// The leader's lease, short so that the test is quick.
const LEASE: Duration = Duration::from_secs(1);

struct Node {
    name: String,
    socket: PathBuf,
    state_dir: PathBuf,
    /// Its TLS listener, served while it follows and while it leads.
    tls: Endpoint,
    daemon: Daemon,
}

impl Node {
    fn spawn(dir: &std::path::Path, url: &str, i: usize, certs: &TestCerts) -> Node {
        let name = format!("n{i}");
        let socket = dir.join(format!("s{i}"));
        let state_dir = dir.join(format!("state{i}"));
        let advertise = socket.display().to_string();
        let lease = LEASE.as_secs_f64().to_string();
        let port = free_port();
        let tls = Endpoint::parse(&format!("tls://127.0.0.1:{port}"))
            .expect("endpoint")
            .with_ca_file(Some(certs.ca.clone()));
        let daemon = Daemon::spawn(
            &socket,
            &state_dir,
            &[
                "--listen-tcp",
                &format!("127.0.0.1:{port}"),
                "--tls-cert",
                &certs.cert.display().to_string(),
                "--tls-key",
                &certs.key.display().to_string(),
                "--database",
                url,
                "--node",
                &name,
                "--advertise",
                &advertise,
                "--leader-lease",
                &lease,
                "--lease-ttl",
                "2",
                "--restart-grace",
                "2",
            ],
            &[("RUST_LOG", "boardd=debug")],
        );
        Node {
            name,
            socket,
            state_dir,
            tls,
            daemon,
        }
    }

    /// A client on this node's socket, as `name` vouched for by `key`.
    async fn connect(&self, name: &str, key: &Credential) -> Option<Client> {
        Client::connect(&self.socket, "test", name, TEAM, Some(key))
            .await
            .ok()
    }
}

/// A port nothing listens on now, for a boardd to bind: held by nothing
/// between here and boardd's bind but the kernel's choice of ephemeral ports,
/// which goes round all of them before it comes back.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// The lead's session at `endpoint`, once the board answers through it.
async fn lead_at(endpoint: &Endpoint, key: &Credential) -> Client {
    eventually(format!("a client at {endpoint}"), PATIENCE, || async {
        let client = Client::open(endpoint, "test", "lead", TEAM, None, Some(key))
            .await
            .ok()?;
        client.list_tasks(None).await.ok()?;
        Some(client)
    })
    .await
}

async fn current(url: &str) -> Leader {
    let url = url.to_string();
    tokio::task::spawn_blocking(move || {
        let mut db = leadership::connect(&url, "test").expect("connect");
        let leader = leadership::current(&mut db).expect("current");
        // Closed here, off the runtime's workers.
        drop(db);
        leader
    })
    .await
    .expect("current")
}

/// Waits for a live leader other than `not`: its index.
async fn leader(url: &str, nodes: &[Node], not: Option<usize>) -> usize {
    eventually("a leader", PATIENCE, || async {
        let now = current(url).await;
        let i = nodes.iter().position(|n| n.name == now.node)?;
        (now.live() && Some(i) != not).then_some(i)
    })
    .await
}

async fn lead(node: &Node, key: &Credential) -> Client {
    eventually(format!("a client on {}", node.name), PATIENCE, || {
        node.connect("lead", key)
    })
    .await
}

async fn ids(client: &Client) -> Vec<u64> {
    let mut ids: Vec<u64> = client
        .list_tasks(None)
        .await
        .expect("list")
        .iter()
        .map(|t| t.id)
        .collect();
    ids.sort_unstable();
    ids
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_boardd_serve_one_board_and_carry_on_when_the_leader_dies() {
    let url = match teamboard_testkit::pg::fresh_database() {
        Ok(url) => url,
        Err(e) if std::env::var_os("TEAMBOARD_REQUIRE_PG").is_none() => {
            eprintln!("skipped: {e}");
            return;
        }
        Err(e) => panic!("TEAMBOARD_REQUIRE_PG=1 but {e}"),
    };
    let dir = short_tempdir();
    let certs = TestCerts::make(&dir.path().join("certs"));
    let mut nodes: Vec<Node> = (0..3)
        .map(|i| Node::spawn(dir.path(), &url, i, &certs))
        .collect();
    let started = Instant::now();
    let first = leader(&url, &nodes, None).await;
    eprintln!("first leader after {:?}", started.elapsed());
    // The lead's credential is the database's: the same through every boardd,
    // and a follower keeps it too, for teamctl on its host.
    let follower = &nodes[(first + 1) % 3];
    let path = follower.state_dir.join(LEAD_KEY_FILE);
    let key = eventually("a follower's lead key", PATIENCE, || {
        let key = read_lead_key(&path).ok();
        async move { key }
    })
    .await;

    // Any socket or port, one board, the same refusals.
    let mut clients = Vec::new();
    for node in &nodes {
        clients.push(lead(node, &key).await);
        clients.push(lead_at(&node.tls, &key).await);
    }
    eprintln!("clients after {:?}", started.elapsed());
    // Through a follower's socket, and through the other follower's port.
    let one = clients[2 * ((first + 1) % 3)]
        .add_task(task("one"))
        .await
        .expect("add");
    let two = clients[2 * ((first + 2) % 3) + 1]
        .add_task(task("two"))
        .await
        .expect("add");
    for client in &clients {
        assert_eq!(ids(client).await, vec![one.id, two.id]);
        assert_eq!(
            code_of(client.get_task(two.id + 100).await),
            ErrorCode::NotFound
        );
        assert_eq!(
            code_of(client.claim_task(two.id).await),
            ErrorCode::NotRegistered
        );
    }

    // A teammate claims `one` through the leader itself; the leader dies.
    let worker = lead(&nodes[first], &key).await;
    drop(worker);
    let claimant = eventually("a teammate on the leader", PATIENCE, || {
        nodes[first].connect("w1", &key)
    })
    .await;
    claimant.register("dev", None).await.expect("register");
    let claim = claimant.claim_task(one.id).await.expect("claim");
    assert_eq!(claim.task.id, one.id);
    let killed = Instant::now();
    nodes[first].daemon.kill9();
    let second = leader(&url, &nodes, Some(first)).await;
    let took = killed.elapsed();
    assert!(
        took <= LEASE + Duration::from_secs(1),
        "took over after {took:?}"
    );
    // A client given every port, the dead leader's first, carries on past it.
    let every = Endpoint::parse(
        &[first, (first + 1) % 3, (first + 2) % 3]
            .map(|i| nodes[i].tls.to_string())
            .join(","),
    )
    .expect("a list")
    .with_ca_file(Some(certs.ca.clone()));
    let roaming = lead_at(&every, &key).await;
    assert_eq!(ids(&roaming).await, vec![one.id, two.id]);

    // Everything acknowledged is there, and the dead leader's claim lapses.
    let survivor = (0..3)
        .find(|i| *i != first && *i != second)
        .expect("a third");
    let on_survivor = lead(&nodes[survivor], &key).await;
    assert_eq!(ids(&on_survivor).await, vec![one.id, two.id]);
    let other = eventually("a teammate on a follower", PATIENCE, || {
        nodes[survivor].connect("w2", &key)
    })
    .await;
    other.register("dev", None).await.expect("register");
    let retaken = eventually("the dead leader's claim to lapse", PATIENCE, || async {
        other.claim_task(one.id).await.ok()
    })
    .await;
    assert_eq!(retaken.task.id, one.id);

    // The new leader is paused with a request in flight; another takes over;
    // resumed, the old one acknowledges nothing and writes nothing.
    let direct = lead(&nodes[second], &key).await;
    nodes[second].daemon.signal(libc::SIGSTOP);
    let late = tokio::spawn(async move { direct.add_task(task("late")).await });
    let third = leader(&url, &nodes, Some(second)).await;
    assert_eq!(third, survivor);
    nodes[second].daemon.signal(libc::SIGCONT);
    let answer = late.await.expect("late");
    assert!(answer.is_err(), "a deposed leader acknowledged {answer:?}");
    eprintln!(
        "took over after {took:?}; the late answer: {:?}",
        answer.err()
    );
    let on_third = lead(&nodes[third], &key).await;
    assert_eq!(ids(&on_third).await, vec![one.id, two.id]);
    // The port of a follower that took the board is its core's now.
    assert_eq!(
        ids(&lead_at(&nodes[third].tls, &key).await).await,
        vec![one.id, two.id]
    );
    // And the deposed one forwards to the new leader.
    let via_old = eventually("the deposed leader to forward", PATIENCE, || async {
        let client = nodes[second].connect("lead", &key).await?;
        let listed = client.list_tasks(None).await.ok()?;
        Some(listed.len())
    })
    .await;
    assert_eq!(via_old, 2);
    // And its port, which its core held, forwards again.
    let via_old_port = lead_at(&nodes[second].tls, &key).await;
    assert_eq!(ids(&via_old_port).await, vec![one.id, two.id]);
}
