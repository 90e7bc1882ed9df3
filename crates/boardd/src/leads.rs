//! The lead seats: one LLM lead (`teamctl lead`) per team at a time.
//!
//! A seat belongs to a session, like a claim: it is taken with `take_lead` and
//! given up when that session's connection closes, so a lead whose process died
//! (its socket closed with it) never blocks the next one. It is kept here, in
//! the actor, and not on the board: it is a fact about open connections, which
//! a restart ends anyway, so nothing of it is written to disk.
//!
//! Alternatives that lost: a hello flag (`"lead": true`) would have refused the
//! connection itself, but the lead and the person at teamctl both speak as
//! `lead`, and a refusal at hello cannot tell a person why in the usual error
//! shape; a member row for the lead would have put it on the roster, where
//! `teamctl team` and the teammates' `send` would take it for a teammate.

use std::collections::HashMap;
use std::sync::Arc;
use teamboard_board::SessionId;
use teamboard_protocol::{ErrorBody, ErrorCode};

/// Who holds a team's seat.
#[derive(Debug, Clone, Copy)]
struct Seat {
    session: SessionId,
    /// The lead's pid, as the kernel reported it.
    pid: Option<u32>,
    /// When it took the seat, in unix ms.
    since_ms: i64,
}

/// The seat of each team whose lead is connected.
#[derive(Debug, Default)]
pub struct LeadSeats {
    by_team: HashMap<Arc<str>, Seat>,
}

impl LeadSeats {
    /// Gives `team`'s seat to `session`, unless another session holds it; taking
    /// it again on the same session is a no-op.
    pub fn take(
        &mut self,
        team: &Arc<str>,
        session: SessionId,
        pid: Option<u32>,
        now_ms: i64,
    ) -> Result<(), ErrorBody> {
        if let Some(seat) = self.by_team.get(team)
            && seat.session != session
            // A lead killed a moment ago has closed its socket, but boardd
            // may not have read that close yet when the next lead asks: its
            // process being gone (or a zombie) frees the seat at once.
            && seat.pid.is_none_or(teamboard_process::alive)
        {
            let pid = seat.pid.map_or_else(String::new, |p| format!("pid {p}, "));
            let secs = seat.since_ms.div_euclid(1000).rem_euclid(86_400);
            let since = format!(
                "{:02}:{:02}:{:02} UTC",
                secs / 3600,
                (secs / 60) % 60,
                secs % 60
            );
            return Err(ErrorBody::new(
                ErrorCode::AlreadyConnected,
                format!(
                    "team '{team}' already has a lead ({pid}since {since}); one lead per \
                     team at a time: stop that one first, or lead another team (--team)"
                ),
            ));
        }
        self.by_team.insert(
            team.clone(),
            Seat {
                session,
                pid,
                since_ms: now_ms,
            },
        );
        Ok(())
    }

    /// Frees `team`'s seat if `session` held it: its connection closed.
    pub fn closed(&mut self, team: &str, session: SessionId) {
        if self.by_team.get(team).is_some_and(|s| s.session == session) {
            self.by_team.remove(team);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_session_holds_a_seat_until_it_closes() {
        let mut seats = LeadSeats::default();
        let team: Arc<str> = Arc::from("web");
        // 03:51:02 UTC on some day.
        let at = (86_400 * 20_000 + 3 * 3600 + 51 * 60 + 2) * 1000;
        // This test's own pid: a live process.
        let me = std::process::id();
        seats.take(&team, 1, Some(me), at).expect("free");
        seats
            .take(&team, 1, Some(me), at)
            .expect("again, same session");
        let e = seats.take(&team, 2, None, at).expect_err("taken");
        assert_eq!(e.code, ErrorCode::AlreadyConnected);
        assert!(
            e.message.starts_with(&format!(
                "team 'web' already has a lead (pid {me}, since 03:51:02 UTC)"
            )),
            "{}",
            e.message
        );
        seats
            .take(&Arc::from("other"), 2, None, at)
            .expect("another team");
        seats.closed("web", 2);
        assert!(seats.take(&team, 3, None, at).is_err(), "not 2's seat");
        seats.closed("web", 1);
        seats.take(&team, 3, None, at).expect("free once 1 closed");
    }

    #[test]
    fn a_seat_whose_process_is_gone_is_free_before_its_close_arrives() {
        let mut child = std::process::Command::new("true").spawn().expect("true");
        let pid = child.id();
        let _ = child.wait();
        let mut seats = LeadSeats::default();
        let team: Arc<str> = Arc::from("web");
        seats.take(&team, 1, Some(pid), 0).expect("free");
        seats
            .take(&team, 2, None, 0)
            .expect("the holder's process is gone");
        assert!(seats.take(&team, 3, None, 0).is_err(), "2 holds it now");
    }
}
