//! What boardd knows of a member's process, as opposed to what the member last
//! said of itself ([`crate::MemberStatus`]). boardd derives it from facts: the
//! session's socket, the process's exit, the time since the member was last
//! heard from, the claim it holds and that claim's plan request. It is never
//! read from the member. `docs/protocol.md` §9 says how each state is reached.

use serde::{Deserialize, Serialize};

/// A member's liveness: its state, since when, and what boardd last heard.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Liveness {
    pub state: LiveState,
    /// When it entered `state`, in ms since the epoch.
    pub since: i64,
    /// When boardd last heard from its session (any request), in ms since the
    /// epoch; `None` before it was ever heard.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_heartbeat: Option<i64>,
    /// How the process ended, once `dead`, when boardd could read it:
    /// "killed by SIGKILL", "exited with status 1".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit: Option<String>,
}

/// The states, the same snake_case name on the wire (serde) and on screen (strum).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[derive(strum::Display, strum::IntoStaticStr)]
#[strum(serialize_all = "snake_case")]
#[cfg_attr(test, derive(strum::VariantArray))]
pub enum LiveState {
    /// Registered, and has neither asked for work nor held a task since.
    Starting,
    /// Holds a claim.
    Working,
    /// Holds no claim.
    Idle,
    /// Holds a claim whose plan request waits for the lead.
    AwaitingApproval,
    /// Connected, but not heard from within twice its declared beat, or its
    /// lease ran out: a stopped or hung process.
    Stalled,
    /// Not connected, and its process is not known to be gone.
    Offline,
    /// Its process is gone.
    Dead,
}

impl LiveState {
    /// Whether the member's session is connected in this state.
    pub fn is_connected(self) -> bool {
        !matches!(self, LiveState::Offline | LiveState::Dead)
    }
}
