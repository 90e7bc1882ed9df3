//! The tests' PostgreSQL: one server per test process, and a fresh database
//! per test.
//!
//! [`shared`] starts one [`PgServer`] (see `teamboard_process::pg`) the first
//! time a test asks; [`fresh_database`] creates an empty database on it and
//! returns its URL, so tests running at once never share a board.
//! `TEAMBOARD_PG_URL` names an existing server instead (its URL's database is
//! the one new databases are created from); nothing is started then.
//! `TEAMBOARD_TEST_DATABASE=postgres` puts every daemon this kit starts on a
//! database of its own ([`test_database`]).
//!
//! [`tls_database_or_skip`] makes a database on a second server, started by
//! this kit whatever `TEAMBOARD_PG_URL` says, that serves TLS with a
//! certificate from [`TestCerts`].

use crate::TestCerts;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};
pub use teamboard_process::pg::bin_dir;
pub use teamboard_process::pg::{PgError, PgOptions, PgServer, PgTls};

/// The server shared by every test of this process, started on first use.
pub fn shared() -> Result<&'static PgServer, PgError> {
    static SHARED: OnceLock<Result<PgServer, PgError>> = OnceLock::new();
    SHARED
        .get_or_init(|| match std::env::var("TEAMBOARD_PG_URL") {
            Ok(url) if !url.is_empty() => Ok(PgServer::existing(url)),
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
    or_skip(fresh_database())
}

fn or_skip<T>(found: Result<T, PgError>) -> Option<T> {
    match found {
        Ok(found) => Some(found),
        Err(e) if std::env::var_os("TEAMBOARD_REQUIRE_PG").is_none() => {
            eprintln!("skipped: no PostgreSQL: {e}");
            None
        }
        Err(e) => panic!("TEAMBOARD_REQUIRE_PG is set and there is no PostgreSQL: {e}"),
    }
}

/// A fresh database on a server that serves TLS (`ssl = on`).
#[derive(Debug, Clone)]
pub struct TlsDatabase {
    /// `postgres://postgres@127.0.0.1:PORT/DB`, with no options: the test
    /// adds its `sslmode` and `sslrootcert`.
    pub url: String,
    /// `certs.ca` signed the server's certificate (for 127.0.0.1 and
    /// `localhost`); `certs.other_ca` did not.
    pub certs: TestCerts,
}

/// A fresh database on the TLS server shared by this process's tests, or
/// `None` as [`database_or_skip`] says.
pub fn tls_database_or_skip() -> Option<TlsDatabase> {
    static SHARED: OnceLock<Result<(PgServer, TestCerts), PgError>> = OnceLock::new();
    let shared = SHARED.get_or_init(|| {
        // Kept for the process's life, as the server is (a static is never
        // dropped). Named and marked as the servers' own directories are, so
        // that a later start's sweep removes it once this process has ended.
        let fail =
            |e: std::io::Error| PgError(format!("cannot make the certificates' directory: {e}"));
        let dir = (tempfile::Builder::new().prefix("tb-pg-certs-").tempdir())
            .map_err(fail)?
            .keep();
        std::fs::write(dir.join("owner"), std::process::id().to_string()).map_err(fail)?;
        let certs = TestCerts::make(&dir);
        let tls = PgTls {
            cert: certs.cert.clone(),
            key: certs.key.clone(),
        };
        let options = PgOptions {
            tls: Some(tls),
            ..PgOptions::default()
        };
        Ok((PgServer::start(&options)?, certs))
    });
    let made = (shared.as_ref().map_err(Clone::clone))
        .and_then(|(server, certs)| Ok((server.create_database()?, certs.clone())));
    or_skip(made).map(|(url, certs)| TlsDatabase { url, certs })
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

#[cfg(test)]
mod tests {
    use super::*;

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
