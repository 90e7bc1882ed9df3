//! Three real boardd processes on one PostgreSQL database, on one host: a client
//! on any socket sees one board; the leader is killed, or paused until it is
//! deposed, and the board carries on from what was committed. Skipped (saying
//! so) without PostgreSQL, unless `TEAMBOARD_REQUIRE_PG=1`.

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
use teamboard_protocol::{Client, Credential, ErrorCode};
use teamboard_testkit::{Daemon, PATIENCE, TEAM, code_of, eventually, short_tempdir, task};

/// The leader's lease, short so that the test is quick.
const LEASE: Duration = Duration::from_secs(1);

struct Node {
    name: String,
    socket: PathBuf,
    state_dir: PathBuf,
    daemon: Daemon,
}

impl Node {
    fn spawn(dir: &std::path::Path, url: &str, i: usize) -> Node {
        let name = format!("n{i}");
        let socket = dir.join(format!("s{i}"));
        let state_dir = dir.join(format!("state{i}"));
        let advertise = socket.display().to_string();
        let lease = LEASE.as_secs_f64().to_string();
        let daemon = Daemon::spawn(
            &socket,
            &state_dir,
            &[
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
    let mut nodes: Vec<Node> = (0..3).map(|i| Node::spawn(dir.path(), &url, i)).collect();
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

    // Any socket, one board, the same refusals.
    let mut clients = Vec::new();
    for node in &nodes {
        clients.push(lead(node, &key).await);
    }
    eprintln!("clients after {:?}", started.elapsed());
    let one = clients[(first + 1) % 3]
        .add_task(task("one"))
        .await
        .expect("add");
    let two = clients[(first + 2) % 3]
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
    // And the deposed one forwards to the new leader.
    let via_old = eventually("the deposed leader to forward", PATIENCE, || async {
        let client = nodes[second].connect("lead", &key).await?;
        let listed = client.list_tasks(None).await.ok()?;
        Some(listed.len())
    })
    .await;
    assert_eq!(via_old, 2);
}
