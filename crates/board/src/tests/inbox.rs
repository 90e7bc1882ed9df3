//! Inboxes: roster-checked recipients, at-least-once delivery, acknowledgements.

use super::*;
use teamboard_protocol::{EventKind, MessageKind};

#[test]
fn a_message_to_an_unknown_name_is_refused() {
    let mut h = H::new();
    h.join("ann", "dev");
    h.board.take_changes();
    let ctx = h.lead();
    let e = h
        .board
        .send(ctx, "anne", MessageKind::Message, "hi".into(), None)
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::UnknownRecipient);
    assert!(e.message.contains("known: lead, ann"), "{}", e.message);
    assert!(h.board.inbox(TEAM, "anne").is_empty());
    assert!(!h.board.has_changes());
    // No id was used up.
    assert_eq!(h.send(h.lead(), "ann", "hi").id, 1);
    // In a team without members, too.
    let ctx = h.lead_in("empty");
    assert_eq!(
        code(
            h.board
                .send(ctx, "ann", MessageKind::Message, "hi".into(), None)
        ),
        ErrorCode::UnknownRecipient
    );
}

#[test]
fn a_message_to_the_lead_is_delivered() {
    let mut h = H::new();
    let ann = h.join("ann", "dev");
    let ctx = h.ctx(ann);
    let m = h
        .board
        .send(
            ctx,
            LEAD,
            MessageKind::Result,
            "done".into(),
            Some("req-1".into()),
        )
        .unwrap();
    assert_eq!(m.from, "ann");
    assert_eq!(m.to, LEAD);
    assert_eq!(m.kind, MessageKind::Result);
    assert_eq!(m.request_id.as_deref(), Some("req-1"));
    assert_eq!(m.at, WALL0);
    assert_eq!(h.board.inbox(TEAM, LEAD), vec![m.clone()]);
    let ctx = h.lead();
    assert_eq!(h.board.ack(ctx, &[m.id]), 1);
    assert!(h.board.inbox(TEAM, LEAD).is_empty());
}

#[test]
fn a_message_to_an_offline_member_waits_for_it() {
    let mut h = H::new();
    let ann = h.join("ann", "dev");
    let now = h.now();
    h.board.disconnect(ann.session, now);
    let m = h.send(h.lead(), "ann", "when you are back");
    let again = h.stranger(TEAM, "ann");
    h.register(again, "dev");
    assert_eq!(h.board.inbox(TEAM, "ann"), vec![m]);
}

#[test]
fn broadcast_reaches_every_member_but_the_sender() {
    let mut h = H::new();
    let ann = h.join("ann", "dev");
    h.join("bob", "dev");
    h.join("cat", "dev");
    h.join_in("beta", "dan", "dev");
    let ctx = h.ctx(ann);
    let sent = h.board.broadcast(ctx, "stand-up".into()).unwrap();
    let to: Vec<&str> = sent.iter().map(|m| m.to.as_str()).collect();
    assert_eq!(to, vec!["bob", "cat"]);
    assert!(
        sent.iter()
            .all(|m| m.kind == MessageKind::Broadcast && m.from == "ann")
    );
    assert!(h.board.inbox(TEAM, "ann").is_empty());
    assert_eq!(h.board.inbox(TEAM, "bob").len(), 1);
    assert_eq!(h.board.inbox(TEAM, "cat").len(), 1);
    assert!(h.board.inbox("beta", "dan").is_empty());
    // Distinct ids.
    assert_ne!(sent[0].id, sent[1].id);
    // From the lead, every member.
    let ctx = h.lead();
    assert_eq!(h.board.broadcast(ctx, "all".into()).unwrap().len(), 3);
    // To nobody, nothing.
    let ctx = h.lead_in("empty");
    assert!(h.board.broadcast(ctx, "anyone?".into()).unwrap().is_empty());
}

#[test]
fn messages_stay_until_acknowledged() {
    let mut h = H::new();
    let ann = h.join("ann", "dev");
    let m1 = h.send(h.lead(), "ann", "one");
    let m2 = h.send(h.lead(), "ann", "two");
    let m3 = h.send(h.lead(), "ann", "three");
    // Reading does not consume.
    for _ in 0..3 {
        assert_eq!(
            h.board.inbox(TEAM, "ann"),
            vec![m1.clone(), m2.clone(), m3.clone()]
        );
    }
    assert_eq!(h.board.summary(TEAM).unread_messages, 3);
    let ctx = h.ctx(ann);
    assert_eq!(h.board.ack(ctx, &[m2.id]), 1);
    assert_eq!(h.board.inbox(TEAM, "ann"), vec![m1.clone(), m3.clone()]);
    let ctx = h.ctx(ann);
    assert_eq!(h.board.ack(ctx, &[m1.id, m3.id]), 2);
    assert!(h.board.inbox(TEAM, "ann").is_empty());
    assert_eq!(h.board.summary(TEAM).unread_messages, 0);
}

#[test]
fn acknowledging_someone_elses_message_does_nothing() {
    let mut h = H::new();
    h.join("ann", "dev");
    let bob = h.join("bob", "dev");
    let m = h.send(h.lead(), "ann", "for ann");
    let to_lead = h.send(h.ctx(bob), LEAD, "for lead");
    h.board.take_changes();
    let ctx = h.ctx(bob);
    assert_eq!(h.board.ack(ctx, &[m.id, to_lead.id]), 0);
    assert_eq!(h.board.inbox(TEAM, "ann"), vec![m]);
    assert_eq!(h.board.inbox(TEAM, LEAD), vec![to_lead]);
    assert!(!h.board.has_changes());
}

#[test]
fn acknowledging_twice_is_harmless() {
    let mut h = H::new();
    let ann = h.join("ann", "dev");
    let m = h.send(h.lead(), "ann", "hello");
    let keep = h.send(h.lead(), "ann", "keep");
    let ctx = h.ctx(ann);
    assert_eq!(h.board.ack(ctx, &[m.id, m.id]), 1);
    let changes = h.board.take_changes();
    assert_eq!(changes.messages_acked, vec![m.id]);
    let acks = changes
        .events
        .iter()
        .filter(|e| e.kind == EventKind::MessageAcked)
        .count();
    assert_eq!(acks, 1);
    let ctx = h.ctx(ann);
    assert_eq!(h.board.ack(ctx, &[m.id, 999]), 0);
    assert!(!h.board.has_changes());
    assert_eq!(h.board.inbox(TEAM, "ann"), vec![keep]);
    let ctx = h.ctx(ann);
    assert_eq!(h.board.ack(ctx, &[]), 0);
}

#[test]
fn oversized_content_is_refused() {
    let mut h = H::cfg(|c| c.max_message_len = 16);
    let ann = h.join("ann", "dev");
    let ctx = h.lead();
    let e = h
        .board
        .send(ctx, "ann", MessageKind::Message, "x".repeat(17), None)
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidArgs);
    let ctx = h.ctx(ann);
    assert_eq!(
        code(h.board.broadcast(ctx, "y".repeat(17))),
        ErrorCode::InvalidArgs
    );
    let ctx = h.lead();
    assert_eq!(
        code(h.board.broadcast(ctx, "y".repeat(17))),
        ErrorCode::InvalidArgs
    );
    assert!(h.board.inbox(TEAM, "ann").is_empty());
    // Exactly at the limit is fine.
    let m = h.send(h.lead(), "ann", &"z".repeat(16));
    assert_eq!(m.content.len(), 16);
    // A description is held to the same limit.
    let ctx = h.lead();
    let big = NewTask {
        description: "d".repeat(17),
        ..new_task("t")
    };
    assert_eq!(code(h.board.add_task(ctx, big)), ErrorCode::InvalidArgs);
}

#[test]
fn sending_and_acking_are_events() {
    let mut h = H::new();
    let ann = h.join("ann", "dev");
    h.board.take_changes();
    let m = h.send(h.lead(), "ann", "hi");
    let ctx = h.ctx(ann);
    h.board.ack(ctx, &[m.id]);
    let events = h.events();
    let kinds: Vec<EventKind> = events.iter().map(|e| e.kind).collect();
    assert_eq!(kinds, vec![EventKind::MessageSent, EventKind::MessageAcked]);
    assert_eq!(events[0].actor, LEAD);
    assert_eq!(events[0].message, Some(m.id));
    assert_eq!(events[0].member.as_deref(), Some("ann"));
    assert_eq!(events[1].actor, "ann");
    assert_eq!(events[1].message, Some(m.id));
}

/// Asks `to` to shut down; the message it puts in `to`'s inbox.
fn shutdown_request(h: &mut H, to: &str) -> Result<Message> {
    let ctx = h.lead();
    let req = h.board.request_shutdown(
        ctx,
        teamboard_protocol::request::ShutdownArgs {
            to: to.to_string(),
            ..Default::default()
        },
    )?;
    let rid = req.id.to_string();
    Ok(h.board
        .inbox(TEAM, to)
        .into_iter()
        .find(|m| m.request_id.as_deref() == Some(rid.as_str()))
        .expect("the request's message"))
}

#[test]
fn a_shutdown_request_to_a_member_who_is_not_connected_is_refused() {
    let mut h = H::new();
    let ann = h.join("ann", "dev");
    let now = h.now();
    h.board.disconnect(ann.session, now);
    h.board.take_changes();
    let e = shutdown_request(&mut h, "ann").unwrap_err();
    assert_eq!(e.code, ErrorCode::NotConnected);
    assert!(e.message.contains("not connected"), "{}", e.message);
    assert!(h.board.inbox(TEAM, "ann").is_empty());
    assert!(!h.board.has_changes(), "nothing recorded");
    // Ordinary messages still wait for an offline member.
    let ctx = h.lead();
    h.send(ctx, "ann", "for later");
    assert_eq!(h.board.inbox(TEAM, "ann").len(), 1);
}

#[test]
fn a_shutdown_request_does_not_outlive_the_session_it_was_meant_for() {
    let mut h = H::new();
    let ann = h.join("ann", "dev");
    let req = shutdown_request(&mut h, "ann").unwrap();
    let ctx = h.lead();
    let kept = h.send(ctx, "ann", "still relevant");
    h.board.take_changes();
    let now = h.now();
    h.board.disconnect(ann.session, now);
    let changes = h.board.take_changes();
    assert_eq!(
        changes.messages_acked,
        vec![req.id],
        "deleted from the store"
    );
    assert!(
        changes
            .events
            .iter()
            .any(|e| e.kind == EventKind::MessageAcked && e.message == Some(req.id)),
        "{:?}",
        changes.events
    );
    // The next session of that name gets the ordinary message, not the shutdown.
    let again = h.stranger(TEAM, "ann");
    h.register(again, "dev");
    let inbox = h.board.inbox(TEAM, "ann");
    assert_eq!(
        inbox.iter().map(|m| m.id).collect::<Vec<_>>(),
        vec![kept.id]
    );
}

#[test]
fn a_restart_drops_shutdown_requests_left_in_inboxes() {
    let mut h = H::new();
    let mut store = Store::default();
    h.join("ann", "dev");
    let req = shutdown_request(&mut h, "ann").unwrap();
    let ctx = h.lead();
    let kept = h.send(ctx, "ann", "still relevant");
    store.apply(h.board.take_changes());
    let mut restored = Board::restore(BoardConfig::default(), store.snapshot(), h.now());
    let inbox = restored.inbox(TEAM, "ann");
    assert_eq!(
        inbox.iter().map(|m| m.id).collect::<Vec<_>>(),
        vec![kept.id]
    );
    let changes = restored.take_changes();
    assert_eq!(changes.messages_acked, vec![req.id]);
    store.apply(changes);
    assert!(!store.messages.contains_key(&req.id));
}
