//! A private PostgreSQL server for the tests, and a fresh database per test.
//!
//! [`shared`] starts one server per test process, the first time a test asks,
//! with Debian's binaries (`initdb` and `postgres` from `/usr/lib/postgresql/*/bin`,
//! or `TEAMBOARD_PG_BIN`). [`fresh_database`] creates an empty database on it
//! and returns its URL, so tests running at once never share a board.
//! `TEAMBOARD_PG_URL` names an existing server instead (its URL's database is
//! the one new databases are created from); nothing is started then.
//!
//! Choices, and the alternatives that lost:
//! - The server is `postgres` itself, a child of a thread that lives as long as
//!   the test process and that dies with it (`PR_SET_PDEATHSIG` with SIGQUIT, the
//!   postmaster's immediate shutdown). `pg_ctl start` would detach the server, and
//!   a test process killed outright would leave it running.
//! - As root, the server runs as the `postgres` user (it refuses root), switched
//!   by the child itself before it execs (`Command::uid`), not by `runuser` or
//!   `su`: those fork, and the death signal would reach them rather than the
//!   server. The death signal is set after the switch, since a change of user
//!   clears it.
//! - `pgtemp` automates the same, through `pg_ctl`; `postgresql_embedded`
//!   downloads binaries and does not work offline.
//! - Databases are made with the `createdb` program, so that the kit needs no
//!   PostgreSQL client library of its own.
//! - The server trades durability for speed (`fsync=off`): the tests kill boardd,
//!   never the database server. A benchmark that measures commits starts its own
//!   with [`PgServer::start`] and `durable: true`.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
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
}

impl Default for PgOptions {
    fn default() -> PgOptions {
        PgOptions {
            listen: vec![IpAddr::V4(Ipv4Addr::LOCALHOST)],
            durable: false,
            max_connections: 300,
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

/// The server shared by every test of this process, started on first use.
pub fn shared() -> Result<&'static PgServer, PgError> {
    static SHARED: OnceLock<Result<PgServer, PgError>> = OnceLock::new();
    SHARED
        .get_or_init(|| match std::env::var("TEAMBOARD_PG_URL") {
            Ok(url) if !url.is_empty() => Ok(PgServer {
                base_url: url,
                data: None,
                pid: None,
            }),
            _ => PgServer::start(&PgOptions::default()),
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// A new, empty database on the shared server: its URL.
pub fn fresh_database() -> Result<String, PgError> {
    shared()?.create_database()
}

/// A fresh database for a test that needs one, or `None` after printing
/// `skipped: …` when there is no server; with `TEAMBOARD_REQUIRE_PG` set, no
/// server is a failure instead.
pub fn database_or_skip() -> Option<String> {
    match fresh_database() {
        Ok(url) => Some(url),
        Err(e) if std::env::var_os("TEAMBOARD_REQUIRE_PG").is_none() => {
            eprintln!("skipped: no PostgreSQL: {e}");
            None
        }
        Err(e) => panic!("TEAMBOARD_REQUIRE_PG is set and there is no PostgreSQL: {e}"),
    }
}

/// Whether the daemons this kit starts keep their board in PostgreSQL
/// (`TEAMBOARD_TEST_DATABASE=postgres`) rather than SQLite.
pub fn daemons_on_postgres() -> bool {
    std::env::var("TEAMBOARD_TEST_DATABASE").is_ok_and(|v| v == "postgres")
}

/// For a test about SQLite itself (its files, its WAL, a full disk under it):
/// true, after printing why, when the daemons run on PostgreSQL, and the test
/// should return.
pub fn sqlite_only(why: &str) -> bool {
    let skip = daemons_on_postgres();
    if skip {
        eprintln!("skipped on PostgreSQL: {why}");
    }
    skip
}

/// Makes the next start of the daemon with `state_dir` make a new lead
/// credential: its `lead.key` goes, and on PostgreSQL, where the database
/// holds the credential, the database's row too.
pub fn forget_lead_key(state_dir: &Path) {
    let file = state_dir.join("lead.key");
    std::fs::remove_file(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    if let boardd::store::Database::Postgres(url) = test_database(state_dir) {
        let out = Command::new(bin_dir().expect("PostgreSQL's programs").join("psql"))
            .arg(&url)
            .args(["-qc", "DELETE FROM secrets WHERE name = 'lead_key'"])
            .output()
            .expect("run psql");
        assert!(out.status.success(), "psql: {out:?}");
    }
}

/// The database of the daemon with `state_dir`: SQLite in it, or, under
/// `TEAMBOARD_TEST_DATABASE=postgres`, a fresh PostgreSQL database made the
/// first time the directory is seen and kept for it, so that a daemon
/// restarted on the same state finds its board. No server is a failure then:
/// the variable asked for one.
pub fn test_database(state_dir: &Path) -> boardd::store::Database {
    static MADE: Mutex<BTreeMap<PathBuf, String>> = Mutex::new(BTreeMap::new());
    if !daemons_on_postgres() {
        return boardd::store::Database::Sqlite;
    }
    let mut made = MADE.lock().unwrap_or_else(|p| p.into_inner());
    let url = made.entry(state_dir.to_path_buf()).or_insert_with(|| {
        fresh_database().unwrap_or_else(|e| {
            panic!("TEAMBOARD_TEST_DATABASE=postgres and there is no PostgreSQL: {e}")
        })
    });
    boardd::store::Database::Postgres(url.clone())
}

impl PgServer {
    /// Starts a private server in a temporary directory.
    pub fn start(options: &PgOptions) -> Result<PgServer, PgError> {
        let bin = bin_dir()?;
        let owner = Owner::find()?;
        sweep();
        let data = tempfile::Builder::new()
            .prefix(PREFIX)
            .tempdir()
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
        let port = free_port()?;
        let listen = (options.listen.iter())
            .map(IpAddr::to_string)
            .collect::<Vec<_>>()
            .join(",");
        let durable = if options.durable { "on" } else { "off" };
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
            .stdin(Stdio::null());
        let log = std::fs::File::create(data.path().join("server.log"))
            .map_err(|e| err(format!("cannot make PostgreSQL's log: {e}")))?;
        let log2 = log
            .try_clone()
            .map_err(|e| err(format!("cannot share PostgreSQL's log: {e}")))?;
        server.stdout(log).stderr(log2);
        teamboard_process::die_with_parent(&mut server, libc::SIGQUIT);
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
                let log = self
                    .log()
                    .map(|l| teamboard_process::tail(&l, 20))
                    .unwrap_or_default();
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
            while teamboard_process::alive(pid) && Instant::now() < deadline {
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
        if owner.is_some_and(|pid| !teamboard_process::alive(pid)) {
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

/// Where Debian keeps the server's programs: the newest version there.
fn bin_dir() -> Result<PathBuf, PgError> {
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

    fn give(&self, dir: &Path) -> Result<(), PgError> {
        if let Some((uid, gid)) = self.0 {
            std::os::unix::fs::chown(dir, Some(uid), Some(gid))
                .map_err(|e| err(format!("cannot give {} to postgres: {e}", dir.display())))?;
        }
        Ok(())
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

    #[test]
    fn the_server_starts_and_makes_databases() {
        let Some(a) = database_or_skip() else { return };
        let b = fresh_database().expect("create b");
        assert_ne!(a, b);
        let bin = bin_dir().expect("bin");
        let out = Command::new(bin.join("psql"))
            .arg(&a)
            .args(["-tAc", "SELECT 1 + 1"])
            .output()
            .expect("psql");
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "2", "{out:?}");
    }
}
