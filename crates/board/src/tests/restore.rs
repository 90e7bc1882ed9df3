//! Rebuilding the board from what the store holds after a restart.

use super::*;
use teamboard_protocol::{MemberStatus, MessageKind, TaskStatus, TeamSummary};

/// Restores from `store` with `config`, at offset zero of a fresh clock.
fn restart(store: &Store, config: BoardConfig) -> H {
    let mut h = H::with(config);
    let now = h.now();
    h.board = Board::restore(config, store.snapshot(), now);
    // Sessions of the new daemon must not collide with the old ones in a test.
    for _ in 0..100 {
        h.new_session();
    }
    h
}

/// Builds a board with a bit of everything, persisting in several batches.
fn busy_board(h: &mut H, store: &mut Store) {
    let done = h.add("done");
    let running = h.add_task(NewTask {
        priority: 3,
        role: Some("dev".into()),
        description: "details".into(),
        ..new_task("running")
    });
    let blocked = h.blocked("waits for running", &[running.id]);
    store.apply(h.board.take_changes());
    let ctx = h.lead();
    h.board.add_dependency(ctx, blocked, &[done]).unwrap();
    let failed = h.add("failed");
    let cancelled = h.add("cancelled");
    h.add_prio("ready", 9);
    h.blocked("after failed", &[failed]);
    let ann = h.join("ann", "dev");
    let bob = h.join("bob", "dev");
    let cat = h.join("cat", "ops");
    let c = h.claim(ann, done);
    h.complete(ann, done, c.epoch);
    store.apply(h.board.take_changes());
    for _ in 0..h.board.config().max_attempts {
        let c = h.claim(bob, failed);
        h.fail(bob, failed, c.epoch, "it broke");
    }
    h.cancel(cancelled);
    h.claim(ann, running.id);
    let ctx = h.ctx(cat);
    h.board.set_status(ctx, MemberStatus::Shutdown).unwrap();
    // Messages: some acked (including the newest overall), some not.
    h.send(h.lead(), "bob", "keep me");
    h.send(h.ctx(bob), LEAD, "for the lead");
    let ctx = h.ctx(bob);
    h.board
        .send(
            ctx,
            "ann",
            // Not a shutdown request: a restart drops those (see `inbox` tests).
            MessageKind::Message,
            "plan?".into(),
            Some("r1".into()),
        )
        .unwrap();
    let acked = h.send(h.lead(), "cat", "acked");
    let ctx = h.ctx(cat);
    h.board.ack(ctx, &[acked.id]);
    store.apply(h.board.take_changes());
    // A second team.
    let ctx = h.lead_in("beta");
    h.board.add_task(ctx, new_task("beta one")).unwrap();
    let dan = h.join_in("beta", "dan", "dev");
    let newest = h.send(h.lead_in("beta"), "dan", "newest, acked");
    let ctx = h.ctx(dan);
    h.board.ack(ctx, &[newest.id]);
    store.apply(h.board.take_changes());
}

#[test]
fn a_snapshot_round_trips() {
    let mut h = H::new();
    let mut store = Store::default();
    busy_board(&mut h, &mut store);
    let config = *h.board.config();
    let mut r = restart(&store, config);

    for team in ["alpha", "beta"] {
        assert_eq!(
            r.board.tasks(team, None),
            h.board.tasks(team, None),
            "{team}"
        );
        for t in h.board.tasks(team, None) {
            assert_eq!(
                r.board.is_ready(team, t.id),
                h.board.is_ready(team, t.id),
                "{team} #{}",
                t.id
            );
        }
        let before = h.board.summary(team);
        let after = r.board.summary(team);
        assert_eq!(after.connected, 0);
        assert_eq!(
            after,
            TeamSummary {
                connected: 0,
                ..before
            },
            "{team}"
        );
        for m in h.board.members(team) {
            assert_eq!(r.board.inbox(team, &m.name), h.board.inbox(team, &m.name));
        }
        assert_eq!(r.board.inbox(team, LEAD), h.board.inbox(team, LEAD));
        // Members come back offline (or shutdown), disconnected, with their claims.
        let expected: Vec<Member> = h
            .board
            .members(team)
            .into_iter()
            .map(|mut m| {
                m.connected = false;
                if m.status != MemberStatus::Shutdown {
                    m.status = MemberStatus::Offline;
                }
                if let Some(l) = m.liveness.as_mut() {
                    l.state = teamboard_protocol::LiveState::Offline;
                }
                m
            })
            .collect();
        assert_eq!(r.board.members(team), expected, "{team}");
    }
    assert_eq!(r.board.team_names(), h.board.team_names());
    assert_eq!(r.board.inbox(TEAM, "bob")[0].content, "keep me");
    assert_eq!(
        r.board.inbox(TEAM, "ann")[0].request_id.as_deref(),
        Some("r1")
    );
    assert_eq!(r.board.inbox(TEAM, LEAD).len(), 1);
    assert!(r.board.inbox(TEAM, "cat").is_empty());
    let members = r.board.members(TEAM);
    assert_eq!(members[0].name, "ann");
    assert_eq!(members[0].task, Some(2));
    assert_eq!(members[2].status, MemberStatus::Shutdown);
    assert_eq!(r.task(2).owner.as_deref(), Some("ann"));

    // Counters continue: no task id, message id or event seq is reused.
    assert_eq!(r.add("new"), 8);
    let ctx = r.lead_in("beta");
    assert_eq!(r.board.add_task(ctx, new_task("beta two")).unwrap().id, 2);
    let last_msg = store.next_message_id - 1;
    assert!(
        store.messages.keys().all(|id| *id < last_msg),
        "the newest is acked"
    );
    assert_eq!(r.send(r.lead(), "bob", "after").id, last_msg + 1);
    let last_seq = store.events.last().unwrap().seq;
    assert_eq!(r.board.take_changes().events[0].seq, last_seq + 1);
}

#[test]
fn a_round_trip_after_clean_disconnects() {
    let mut h = H::new();
    let mut store = Store::default();
    busy_board(&mut h, &mut store);
    let now = h.now();
    for s in 1..10 {
        h.board.disconnect(s, now);
    }
    h.board.settle_liveness(now);
    store.apply(h.board.take_changes());
    let r = restart(&store, *h.board.config());
    for team in ["alpha", "beta"] {
        assert_eq!(r.board.tasks(team, None), h.board.tasks(team, None));
        assert_eq!(r.board.members(team), h.board.members(team));
        assert_eq!(r.board.summary(team), h.board.summary(team));
    }
    assert_eq!(r.board.next_deadline(), None);
}

#[test]
fn a_snapshot_restores_members_offline() {
    let mut h = H::new();
    let mut store = Store::default();
    let ann = h.join("ann", "dev");
    let bob = h.join("bob", "dev");
    let ctx = h.ctx(bob);
    h.board.set_status(ctx, MemberStatus::Shutdown).unwrap();
    store.apply(h.board.take_changes());
    // boardd dies without seeing the sessions close: rows still say connected.
    assert!(store.members.values().all(|m| m.connected));
    let r = restart(&store, *h.board.config());
    let members = r.board.members(TEAM);
    assert_eq!(members.len(), 2);
    assert_eq!(members[0].status, MemberStatus::Offline);
    assert_eq!(members[1].status, MemberStatus::Shutdown);
    assert!(members.iter().all(|m| !m.connected));
    assert_eq!(r.board.summary(TEAM).connected, 0);
    // Old sessions mean nothing to the new daemon.
    let ctx = r.ctx(ann);
    let mut r = r;
    assert_eq!(code(r.board.claim_next(ctx)), ErrorCode::NotRegistered);
}

#[test]
fn dependents_index_is_rebuilt() {
    let mut h = H::new();
    let mut store = Store::default();
    let a = h.add("a");
    let b = h.blocked("b", &[a]);
    let c = h.blocked("c", &[a, b]);
    store.apply(h.board.take_changes());
    let mut r = restart(&store, *h.board.config());
    assert!(r.ready(a) && !r.ready(b) && !r.ready(c));
    // The cycle check sees the restored edges.
    let ctx = r.lead();
    assert_eq!(code(r.board.add_dependency(ctx, a, &[c])), ErrorCode::Cycle);
    let ann = r.join("ann", "dev");
    assert_eq!(r.run_next(ann), Some(a));
    assert!(r.ready(b) && !r.ready(c));
    assert_eq!(r.run_next(ann), Some(b));
    assert!(r.ready(c));
}

/// A board where ann holds #1 (blocking #2), persisted, then restarted.
fn crashed_with_a_claim(config: BoardConfig) -> (H, Mate, Claim) {
    let mut h = H::with(config);
    let mut store = Store::default();
    let a = h.add("a");
    h.blocked("b", &[a]);
    let ann = h.join("ann", "dev");
    let claim = h.claim(ann, a);
    store.apply(h.board.take_changes());
    (restart(&store, config), ann, claim)
}

fn grace_config() -> BoardConfig {
    BoardConfig {
        lease_ttl: secs(10),
        restart_grace: secs(30),
        ..BoardConfig::default()
    }
}

#[test]
fn a_claim_keeps_its_owner_during_the_grace_period() {
    let (mut r, _ann, claim) = crashed_with_a_claim(grace_config());
    let t = r.task(1);
    assert_eq!(t.status, TaskStatus::InProgress);
    assert_eq!(t.owner.as_deref(), Some("ann"));
    assert_eq!(t.epoch, claim.epoch);
    assert!(!r.ready(1) && !r.ready(2));
    let m = r.board.members(TEAM).remove(0);
    assert_eq!(m.task, Some(1));
    assert_eq!(m.status, MemberStatus::Offline);
    assert_eq!(r.board.next_deadline(), Some(r.base + secs(30)));
    // Nobody else can take it.
    let bob = r.join("bob", "dev");
    let ctx = r.ctx(bob);
    assert_eq!(code(r.board.claim_task(ctx, 1)), ErrorCode::Conflict);
    assert_eq!(r.claim_next(bob), None);
    // Just before the grace ends, nothing lapses.
    r.t = secs(30) - ms(1);
    r.expire();
    assert_eq!(r.task(1).owner.as_deref(), Some("ann"));
}

#[test]
fn reregistering_adopts_the_claim() {
    let (mut r, ann, claim) = crashed_with_a_claim(grace_config());
    r.advance(secs(20));
    let again = r.stranger(TEAM, "ann");
    assert_ne!(again.session, ann.session);
    r.board.take_changes();
    let m = r.register(again, "dev");
    assert_eq!(m.task, Some(1));
    assert_eq!(m.status, MemberStatus::Working);
    assert!(m.connected);
    let changes = r.board.take_changes();
    assert!(
        changes.events[0].detail.contains("kept #1"),
        "{:?}",
        changes.events
    );
    // The adopted claim has a fresh lease from now: 20 s + 10 s.
    assert_eq!(r.board.next_deadline(), Some(r.base + secs(30)));
    // The old epoch works from the new session.
    let ctx = r.ctx(again);
    r.board.heartbeat(ctx, 1, claim.epoch).unwrap();
    assert_eq!(r.board.next_deadline(), Some(r.base + secs(30)));
    // Holding it, it cannot claim another.
    let ctx = r.ctx(again);
    assert_eq!(code(r.board.claim_next(ctx)), ErrorCode::AlreadyHoldsTask);
    let t = r.complete(again, 1, claim.epoch);
    assert_eq!(t.status, TaskStatus::Completed);
    assert_eq!(t.attempts, 1, "an adopted claim is the same attempt");
    assert_eq!(r.member(again).task, None);
    assert!(r.ready(2));
}

#[test]
fn an_adopted_claim_is_fenced_like_any_other() {
    let (mut r, _ann, claim) = crashed_with_a_claim(grace_config());
    let again = r.stranger(TEAM, "ann");
    r.register(again, "dev");
    let ctx = r.ctx(again);
    assert_eq!(
        code(
            r.board
                .complete_task(ctx, 1, claim.epoch + 1, String::new())
        ),
        ErrorCode::StaleEpoch
    );
    // Its lease runs like any lease.
    r.advance(secs(10));
    r.expire();
    assert_eq!(r.task(1).status, TaskStatus::Pending);
    assert!(r.task(1).last_error.unwrap().contains("lease"));
}

#[test]
fn another_name_cannot_adopt_the_claim() {
    let (mut r, _ann, claim) = crashed_with_a_claim(grace_config());
    let bob = r.join("bob", "dev");
    assert_eq!(r.member(bob).task, None);
    let ctx = r.ctx(bob);
    assert_eq!(
        code(r.board.complete_task(ctx, 1, claim.epoch, String::new())),
        ErrorCode::StaleEpoch
    );
    // Nor can anyone finish it before the owner comes back.
    let ghost = r.stranger(TEAM, "ann");
    let ctx = r.ctx(ghost);
    assert_eq!(
        code(r.board.complete_task(ctx, 1, claim.epoch, String::new())),
        ErrorCode::StaleEpoch
    );
}

#[test]
fn an_unreclaimed_claim_lapses_after_the_grace_period() {
    let (mut r, _ann, claim) = crashed_with_a_claim(grace_config());
    r.board.take_changes();
    r.t = secs(30);
    assert!(r.expire().is_empty());
    let t = r.task(1);
    assert_eq!(t.status, TaskStatus::Pending);
    assert_eq!(t.owner, None);
    assert_eq!(t.attempts, 1);
    assert!(t.last_error.unwrap().contains("restart"));
    assert!(r.ready(1));
    assert_eq!(r.board.members(TEAM)[0].task, None);
    let changes = r.board.take_changes();
    assert!(changes.tasks.iter().any(|(_, t)| t.id == 1));
    // A member's held task is derived from the tasks, so it is not written.
    assert!(changes.members.iter().all(|(_, m)| m.name != "ann"));
    assert!(changes.events.iter().all(|e| e.actor == "boardd"));
    // Ann comes back too late: no task, and her old epoch is dead.
    let again = r.stranger(TEAM, "ann");
    let m = r.register(again, "dev");
    assert_eq!(m.task, None);
    assert_eq!(m.status, MemberStatus::Idle);
    let ctx = r.ctx(again);
    assert_eq!(
        code(r.board.complete_task(ctx, 1, claim.epoch, String::new())),
        ErrorCode::StaleEpoch
    );
    let c = r.claim_next(again).unwrap();
    assert_eq!(c.task.id, 1);
    assert_eq!(c.epoch, claim.epoch + 1);
    assert_eq!(c.task.attempts, 2);
}

#[test]
fn an_unreclaimed_claim_on_its_last_attempt_fails() {
    let config = BoardConfig {
        max_attempts: 1,
        ..grace_config()
    };
    let (mut r, _ann, _claim) = crashed_with_a_claim(config);
    r.advance(secs(30));
    r.expire();
    assert_eq!(r.task(1).status, TaskStatus::Failed);
    assert!(!r.ready(2));
}

#[test]
fn restore_of_an_empty_store_is_an_empty_board() {
    let mut h = H::new();
    let now = h.now();
    h.board = Board::restore(BoardConfig::default(), Snapshot::default(), now);
    assert!(h.board.team_names().is_empty());
    assert_eq!(h.add("first"), 1);
    assert_eq!(h.board.take_changes().events[0].seq, 1);
    let ann = h.join("ann", "dev");
    assert_eq!(h.send(h.lead(), "ann", "x").id, 1);
    let _ = ann;
}
