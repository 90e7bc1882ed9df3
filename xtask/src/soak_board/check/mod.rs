//! The checker: the clients' ack log and boardd's event history (read back
//! after the last restart) against each other, and the processes left after
//! the shutdown. Each figure counts problems and keeps a few of them in words.
//!
//! Events rather than the SQLite file: the events are what boardd promises
//! through its protocol (every change is one, with a sequence number), read
//! through the same op any client uses, so the checker needs no knowledge of
//! the schema. A change that was acknowledged and has no event is lost; the
//! final task list adds the end state of what was completed and cancelled.

mod claims;
mod lost;
mod messages;
#[cfg(test)]
mod tests;

use super::acks::Line;
use super::marker::Marked;
use serde::Serialize;
use teamboard_protocol::{Event, Task};

/// Problems of one kind: how many, and the first few in words.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Figure {
    pub count: usize,
    pub examples: Vec<String>,
}

/// Problems kept in words per figure.
const EXAMPLES: usize = 10;

impl Figure {
    pub fn add(&mut self, problem: String) {
        self.count += 1;
        if self.examples.len() < EXAMPLES {
            self.examples.push(problem);
        }
    }
}

/// The figures the soak must end with at zero.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Figures {
    pub acknowledged_changes_lost: Figure,
    pub tasks_with_two_owners: Figure,
    pub stale_epochs_accepted: Figure,
    pub messages_delivered_too_often: Figure,
    pub processes_left_behind: Figure,
}

impl Figures {
    pub fn all(&self) -> [(&'static str, &Figure); 5] {
        [
            ("acknowledged changes lost", &self.acknowledged_changes_lost),
            ("tasks with two owners at once", &self.tasks_with_two_owners),
            ("stale epochs accepted", &self.stale_epochs_accepted),
            (
                "messages delivered more often than at-least-once allows",
                &self.messages_delivered_too_often,
            ),
            ("processes left behind", &self.processes_left_behind),
        ]
    }

    pub fn zero(&self) -> bool {
        self.all().iter().all(|(_, f)| f.count == 0)
    }
}

/// What the checker reads.
pub struct Evidence<'a> {
    pub log: &'a [Line],
    /// The team's events, in `seq` order.
    pub events: &'a [Event],
    /// The board's tasks at the end.
    pub tasks: &'a [Task],
    pub left: &'a [Marked],
}

pub fn check(e: &Evidence) -> Figures {
    let mut f = Figures::default();
    let claims = claims::Replay::of(e.events);
    claims.judge(&mut f);
    claims::from_log(e.log, &mut f);
    lost::check(e, &claims, &mut f.acknowledged_changes_lost);
    messages::check(e.log, &mut f);
    for p in e.left {
        f.processes_left_behind
            .add(format!("pid {} ({}) still runs", p.pid, p.comm));
    }
    f
}
