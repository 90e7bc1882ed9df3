//! A follower's socket, forwarding to the leader the row names: over a socket,
//! over TLS, at an IPv6 address, and refusing when there is none.

use super::*;

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
