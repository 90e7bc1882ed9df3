//! The event stream without a browser: ids, catch-up from `Last-Event-ID`, and
//! each event once.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code: a panic fails the test"
)]

use std::time::Duration;
use teamboard_testkit::{InProc, lead, task};
use teamboard_web::{Config, Token, Web};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};

const TOKEN: &str = "0123456789abcdef0123456789abcdef";

async fn serve(daemon: &InProc) -> String {
    let web = Web::bind(Config {
        endpoint: teamboard_protocol::Endpoint::Unix(daemon.socket.clone()),
        credential: None,
        team: teamboard_testkit::TEAM.into(),
        state_dir: daemon.state_dir.clone(),
        listen: "127.0.0.1:0".parse().expect("addr"),
        tls: None,
        token: Token::given(TOKEN),
        new_team: false,
    })
    .await
    .expect("bind");
    let url = web.url();
    tokio::spawn(web.serve());
    url.trim_start_matches("http://")
        .split('/')
        .next()
        .expect("host")
        .to_string()
}

type Lines = tokio::io::Lines<BufReader<tokio::net::TcpStream>>;

/// `GET /api/events` with `headers`, as lines.
async fn open(addr: &str, query: &str, headers: &str) -> Lines {
    let mut s = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let request = format!(
        "GET /api/events{query} HTTP/1.1\r\nHost: {addr}\r\n\
         Cookie: teamboard_token={TOKEN}\r\n{headers}\r\n"
    );
    s.write_all(request.as_bytes()).await.expect("write");
    BufReader::new(s).lines()
}

/// The ids of the next `n` events.
async fn ids(lines: &mut Lines, n: usize) -> Vec<u64> {
    let mut ids = Vec::new();
    while ids.len() < n {
        let line = tokio::time::timeout(Duration::from_secs(10), lines.next_line())
            .await
            .expect("an event in time")
            .expect("read")
            .expect("the stream stays open");
        if let Some(id) = line.strip_prefix("id:") {
            ids.push(id.trim().parse().expect("a seq"));
        }
    }
    ids
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reconnect_gets_every_event_after_its_last_id_once_then_live_ones() {
    let daemon = InProc::start().await;
    let lead = lead(&daemon.socket).await;
    for i in 0..5 {
        lead.add_task(task(format!("t{i}"))).await.expect("add");
    }
    let addr = serve(&daemon).await;
    // Caught up from the log after seq 2 (the header wins over `since`)...
    let mut stream = open(&addr, "?since=0", "Last-Event-ID: 2\r\n").await;
    assert_eq!(ids(&mut stream, 3).await, vec![3, 4, 5]);
    // ...then live: the catch-up is over before the first event is sent.
    lead.add_task(task("live")).await.expect("add");
    assert_eq!(ids(&mut stream, 1).await, vec![6]);
    // Without Last-Event-ID the page's `since` counts.
    let mut stream = open(&addr, "?since=4", "").await;
    assert_eq!(ids(&mut stream, 2).await, vec![5, 6]);
    daemon.stop().await;
}

/// The head of `GET path` with `headers`, up to the blank line.
async fn head(addr: &str, path: &str, headers: &str) -> String {
    let mut s = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\n{headers}\r\n");
    s.write_all(request.as_bytes()).await.expect("write");
    let mut lines = BufReader::new(s).lines();
    let mut out = String::new();
    while let Some(line) = lines.next_line().await.expect("read") {
        if line.is_empty() {
            break;
        }
        out.push_str(&line);
        out.push('\n');
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_token_or_its_cookie_lets_a_request_in() {
    let daemon = InProc::start().await;
    let addr = serve(&daemon).await;
    for path in ["/", "/app.js", "/api/board", "/api/events", "/?token=nope"] {
        let answer = head(&addr, path, "").await;
        assert!(answer.starts_with("HTTP/1.1 401"), "{path}: {answer}");
    }
    let answer = head(&addr, &format!("/?token={TOKEN}"), "").await;
    assert!(answer.starts_with("HTTP/1.1 303"), "{answer}");
    assert!(answer.contains("location: /\n"), "{answer}");
    let cookie =
        format!("set-cookie: teamboard_token={TOKEN}; HttpOnly; SameSite=Strict; Path=/\n");
    assert!(answer.contains(&cookie), "{answer}");
    let answer = head(
        &addr,
        "/api/board",
        &format!("Cookie: a=b; teamboard_token={TOKEN}\r\n"),
    )
    .await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    daemon.stop().await;
}
