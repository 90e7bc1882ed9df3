//! A follower's watch on the lease row: NOTIFY, a lease that runs out, a lost
//! connection.

use super::*;

/// A runtime for waiting on the watch from a blocking test.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

/// Waits up to `within` for the watch to publish a leader that `ok` accepts.
fn wait_leader(
    leaders: &mut watch::Leaders,
    within: Duration,
    ok: impl FnMut(&Option<Leader>) -> bool,
) -> Leader {
    let seen = runtime().block_on(async {
        let seen = tokio::time::timeout(within, leaders.wait_for(ok)).await;
        seen.map(|l| l.map(|l| l.clone()))
    });
    let Ok(seen) = seen else {
        panic!("no such leader within {within:?}: {:?}", *leaders.borrow());
    };
    let leader = seen.expect("the watch thread runs");
    leader.expect("a leader was read")
}

#[test]
fn a_take_reaches_a_follower_by_notify() {
    let Some(url) = database() else { return };
    let mut leaders = watch::spawn(url.clone(), LONG).expect("watch");
    wait_leader(&mut leaders, PATIENCE, |l| l.is_some());
    let mut db = connect(&url);
    // Listening is in place once the first read is published; the take's NOTIFY
    // is the only thing that can wake the watch well before its 60 s re-read.
    let term = leadership::take(&mut db, "a", "addr-a", LONG)
        .expect("take")
        .expect("taken");
    let sent = Instant::now();
    let seen = wait_leader(&mut leaders, Duration::from_secs(5), |l| {
        l.as_ref().is_some_and(|l| l.term == term)
    });
    eprintln!("NOTIFY to follower: {:?}", sent.elapsed());
    assert_eq!((seen.node.as_str(), seen.live()), ("a", true));
    leadership::release(&mut db, term).expect("release");
    let seen = wait_leader(&mut leaders, Duration::from_secs(5), |l| {
        l.as_ref().is_some_and(|l| !l.live())
    });
    assert_eq!(seen.term, term);
}

#[test]
fn a_follower_sees_a_lease_run_out_without_any_announcement() {
    let Some(url) = database() else { return };
    let mut db = connect(&url);
    let lease = Duration::from_millis(300);
    let term = leadership::take(&mut db, "a", "addr-a", lease)
        .expect("take")
        .expect("taken");
    let mut leaders = watch::spawn(url.clone(), LONG).expect("watch");
    wait_leader(&mut leaders, PATIENCE, |l| {
        l.as_ref().is_some_and(Leader::live)
    });
    let seen = wait_leader(&mut leaders, Duration::from_secs(5), |l| {
        l.as_ref().is_some_and(|l| !l.live())
    });
    assert_eq!(seen.term, term);
}

#[test]
fn a_follower_catches_up_after_its_connection_is_killed() {
    let Some(url) = database() else { return };
    let mut leaders = watch::spawn(url.clone(), LONG).expect("watch");
    wait_leader(&mut leaders, PATIENCE, |l| l.is_some());
    let mut db = connect(&url);
    // The row changes, with no announcement, in the transaction that kills the
    // watch's connection; the table lock holds the watch's re-read until the
    // change is committed. Only the re-read after reconnecting can find it: the
    // next timed one is a minute away.
    let mut tx = db.transaction().expect("begin");
    tx.batch_execute(
        "LOCK TABLE leadership IN ACCESS EXCLUSIVE MODE;
         UPDATE leadership SET term = 7, node = 'x', addr = 'addr-x',
                expires = now() + interval '1 hour' WHERE id = 1",
    )
    .expect("change the row");
    let killed = tx
        .query_one(
            // OFFSET 0 keeps the filter apart from the kill: the planner may
            // otherwise call it on every row, this connection's too.
            "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid, 5000))
               FROM (SELECT pid FROM pg_stat_activity WHERE application_name = $1
                        AND datname = current_database() OFFSET 0) AS watching",
            &[&watch::PURPOSE],
        )
        .expect("kill the watch's connection");
    assert_eq!(killed.get::<_, i64>(0), 1);
    tx.commit().expect("commit");
    let seen = wait_leader(&mut leaders, Duration::from_secs(10), |l| {
        l.as_ref().is_some_and(|l| l.term == 7)
    });
    assert_eq!((seen.node.as_str(), seen.live()), ("x", true));
}
