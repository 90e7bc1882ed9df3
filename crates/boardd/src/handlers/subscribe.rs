//! `subscribe`: every later event of the session's team is pushed to it.

use crate::actor::Actor;
use crate::outbox::Outbox;
use teamboard_board::SessionId;

pub(super) fn subscribe(actor: &mut Actor, session: SessionId, team: &str, out: &Outbox) {
    let subs = actor.subscribers.entry(team.to_string()).or_default();
    // Subscribing twice on one connection must not double every event.
    if !subs.iter().any(|(s, _)| *s == session) {
        subs.push((session, out.clone()));
    }
}
