//! The TCP listener's handshake timeout, under tokio's paused clock: a client
//! that opens a connection to the TLS port and says nothing is closed once the
//! hello's time is up, and never before; a session open meanwhile is served.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "test code: a panic fails the test, and the harness captures what it prints"
)]

use boardd::server::{TcpListen, TlsFiles};
use std::time::Duration;
use teamboard_testkit::{InProc, TestCerts, lead, short_tempdir, task};
use tokio::io::AsyncReadExt as _;
use tokio::time::Instant;

/// The hello's timeout (`server::connection`), which bounds the TLS handshake too.
const HANDSHAKE: Duration = Duration::from_secs(10);

#[tokio::test(start_paused = true)]
async fn a_silent_client_on_the_tls_port_is_closed_at_the_handshake_timeout() {
    let certs_dir = short_tempdir();
    let certs = TestCerts::make(certs_dir.path());
    let daemon = InProc::start_paused(|c| {
        c.tcp = Some(TcpListen {
            addr: ([127, 0, 0, 1], 0).into(),
            tls: Some(TlsFiles {
                cert: certs.cert.clone(),
                key: certs.key.clone(),
            }),
        });
    })
    .await;
    let addr = daemon
        .running()
        .and_then(|r| r.tcp)
        .expect("a TCP listener");
    let mut silent = tokio::net::TcpStream::connect(addr).await.unwrap();
    let connected = Instant::now();
    let mut got = Vec::new();
    let closed = tokio::time::timeout(HANDSHAKE * 6, silent.read_to_end(&mut got)).await;
    assert!(closed.is_ok(), "the silent client was never closed");
    assert!(got.is_empty(), "{got:?}");
    assert!(
        connected.elapsed() >= HANDSHAKE,
        "{:?}",
        connected.elapsed()
    );
    // boardd serves on.
    let boss = lead(&daemon.socket).await;
    boss.add_task(task("still here")).await.unwrap();
}
