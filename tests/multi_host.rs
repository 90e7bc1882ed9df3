//! Several hosts on one machine: one PostgreSQL in the root namespace, three
//! boardd each in a network namespace of its own (`teamboard_testkit::Net`),
//! teammates spread over them. One host is cut off (its link down) or its
//! boardd is `kill -9`'d, and the test checks from the board's own history
//! that no task had two owners at once, that every stale fence is refused,
//! that the lost host's tasks are claimed again within a claim lease and a
//! second, that nothing acknowledged is lost, and how fast a task added on one
//! host reaches a teammate parked on another.
//!
//! Every link between hosts is TCP to a host's address: boardd to PostgreSQL
//! on the gateway, a follower to the leader over TLS (`--advertise tls://…`),
//! and each teammate (and the lead) to the boardd of its own host over TLS
//! (`tls://HOST:PORT`), as a teammated on another machine connects. Every
//! boardd serves that port, forwarding while it follows; the test process
//! reaches the hosts' addresses through the gateway, so a cut, which takes
//! the host's link down, cuts its teammates off as it would on a network.
//!
//! The test starts its own PostgreSQL on the gateway's address, whatever
//! `TEAMBOARD_PG_URL` says: a server elsewhere on the machine is not on the
//! hosts' net.
//!
//! Skipped (saying so) without root, `ip` or PostgreSQL, unless
//! `TEAMBOARD_REQUIRE_NETNS=1` or `TEAMBOARD_REQUIRE_PG=1`. The measured
//! figures are printed (`--nocapture`).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "test code: a panic fails the test, and the harness captures what it prints"
)]

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use teamboard_protocol::lead_key::{LEAD_KEY_FILE, read_lead_key};
use teamboard_protocol::{
    Client, Credential, Endpoint, ErrorCode, EventKind, TaskId, TaskStatus, Work,
};
use teamboard_testkit::boardd::cluster::leadership;
use teamboard_testkit::netns::Host;
use teamboard_testkit::pg::{PgOptions, PgServer};
use teamboard_testkit::{
    Net, PATIENCE, TEAM, boardd_bin, check_ownership, eventually, ownership, read_history,
    short_tempdir, task,
};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// The leader's lease (`--leader-lease`).
const LEADER_LEASE: Duration = Duration::from_secs(1);
/// A claim's lease (`--lease-ttl`), and how long a new leader keeps the claims
/// it restored for their holders to come back (`--restart-grace`). When the
/// leader is lost, its teammates' tasks are free again at the takeover (a
/// leader lease and a round trip) plus the grace: these keep that within the
/// claim lease and a second too.
const LEASE_TTL: Duration = Duration::from_secs(2);
const GRACE: Duration = Duration::from_secs(1);
/// How often a holder heartbeats: well within `LEASE_TTL`.
const BEAT: Duration = Duration::from_millis(400);
/// Where every boardd listens, on its own host's address.
const PORT: u16 = 7433;
/// Create → a parked teammate on another host holds the task.
const WAKE_SAMPLES: usize = 200;
const WAKE_P99: Duration = Duration::from_millis(100);

/// The runs take turns: each measures latencies, which a second cluster
/// starting on the same two cores would distort.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    CutFollower,
    CutLeader,
    KillLeader,
}

#[test]
fn a_follower_host_cut_off() {
    run(Fault::CutFollower);
}

#[test]
fn the_leader_host_cut_off() {
    run(Fault::CutLeader);
}

#[test]
fn the_leader_killed() {
    run(Fault::KillLeader);
}

fn run(fault: Fault) {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let Some(net) = Net::or_skip(3) else { return };
    let options = PgOptions {
        listen: vec![IpAddr::V4(net.gateway())],
        ..PgOptions::default()
    };
    let pg = match PgServer::start(&options) {
        Ok(pg) => pg,
        Err(e) if std::env::var_os("TEAMBOARD_REQUIRE_PG").is_none() => {
            eprintln!("skipped: no PostgreSQL: {e}");
            return;
        }
        Err(e) => panic!("TEAMBOARD_REQUIRE_PG is set and there is no PostgreSQL: {e}"),
    };
    let url = pg.create_database().expect("a database");
    let started = Instant::now();
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(scenario(&net, &url, fault));
    eprintln!("{fault:?}: the run took {:?}", started.elapsed());
}

/// One boardd in one host, restartable.
struct Node {
    name: String,
    host: Host,
    socket: PathBuf,
    state_dir: PathBuf,
    /// Its TLS listener on its host's address, as teammates reach it.
    tls: Endpoint,
    args: Vec<String>,
    log: PathBuf,
    child: Option<Child>,
}

impl Node {
    fn new(dir: &Path, host: &Host, url: &str, i: usize, cert: &Path, key: &Path) -> Node {
        let addr = format!("{}:{PORT}", host.addr());
        let args = [
            "--database",
            url,
            "--node",
            &format!("h{i}"),
            "--advertise",
            &format!("tls://{addr}"),
            "--listen-tcp",
            &addr,
            "--tls-cert",
            &cert.display().to_string(),
            "--tls-key",
            &key.display().to_string(),
            "--ca-file",
            &cert.display().to_string(),
            "--leader-lease",
            &LEADER_LEASE.as_secs_f64().to_string(),
            "--lease-ttl",
            &LEASE_TTL.as_secs_f64().to_string(),
            "--restart-grace",
            &GRACE.as_secs_f64().to_string(),
        ]
        .map(String::from)
        .to_vec();
        let mut node = Node {
            name: format!("h{i}"),
            host: host.clone(),
            socket: dir.join(format!("s{i}")),
            state_dir: dir.join(format!("state{i}")),
            tls: Endpoint::parse(&format!("tls://{addr}"))
                .expect("endpoint")
                .with_ca_file(Some(cert.to_path_buf())),
            args,
            log: dir.join(format!("boardd{i}.log")),
            child: None,
        };
        node.start();
        node
    }

    fn start(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .unwrap();
        let child = self
            .host
            .command(boardd_bin())
            .arg("--socket")
            .arg(&self.socket)
            .arg("--state-dir")
            .arg(&self.state_dir)
            .args(&self.args)
            .env_remove("TEAMBOARD_DATABASE")
            .env("RUST_LOG", "boardd=info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("spawn boardd in its host");
        self.child = Some(child);
    }

    fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.kill().unwrap();
            child.wait().unwrap();
        }
    }

    async fn connect(&self, name: &str, key: &Credential) -> Option<Client> {
        Client::open(&self.tls, "test", name, TEAM, None, Some(key))
            .await
            .ok()
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.kill9();
    }
}

/// A self-signed server certificate naming every host's address, which the
/// followers (and nothing else) trust with `--ca-file`.
fn certificate(dir: &Path, net: &Net) -> (PathBuf, PathBuf) {
    let sans: Vec<String> = net
        .hosts()
        .iter()
        .map(|h| format!("IP:{}", h.addr()))
        .collect();
    let san = format!("subjectAltName={}", sans.join(","));
    let (cert, key) = (dir.join("hosts.pem"), dir.join("hosts.key"));
    #[rustfmt::skip]
    let out = std::process::Command::new("openssl")
        .args([
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
            "-nodes", "-days", "2", "-subj", "/CN=teamboard hosts",
            "-addext", "basicConstraints=critical,CA:FALSE", "-addext", &san,
        ])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .stdin(Stdio::null())
        .output()
        .expect("the multi-host tests need the openssl command");
    assert!(out.status.success(), "openssl: {out:?}");
    (cert, key)
}

/// The live leader, by the database's row, other than `not`: its index.
async fn leader(url: &str, nodes: &[Node], not: Option<usize>) -> usize {
    eventually("a leader", PATIENCE, || async {
        let url = url.to_string();
        let now = tokio::task::spawn_blocking(move || {
            let mut db = leadership::connect(&url, "test").ok()?;
            leadership::current(&mut db).ok()
        })
        .await
        .unwrap()?;
        let i = nodes.iter().position(|n| n.name == now.node)?;
        (now.live() && Some(i) != not).then_some(i)
    })
    .await
}

/// What the teammates saw: every claim handed to them, when, and every
/// completion boardd acknowledged.
#[derive(Default)]
struct Seen {
    claims: Vec<(String, TaskId, u64, Instant)>,
    completed: Vec<(String, TaskId)>,
}

type Log = Arc<Mutex<Seen>>;

/// A teammate on one host, over TLS.
#[derive(Clone)]
struct Mate {
    name: String,
    endpoint: Endpoint,
    key: Credential,
}

impl Mate {
    /// A registered session, trying again until boardd takes one (a follower
    /// answers `shutting_down` while there is no leader; a new leader may
    /// still hold the old session).
    async fn session(&self) -> Client {
        loop {
            if let Ok(client) = Client::open(
                &self.endpoint,
                "test",
                &self.name,
                TEAM,
                None,
                Some(&self.key),
            )
            .await
                && client.register("dev", None).await.is_ok()
            {
                return client;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Parks in `wait_for_work`, holds what it is given with heartbeats, and
    /// completes it when `stop` is cancelled. A lost connection is reconnected
    /// and the claim kept; a refused heartbeat drops the claim.
    async fn work(self, log: Log, stop: CancellationToken) {
        let mut held: Option<(TaskId, u64)> = None;
        'session: loop {
            let client = tokio::select! {
                c = self.session() => c,
                () = stop.cancelled() => return,
            };
            loop {
                let Some((id, epoch)) = held else {
                    let work = tokio::select! {
                        w = client.wait_for_work(Some(60_000)) => w,
                        () = stop.cancelled() => return,
                    };
                    match work {
                        Ok(Work::Task { claim }) => {
                            let at = Instant::now();
                            let (id, epoch) = (claim.task.id, claim.epoch);
                            log.lock()
                                .unwrap()
                                .claims
                                .push((self.name.clone(), id, epoch, at));
                            held = Some((id, epoch));
                        }
                        Ok(_) => {}
                        Err(_) => continue 'session,
                    }
                    continue;
                };
                tokio::select! {
                    () = tokio::time::sleep(BEAT) => {}
                    () = stop.cancelled() => {
                        if client.complete_task(id, epoch, "done").await.is_ok() {
                            log.lock().unwrap().completed.push((self.name.clone(), id));
                        }
                        return;
                    }
                }
                match client.heartbeat(id, epoch).await {
                    Ok(_) => {}
                    Err(e) if e.code() == Some(ErrorCode::StaleEpoch) => held = None,
                    Err(_) => continue 'session,
                }
            }
        }
    }
}

/// The lead on `node`, once it answers.
async fn lead_on(node: &Node, key: &Credential) -> Client {
    eventually(format!("the lead on {}", node.name), PATIENCE, || async {
        let client = node.connect("lead", key).await?;
        client.list_tasks(None).await.ok()?;
        Some(client)
    })
    .await
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i]
}

/// Create on one host → a teammate parked on another holds it, `WAKE_SAMPLES`
/// times, one `wait_for_work` per sample. Returns the task ids (all completed).
async fn wake(lead: &Client, waiter: &Mate, added: &mut Vec<TaskId>, log: &Log) {
    let client = waiter.session().await;
    let client = Arc::new(client);
    let mut took = Vec::with_capacity(WAKE_SAMPLES);
    for i in 0..WAKE_SAMPLES {
        let parked = client.clone();
        let wait = tokio::spawn(async move {
            let work = parked.wait_for_work(Some(10_000)).await;
            (work, Instant::now())
        });
        // The waiter's request is on its way to the leader; a sample that
        // arrives before it parked is only shorter than a wake-up, never
        // longer.
        tokio::time::sleep(Duration::from_millis(5)).await;
        let sent = Instant::now();
        let new = lead.add_task(task(format!("wake-{i}"))).await.expect("add");
        added.push(new.id);
        let (work, at) = wait.await.unwrap();
        let Ok(Work::Task { claim }) = work else {
            panic!("sample {i}: the parked teammate got {work:?}")
        };
        assert_eq!(claim.task.id, new.id);
        took.push(at - sent);
        client
            .complete_task(claim.task.id, claim.epoch, "woken")
            .await
            .expect("complete");
        let mut seen = log.lock().unwrap();
        seen.claims
            .push((waiter.name.clone(), claim.task.id, claim.epoch, at));
        seen.completed.push((waiter.name.clone(), claim.task.id));
    }
    took.sort_unstable();
    let (p50, p99) = (percentile(&took, 0.5), percentile(&took, 0.99));
    eprintln!(
        "wake-up across hosts over {WAKE_SAMPLES} samples: p50 {p50:?}, p99 {p99:?}, max {:?}",
        took[took.len() - 1]
    );
    assert!(p99 < WAKE_P99, "wake-up p99 {p99:?}, over {WAKE_P99:?}");
}

async fn scenario(net: &Net, url: &str, fault: Fault) {
    let dir = short_tempdir();
    let (cert, tls_key) = certificate(dir.path(), net);
    let mut nodes: Vec<Node> = (0..3)
        .map(|i| Node::new(dir.path(), net.host(i), url, i, &cert, &tls_key))
        .collect();
    let first = leader(url, &nodes, None).await;
    let key_file = nodes[(first + 1) % 3].state_dir.join(LEAD_KEY_FILE);
    let key = eventually("a follower's lead key", PATIENCE, || {
        let key = read_lead_key(&key_file).ok();
        async move { key }
    })
    .await;
    let endpoints: Vec<Endpoint> = nodes.iter().map(|n| n.tls.clone()).collect();
    let mate = |name: &str, host: usize| Mate {
        name: name.to_string(),
        endpoint: endpoints[host].clone(),
        key: key.clone(),
    };
    let log: Log = Arc::default();
    let mut added = Vec::new();

    // The wake-up: the lead on one follower, the waiter on the other, both
    // forwarded to the leader on the third host.
    let lead = lead_on(&nodes[(first + 2) % 3], &key).await;
    let waiter = mate("waiter", (first + 1) % 3);
    wake(&lead, &waiter, &mut added, &log).await;

    // Two holders on every host, each given a task while parked.
    let victim = match fault {
        Fault::CutFollower => (first + 1) % 3,
        Fault::CutLeader | Fault::KillLeader => first,
    };
    let stop = CancellationToken::new();
    let mut holders: Vec<(usize, JoinHandle<()>)> = Vec::new();
    for host in 0..3 {
        for j in 0..2 {
            let m = mate(&format!("h{host}w{j}"), host);
            holders.push((host, tokio::spawn(m.work(log.clone(), stop.clone()))));
        }
    }
    let before = log.lock().unwrap().claims.len();
    for i in 0..holders.len() {
        added.push(
            lead.add_task(task(format!("held-{i}")))
                .await
                .expect("add")
                .id,
        );
    }
    let want = holders.len();
    eventually("every holder to hold a task", PATIENCE, || {
        let n = log.lock().unwrap().claims.len() - before;
        async move { (n == want).then_some(()) }
    })
    .await;
    let victims: Vec<(String, TaskId, u64)> = log.lock().unwrap().claims[before..]
        .iter()
        .filter(|(name, ..)| name.starts_with(&format!("h{victim}w")))
        .map(|(name, id, epoch, _)| (name.clone(), *id, *epoch))
        .collect();
    assert_eq!(victims.len(), 2, "{victims:?}");
    // A rescuer parked on each other host.
    for host in (0..3).filter(|h| *h != victim) {
        let m = mate(&format!("r{host}"), host);
        holders.push((host, tokio::spawn(m.work(log.clone(), stop.clone()))));
    }
    // Let a few heartbeats pass, the rescuers park.
    tokio::time::sleep(BEAT * 2).await;

    let at = Instant::now();
    match fault {
        Fault::CutFollower | Fault::CutLeader => net.cut(victim),
        Fault::KillLeader => nodes[victim].kill9(),
    }
    // The lost host's teammates go quiet: nothing of theirs is sent from here.
    for (host, handle) in &holders {
        if *host == victim {
            handle.abort();
        }
    }
    if fault != Fault::CutFollower {
        let second = leader(url, &nodes, Some(victim)).await;
        let took = at.elapsed();
        eprintln!(
            "{fault:?}: h{second} took over {took:?} after the fault (leader lease {LEADER_LEASE:?})"
        );
        assert!(
            took <= LEADER_LEASE + Duration::from_secs(1),
            "took over after {took:?}"
        );
    }
    // Another host's teammate holds each of the lost host's tasks.
    let lost: BTreeSet<TaskId> = victims.iter().map(|v| v.1).collect();
    let rescued = eventually("the lost host's tasks to be held again", PATIENCE, || {
        let seen = log.lock().unwrap();
        let by: BTreeMap<TaskId, Instant> = seen
            .claims
            .iter()
            .filter(|(name, id, _, t)| {
                lost.contains(id) && *t > at && !name.starts_with(&format!("h{victim}w"))
            })
            .map(|(_, id, _, t)| (*id, *t))
            .collect();
        let done = (by.len() == lost.len()).then(|| by.values().max().copied());
        async move { done.flatten() }
    })
    .await;
    let delay = rescued - at;
    eprintln!(
        "{fault:?}: the lost host's tasks were held again {delay:?} after the fault \
         (bound: claim lease {LEASE_TTL:?} + 1 s)"
    );
    assert!(
        delay <= LEASE_TTL + Duration::from_secs(1),
        "re-claimed after {delay:?}"
    );

    // The host comes back; its teammates' old fences are refused.
    match fault {
        Fault::CutFollower | Fault::CutLeader => net.heal(victim),
        Fault::KillLeader => nodes[victim].start(),
    }
    let healed = Instant::now();
    for (name, id, epoch) in &victims {
        let back = mate(name, victim);
        let client = tokio::time::timeout(PATIENCE, back.session())
            .await
            .unwrap_or_else(|_| panic!("{name} back on its host"));
        let beat = client.heartbeat(*id, *epoch).await;
        assert_eq!(
            beat.as_ref().err().and_then(|e| e.code()),
            Some(ErrorCode::StaleEpoch),
            "{name}'s heartbeat on #{id} epoch {epoch}: {beat:?}"
        );
        let done = client.complete_task(*id, *epoch, "late").await;
        assert_eq!(
            done.as_ref().err().and_then(|e| e.code()),
            Some(ErrorCode::StaleEpoch),
            "{name}'s completion of #{id} epoch {epoch}: {done:?}"
        );
    }

    eprintln!(
        "{fault:?}: the lost host's old fences refused {:?} after it came back",
        healed.elapsed()
    );
    // Everyone still working completes.
    stop.cancel();
    for (_, handle) in holders {
        let _ = tokio::time::timeout(PATIENCE, handle).await;
    }
    let survivor = (victim + 1) % 3;
    let lead = lead_on(&nodes[survivor], &key).await;
    let seen = std::mem::take(&mut *log.lock().unwrap());
    check(&lead, &added, &seen, &victims).await;
    drop(lead);
    nodes.iter_mut().for_each(Node::kill9);
}

/// What the history says happened, once [`check_ownership`] has passed it.
#[derive(Debug, Default)]
struct Replay {
    claims: BTreeSet<(String, TaskId, u64)>,
    completions: BTreeSet<(String, TaskId)>,
    last_epoch: BTreeMap<TaskId, u64>,
}

/// Every claim with its epoch, every completion, and each task's last epoch.
/// Whether they overlap is `check_ownership`'s to judge.
fn replay(events: &[teamboard_protocol::Event]) -> Replay {
    let mut out = Replay::default();
    for e in events {
        let Some(id) = e.task else { continue };
        match e.kind {
            EventKind::TaskClaimed => {
                let (name, epoch) = ownership::claim_of(e).unwrap_or_else(|v| panic!("{v}"));
                out.last_epoch.insert(id, epoch);
                out.claims.insert((name, id, epoch));
            }
            EventKind::TaskCompleted => {
                out.completions.insert((e.actor.clone(), id));
            }
            _ => {}
        }
    }
    out
}

/// No task had two owners at once, epochs only grew, every claim and
/// acknowledged completion a teammate saw is in the history, and every
/// acknowledged change is on the board.
async fn check(lead: &Client, added: &[TaskId], seen: &Seen, victims: &[(String, TaskId, u64)]) {
    let events = read_history(lead).await.expect("read the history");
    // No task had two owners at once, epochs only rose, only the holder ended.
    check_ownership(&events).unwrap_or_else(|v| panic!("{v}"));
    let Replay {
        claims,
        completions,
        last_epoch,
    } = replay(&events);
    for (name, id, epoch, _) in &seen.claims {
        assert!(
            claims.contains(&(name.clone(), *id, *epoch)),
            "{name}'s claim of #{id} epoch {epoch} is not in the history"
        );
    }
    for (name, id) in &seen.completed {
        assert!(
            completions.contains(&(name.clone(), *id)),
            "{name}'s acknowledged completion of #{id} is not in the history"
        );
    }
    // The lost host's old claims were superseded by a higher epoch.
    for (name, id, epoch) in victims {
        assert!(
            last_epoch[id] > *epoch,
            "#{id}: {name}'s epoch {epoch} is still the last"
        );
    }
    let board: BTreeMap<TaskId, TaskStatus> = lead
        .list_tasks(None)
        .await
        .expect("list")
        .into_iter()
        .map(|t| (t.id, t.status))
        .collect();
    for id in added {
        assert!(board.contains_key(id), "acknowledged #{id} is gone");
    }
    for (name, id) in &seen.completed {
        assert_eq!(
            board[id],
            TaskStatus::Completed,
            "{name}'s acknowledged completion of #{id} is lost"
        );
    }
    eprintln!(
        "history: {} events, {} claims, {} completions; {} tasks on the board",
        events.len(),
        claims.len(),
        completions.len(),
        board.len()
    );
}
