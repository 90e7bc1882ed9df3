//! Several hosts on one machine: network namespaces joined by a bridge, for
//! the tests where boardd hosts are cut off or killed while the others go on.
//!
//! [`Net::new`]`(n)` makes, with `ip` (iproute2), as root:
//! - a hub namespace holding a bridge;
//! - `n` host namespaces, each with loopback up and an `eth0` on a veth pair
//!   whose other end is a port of the bridge, its address `10.x.y.(i+1)` on a
//!   private /24;
//! - the gateway: a veth pair from the test's own (root) namespace to the
//!   bridge, with `10.x.y.254` ([`Net::gateway`]). The test process reaches
//!   every host through it, and every host reaches the test's servers on it.
//!
//! The database's place is the gateway: PostgreSQL runs in the root namespace,
//! started as every other test starts it, listening on [`Net::gateway`]. The
//! scenarios cut and kill boardd hosts, never the database, and a cut host
//! loses the database with everything else since all its packets cross its
//! one bridge port. A test that wants the database killable starts it in a
//! host of its own like any other program.
//!
//! The /24 is derived from the pid and checked against the root namespace's
//! routes under a machine-wide lock (`flock`), so concurrent test processes,
//! and concurrent tests of one process, never share one. Namespaces are named
//! `tbnet<pid>n<k>-hub` and `tbnet<pid>n<k>-h<i>`; the only interface in the
//! root namespace is `tbn<pid>.<k>` (15 bytes at most); the rest are named
//! inside their namespaces, where no other test sees them.
//!
//! The links are made by `ip` in batch mode, one process per namespace. The
//! `rtnetlink` crate lost: it brings netlink's packet crates and an async API
//! into every test build, and the namespaces themselves would still be made
//! by hand (`unshare` and a bind mount under `/var/run/netns`), which
//! `ip netns add` does.
//!
//! Trap: only the network is per host. The filesystem is shared, so a Unix
//! socket bound to a path is reachable from every host and no cut touches
//! it; a test across hosts connects over TCP to the hosts' addresses.
//! Abstract Unix sockets and `127.0.0.1` are each host's own.
//!
//! Running a program in a host: [`Host::command`] gives a
//! [`std::process::Command`] that enters the host's namespace with `setns(2)`
//! on `/var/run/netns/NAME` between fork and exec (`tokio::process::Command`
//! converts from it): one system call, and the child is the program from its
//! first instruction, so a `kill -9` of the child is one of the program and
//! `PR_SET_PDEATHSIG` ([`teamboard_process::die_with_parent`]) applies to it.
//! Wrapping in `ip netns exec NAME program` lost, though it keeps both too
//! (outside batch mode `ip` execs the program in its own process): it also
//! moves the program into a mount namespace of its own, with `/sys` mounted
//! again and `/etc/netns/NAME` bound over `/etc`, which makes a program under
//! test run unlike it does outside; a program that cannot start shows as
//! `ip`'s exit status 255 instead of `spawn`'s error; and every start pays one
//! more exec.
//!
//! [`Host::within`] runs a closure on a thread of the test process that
//! entered the host: the sockets it makes stay there, for a test's own
//! listeners and clients.
//!
//! A cut ([`Net::cut`]) sets the bridge's port of the host down, as a cable
//! pulled at the switch: the host keeps its address and its routes (marked
//! `linkdown`), and every packet to or from it is dropped. Nothing is reset
//! or refused: an established TCP connection across the cut stalls (reads
//! wait, writes are buffered and retransmitted), and a new connection's
//! `connect` waits until its own timeout. Every namespace's neighbour table is
//! written up front and ARP never runs, so this holds however long the cut
//! lasts; with ARP, a connect would fail with "no route to host" after some
//! seconds, or not, depending on what the table held. Inside the cut host
//! everything works as before, loopback and its own address included.
//! Downing the host's own end of the pair lost: its subnet's route goes with
//! it, so its own connects fail at once ("network is unreachable"), which a
//! machine whose network is gone does not see.
//! [`Net::heal`] sets the port up again; a stalled connection resumes at its
//! next retransmission, which TCP backs off exponentially: after a cut of a
//! few seconds it may take as long again. A `kill -9`'d program is different:
//! its host's kernel still runs, so its connections are closed (reset where
//! data was unread) and its ports refuse at once.
//!
//! Cleanup: [`Net`]'s `Drop` kills what still runs in its hosts (a host that
//! is gone takes its programs with it, and a namespace lives on while a
//! process is in it), deletes the gateway's link and every namespace; the
//! other links die with their namespaces. It runs on a panic too. The
//! namespaces of a test process that was killed outright are swept by the
//! next [`Net::new`] on the machine: those whose name carries a pid that no
//! longer runs.
//!
//! Without root, without `ip` or without namespaces, [`Net::new`] fails and
//! [`Net::or_skip`] prints `skipped: …` and returns `None`, as the agent and
//! browser tests do; with `TEAMBOARD_REQUIRE_NETNS=1` it panics instead, so
//! that a machine meant to run these tests cannot skip them silently.
//!
//! No latency is added between hosts: a delay needs the `netem` queueing
//! discipline, which not every kernel has. Packets cross a veth, a bridge and
//! a veth: well under a millisecond.

mod setup;

use setup::{Layout, NETNS_DIR, SetupLock};
use std::ffi::OsStr;
use std::fs::File;
use std::net::Ipv4Addr;
use std::os::fd::AsRawFd as _;
use std::os::unix::fs::MetadataExt as _;
use std::os::unix::process::CommandExt as _;
use std::process::Command;

/// Why [`Net::new`] could not make the hosts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unavailable(pub String);

impl std::fmt::Display for Unavailable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "network namespaces unavailable: {}", self.0)
    }
}

impl std::error::Error for Unavailable {}

/// Hosts in network namespaces on one bridge, taken down on drop. See the
/// module documentation.
pub struct Net {
    layout: Layout,
    hosts: Vec<Host>,
}

/// One host of a [`Net`]: a network namespace with one address.
#[derive(Debug, Clone)]
pub struct Host {
    name: String,
    addr: Ipv4Addr,
}

impl Net {
    /// Makes `hosts` hosts (at most 200), after sweeping the namespaces that
    /// killed test processes left.
    pub fn new(hosts: usize) -> Result<Net, Unavailable> {
        if hosts > 200 {
            return Err(Unavailable(format!("{hosts} hosts: at most 200 fit")));
        }
        // SAFETY: geteuid(2) has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return Err(Unavailable("making them needs root".into()));
        }
        let _lock = SetupLock::take()?;
        setup::sweep()?;
        let layout = Layout::choose(hosts)?;
        let hosts = (0..hosts)
            .map(|i| Host {
                name: layout.host(i),
                addr: layout.addr(i),
            })
            .collect();
        // Built before anything is made, so that a failure half-way is taken
        // down by the same drop.
        let net = Net { layout, hosts };
        net.layout.make()?;
        Ok(net)
    }

    /// [`Net::new`], or `None` after printing why the test is skipped. Panics
    /// instead when `TEAMBOARD_REQUIRE_NETNS=1`.
    pub fn or_skip(hosts: usize) -> Option<Net> {
        match Net::new(hosts) {
            Ok(net) => Some(net),
            Err(why) if std::env::var("TEAMBOARD_REQUIRE_NETNS").as_deref() == Ok("1") => {
                panic!("TEAMBOARD_REQUIRE_NETNS=1 but {why}")
            }
            Err(why) => {
                eprintln!("skipped: {why}");
                None
            }
        }
    }

    /// Host `i`, from 0. Panics past the last.
    pub fn host(&self, i: usize) -> &Host {
        &self.hosts[i]
    }

    pub fn hosts(&self) -> &[Host] {
        &self.hosts
    }

    /// The test process's own address on the net, which every host reaches.
    pub fn gateway(&self) -> Ipv4Addr {
        self.layout.gateway()
    }

    /// The names of the namespaces, the hub's last (what `ip netns list` shows).
    pub fn namespaces(&self) -> Vec<String> {
        self.layout.namespaces()
    }

    /// Cuts host `i` off: every packet to or from it is dropped until
    /// [`Net::heal`]. Its connections stall, none is reset.
    pub fn cut(&self, i: usize) {
        self.set_port(i, "down");
    }

    /// Joins host `i` again after [`Net::cut`].
    pub fn heal(&self, i: usize) {
        self.set_port(i, "up");
    }

    fn set_port(&self, i: usize, state: &str) {
        assert!(i < self.hosts.len(), "no host {i}");
        let hub = self.layout.hub();
        let port = setup::port(i);
        let out = Command::new("ip")
            .args(["-n", &hub, "link", "set", &port, state])
            .output()
            .expect("run ip");
        assert!(
            out.status.success(),
            "ip -n {hub} link set {port} {state}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        for host in &self.hosts {
            host.pids().into_iter().for_each(crate::kill9);
        }
        if let Err(e) = self.layout.unmake() {
            eprintln!("taking down {}: {e}", self.layout.id);
        }
    }
}

/// A namespace's identity: the device and inode of its `nsfs` file.
fn ns_id(path: &str) -> Option<(u64, u64)> {
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

impl Host {
    /// The namespace's name, as `ip netns` knows it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The host's address, on every other host's subnet.
    pub fn addr(&self) -> Ipv4Addr {
        self.addr
    }

    /// The live processes in this host (zombies have left their namespace).
    pub fn pids(&self) -> Vec<u32> {
        let Some(me) = ns_id(&format!("{NETNS_DIR}/{}", self.name)) else {
            return Vec::new();
        };
        teamboard_process::processes()
            .into_iter()
            .filter(|s| s.running() && ns_id(&format!("/proc/{}/ns/net", s.pid)) == Some(me))
            .map(|s| s.pid)
            .collect()
    }

    /// `program` to be run inside this host: it enters the namespace between
    /// fork and exec, so the child is the program itself (see the module
    /// documentation). Other `pre_exec` steps (`die_with_parent`) may be added.
    pub fn command(&self, program: impl AsRef<OsStr>) -> Command {
        let ns = self.open();
        let mut cmd = Command::new(program);
        // SAFETY: the closure runs between fork and exec and only calls
        // setns(2), a system call that touches no memory of ours; the
        // descriptor is the closure's own, closed on exec.
        unsafe {
            cmd.pre_exec(move || enter(&ns));
        }
        cmd
    }

    /// Runs `f` on a thread of this process that entered the host: the sockets
    /// it makes belong to the host for their whole life, whichever thread uses
    /// them after. A panic in `f` is the caller's.
    pub fn within<T: Send>(&self, f: impl FnOnce() -> T + Send) -> T {
        let ns = self.open();
        std::thread::scope(|s| {
            let thread = s.spawn(move || {
                enter(&ns).expect("setns into the host");
                f()
            });
            thread
                .join()
                .unwrap_or_else(|p| std::panic::resume_unwind(p))
        })
    }

    fn open(&self) -> File {
        let path = format!("{NETNS_DIR}/{}", self.name);
        File::open(&path).unwrap_or_else(|e| panic!("open {path}: {e}"))
    }
}

/// Moves the calling thread into the network namespace `ns`.
fn enter(ns: &File) -> std::io::Result<()> {
    // SAFETY: setns(2) on a namespace descriptor we own; it changes only the
    // calling thread's network namespace.
    if unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}
