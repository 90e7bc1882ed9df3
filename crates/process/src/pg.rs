//! A private PostgreSQL server, for the tests (through testkit) and the
//! benchmarks (`cargo xtask bench --database postgres`).
//!
//! [`PgServer::start`] runs Debian's binaries (`initdb` and `postgres` from
//! `/usr/lib/postgresql/*/bin`, or `TEAMBOARD_PG_BIN`) in a temporary directory;
//! [`PgServer::create_database`] makes an empty database on it and returns its
//! URL. [`PgServer::existing`] stands for a server someone else runs.
//!
//! Choices, and the alternatives that lost:
//! - The server is `postgres` itself, a child of a thread that lives as long as
//!   the process that started it and that dies with it (`PR_SET_PDEATHSIG` with
//!   SIGQUIT, the postmaster's immediate shutdown). `pg_ctl start` would detach
//!   the server, and a test process killed outright would leave it running.
//! - As root, the server runs as the `postgres` user (it refuses root), switched
//!   by the child itself before it execs (`Command::uid`), not by `runuser` or
//!   `su`: those fork, and the death signal would reach them rather than the
//!   server. The death signal is set after the switch, since a change of user
//!   clears it.
//! - `pgtemp` automates the same, through `pg_ctl`; `postgresql_embedded`
//!   downloads binaries and does not work offline.
//! - Databases are made with the `createdb` program, so that neither the kit nor
//!   the benchmarks need a PostgreSQL client library of their own.
//! - [`PgOptions::durable`] is off for the tests (`fsync=off`): they kill boardd,
//!   never the database server. A benchmark that measures commits turns it on.
//! - [`PgOptions::tls`] turns `ssl` on with a certificate the caller made; the
//!   server gets its own copies, the key owned by the server's user with mode
//!   0600, since PostgreSQL refuses a key that others may read (or that belongs
//!   to someone else, root aside). Without it `ssl` is off, whatever a
//!   `postgresql.conf` default says, so that a test of a plain server is one.

use std::net::{IpAddr, Ipv4Addr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How long the server may take to accept connections after it starts.
const READY_WITHIN: Duration = Duration::from_secs(60);

/// Why there is no server.
#[derive(Debug, Clone)]
pub struct PgError(pub String);

impl std::fmt::Display for PgError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for PgError {}

fn err(what: impl Into<String>) -> PgError {
    PgError(what.into())
}

/// How to start a server.
#[derive(Debug, Clone)]
pub struct PgOptions {
    /// The addresses it listens on (`listen_addresses`).
    pub listen: Vec<IpAddr>,
    /// Commits wait for the disk (`fsync` and `synchronous_commit` on).
    pub durable: bool,
    /// The most connections it takes.
    pub max_connections: u32,
    /// Where its data directory goes [default: the temporary directory]: for a
    /// benchmark, the disk being measured.
    pub parent: Option<PathBuf>,
    /// Serve TLS (`ssl = on`) with this certificate and key [default: no TLS].
    pub tls: Option<PgTls>,
}

/// The server's certificate chain and key (PEM files), for [`PgOptions::tls`].
#[derive(Debug, Clone)]
pub struct PgTls {
    pub cert: PathBuf,
    pub key: PathBuf,
}

impl Default for PgOptions {
    fn default() -> PgOptions {
        PgOptions {
            listen: vec![IpAddr::V4(Ipv4Addr::LOCALHOST)],
            durable: false,
            max_connections: 300,
            parent: None,
            tls: None,
        }
    }
}

/// A running server, or one named by `TEAMBOARD_PG_URL`.
#[derive(Debug)]
pub struct PgServer {
    /// `postgres://USER@HOST:PORT/DB` of the database new ones are made from.
    base_url: String,
    /// The data directory, removed when a started server is dropped.
    data: Option<tempfile::TempDir>,
    /// The server's pid, when this kit started it.
    pid: Option<u32>,
}

impl PgServer {
    /// A server someone else runs, at `url`: new databases are made from its
    /// database, and dropping it stops nothing.
    pub fn existing(url: String) -> PgServer {
        PgServer {
            base_url: url,
            data: None,
            pid: None,
        }
    }

    /// Starts a private server in a temporary directory.
    pub fn start(options: &PgOptions) -> Result<PgServer, PgError> {
        let bin = bin_dir()?;
        let owner = Owner::find()?;
        sweep();
        let parent = (options.parent.clone()).unwrap_or_else(std::env::temp_dir);
        let data = tempfile::Builder::new()
            .prefix(PREFIX)
            .tempdir_in(&parent)
            .map_err(|e| err(format!("cannot make a directory for PostgreSQL: {e}")))?;
        // Who made it: the shared server's directory outlives its process (a
        // static is never dropped), and the next start sweeps it by this.
        std::fs::write(data.path().join("owner"), std::process::id().to_string())
            .map_err(|e| err(format!("cannot write in {}: {e}", data.path().display())))?;
        let cluster = data.path().join("data");
        let sockets = data.path().join("sock");
        for dir in [data.path(), sockets.as_path()] {
            std::fs::create_dir_all(dir)
                .map_err(|e| err(format!("cannot make {}: {e}", dir.display())))?;
            owner.give(dir)?;
        }
        let mut initdb = owner.command(&bin.join("initdb"));
        initdb
            .args(["--auth=trust", "-U", "postgres", "--no-sync", "-E", "UTF8"])
            .args(["--no-locale", "-D"])
            .arg(&cluster);
        run_quiet(initdb, "initdb")?;
        if options.listen.iter().any(|a| !a.is_loopback()) {
            // initdb trusts loopback only. A server listening on another
            // address is for the hosts of a test net (`teamboard_testkit::Net`),
            // which connect from the subnet of that address: `samenet`.
            let hba = cluster.join("pg_hba.conf");
            std::fs::OpenOptions::new()
                .append(true)
                .open(&hba)
                .and_then(|mut f| {
                    std::io::Write::write_all(&mut f, b"host all all samenet trust\n")
                })
                .map_err(|e| err(format!("cannot write {}: {e}", hba.display())))?;
        }
        let port = free_port()?;
        let listen = (options.listen.iter())
            .map(IpAddr::to_string)
            .collect::<Vec<_>>()
            .join(",");
        let durable = if options.durable { "on" } else { "off" };
        let ssl = match &options.tls {
            Some(tls) => owner.tls_files(tls, data.path())?,
            None => vec!["ssl=off".to_string()],
        };
        let mut server = owner.command(&bin.join("postgres"));
        server
            .arg("-D")
            .arg(&cluster)
            .arg("-k")
            .arg(&sockets)
            .args(["-p", &port.to_string(), "-c"])
            .arg(format!("listen_addresses={listen}"))
            .arg("-c")
            .arg(format!("max_connections={}", options.max_connections))
            .args(["-c", &format!("fsync={durable}")])
            .args(["-c", &format!("synchronous_commit={durable}")])
            .args(["-c", &format!("full_page_writes={durable}")])
            .args(["-c", "logging_collector=off"])
            .args(ssl.iter().flat_map(|setting| ["-c", setting]))
            .stdin(Stdio::null());
        let log = std::fs::File::create(data.path().join("server.log"))
            .map_err(|e| err(format!("cannot make PostgreSQL's log: {e}")))?;
        let log2 = log
            .try_clone()
            .map_err(|e| err(format!("cannot share PostgreSQL's log: {e}")))?;
        server.stdout(log).stderr(log2);
        crate::die_with_parent(&mut server, libc::SIGQUIT);
        let pid = spawn_on_keeper(server)?;
        let host = options
            .listen
            .first()
            .copied()
            .unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST));
        let host = match host {
            IpAddr::V6(v6) => format!("[{v6}]"),
            IpAddr::V4(v4) => v4.to_string(),
        };
        let server = PgServer {
            base_url: format!("postgres://postgres@{host}:{port}/postgres"),
            data: Some(data),
            pid: Some(pid),
        };
        server.wait_ready(&bin)?;
        Ok(server)
    }

    /// The URL of the database new ones are made from.
    pub fn url(&self) -> &str {
        &self.base_url
    }

    /// The server's log, for a failing test's message.
    pub fn log(&self) -> Option<PathBuf> {
        self.data.as_ref().map(|d| d.path().join("server.log"))
    }

    /// Creates a new, empty database and returns its URL.
    pub fn create_database(&self) -> Result<String, PgError> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let name = format!(
            "tb_{}_{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let mut createdb = Command::new(bin_dir()?.join("createdb"));
        createdb
            .arg(format!("--maintenance-db={}", self.base_url))
            .arg(&name);
        run_quiet(createdb, "createdb")?;
        Ok(with_database(&self.base_url, &name))
    }

    fn wait_ready(&self, bin: &Path) -> Result<(), PgError> {
        let deadline = Instant::now() + READY_WITHIN;
        loop {
            let ready = Command::new(bin.join("pg_isready"))
                .arg("-d")
                .arg(&self.base_url)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if ready {
                return Ok(());
            }
            if Instant::now() >= deadline {
                let log = self.log().map(|l| crate::tail(&l, 20)).unwrap_or_default();
                return Err(err(format!(
                    "PostgreSQL did not accept connections within {READY_WITHIN:?}:\n{log}"
                )));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        if let Some(pid) = self.pid {
            // SAFETY: kill with a pid this kit started; at worst the process is
            // gone and the call fails.
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGQUIT) };
            let deadline = Instant::now() + Duration::from_secs(10);
            while crate::alive(pid) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
}

/// The name the servers' directories start with, in the temporary directory.
const PREFIX: &str = "tb-pg-";

/// Removes the directories of servers whose test process has ended.
fn sweep() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        if !name.to_string_lossy().starts_with(PREFIX) {
            continue;
        }
        let owner = std::fs::read_to_string(entry.path().join("owner"))
            .ok()
            .and_then(|s| s.trim().parse::<u32>().ok());
        // No owner file yet: another process is between making it and writing it.
        if owner.is_some_and(|pid| !crate::alive(pid)) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// `url` with its database replaced by `name`.
fn with_database(url: &str, name: &str) -> String {
    let (head, query) = match url.split_once('?') {
        Some((h, q)) => (h, Some(q)),
        None => (url, None),
    };
    let scheme_end = head.find("://").map_or(0, |i| i + 3);
    let base = match head[scheme_end..].find('/') {
        Some(i) => &head[..scheme_end + i],
        None => head,
    };
    match query {
        Some(q) => format!("{base}/{name}?{q}"),
        None => format!("{base}/{name}"),
    }
}

/// Where Debian keeps the server's programs (`psql` too): the newest version
/// there, or `TEAMBOARD_PG_BIN`.
pub fn bin_dir() -> Result<PathBuf, PgError> {
    if let Some(dir) = std::env::var_os("TEAMBOARD_PG_BIN") {
        return Ok(PathBuf::from(dir));
    }
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let version = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("postgres").exists().then_some((version, bin))
        })
        .collect();
    found.sort();
    found.pop().map(|(_, bin)| bin).ok_or_else(|| {
        err("PostgreSQL is not installed: apt install postgresql (or set TEAMBOARD_PG_BIN, or TEAMBOARD_PG_URL to a server)")
    })
}

/// The user the server runs as: the `postgres` user when this process is
/// root, which PostgreSQL refuses to run as; this process's own otherwise.
struct Owner(Option<(u32, u32)>);

impl Owner {
    fn find() -> Result<Owner, PgError> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return Ok(Owner(None));
        }
        let name = c"postgres";
        // SAFETY: getpwnam with a valid C string; the result is read at once,
        // before any other call could reuse its static buffer.
        let pw = unsafe { libc::getpwnam(name.as_ptr()) };
        if pw.is_null() {
            return Err(err(
                "running as root, and there is no `postgres` user to run PostgreSQL as",
            ));
        }
        // SAFETY: pw is non-null and points to getpwnam's record.
        let (uid, gid) = unsafe { ((*pw).pw_uid, (*pw).pw_gid) };
        Ok(Owner(Some((uid, gid))))
    }

    fn give(&self, path: &Path) -> Result<(), PgError> {
        if let Some((uid, gid)) = self.0 {
            std::os::unix::fs::chown(path, Some(uid), Some(gid))
                .map_err(|e| err(format!("cannot give {} to postgres: {e}", path.display())))?;
        }
        Ok(())
    }

    /// Copies the certificate and key into `dir` for the server (see the
    /// module doc), and returns the settings that name them.
    fn tls_files(&self, tls: &PgTls, dir: &Path) -> Result<Vec<String>, PgError> {
        use std::os::unix::fs::PermissionsExt as _;
        let mut settings = vec!["ssl=on".to_string()];
        for (from, name, setting) in [
            (&tls.cert, "server.crt", "ssl_cert_file"),
            (&tls.key, "server.key", "ssl_key_file"),
        ] {
            let to = dir.join(name);
            std::fs::copy(from, &to)
                .and_then(|_| std::fs::set_permissions(&to, std::fs::Permissions::from_mode(0o600)))
                .map_err(|e| {
                    err(format!(
                        "cannot copy {} to {}: {e}",
                        from.display(),
                        to.display()
                    ))
                })?;
            self.give(&to)?;
            settings.push(format!("{setting}={}", to.display()));
        }
        Ok(settings)
    }

    fn command(&self, program: &Path) -> Command {
        use std::os::unix::process::CommandExt as _;
        let mut cmd = Command::new(program);
        if let Some((uid, gid)) = self.0 {
            // std drops root's supplementary groups itself when it switches from root.
            cmd.uid(uid).gid(gid);
            // The postgres user's own home, not root's, for anything it reads there.
            cmd.env("HOME", "/var/lib/postgresql");
        }
        cmd
    }
}

fn run_quiet(mut cmd: Command, what: &str) -> Result<(), PgError> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(|e| err(format!("cannot run {what}: {e}")))?;
    if out.status.success() {
        return Ok(());
    }
    Err(err(format!(
        "{what} failed ({}): {}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )))
}

fn free_port() -> Result<u16, PgError> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .map_err(|e| err(format!("no free port: {e}")))?;
    listener
        .local_addr()
        .map(|a| a.port())
        .map_err(|e| err(format!("no free port: {e}")))
}

/// Spawns `cmd` from a thread that waits for it, so that the child's death
/// signal fires when the test process ends and not when a test's thread does.
fn spawn_on_keeper(mut cmd: Command) -> Result<u32, PgError> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("postgres-keeper".into())
        .spawn(move || match cmd.spawn() {
            Ok(mut child) => {
                let _ = tx.send(Ok(child.id()));
                let _ = child.wait();
            }
            Err(e) => {
                let _ = tx.send(Err(err(format!("cannot start postgres: {e}"))));
            }
        })
        .map_err(|e| err(format!("cannot start a thread for postgres: {e}")))?;
    rx.recv()
        .map_err(|_| err("the thread that starts postgres ended"))?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_gets_another_database() {
        assert_eq!(
            with_database("postgres://u@h:5/postgres", "x"),
            "postgres://u@h:5/x"
        );
        assert_eq!(
            with_database("postgres://u:p@h:5/db?sslmode=disable", "x"),
            "postgres://u:p@h:5/x?sslmode=disable"
        );
        assert_eq!(with_database("postgres://h:5", "x"), "postgres://h:5/x");
    }
}
