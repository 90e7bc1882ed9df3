//! Protocol requests: shutdowns the lead asks for and plans the lead approves.

use crate::Board;
use teamboard_protocol::{RequestKind, TaskId, TeamRequest};

impl Board {
    /// The plan requests of task `id`, oldest first.
    pub fn plans_of(&self, team: &str, id: TaskId) -> Vec<TeamRequest> {
        self.team(team)
            .map(|t| {
                t.requests
                    .values()
                    .filter(|r| r.kind == RequestKind::Plan && r.task == Some(id))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
    }
}
