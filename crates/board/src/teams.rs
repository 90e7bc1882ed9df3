//! Which teams exist, and making one.
//!
//! A team exists once it has a task, a member or a repository, or was created
//! explicitly (a hello with `new_team`); `default` always does. Teams are never
//! deleted. The explicit creation is stored (the store's `teams` table), so that
//! a team created and then left empty, e.g. by a spawn whose teammate has not
//! registered yet, still exists after a restart.
//!
//! Alternatives that lost: a `create_team` op would have needed a round trip of
//! its own before the hello that then names the team, and every client to learn
//! it; refusing at the first request instead of at the hello would have let a
//! session into a team that does not exist and refused it later, op by op.

use crate::Board;
use teamboard_protocol::DEFAULT_TEAM;

impl Board {
    /// Whether a team of that name exists.
    pub fn has_team(&self, name: &str) -> bool {
        name == DEFAULT_TEAM
            || self.teams.get(name).is_some_and(|t| {
                t.created || !t.tasks.is_empty() || !t.members.is_empty() || t.repo.is_some()
            })
    }

    /// Every team that exists, by name, `default` among them.
    pub fn known_teams(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .teams
            .keys()
            .filter(|n| self.has_team(n))
            .cloned()
            .collect();
        if !names.iter().any(|n| n == DEFAULT_TEAM) {
            names.insert(0, DEFAULT_TEAM.to_string());
        }
        names
    }

    /// Lets a session into `team` at its hello. `new_team` is the hello's: `Some(false)`
    /// refuses a team that does not exist, with words that name the teams there
    /// are; `Some(true)`, and `None` (a client older than the field), create it.
    pub fn admit(&mut self, team: &str, new_team: Option<bool>) -> Result<(), String> {
        if self.has_team(team) {
            return Ok(());
        }
        if new_team == Some(false) {
            return Err(format!(
                "no team '{team}'; known teams: {}. Use --new-team {team} to create it",
                self.known_teams().join(", ")
            ));
        }
        self.team_mut(team).created = true;
        self.dirty.teams.insert(team.to_string());
        Ok(())
    }
}
