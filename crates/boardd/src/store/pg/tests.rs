//! PostgreSQL's own: the fence, one boardd per database, the schema version,
//! the shared secrets, and calls made from inside a runtime. Each test skips
//! (printing `skipped: …`) without a server, unless `TEAMBOARD_REQUIRE_PG=1`.

use super::*;
use crate::store::tests::event;
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
