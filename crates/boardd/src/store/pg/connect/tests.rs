//! The URL's TLS options, and connections to a server that serves TLS (started
//! by the kit with a certificate it makes). The server tests skip (printing
//! `skipped: …`) without PostgreSQL, unless `TEAMBOARD_REQUIRE_PG=1`.

use super::*;
use crate::store::StoreError;
use crate::store::pg::PgStore;
use teamboard_board::Changes;
use teamboard_testkit::pg::{TlsDatabase, database_or_skip, tls_database_or_skip};

/// `db`'s URL with `query` as its options.
fn with(db: &TlsDatabase, query: &str) -> String {
    format!("{}?{query}", db.url)
}

fn ca(db: &TlsDatabase) -> String {
    format!("sslrootcert={}", db.certs.ca.display())
}

/// Whether the server sees this connection as TLS: `pg_stat_ssl`, not merely
/// that it connected.
fn is_tls(client: &mut Client) -> bool {
    let row = client.query_one(
        "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
        &[],
    );
    row.and_then(|r| r.try_get(0)).expect("pg_stat_ssl")
}

fn refusal(url: &str) -> String {
    match target(url).and_then(|t| t.connect()) {
        Ok(_) => panic!("{url}: connected"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn the_tls_options_are_taken_out_of_the_url_and_the_rest_kept() {
    let url = "postgres://ana:p%3Fw?d@db.example:5/board?application_name=x\
               &sslmode=verify-full&sslrootcert=%2Fetc%2Fmy%20ca.pem&connect_timeout=3";
    let (rest, mode, root) = take_options(url);
    assert_eq!(
        rest,
        "postgres://ana:p%3Fw?d@db.example:5/board?application_name=x&connect_timeout=3"
    );
    assert_eq!(mode.as_deref(), Some("verify-full"));
    assert_eq!(root.as_deref(), Some("/etc/my ca.pem"));
    let (rest, mode, root) = take_options("postgresql://h/db?sslmode=require");
    assert_eq!(
        (rest.as_str(), mode.as_deref(), root),
        ("postgresql://h/db", Some("require"), None)
    );
    let plain = "postgres://ana@h/db";
    assert_eq!(take_options(plain), (plain.to_string(), None, None));
}

#[test]
fn a_mode_boardd_does_not_know_and_a_ca_without_tls_are_refused() {
    let refused = |url: &str| parse(url).err().map(|e| e.to_string()).unwrap_or_default();
    let why = refused("postgres://h/db?sslmode=verify-some");
    assert!(
        why.contains("sslmode=verify-some") && why.contains("verify-full"),
        "{why}"
    );
    for url in [
        "postgres://h/db?sslrootcert=/ca.pem",
        "postgres://h/db?sslmode=prefer&sslrootcert=/ca.pem",
    ] {
        let why = refused(url);
        assert!(why.contains("makes no TLS connection"), "{url}: {why}");
    }
}

#[test]
fn a_url_with_tls_options_is_still_shown_without_its_password() {
    let shown = crate::store::pg::redact(
        "postgres://ana:hunter2@db.example/board?sslmode=verify-full&sslrootcert=/ca.pem",
    );
    assert_eq!(shown, "postgres database 'board' on db.example");
}

#[test]
fn a_ca_file_that_does_not_load_is_named() {
    let dir = teamboard_testkit::short_tempdir();
    let empty = dir.path().join("empty.pem");
    std::fs::write(&empty, "not a certificate\n").expect("write");
    for (path, what) in [
        (dir.path().join("missing.pem"), "No such file"),
        (empty, "no certificate"),
    ] {
        let url = format!(
            "postgres://h/db?sslmode=require&sslrootcert={}",
            path.display()
        );
        let why = target(&url)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(why.contains(&path.display().to_string()), "{why}");
        assert!(why.contains(what) && why.contains("sslrootcert"), "{why}");
    }
}

/// libpq ignores `sslmode` on a Unix socket, where PostgreSQL serves no TLS.
#[test]
fn a_unix_socket_is_plain_whatever_the_mode() {
    let url =
        "postgresql://ana@/board?host=/run/postgresql&sslmode=verify-full&sslrootcert=/nowhere.pem";
    let target = target(url).unwrap_or_else(|e| panic!("{e}"));
    assert!(target.tls.is_none());
    assert_eq!(target.config.get_ssl_mode(), SslMode::Disable);
}

#[test]
fn the_store_and_the_leadership_connections_are_tls_with_require() {
    let Some(db) = tls_database_or_skip() else {
        return;
    };
    let url = with(&db, &format!("sslmode=require&{}", ca(&db)));
    let mut store = PgStore::open(&url).unwrap_or_else(|e| panic!("open: {e}"));
    let batch = Changes {
        events: vec![crate::store::tests::event(1, Some(1))],
        ..Default::default()
    };
    store.commit([&batch], [], []).expect("commit");
    assert!(
        is_tls(store.client().expect("client")),
        "the store's connection is plain"
    );
    assert_eq!(store.load().expect("load").next_event_seq, 2);
    let mut lease = crate::cluster::leadership::connect(&url, "test").expect("leadership");
    assert!(is_tls(&mut lease), "the leadership connection is plain");
}

#[test]
fn verify_full_with_a_host_name_connects_over_tls() {
    let Some(db) = tls_database_or_skip() else {
        return;
    };
    // The certificate names `localhost` as well as 127.0.0.1.
    let url = with(&db, &format!("sslmode=verify-full&{}", ca(&db)))
        .replace("@127.0.0.1:", "@localhost:");
    let mut client = target(&url)
        .and_then(|t| t.connect())
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(is_tls(&mut client));
}

#[test]
fn a_certificate_from_another_ca_is_refused_naming_the_host_and_the_ca() {
    let Some(db) = tls_database_or_skip() else {
        return;
    };
    let other = db.certs.other_ca.display().to_string();
    let why = refusal(&with(&db, &format!("sslmode=require&sslrootcert={other}")));
    assert!(why.contains("does not verify"), "{why}");
    assert!(why.contains("127.0.0.1") && why.contains(&other), "{why}");
    // Through the store, the message names the database too.
    match PgStore::open(&with(
        &db,
        &format!("sslmode=verify-ca&sslrootcert={other}"),
    )) {
        Err(e @ StoreError::Connect { .. }) => {
            let why = e.to_string();
            assert!(
                why.contains("postgres database 'tb_") && why.contains(&other),
                "{why}"
            );
        }
        Err(e) => panic!("expected a refused certificate, got {e}"),
        Ok(_) => panic!("opened with a certificate from another CA"),
    }
}

/// `require` checks the host name too, unlike libpq's: the server's
/// certificate names 127.0.0.1 and `localhost`, not the host the URL asks for.
#[test]
fn require_checks_the_host_name() {
    let Some(db) = tls_database_or_skip() else {
        return;
    };
    let url = with(
        &db,
        &format!("hostaddr=127.0.0.1&sslmode=require&{}", ca(&db)),
    )
    .replace("@127.0.0.1:", "@db.example:");
    let why = refusal(&url);
    assert!(
        why.contains("does not verify") && why.contains("db.example"),
        "{why}"
    );
}

#[test]
fn without_sslmode_or_with_prefer_a_tls_server_is_reached_in_plain_text() {
    let Some(db) = tls_database_or_skip() else {
        return;
    };
    for url in [db.url.clone(), with(&db, "sslmode=prefer")] {
        let mut client = target(&url)
            .and_then(|t| t.connect())
            .unwrap_or_else(|e| panic!("{url}: {e}"));
        assert!(!is_tls(&mut client), "{url}: TLS");
    }
}

#[test]
fn require_is_refused_by_a_server_without_tls() {
    if std::env::var_os("TEAMBOARD_PG_URL").is_some() {
        eprintln!("skipped: TEAMBOARD_PG_URL names a server that may serve TLS");
        return;
    }
    let (Some(db), Some(plain)) = (tls_database_or_skip(), database_or_skip()) else {
        return;
    };
    let why = refusal(&format!("{plain}?sslmode=require&{}", ca(&db)));
    assert!(why.contains("does not support TLS"), "{why}");
}
