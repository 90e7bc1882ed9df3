//! PostgreSQL's own: the fence, one boardd per database, the schema version,
//! the shared secrets, and calls made from inside a runtime. Each test skips
//! (printing `skipped: …`) without a server, unless `TEAMBOARD_REQUIRE_PG=1`.

use super::*;
use crate::store::tests::event;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use teamboard_board::Changes;
use teamboard_testkit::pg::database_or_skip;

fn open(url: &str) -> PgStore {
    PgStore::open(url).unwrap_or_else(|e| panic!("open: {e}"))
}

/// A connection of the test's own, as another boardd (or a person) would have.
fn other(url: &str) -> Client {
    Client::connect(url, postgres::NoTls).expect("connect")
}

fn events(store: &mut PgStore) -> Vec<u64> {
    let q = HistoryQuery {
        team: "default".into(),
        since: Some(0),
        task: None,
        limit: u64::MAX,
    };
    store
        .history(&q)
        .expect("history")
        .iter()
        .map(|e| e.seq)
        .collect()
}

fn batch(seq: u64) -> Changes {
    Changes {
        events: vec![event(seq, Some(seq))],
        ..Default::default()
    }
}

#[test]
fn a_deposed_boardd_writes_nothing_of_its_next_batch() {
    let Some(url) = database_or_skip() else {
        return;
    };
    let mut store = open(&url);
    store.set_fence(Some(0));
    store.commit([&batch(1)], [], []).expect("the term holds");
    // Another boardd takes over.
    other(&url)
        .execute("UPDATE leadership SET term = term + 1 WHERE id = 1", &[])
        .expect("bump the term");
    let row = CredentialRow {
        team: "default".into(),
        name: "ana".into(),
        digest: [7; 32],
    };
    match store.commit([&batch(2)], [&row], []) {
        Err(StoreError::Deposed {
            held: 0, now: 1, ..
        }) => {}
        other => panic!("expected Deposed {{ held: 0, now: 1 }}, got {other:?}"),
    }
    drop(store);
    let mut store = open(&url);
    assert_eq!(events(&mut store), vec![1], "the refused batch was written");
    assert_eq!(store.credentials().expect("credentials"), vec![]);
    // Holding the term that is current, it commits again.
    store.set_fence(Some(1));
    store
        .commit([&batch(2)], [], [])
        .expect("the new term holds");
    assert_eq!(events(&mut store), vec![1, 2]);
}

/// The events and credentials in the database, as another connection sees
/// them: only what was committed.
fn committed(url: &str) -> (Vec<i64>, Vec<String>) {
    fn column<T: for<'a> postgres::types::FromSql<'a>>(c: &mut Client, sql: &str) -> Vec<T> {
        let rows = c.query(sql, &[]).unwrap_or_else(|e| panic!("{sql}: {e}"));
        rows.iter().map(|r| r.get(0)).collect()
    }
    let mut c = other(url);
    let events = column(&mut c, "SELECT seq FROM events ORDER BY seq");
    let names = column(&mut c, "SELECT name FROM credentials ORDER BY name");
    (events, names)
}

fn credential(name: &str) -> CredentialRow {
    CredentialRow {
        team: "default".into(),
        name: name.into(),
        digest: [7; 32],
    }
}

/// A refused commit lets the leadership row go at once, so the boardd taking
/// over is not kept waiting, and the same store, holding the new term, commits.
#[test]
fn after_a_refused_fence_the_row_is_free_and_the_same_store_commits() {
    let Some(url) = database_or_skip() else {
        return;
    };
    let mut store = open(&url);
    store.set_fence(Some(0));
    store.commit([&batch(1)], [], []).expect("the term holds");
    let take = "SET lock_timeout = '2s'; UPDATE leadership SET term = term + 1 WHERE id = 1";
    other(&url).batch_execute(take).expect("a takeover");
    match store.commit([&batch(2)], [&credential("ana")], []) {
        Err(StoreError::Deposed {
            held: 0, now: 1, ..
        }) => {}
        other => panic!("expected Deposed {{ held: 0, now: 1 }}, got {other:?}"),
    }
    // A transaction left open would hold the row `FOR SHARE` past the timeout.
    other(&url)
        .batch_execute(take)
        .expect("the next takeover finds the row free");
    store.set_fence(Some(2));
    store
        .commit([&batch(3)], [&credential("bo")], [])
        .expect("the same store, at the current term");
    assert_eq!(committed(&url), (vec![1, 3], vec!["bo".to_string()]));
}

/// A group whose statement fails after an earlier one wrote rows leaves none of
/// them, and the same store commits the next group, with or without a fence.
#[test]
fn after_a_statement_fails_half_way_the_same_store_commits_the_next_group() {
    for fence in [None, Some(0)] {
        let Some(url) = database_or_skip() else {
            return;
        };
        let mut store = open(&url);
        store.set_fence(fence);
        store.commit([&batch(1)], [], []).expect("first");
        // Credentials are written after events: the group's event is in the
        // transaction when its credential is refused.
        store.execute_raw(
            "ALTER TABLE credentials ADD CONSTRAINT refused CHECK (name <> 'mallory')",
            &[],
        );
        match store.commit([&batch(2)], [&credential("mallory")], []) {
            Err(e) => {
                // The message carries the server's words, not only "db error".
                let said = e.to_string();
                assert!(said.contains("\"refused\""), "{fence:?}: {said}");
                let StoreError::Postgres { error, .. } = e else {
                    panic!("{fence:?}: expected the check to refuse, got {said}")
                };
                let constraint = error.as_db_error().and_then(|e| e.constraint());
                assert_eq!(constraint, Some("refused"), "{fence:?}: {error:?}");
            }
            Ok(()) => panic!("{fence:?}: expected the check to refuse"),
        }
        store
            .commit([&batch(3)], [&credential("ana")], [])
            .unwrap_or_else(|e| panic!("{fence:?}: the next group: {e:?}"));
        let want = (vec![1, 3], vec!["ana".to_string()]);
        assert_eq!(committed(&url), want, "{fence:?}");
    }
}

/// A commit's round trips, counted on the wire: between the store and the
/// server, a proxy counts the server's ReadyForQuery messages, one for each
/// exchange (a simple query, or an extended one ending in Sync). The blocking
/// client waits out each exchange before the next, save one: a dropped
/// statement's Close, sent without waiting (a `&str` query drops the statement
/// it prepared). A commit drops none, so its count is its round trips.
struct RoundTrips {
    /// The database through the proxy, as a key-value connection string.
    url: String,
    ready: Arc<AtomicUsize>,
}

impl RoundTrips {
    fn new(url: &str) -> RoundTrips {
        let config: postgres::Config = url.parse().expect("a URL");
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the proxy");
        let port = listener.local_addr().expect("the proxy's port").port();
        let quote = |s: &str| format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"));
        let mut proxied = format!("host=127.0.0.1 port={port}");
        if let Some(db) = config.get_dbname() {
            proxied += &format!(" dbname={}", quote(db));
        }
        if let Some(user) = config.get_user() {
            proxied += &format!(" user={}", quote(user));
        }
        if let Some(password) = config.get_password() {
            proxied += &format!(" password={}", quote(&String::from_utf8_lossy(password)));
        }
        let ready = Arc::new(AtomicUsize::new(0));
        let counted = ready.clone();
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { return };
                let (from_server, to_server) = upstream(&config);
                let to_client = client.try_clone().expect("clone the client's socket");
                std::thread::spawn(move || copy(client, to_server, |_| {}));
                let counted = counted.clone();
                std::thread::spawn(move || {
                    let mut pending = Vec::new();
                    copy(from_server, to_client, |chunk| {
                        // Counted before the chunk is forwarded: once the
                        // client has its answer, the count holds it.
                        pending.extend_from_slice(chunk);
                        while let Some(len) = (pending.get(1..5))
                            .map(|l| 1 + u32::from_be_bytes(l.try_into().expect("4")) as usize)
                            .filter(|len| pending.len() >= *len)
                        {
                            if pending[0] == b'Z' {
                                counted.fetch_add(1, Ordering::SeqCst);
                            }
                            pending.drain(..len);
                        }
                    })
                });
            }
        });
        RoundTrips {
            url: proxied,
            ready,
        }
    }

    fn count(&self) -> usize {
        self.ready.load(Ordering::SeqCst)
    }
}

/// The test's server, as two halves.
fn upstream(config: &postgres::Config) -> (Box<dyn Read + Send>, Box<dyn Write + Send>) {
    let port = config.get_ports().first().copied().unwrap_or(5432);
    match config.get_hosts().first() {
        Some(postgres::config::Host::Unix(dir)) => {
            let s = UnixStream::connect(dir.join(format!(".s.PGSQL.{port}"))).expect("connect");
            (Box::new(s.try_clone().expect("clone")), Box::new(s))
        }
        host => {
            let host = match host {
                Some(postgres::config::Host::Tcp(name)) => name.as_str(),
                _ => "localhost",
            };
            let s = TcpStream::connect((host, port)).expect("connect");
            (Box::new(s.try_clone().expect("clone")), Box::new(s))
        }
    }
}

/// Forwards until either side closes, showing `seen` each chunk first.
fn copy(mut from: impl Read, mut to: impl Write, mut seen: impl FnMut(&[u8])) {
    let mut buf = [0; 16 * 1024];
    while let Ok(n @ 1..) = from.read(&mut buf) {
        seen(&buf[..n]);
        if to.write_all(&buf[..n]).is_err() {
            return;
        }
    }
}

/// BEGIN and the fence share a round trip: a commit of one table is three,
/// fenced or not, and a refused one two (BEGIN with the fence, ROLLBACK).
#[test]
fn a_commit_of_one_table_is_three_round_trips_fenced_or_not() {
    let Some(url) = database_or_skip() else {
        return;
    };
    let trips = RoundTrips::new(&url);
    let mut store = open(&trips.url);
    let commit = |store: &mut PgStore, seq| {
        let before = trips.count();
        let done = store.commit([&batch(seq)], [], []);
        (done, trips.count() - before)
    };
    // The first commit prepares the events' statement, once per connection.
    commit(&mut store, 1).0.expect("first");
    store.set_fence(Some(0));
    let (done, fenced) = commit(&mut store, 2);
    done.expect("fenced");
    assert_eq!(
        fenced, 3,
        "fenced: BEGIN with the fence, the events, COMMIT"
    );
    store.set_fence(None);
    let (done, alone) = commit(&mut store, 3);
    done.expect("alone");
    assert_eq!(alone, 3, "no fence: BEGIN, the events, COMMIT");
    other(&url)
        .execute("UPDATE leadership SET term = term + 1 WHERE id = 1", &[])
        .expect("a takeover");
    store.set_fence(Some(0));
    let (done, refused) = commit(&mut store, 4);
    assert!(matches!(done, Err(StoreError::Deposed { .. })), "{done:?}");
    assert_eq!(refused, 2, "refused: BEGIN with the fence, ROLLBACK");
}

#[test]
fn a_second_boardd_on_the_database_is_refused_until_the_first_is_gone() {
    let Some(url) = database_or_skip() else {
        return;
    };
    let first = open(&url);
    match PgStore::open(&url) {
        Err(e @ StoreError::InUse { .. }) => {
            let why = e.to_string();
            assert!(why.contains("another boardd"), "{why}");
            assert!(why.contains(&redact(&url)), "{why}");
            assert!(!why.contains("postgres://"), "{why}");
        }
        Err(e) => panic!("expected InUse, got {e}"),
        Ok(_) => panic!("a second boardd opened the database"),
    }
    drop(first);
    open(&url);
}

#[test]
fn a_database_from_a_newer_boardd_is_refused() {
    let Some(url) = database_or_skip() else {
        return;
    };
    drop(open(&url));
    other(&url)
        .execute(
            "UPDATE meta SET value = 99 WHERE key = 'schema_version'",
            &[],
        )
        .expect("as a newer boardd left it");
    match PgStore::open(&url) {
        Err(StoreError::TooNew {
            found: 99, known, ..
        }) if known == schema::SCHEMA_VERSION => {}
        Err(e) => panic!("expected TooNew, got {e}"),
        Ok(_) => panic!("a newer schema was opened"),
    }
}

#[test]
fn the_first_secret_stored_is_the_one_every_boardd_reads() {
    let Some(url) = database_or_skip() else {
        return;
    };
    let mut store = open(&url);
    assert_eq!(store.shared_secret("lead_key", "a").expect("first"), "a");
    assert_eq!(store.shared_secret("lead_key", "b").expect("again"), "a");
    drop(store);
    let mut store = open(&url);
    assert_eq!(store.shared_secret("lead_key", "c").expect("reopened"), "a");
}

#[tokio::test]
async fn the_store_works_from_inside_a_runtime() {
    let Some(url) = database_or_skip() else {
        return;
    };
    // Each of these would panic in the client's own `block_on` if it ran on
    // this thread, which drives the test's runtime.
    let mut store = open(&url);
    store.commit([&batch(1)], [], []).expect("commit");
    assert_eq!(events(&mut store), vec![1]);
    assert_eq!(store.load().expect("load").next_event_seq, 2);
    drop(store);
    // And the drop let the database go at once.
    drop(open(&url));
}

#[test]
fn a_url_is_shown_without_its_password() {
    let shown = redact("postgres://ana:hunter2@db.example:5432/board");
    assert_eq!(shown, "postgres database 'board' on db.example");
    assert!(!redact("postgres://ana:hunter2@[bad").contains("hunter2"));
    assert!(matches!(
        crate::store::Database::from_url("mysql://ana:hunter2@h/db"),
        Err(StoreError::Url { url }) if !url.contains("hunter2")
    ));
}

/// A boardd started alone on a database that several share is refused, and
/// the leaders of a shared database are refused beside a boardd alone; two
/// leaders' stores (the fence keeps them apart) open side by side.
#[test]
fn a_boardd_alone_and_the_leaders_of_a_shared_database_exclude_each_other() {
    let Some(url) = database_or_skip() else {
        return;
    };
    let fence = |term| crate::store::Fence {
        term,
        lease: Duration::from_secs(3),
    };
    let leader = PgStore::open_fenced(&url, fence(1)).expect("a leader");
    match PgStore::open(&url) {
        Err(StoreError::InUse { .. }) => {}
        Err(e) => panic!("expected InUse, got {e}"),
        Ok(_) => panic!("a boardd alone opened a database its leader holds"),
    }
    // A cut-off leader's stale session does not keep its successor out.
    let successor = PgStore::open_fenced(&url, fence(2)).expect("the next leader");
    drop((leader, successor));
    let alone = open(&url);
    match PgStore::open_fenced(&url, fence(3)) {
        Err(StoreError::InUse { .. }) => {}
        Err(e) => panic!("expected InUse, got {e}"),
        Ok(_) => panic!("a leader opened a database a boardd alone holds"),
    }
    drop(alone);
    PgStore::open_fenced(&url, fence(3)).expect("free again");
}
