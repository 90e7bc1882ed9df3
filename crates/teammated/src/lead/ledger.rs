//! The lead's token use, by what caused each model call.
//!
//! The lead is not on the roster, so boardd keeps no count for it; this ledger is
//! its count. Every model call (and compaction summary) is charged to the cause of
//! the turn it belongs to, so a run can say how much went to planning with the
//! person and how much to coordinating the team.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use teamboard_protocol::TokenUsage;

/// Why a turn runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::Display)]
#[strum(serialize_all = "lowercase")]
pub enum Cause {
    /// The person said something: the goal, an answer, "start".
    Planning,
    /// A team event that needs a decision: a plan request, an error.
    Coordination,
    /// The board is done: the summary.
    Summary,
}

/// Tokens and calls for one cause.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Spent {
    pub calls: u64,
    pub tokens: TokenUsage,
}

/// The lead's whole count, as `lead/usage.json` holds it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ledger {
    pub planning: Spent,
    pub coordination: Spent,
    pub summary: Spent,
    /// The counts are the scripted model's estimates, not a provider's.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub estimated: bool,
}

impl Ledger {
    pub fn add(&mut self, cause: Cause, usage: TokenUsage) {
        let spent = match cause {
            Cause::Planning => &mut self.planning,
            Cause::Coordination => &mut self.coordination,
            Cause::Summary => &mut self.summary,
        };
        spent.calls += 1;
        spent.tokens.add(usage);
    }

    pub fn total(&self) -> TokenUsage {
        let mut t = TokenUsage::default();
        for s in [self.planning, self.coordination, self.summary] {
            t.add(s.tokens);
        }
        t
    }

    /// One line for a person.
    pub fn line(&self) -> String {
        let part = |name: &str, s: &Spent| {
            let cached = match s.tokens.cache_read + s.tokens.cache_write {
                0 => String::new(),
                _ => format!(
                    " + {} cache read, {} cache write",
                    s.tokens.cache_read, s.tokens.cache_write
                ),
            };
            format!(
                "{name} {} in{cached} / {} out ({} calls)",
                s.tokens.input, s.tokens.output, s.calls
            )
        };
        format!(
            "lead tokens{}: {}; {}; {}",
            if self.estimated {
                " (estimated by the scripted model)"
            } else {
                ""
            },
            part("planning", &self.planning),
            part("coordination", &self.coordination),
            part("summary", &self.summary)
        )
    }

    /// Writes the ledger where `usage_path` says, for scripts and the demo. A
    /// ledger that cannot be written is only logged: it must not stop the lead.
    pub fn save(&self, path: &Path) {
        let written = serde_json::to_vec_pretty(self)
            .map_err(std::io::Error::other)
            .and_then(|bytes| {
                if let Some(dir) = path.parent() {
                    std::fs::create_dir_all(dir)?;
                }
                std::fs::write(path, bytes)
            });
        if let Err(e) = written {
            tracing::warn!(path = %path.display(), error = %e, "cannot write the lead's token ledger");
        }
    }
}

/// Where the lead's ledger is kept: `usage.json` next to its transcript.
pub fn usage_path(state_dir: &Path, team: &str) -> PathBuf {
    teamboard_protocol::transcript::teammate_dir(state_dir, team, teamboard_protocol::LEAD)
        .join("usage.json")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_are_charged_to_their_cause() {
        let mut l = Ledger::default();
        l.add(
            Cause::Planning,
            TokenUsage {
                input: 100,
                output: 10,
                ..TokenUsage::default()
            },
        );
        l.add(
            Cause::Coordination,
            TokenUsage {
                input: 50,
                output: 5,
                ..TokenUsage::default()
            },
        );
        l.add(
            Cause::Coordination,
            TokenUsage {
                input: 50,
                output: 5,
                ..TokenUsage::default()
            },
        );
        assert_eq!(l.planning.calls, 1);
        assert_eq!(l.coordination.calls, 2);
        assert_eq!(l.coordination.tokens.input, 100);
        assert_eq!(l.total().input, 200);
        assert!(
            l.line().contains("coordination 100 in / 10 out (2 calls)"),
            "{}",
            l.line()
        );
    }
}
