//! The lease row: take, renew, release, and a deposed term.

use super::*;

#[test]
fn take_renew_release_and_deposed() {
    let Some(url) = database() else { return };
    let mut db = connect(&url);
    let first = leadership::current(&mut db).expect("current");
    assert_eq!((first.term, first.live()), (0, false), "{first:?}");

    let a = leadership::take(&mut db, "a", "addr-a", LONG).expect("take");
    let Some(a) = a else {
        panic!("an unheld board is taken")
    };
    assert_eq!(
        leadership::take(&mut db, "b", "addr-b", LONG).expect("take"),
        None
    );
    assert_eq!(
        leadership::renew(&mut db, a, LONG).expect("renew"),
        Renewal::Held
    );
    let now = leadership::current(&mut db).expect("current");
    assert_eq!(
        (now.term, now.node.as_str(), now.addr.as_str()),
        (a, "a", "addr-a")
    );
    assert!(now.live(), "{now:?}");

    leadership::release(&mut db, a).expect("release");
    assert!(!leadership::current(&mut db).expect("current").live());
    let b = leadership::take(&mut db, "b", "addr-b", LONG).expect("take");
    let Some(b) = b else {
        panic!("a released board is taken at once")
    };
    assert!(b > a);
    assert_eq!(
        leadership::renew(&mut db, a, LONG).expect("renew"),
        Renewal::Deposed { term_now: b }
    );
    // A deposed term's release changes nothing.
    leadership::release(&mut db, a).expect("release");
    let now = leadership::current(&mut db).expect("current");
    assert_eq!((now.term, now.node.as_str(), now.live()), (b, "b", true));
}

#[test]
fn two_takers_at_once_one_wins() {
    let Some(url) = database() else { return };
    let rounds = 20;
    let barrier = Arc::new(Barrier::new(2));
    let takers: Vec<_> = ["a", "b"]
        .into_iter()
        .map(|node| {
            let (url, barrier) = (url.clone(), barrier.clone());
            std::thread::spawn(move || {
                let mut db = connect(&url);
                (0..rounds)
                    .map(|_| {
                        barrier.wait();
                        let won = leadership::take(&mut db, node, node, LONG).expect("take");
                        barrier.wait();
                        // Each round starts from a free board: the winner gives it up.
                        if let Some(term) = won {
                            leadership::release(&mut db, term).expect("release");
                        }
                        barrier.wait();
                        won
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let results: Vec<Vec<Option<i64>>> = takers
        .into_iter()
        .map(|t| t.join().expect("taker"))
        .collect();
    let mut terms = Vec::new();
    for round in 0..rounds {
        let won: Vec<i64> = results.iter().filter_map(|r| r[round]).collect();
        assert_eq!(won.len(), 1, "round {round}: {results:?}");
        terms.extend(won);
    }
    let expected: Vec<i64> = (1..=i64::try_from(rounds).expect("rounds")).collect();
    assert_eq!(terms, expected, "one new term per round");
}

#[test]
fn an_expired_lease_is_taken_and_its_term_deposed() {
    let Some(url) = database() else { return };
    let mut db = connect(&url);
    let lease = Duration::from_millis(300);
    let a = leadership::take(&mut db, "a", "addr-a", lease).expect("take");
    let Some(a) = a else { panic!("taken") };
    assert_eq!(
        leadership::take(&mut db, "b", "addr-b", lease).expect("take"),
        None
    );
    let taken_at = Instant::now();
    let b = eventually_blocking("the lease to run out", PATIENCE, || {
        leadership::take(&mut db, "b", "addr-b", LONG).expect("take")
    });
    assert!(
        taken_at.elapsed() >= lease / 2,
        "taken before the lease ran out"
    );
    assert_eq!(b, a + 1);
    assert_eq!(
        leadership::renew(&mut db, a, lease).expect("renew"),
        Renewal::Deposed { term_now: b }
    );
}
