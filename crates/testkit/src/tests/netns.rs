//! The hosts of [`Net`]: they talk over their addresses, a cut stalls rather
//! than fails, a killed program leaves nothing, and nothing outlives the net.
//! Each test prints `skipped` without root or `ip` (see [`Net::or_skip`]).

use crate::netns::Host;
use crate::{Net, PATIENCE, eventually_blocking};
use std::io::{ErrorKind, Read as _, Write as _};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::os::unix::process::ExitStatusExt as _;
use std::process::{Command, Stdio};
use std::time::Duration;

/// How long a test watches a stall: nothing may arrive, and no error either.
/// Not a wait for something to happen, so its length decides nothing but how
/// long a broken cut could go unseen.
const STALL: Duration = Duration::from_millis(500);

fn listen(host: &Host) -> TcpListener {
    let addr = host.addr();
    host.within(move || TcpListener::bind((addr, 0)).expect("bind in the host"))
}

fn connect(from: &Host, to: SocketAddr, timeout: Duration) -> std::io::Result<TcpStream> {
    from.within(move || TcpStream::connect_timeout(&to, timeout))
}

/// Echoes one connection of `listener`'s on a thread of its own.
fn echo_one(listener: TcpListener) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let (mut conn, _) = listener.accept().expect("accept");
        let mut buf = [0u8; 64];
        while let Ok(n) = conn.read(&mut buf) {
            if n == 0 || conn.write_all(&buf[..n]).is_err() {
                return;
            }
        }
    })
}

fn round_trip(conn: &mut TcpStream, what: &[u8]) {
    conn.set_read_timeout(Some(PATIENCE)).expect("timeout");
    conn.write_all(what).expect("write");
    let mut back = vec![0u8; what.len()];
    conn.read_exact(&mut back).expect("echo");
    assert_eq!(back, what);
}

fn ip_netns_list() -> String {
    let out = Command::new("ip")
        .args(["netns", "list"])
        .output()
        .expect("ip");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn hosts_talk_over_their_addresses_and_the_gateway_reaches_them_both_ways() {
    let Some(net) = Net::or_skip(2) else { return };
    let (a, b) = (net.host(0), net.host(1));
    assert_ne!(a.addr(), b.addr());

    let server = listen(b);
    let to_b = server.local_addr().expect("addr");
    let echo = echo_one(server);
    let mut conn = connect(a, to_b, PATIENCE).expect("host 0 to host 1");
    round_trip(&mut conn, b"across hosts");
    assert_eq!(conn.local_addr().expect("addr").ip(), a.addr());
    drop(conn);
    echo.join().expect("echo");

    // The test's own namespace to a host, and a host to the test's server on
    // the gateway (where the database listens).
    let server = listen(a);
    let to_a = server.local_addr().expect("addr");
    let echo = echo_one(server);
    let mut conn = TcpStream::connect_timeout(&to_a, PATIENCE).expect("root to host 0");
    round_trip(&mut conn, b"from the root");
    drop(conn);
    echo.join().expect("echo");
    let gateway = TcpListener::bind((net.gateway(), 0)).expect("bind the gateway");
    let to_gateway = gateway.local_addr().expect("addr");
    let echo = echo_one(gateway);
    let mut conn = connect(b, to_gateway, PATIENCE).expect("host 1 to the gateway");
    round_trip(&mut conn, b"to the gateway");
    drop(conn);
    echo.join().expect("echo");

    // A host's loopback is its own: nothing of the root namespace's is there.
    let root_lo = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind lo");
    let port = root_lo.local_addr().expect("addr").port();
    let refused = connect(a, (Ipv4Addr::LOCALHOST, port).into(), PATIENCE);
    assert_eq!(
        refused.map(|_| ()).map_err(|e| e.kind()),
        Err(ErrorKind::ConnectionRefused)
    );
}

#[test]
fn a_cut_host_stalls_its_connections_refuses_nothing_and_resumes_when_healed() {
    let Some(net) = Net::or_skip(2) else { return };
    let (a, b) = (net.host(0), net.host(1));
    let server = listen(b);
    let to_b = server.local_addr().expect("addr");
    let echo = echo_one(server);
    let mut conn = connect(a, to_b, PATIENCE).expect("connect");
    round_trip(&mut conn, b"before");

    net.cut(1);
    // A write is buffered; the echo never comes, and no error does either.
    conn.write_all(b"during")
        .expect("a write across the cut is buffered");
    conn.set_read_timeout(Some(STALL)).expect("timeout");
    let mut buf = [0u8; 6];
    let stalled = conn.read(&mut buf).map_err(|e| e.kind());
    assert!(
        matches!(stalled, Err(ErrorKind::WouldBlock | ErrorKind::TimedOut)),
        "a live connection across the cut stalls, got {stalled:?}"
    );
    // New connections time out both ways, never refused or unreachable.
    let new = connect(a, to_b, STALL).map(|_| ()).map_err(|e| e.kind());
    assert_eq!(new, Err(ErrorKind::TimedOut), "into the cut host");
    let gateway = TcpListener::bind((net.gateway(), 0)).expect("bind the gateway");
    let to_gateway = gateway.local_addr().expect("addr");
    let out = connect(b, to_gateway, STALL)
        .map(|_| ())
        .map_err(|e| e.kind());
    assert_eq!(out, Err(ErrorKind::TimedOut), "out of the cut host");

    // Healed, the stalled write arrives at TCP's next retransmission.
    net.heal(1);
    conn.set_read_timeout(Some(PATIENCE)).expect("timeout");
    conn.read_exact(&mut buf).expect("the echo after the heal");
    assert_eq!(&buf, b"during");
    round_trip(&mut conn, b"after");
    drop(conn);
    echo.join().expect("echo");
    let again = listen(b);
    let to_b = again.local_addr().expect("addr");
    let echo = echo_one(again);
    let mut conn = connect(a, to_b, PATIENCE).expect("a new connection after the heal");
    round_trip(&mut conn, b"new");
    drop(conn);
    echo.join().expect("echo");
}

/// A Python TCP echo server that prints its port, then serves one connection.
const PY_SERVER: &str = "import socket,sys
s=socket.socket(); s.bind((sys.argv[1],0)); s.listen()
print(s.getsockname()[1], flush=True)
c,_=s.accept()
while (d:=c.recv(64)): c.sendall(d)";

#[test]
fn a_program_killed_in_a_host_is_the_child_itself_and_leaves_nothing_behind() {
    let Some(net) = Net::or_skip(2) else { return };
    let (a, b) = (net.host(0), net.host(1));
    let mut cmd = b.command("python3");
    cmd.args(["-c", PY_SERVER, &b.addr().to_string()])
        .stdout(Stdio::piped());
    teamboard_process::die_with_parent(&mut cmd, libc::SIGKILL);
    let mut child = cmd.spawn().expect("python3 in the host");
    let mut port = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().expect("stdout")),
        &mut port,
    )
    .expect("the port");
    let port: u16 = port.trim().parse().expect("a port");
    assert_eq!(b.pids(), [child.id()], "the child itself runs in the host");
    assert!(a.pids().is_empty());

    let mut conn = connect(a, (b.addr(), port).into(), PATIENCE).expect("connect");
    round_trip(&mut conn, b"alive");
    crate::kill9(child.id());
    let status = child.wait().expect("reaped");
    assert_eq!(status.signal(), Some(9));

    // Its host's kernel lives on: the connection ends at once, the port refuses.
    conn.set_read_timeout(Some(PATIENCE)).expect("timeout");
    let mut buf = [0u8; 8];
    match conn.read(&mut buf) {
        Ok(0) => {}
        Err(e) if e.kind() == ErrorKind::ConnectionReset => {}
        other => panic!("the connection to a killed program ends, got {other:?}"),
    }
    let refused = connect(a, (b.addr(), port).into(), PATIENCE);
    assert_eq!(
        refused.map(|_| ()).map_err(|e| e.kind()),
        Err(ErrorKind::ConnectionRefused)
    );
    assert!(b.pids().is_empty(), "left in the host: {:?}", b.pids());
}

#[test]
fn drop_deletes_the_namespaces_and_links_and_kills_what_ran_in_them() {
    let Some(net) = Net::or_skip(2) else { return };
    let names = net.namespaces();
    assert_eq!(names.len(), 3);
    let listed = ip_netns_list();
    assert!(
        names.iter().all(|n| listed.contains(n.as_str())),
        "{listed}"
    );
    let mut sleeper = net
        .host(0)
        .command("sleep")
        .arg("300")
        .spawn()
        .expect("sleep in the host");
    let gateway = net.gateway();

    drop(net);
    let listed = ip_netns_list();
    assert!(
        names.iter().all(|n| !listed.contains(n.as_str())),
        "{listed}"
    );
    let status = eventually_blocking("the host's sleep to be killed", PATIENCE, || {
        sleeper.try_wait().expect("wait")
    });
    assert_eq!(status.signal(), Some(9));
    // The gateway's address went with its link, at once.
    let bind = TcpListener::bind((gateway, 0))
        .map(|_| ())
        .map_err(|e| e.kind());
    assert_eq!(bind, Err(ErrorKind::AddrNotAvailable));
}

#[test]
fn namespaces_of_a_test_process_that_no_longer_runs_are_swept_by_the_next_net() {
    if Net::or_skip(0).is_none() {
        return;
    }
    // A pid that ran and ended; pids are handed out in turn, so it is not
    // reused within this test.
    let mut gone = Command::new("true").spawn().expect("true");
    let dead = gone.id();
    gone.wait().expect("reaped");
    let me = std::process::id();
    let stale = format!("tbnet{dead}n0-hub");
    let live = format!("tbnet{me}n99999-hub");
    for name in [&stale, &live] {
        let made = Command::new("ip").args(["netns", "add", name]).status();
        assert!(made.expect("ip").success(), "ip netns add {name}");
    }

    let _net = Net::new(1).expect("a net");
    let listed = ip_netns_list();
    let del = Command::new("ip").args(["netns", "del", &live]).status();
    assert!(del.expect("ip").success());
    assert!(!listed.contains(&stale), "swept: {listed}");
    assert!(listed.contains(&live), "a live process's stays: {listed}");
}

#[test]
fn a_program_in_a_host_dies_with_the_thread_that_started_it() {
    let Some(net) = Net::or_skip(1) else { return };
    let host = net.host(0).clone();
    let mut child = std::thread::spawn(move || {
        let mut cmd = host.command("sleep");
        cmd.arg("300");
        teamboard_process::die_with_parent(&mut cmd, libc::SIGKILL);
        cmd.spawn().expect("sleep in the host")
    })
    .join()
    .expect("the spawning thread");
    let status = eventually_blocking("the sleep to die with its thread", PATIENCE, || {
        child.try_wait().expect("wait")
    });
    assert_eq!(status.signal(), Some(9));
    assert!(net.host(0).pids().is_empty());
}
