//! Liveness derived from facts: every state, its age, the stall found by time
//! passing, and the client that predates `ping` never called stalled for it.

use super::*;
use teamboard_protocol::request::RegisterArgs;
use teamboard_protocol::{EventKind, LiveState, Liveness};

/// Registers `m` declaring a beat of `beat_ms` (`None`: a client that predates it).
fn join_beating(h: &mut H, name: &'static str, beat_ms: Option<u64>) -> Mate {
    let m = h.stranger(TEAM, name);
    let ctx = h.ctx(m);
    let args = RegisterArgs {
        role: "dev".into(),
        beat_ms,
        ..RegisterArgs::default()
    };
    h.board.register_with(ctx, &args).unwrap();
    m
}

fn live(h: &H, m: Mate) -> Liveness {
    h.member(m).liveness.expect("boardd derived a liveness")
}

/// Settles the batch and returns its liveness events' details.
fn settle(h: &mut H) -> Vec<String> {
    let now = h.now();
    h.board.settle_liveness(now);
    h.events()
        .into_iter()
        .filter(|e| e.kind == EventKind::MemberStatus && e.actor == "boardd")
        .map(|e| e.detail)
        .collect()
}

fn expire(h: &mut H) {
    let now = h.now();
    h.board.expire(now);
}

#[test]
fn each_state_follows_the_facts_with_the_moment_it_began() {
    let mut h = H::new();
    let ann = join_beating(&mut h, "ann", Some(1000));
    assert_eq!(live(&h, ann).state, LiveState::Starting);
    assert_eq!(live(&h, ann).since, WALL0);
    assert_eq!(
        settle(&mut h),
        Vec::<String>::new(),
        "member_registered says it"
    );

    h.advance(secs(1));
    let ctx = h.ctx(ann);
    h.board.touch(&ctx);
    h.board.park(ctx, 7, None).unwrap();
    assert_eq!(settle(&mut h), vec!["ann is now idle"]);
    assert_eq!(live(&h, ann).since, WALL0 + 1000);

    h.advance(secs(1));
    let id = h.add("build");
    h.dispatch();
    assert_eq!(settle(&mut h), vec!["ann is now working"]);
    let epoch = h.task(id).epoch;

    let ctx = h.ctx(ann);
    let plan = h.board.submit_plan(ctx, id, epoch, "do it".into()).unwrap();
    assert_eq!(settle(&mut h), vec!["ann is now awaiting_approval"]);
    let lead = h.lead();
    h.board.review_plan(lead, plan.id, true, None).unwrap();
    assert_eq!(settle(&mut h), vec!["ann is now working"]);

    h.advance(secs(1));
    let now = h.now();
    h.board.disconnect(ann.session, now);
    assert_eq!(settle(&mut h), vec!["ann is now offline"]);
    assert_eq!(live(&h, ann).since, WALL0 + 3000);

    h.board
        .process_exited(TEAM, "ann", ann.session, Some("killed by SIGKILL".into()));
    assert_eq!(settle(&mut h), vec!["ann is now dead (killed by SIGKILL)"]);
    let dead = live(&h, ann);
    assert_eq!(dead.exit.as_deref(), Some("killed by SIGKILL"));
    assert_eq!(dead.last_heartbeat, Some(WALL0 + 1000), "its last request");
}

#[test]
fn a_silent_member_is_stalled_at_twice_its_beat_and_back_when_heard() {
    let mut h = H::new();
    let ann = join_beating(&mut h, "ann", Some(1000));
    let ctx = h.ctx(ann);
    h.board.park(ctx, 1, None).unwrap();
    settle(&mut h);
    assert_eq!(h.board.next_deadline(), Some(h.at(secs(2)).mono));

    h.advance(Duration::from_millis(1999));
    expire(&mut h);
    assert_eq!(settle(&mut h), Vec::<String>::new());
    h.advance(Duration::from_millis(1));
    expire(&mut h);
    assert_eq!(
        settle(&mut h),
        vec!["ann is now stalled (last heard 2s ago)"]
    );
    assert_eq!(live(&h, ann).state, LiveState::Stalled);
    assert_eq!(
        h.board.next_deadline(),
        None,
        "no timer for a member already stalled"
    );

    h.advance(secs(5));
    let ctx = h.ctx(ann);
    h.board.touch(&ctx);
    assert_eq!(settle(&mut h), vec!["ann is now idle"]);
    assert_eq!(live(&h, ann).last_heartbeat, Some(WALL0 + 7000));
    assert_eq!(h.board.next_deadline(), Some(h.at(secs(9)).mono));
}

#[test]
fn a_request_under_the_name_from_another_session_is_not_the_member_heard() {
    let mut h = H::new();
    let ann = join_beating(&mut h, "ann", Some(1000));
    settle(&mut h);
    h.advance(secs(2));
    expire(&mut h);
    assert_eq!(settle(&mut h).len(), 1);
    let other = h.stranger(TEAM, "ann");
    let ctx = h.ctx(other);
    h.board.touch(&ctx);
    assert_eq!(settle(&mut h), Vec::<String>::new());
    assert_eq!(live(&h, ann).state, LiveState::Stalled);
}

#[test]
fn a_client_without_a_beat_is_never_stalled_for_its_silence() {
    let mut h = H::new();
    let ann = join_beating(&mut h, "ann", None);
    let ctx = h.ctx(ann);
    h.board.park(ctx, 1, None).unwrap();
    settle(&mut h);
    assert_eq!(h.board.next_deadline(), None);
    h.advance(secs(3600));
    expire(&mut h);
    assert_eq!(settle(&mut h), Vec::<String>::new());
    assert_eq!(live(&h, ann).state, LiveState::Idle);
}

#[test]
fn a_lease_that_runs_out_on_a_connected_holder_stalls_it_until_heard() {
    let mut h = H::new();
    let ann = join_beating(&mut h, "ann", None);
    let id = h.add("build");
    h.claim_next(ann).unwrap();
    assert_eq!(settle(&mut h), vec!["ann is now working"]);
    let ttl = h.board.config().lease_ttl;
    h.advance(ttl);
    expire(&mut h);
    assert_eq!(h.task(id).owner, None, "the claim went back");
    assert_eq!(
        settle(&mut h),
        vec!["ann is now stalled (last heard 30s ago)"]
    );
    let ctx = h.ctx(ann);
    h.board.touch(&ctx);
    assert_eq!(settle(&mut h), vec!["ann is now idle"]);
}

#[test]
fn the_exit_of_a_process_that_registered_before_does_not_kill_the_new_one() {
    let mut h = H::new();
    let old = join_beating(&mut h, "ann", Some(1000));
    let now = h.now();
    h.board.disconnect(old.session, now);
    let new = join_beating(&mut h, "ann", Some(1000));
    settle(&mut h);
    h.board.process_exited(TEAM, "ann", old.session, None);
    assert_eq!(settle(&mut h), Vec::<String>::new());
    assert_eq!(live(&h, new).state, LiveState::Starting);
    // The process found gone before its socket closed is dead all the same.
    h.board.process_exited(TEAM, "ann", new.session, None);
    assert_eq!(settle(&mut h), vec!["ann is now dead"]);
    assert_eq!(live(&h, new).exit, None);
}

#[test]
fn a_restart_keeps_the_dead_dead_and_makes_the_rest_offline() {
    let mut h = H::new();
    let ann = join_beating(&mut h, "ann", Some(1000));
    let bob = join_beating(&mut h, "bob", Some(1000));
    h.board.process_exited(
        TEAM,
        "ann",
        ann.session,
        Some("exited with status 1".into()),
    );
    settle(&mut h);
    let snap = Snapshot {
        members: h
            .board
            .members(TEAM)
            .into_iter()
            .map(|m| (TEAM.to_string(), m))
            .collect(),
        ..Snapshot::default()
    };
    h.advance(secs(10));
    let now = h.now();
    h.board = Board::restore(BoardConfig::default(), snap, now);
    let dead = live(&h, ann);
    assert_eq!((dead.state, dead.since), (LiveState::Dead, WALL0));
    assert_eq!(dead.exit.as_deref(), Some("exited with status 1"));
    let off = live(&h, bob);
    assert_eq!((off.state, off.since), (LiveState::Offline, WALL0 + 10_000));
    assert_eq!(off.last_heartbeat, Some(WALL0));
}
