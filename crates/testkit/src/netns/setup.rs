//! How a [`Net`](super::Net)'s namespaces and links are named, laid out and
//! made with `ip`, and how those that a killed test process left are swept.

use super::Unavailable;
use std::fs::File;
use std::io::Write as _;
use std::net::Ipv4Addr;
use std::os::fd::AsRawFd as _;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};

/// Where `ip netns add` mounts a namespace, under the name it is given.
pub(super) const NETNS_DIR: &str = "/var/run/netns";

/// Every namespace name this kit makes starts so, followed by the pid of the
/// test process: what the sweep goes by.
const PREFIX: &str = "tbnet";

/// The bridge's side of host `i`'s veth pair, in the hub namespace.
pub(super) fn port(i: usize) -> String {
    format!("p{i}")
}

/// The host's side of its veth pair, inside the host.
pub(super) const HOST_LINK: &str = "eth0";

/// The hub's end of the gateway's veth pair.
const HUB_GATEWAY: &str = "gw";

/// The last byte of the gateway's address in the subnet; hosts count from 1.
const GATEWAY_BYTE: u8 = 254;

/// The names and addresses of one [`Net`](super::Net), fixed before anything
/// is made so that a failed setup can be taken down by the same names.
pub(super) struct Layout {
    /// `tbnet<pid>n<k>`: this process's `k`-th net.
    pub id: String,
    /// The gateway's veth in the root namespace (at most 15 bytes, `IFNAMSIZ`).
    pub gateway_link: String,
    /// The first three bytes of the private /24.
    pub subnet: [u8; 3],
    pub hosts: usize,
}

static NETS: AtomicU32 = AtomicU32::new(0);

impl Layout {
    pub fn hub(&self) -> String {
        format!("{}-hub", self.id)
    }

    pub fn host(&self, i: usize) -> String {
        format!("{}-h{i}", self.id)
    }

    pub fn addr(&self, i: usize) -> Ipv4Addr {
        let [a, b, c] = self.subnet;
        Ipv4Addr::new(a, b, c, u8::try_from(i + 1).unwrap_or(0))
    }

    pub fn gateway(&self) -> Ipv4Addr {
        let [a, b, c] = self.subnet;
        Ipv4Addr::new(a, b, c, GATEWAY_BYTE)
    }

    /// Every namespace, the hub last: the order they are deleted in.
    pub fn namespaces(&self) -> Vec<String> {
        let mut all: Vec<String> = (0..self.hosts).map(|i| self.host(i)).collect();
        all.push(self.hub());
        all
    }

    /// Names this process's next net and picks a /24 that no route of the root
    /// namespace covers. The caller holds [`SetupLock`] until the gateway's
    /// address (and so its route) exists, so that two processes never pick the
    /// same one.
    pub fn choose(hosts: usize) -> Result<Layout, Unavailable> {
        let pid = std::process::id();
        let k = NETS.fetch_add(1, Ordering::Relaxed);
        let gateway_link = format!("tbn{pid}.{k}");
        if gateway_link.len() > 15 {
            return Err(Unavailable(format!(
                "interface name {gateway_link} is longer than 15 bytes"
            )));
        }
        let taken = routes();
        // Derived from the pid so that concurrent processes start apart; the
        // routes settle the rest (pids repeat modulo 2^16 where pid_max is larger).
        let start = (pid.wrapping_mul(16).wrapping_add(k)) % 0x1_0000;
        let subnet = (0..0x1_0000u32)
            .map(|n| (start + n) % 0x1_0000)
            .map(|n| [10, (n >> 8) as u8, n as u8])
            .find(|s| !taken.iter().any(|r| r.overlaps(*s)))
            .ok_or_else(|| Unavailable("every 10.x.y.0/24 is routed already".into()))?;
        Ok(Layout {
            id: format!("{PREFIX}{pid}n{k}"),
            gateway_link,
            subnet,
            hosts,
        })
    }

    /// Makes the namespaces, the bridge, the veth pairs, the addresses and the
    /// neighbour entries.
    ///
    /// Every neighbour is a permanent entry, so no ARP runs: while a host is cut
    /// off, packets to it are dropped, never answered with "no route to host"
    /// once ARP gives up (after about 3 s, or not at all while the old entry
    /// lasts), which would make what a cut does depend on timing.
    pub fn make(&self) -> Result<(), Unavailable> {
        let hub = self.hub();
        let gw = &self.gateway_link;
        let subnet = |a: Ipv4Addr| format!("{a}/24");
        let mut root = vec![format!("netns add {hub}")];
        root.extend((0..self.hosts).map(|i| format!("netns add {}", self.host(i))));
        root.push(format!(
            "link add {gw} address {} type veth peer name {HUB_GATEWAY} netns {hub}",
            mac(GATEWAY_BYTE)
        ));
        root.push(format!("addr add {} dev {gw}", subnet(self.gateway())));
        root.push(format!("link set {gw} up"));
        root.extend(self.neighbours(None, gw));
        ip_batch(None, &root)?;

        let mut bridge = vec![
            "link set lo up".to_string(),
            "link add br0 type bridge".into(),
            "link set br0 up".into(),
            format!("link set {HUB_GATEWAY} master br0 up"),
        ];
        for i in 0..self.hosts {
            let p = port(i);
            bridge.push(format!(
                "link add {p} type veth peer name {HOST_LINK} address {} netns {}",
                mac(host_byte(i)),
                self.host(i)
            ));
            bridge.push(format!("link set {p} master br0 up"));
        }
        ip_batch(Some(&hub), &bridge)?;

        for i in 0..self.hosts {
            let mut host = vec![
                "link set lo up".to_string(),
                format!("addr add {} dev {HOST_LINK}", subnet(self.addr(i))),
                format!("link set {HOST_LINK} up"),
            ];
            host.extend(self.neighbours(Some(i), HOST_LINK));
            ip_batch(Some(&self.host(i)), &host)?;
        }
        Ok(())
    }

    /// The neighbour entries on `dev` of host `me` (`None`: the gateway): every
    /// other host, and the gateway.
    fn neighbours(&self, me: Option<usize>, dev: &str) -> Vec<String> {
        let entry = |addr: Ipv4Addr, byte: u8| {
            format!(
                "neigh replace {addr} lladdr {} dev {dev} nud permanent",
                mac(byte)
            )
        };
        let mut all: Vec<String> = (0..self.hosts)
            .filter(|i| Some(*i) != me)
            .map(|i| entry(self.addr(i), host_byte(i)))
            .collect();
        if me.is_some() {
            all.push(entry(self.gateway(), GATEWAY_BYTE));
        }
        all
    }

    /// Deletes the gateway's link and every namespace, going on past what is
    /// already gone.
    ///
    /// Trap: the kernel takes a deleted namespace's links down in the
    /// background, so the gateway's link (whose peer is in the hub) would
    /// outlive `netns del` for a moment, its route with it; it is deleted first,
    /// itself.
    pub fn unmake(&self) -> Result<(), Unavailable> {
        let mut lines = vec![format!("link del {}", self.gateway_link)];
        lines.extend(self.namespaces().iter().map(|n| format!("netns del {n}")));
        ip_batch_force(&lines)
    }
}

/// The hosts' hardware addresses are fixed, so that every namespace's
/// neighbour table can be written up front: `02:…` is a locally administered
/// address, unique on the net's own bridge, which is all it must be.
fn mac(byte: u8) -> String {
    format!("02:74:62:00:00:{byte:02x}")
}

fn host_byte(i: usize) -> u8 {
    u8::try_from(i + 1).unwrap_or(0)
}

/// A route of the root namespace's main table, from `/proc/net/route`.
struct Route {
    dest: u32,
    mask: u32,
}

impl Route {
    /// Whether the /24 `subnet` and this route share an address. The default
    /// route is no obstacle: the /24's own route is more specific.
    fn overlaps(&self, [a, b, c]: [u8; 3]) -> bool {
        let candidate = u32::from_be_bytes([a, b, c, 0]);
        let mask = self.mask & 0xffff_ff00;
        self.mask != 0 && candidate & mask == self.dest & mask
    }
}

/// The routes of the root namespace; `/proc/net/route` prints each address as
/// the hexadecimal of its bytes read as a native integer.
fn routes() -> Vec<Route> {
    let text = std::fs::read_to_string("/proc/net/route").unwrap_or_default();
    let field = |s: &str| u32::from_str_radix(s, 16).ok().map(u32::to_ne_bytes);
    text.lines()
        .skip(1)
        .filter_map(|line| {
            let cols: Vec<&str> = line.split_whitespace().collect();
            Some(Route {
                dest: u32::from_be_bytes(field(cols.get(1)?)?),
                mask: u32::from_be_bytes(field(cols.get(7)?)?),
            })
        })
        .collect()
}

/// Deletes the namespaces whose test process no longer runs: those of a test
/// killed before its `Drop` ran. Their links go with them (each veth has an
/// end in the hub, where nothing runs). A pid reused since is taken for alive
/// and its namespaces are left until a later sweep.
pub(super) fn sweep() -> Result<(), Unavailable> {
    let Ok(dir) = std::fs::read_dir(NETNS_DIR) else {
        return Ok(());
    };
    let stale: Vec<String> = dir
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|name| owner(name).is_some_and(|pid| !teamboard_process::alive(pid)))
        .map(|name| format!("netns del {name}"))
        .collect();
    if stale.is_empty() {
        return Ok(());
    }
    ip_batch_force(&stale)
}

/// The pid in a name this kit made: `tbnet<pid>n<k>-…`.
fn owner(name: &str) -> Option<u32> {
    let rest = name.strip_prefix(PREFIX)?;
    let (pid, rest) = rest.split_once('n')?;
    rest.contains('-').then_some(())?;
    pid.parse().ok()
}

/// Held while one net is chosen and made, across the test processes of the
/// machine (`flock` on a file in `/tmp`).
pub(super) struct SetupLock(File);

impl SetupLock {
    pub fn take() -> Result<SetupLock, Unavailable> {
        let file = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open("/tmp/teamboard-netns.lock")
            .map_err(|e| Unavailable(format!("open /tmp/teamboard-netns.lock: {e}")))?;
        // SAFETY: flock(2) on a descriptor this function owns.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
            let e = std::io::Error::last_os_error();
            return Err(Unavailable(format!("lock /tmp/teamboard-netns.lock: {e}")));
        }
        Ok(SetupLock(file))
    }
}

impl Drop for SetupLock {
    /// Trap: a sibling test's child between fork and exec holds a copy of the
    /// descriptor, and with it the lock, until its exec closes it. Unlocking
    /// explicitly releases it at once, where closing would not.
    fn drop(&mut self) {
        // SAFETY: flock(2) on the descriptor this guard owns.
        unsafe { libc::flock(self.0.as_raw_fd(), libc::LOCK_UN) };
    }
}

/// Runs `ip [-n ns] -batch -` with `lines` on its stdin; one process for
/// many commands. Stops at the first that fails.
fn ip_batch(ns: Option<&str>, lines: &[String]) -> Result<(), Unavailable> {
    let mut args = Vec::new();
    if let Some(ns) = ns {
        args.extend(["-n", ns]);
    }
    run_ip(&args, lines)
}

/// [`ip_batch`] in the root namespace that goes on past failed commands, for
/// taking down what may be partly gone.
fn ip_batch_force(lines: &[String]) -> Result<(), Unavailable> {
    run_ip(&["-force"], lines)
}

fn run_ip(args: &[&str], lines: &[String]) -> Result<(), Unavailable> {
    let mut child = Command::new("ip")
        .args(args)
        .args(["-batch", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| Unavailable(format!("cannot run `ip` (iproute2): {e}")))?;
    let mut script = lines.join("\n");
    script.push('\n');
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(script.as_bytes())
            .map_err(|e| Unavailable(format!("write to `ip -batch`: {e}")))?;
    }
    let out = child
        .wait_with_output()
        .map_err(|e| Unavailable(format!("wait for `ip -batch`: {e}")))?;
    if out.status.success() {
        return Ok(());
    }
    Err(Unavailable(format!(
        "`ip {} -batch -` {}: {}\n{script}",
        args.join(" "),
        out.status,
        String::from_utf8_lossy(&out.stderr).trim()
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_names_of_this_kit_with_a_pid_are_swept() {
        assert_eq!(owner("tbnet4242n0-hub"), Some(4242));
        assert_eq!(owner("tbnet4242n17-h3"), Some(4242));
        assert_eq!(owner("tbnet4242n0"), None);
        assert_eq!(owner("tbnetxn0-hub"), None);
        assert_eq!(owner("other-4242"), None);
    }

    #[test]
    fn a_subnet_overlaps_the_routes_that_share_an_address_with_it() {
        let route = |d: [u8; 4], bits: u32| Route {
            dest: u32::from_be_bytes(d),
            mask: u32::MAX.checked_shl(32 - bits).unwrap_or(0),
        };
        assert!(route([10, 0, 0, 0], 8).overlaps([10, 3, 4]));
        assert!(route([10, 3, 4, 128], 25).overlaps([10, 3, 4]));
        assert!(!route([10, 3, 5, 0], 24).overlaps([10, 3, 4]));
        assert!(!route([0, 0, 0, 0], 0).overlaps([10, 3, 4]), "the default");
    }
}
