//! Attempts, leases, heartbeats and disconnects.

use super::*;
use teamboard_protocol::{EventKind, MemberStatus, TaskStatus};

#[test]
fn failing_uses_up_attempts() {
    let mut h = H::cfg(|c| c.max_attempts = 2);
    let a = h.add("a");
    let ann = h.join("ann", "dev");
    let c1 = h.claim(ann, a);
    let t = h.fail(ann, a, c1.epoch, "first error");
    assert_eq!(t.status, TaskStatus::Pending);
    assert_eq!(t.attempts, 1);
    assert_eq!(t.owner, None);
    assert_eq!(t.last_error.as_deref(), Some("first error"));
    assert!(h.ready(a));
    assert_eq!(h.member(ann).task, None);

    let c2 = h.claim(ann, a);
    assert_eq!(c2.task.attempts, 2);
    let t = h.fail(ann, a, c2.epoch, "second error");
    assert_eq!(t.status, TaskStatus::Failed);
    assert_eq!(t.attempts, 2);
    assert_eq!(t.last_error.as_deref(), Some("second error"));
    assert_eq!(t.owner, None);
    assert!(!h.ready(a));
    assert_eq!(h.claim_next(ann), None);
    assert_eq!(h.board.summary(TEAM).failed, 1);
    let events = h.events();
    let failed = events
        .iter()
        .filter(|e| e.kind == EventKind::TaskFailed)
        .count();
    assert_eq!(failed, 1);
}

#[test]
fn release_without_error_does_not_use_an_attempt() {
    let mut h = H::cfg(|c| c.max_attempts = 2);
    let a = h.add("a");
    let ann = h.join("ann", "dev");
    for _ in 0..5 {
        let c = h.claim(ann, a);
        assert_eq!(c.task.attempts, 1);
        let t = h.release(ann, a, c.epoch, None);
        assert_eq!(t.status, TaskStatus::Pending);
        assert_eq!(t.attempts, 0);
        assert_eq!(t.last_error, None);
    }
    assert_eq!(h.task(a).epoch, 5);
    let c = h.claim(ann, a);
    h.fail(ann, a, c.epoch, "x");
    let c = h.claim(ann, a);
    assert_eq!(h.fail(ann, a, c.epoch, "y").status, TaskStatus::Failed);
}

#[test]
fn a_note_on_a_release_is_in_the_event_and_does_not_count() {
    let mut h = H::cfg(|c| c.max_attempts = 1);
    let a = h.add("a");
    let ann = h.join("ann", "dev");
    let c = h.claim(ann, a);
    h.events();
    let ctx = h.ctx(ann);
    let note = "LLM error: openai: HTTP 404 from http://x/v1/chat/completions: no such model";
    let t = h
        .board
        .release_task(ctx, a, c.epoch, None, Some(note.into()))
        .unwrap();
    assert_eq!((t.status, t.attempts), (TaskStatus::Pending, 0));
    assert_eq!(t.last_error, None, "a note is no error");
    let events = h.events();
    let released = events
        .iter()
        .find(|e| e.kind == EventKind::TaskReleased)
        .expect("a release event");
    assert_eq!(
        released.detail,
        format!("#{a} back to pending (released, ann): {note}")
    );
    // With an error too, the error wins and the attempt counts.
    let c = h.claim(ann, a);
    let ctx = h.ctx(ann);
    let t = h
        .board
        .release_task(ctx, a, c.epoch, Some("broke".into()), Some("n".into()))
        .unwrap();
    assert_eq!(t.status, TaskStatus::Failed);
    assert_eq!(t.last_error.as_deref(), Some("broke"));
}

/// A note that says why the holder let go (a key the provider refused) stays
/// in the history, and is no handoff: the next owner is not told it as if it
/// were how far the task got, nor does it replace the last real handoff.
#[test]
fn a_release_aside_keeps_its_note_out_of_the_handoff() {
    let mut h = H::new();
    let a = h.add("a");
    let ann = h.join("ann", "dev");
    let c = h.claim(ann, a);
    let ctx = h.ctx(ann);
    let handoff = "parser done; the lexer is left";
    h.board
        .release_task(ctx, a, c.epoch, None, Some(handoff.into()))
        .unwrap();
    let c = h.claim(ann, a);
    h.events();
    let ctx = h.ctx(ann);
    let why = "LLM error: anthropic: HTTP 401: invalid x-api-key";
    let args = teamboard_protocol::request::ReleaseArgs {
        id: a,
        epoch: c.epoch,
        error: None,
        note: Some(why.into()),
        not_handoff: true,
    };
    let t = h.board.release(ctx, args).unwrap();
    assert_eq!(
        (t.status, t.attempts),
        (TaskStatus::Pending, 0),
        "neither counts"
    );
    assert_eq!(t.last_error, None, "a note is no error");
    assert_eq!(t.handoff.as_deref(), Some(handoff), "{t:#?}");
    let events = h.events();
    let released = events
        .iter()
        .find(|e| e.kind == EventKind::TaskReleased)
        .expect("a release event");
    assert_eq!(
        released.detail,
        format!("#{a} back to pending (released, ann): {why}")
    );
}

#[test]
fn release_with_error_uses_an_attempt() {
    let mut h = H::cfg(|c| c.max_attempts = 2);
    let a = h.add("a");
    let ann = h.join("ann", "dev");
    let c = h.claim(ann, a);
    let t = h.release(ann, a, c.epoch, Some("stuck"));
    assert_eq!((t.status, t.attempts), (TaskStatus::Pending, 1));
    assert_eq!(t.last_error.as_deref(), Some("stuck"));
    let c = h.claim(ann, a);
    let t = h.release(ann, a, c.epoch, Some("stuck again"));
    assert_eq!(t.status, TaskStatus::Failed);
    assert_eq!(t.last_error.as_deref(), Some("stuck again"));
}

#[test]
fn an_expired_lease_returns_the_task_and_counts_an_attempt() {
    let mut h = H::cfg(|c| {
        c.lease_ttl = secs(10);
        c.max_attempts = 3;
    });
    let a = h.add("a");
    let ann = h.join("ann", "dev");
    h.advance(secs(1));
    h.claim(ann, a);
    assert_eq!(h.board.next_deadline(), Some(h.base + secs(11)));
    h.board.take_changes();
    h.t = secs(11) - ms(1);
    assert_eq!(h.expire(), Vec::<u64>::new());
    assert_eq!(h.task(a).status, TaskStatus::InProgress);
    assert!(!h.board.has_changes());

    h.t = secs(11);
    h.expire();
    let t = h.task(a);
    assert_eq!(t.status, TaskStatus::Pending);
    assert_eq!(t.owner, None);
    assert_eq!(t.attempts, 1);
    assert!(t.last_error.as_deref().unwrap().contains("lease"), "{t:?}");
    assert!(h.ready(a));
    assert_eq!(h.member(ann).task, None);
    assert_eq!(h.board.next_deadline(), None);
    let events = h.events();
    let released = events
        .iter()
        .find(|e| e.kind == EventKind::TaskReleased)
        .unwrap();
    assert_eq!(released.actor, "boardd");
    assert_eq!(released.task, Some(a));
    assert_eq!(released.member.as_deref(), Some("ann"));
    // Expiring again does nothing.
    h.advance(secs(100));
    h.expire();
    assert!(!h.board.has_changes());
}

#[test]
fn lease_expiries_count_towards_max_attempts() {
    let mut h = H::cfg(|c| {
        c.lease_ttl = secs(10);
        c.max_attempts = 2;
    });
    let a = h.add("a");
    let ann = h.join("ann", "dev");
    for round in 1..=2 {
        h.claim(ann, a);
        h.advance(secs(10));
        h.expire();
        assert_eq!(h.task(a).attempts, round);
    }
    let t = h.task(a);
    assert_eq!(t.status, TaskStatus::Failed);
    assert!(t.last_error.unwrap().contains("lease"));
}

#[test]
fn a_heartbeat_extends_the_lease() {
    let mut h = H::cfg(|c| c.lease_ttl = secs(10));
    let a = h.add("a");
    let ann = h.join("ann", "dev");
    let c = h.claim(ann, a);
    h.advance(secs(8));
    let ctx = h.ctx(ann);
    let t = h.board.heartbeat(ctx, a, c.epoch).unwrap();
    assert_eq!(t.status, TaskStatus::InProgress);
    assert_eq!(h.board.next_deadline(), Some(h.base + secs(18)));
    h.advance(secs(4)); // 12 s: past the first deadline
    h.expire();
    assert_eq!(h.task(a).status, TaskStatus::InProgress);
    h.advance(secs(5)); // 17 s
    let ctx = h.ctx(ann);
    h.board.heartbeat(ctx, a, c.epoch).unwrap();
    h.advance(secs(9)); // 26 s < 27 s
    h.expire();
    assert_eq!(h.task(a).status, TaskStatus::InProgress);
    h.complete(ann, a, c.epoch);
    assert_eq!(h.board.next_deadline(), None);
    h.advance(secs(60));
    h.expire();
    assert_eq!(h.task(a).status, TaskStatus::Completed);
}

#[test]
fn a_stale_heartbeat_does_not_extend_the_lease() {
    let mut h = H::cfg(|c| c.lease_ttl = secs(10));
    let a = h.add("a");
    let ann = h.join("ann", "dev");
    let bob = h.join("bob", "dev");
    let c = h.claim(ann, a);
    h.advance(secs(9));
    let ctx = h.ctx(ann);
    assert_eq!(
        code(h.board.heartbeat(ctx, a, c.epoch + 1)),
        ErrorCode::StaleEpoch
    );
    let ctx = h.ctx(bob);
    assert_eq!(
        code(h.board.heartbeat(ctx, a, c.epoch)),
        ErrorCode::StaleEpoch
    );
    h.advance(secs(1));
    h.expire();
    assert_eq!(h.task(a).status, TaskStatus::Pending);
}

#[test]
fn each_claim_gets_a_fresh_lease() {
    let mut h = H::cfg(|c| c.lease_ttl = secs(10));
    let a = h.add("a");
    let ann = h.join("ann", "dev");
    let bob = h.join("bob", "dev");
    let c = h.claim(ann, a);
    h.advance(secs(9));
    h.release(ann, a, c.epoch, None);
    let c = h.claim(bob, a);
    h.advance(secs(9)); // 18 s: the first lease would have ended at 10 s
    h.expire();
    assert_eq!(h.task(a).owner.as_deref(), Some("bob"));
    h.advance(secs(1));
    h.expire();
    assert_eq!(h.task(a).status, TaskStatus::Pending);
    let ctx = h.ctx(bob);
    assert_eq!(
        code(h.board.complete_task(ctx, a, c.epoch, String::new())),
        ErrorCode::StaleEpoch
    );
}

#[test]
fn disconnect_returns_the_task_at_once_and_marks_the_member_offline() {
    let mut h = H::cfg(|c| c.lease_ttl = secs(3600));
    let a = h.add("a");
    let b = h.add("b");
    let ann = h.join("ann", "dev");
    let bob = h.join("bob", "dev");
    let ca = h.claim(ann, a);
    h.claim(bob, b);
    h.board.take_changes();
    let now = h.advance(ms(5));
    h.board.disconnect(ann.session, now);
    let t = h.task(a);
    assert_eq!(t.status, TaskStatus::Pending);
    assert_eq!(t.owner, None);
    assert_eq!(t.attempts, 1);
    assert!(t.last_error.unwrap().contains("connection closed"));
    assert!(h.ready(a));
    let m = h.member(ann);
    assert_eq!(m.status, MemberStatus::Offline);
    assert!(!m.connected);
    assert_eq!(m.task, None);
    // Bob is untouched.
    assert_eq!(h.task(b).owner.as_deref(), Some("bob"));
    assert_eq!(h.member(bob).status, MemberStatus::Working);
    assert_eq!(h.board.summary(TEAM).connected, 1);
    let changes = h.board.take_changes();
    assert!(
        changes
            .members
            .iter()
            .any(|(_, m)| m.name == "ann" && !m.connected)
    );
    assert!(changes.tasks.iter().any(|(_, t)| t.id == a));
    assert!(changes.events.iter().all(|e| e.actor == "boardd"));
    // The old session's claim is dead, and so is the session.
    let ctx = h.ctx(ann);
    assert_eq!(
        code(h.board.complete_task(ctx, a, ca.epoch, String::new())),
        ErrorCode::StaleEpoch
    );
    let ctx = h.ctx(ann);
    assert_eq!(code(h.board.claim_next(ctx)), ErrorCode::NotRegistered);
    // The lease is gone with the claim.
    assert_eq!(h.board.next_deadline(), Some(h.base + secs(3600)));
}

#[test]
fn disconnect_counts_an_attempt() {
    let mut h = H::cfg(|c| c.max_attempts = 1);
    let a = h.add("a");
    let ann = h.join("ann", "dev");
    h.claim(ann, a);
    let now = h.now();
    h.board.disconnect(ann.session, now);
    assert_eq!(h.task(a).status, TaskStatus::Failed);
}

#[test]
fn shutdown_survives_disconnect() {
    let mut h = H::new();
    let ann = h.join("ann", "dev");
    let ctx = h.ctx(ann);
    let m = h.board.set_status(ctx, MemberStatus::Shutdown).unwrap();
    assert_eq!(m.status, MemberStatus::Shutdown);
    h.board.take_changes();
    let now = h.now();
    h.board.disconnect(ann.session, now);
    let m = h.member(ann);
    assert_eq!(m.status, MemberStatus::Shutdown);
    assert!(!m.connected);
    // The store still learns that it is no longer connected.
    let changes = h.board.take_changes();
    assert_eq!(changes.members.len(), 1);
    assert!(!changes.members[0].1.connected);
    assert_eq!(changes.members[0].1.status, MemberStatus::Shutdown);
}

#[test]
fn disconnect_of_an_unknown_session_does_nothing() {
    let mut h = H::new();
    let a = h.add("a");
    let ann = h.join("ann", "dev");
    h.claim(ann, a);
    h.board.take_changes();
    let now = h.now();
    h.board.disconnect(999, now);
    h.board.disconnect(LEAD_SESSION, now);
    assert!(!h.board.has_changes());
    assert_eq!(h.task(a).status, TaskStatus::InProgress);
}

#[test]
fn disconnect_covers_every_team_of_the_session() {
    let mut h = H::new();
    let a = h.add("a");
    let ctx = h.lead_in("beta");
    let b = h.board.add_task(ctx, new_task("b")).unwrap().id;
    let ann = h.join("ann", "dev");
    // The same connection registered in a second team.
    let ann_b = Mate {
        team: "beta",
        ..ann
    };
    h.register(ann_b, "dev");
    h.claim(ann, a);
    h.claim(ann_b, b);
    let now = h.now();
    h.board.disconnect(ann.session, now);
    assert_eq!(h.task(a).status, TaskStatus::Pending);
    assert_eq!(h.board.task("beta", b).unwrap().status, TaskStatus::Pending);
    assert_eq!(h.member(ann_b).status, MemberStatus::Offline);
}
