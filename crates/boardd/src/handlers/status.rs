//! `status`: the daemon's version, uptime and per-team counts.

use crate::actor::Actor;
use teamboard_protocol::{PROTOCOL_VERSION, ServerStatus};

pub(super) fn status(actor: &Actor) -> ServerStatus {
    ServerStatus {
        version: env!("CARGO_PKG_VERSION").to_string(),
        protocol: PROTOCOL_VERSION,
        pid: std::process::id(),
        uptime_ms: actor.info.started.elapsed().as_millis() as u64,
        socket: actor.info.socket.display().to_string(),
        state_dir: actor.info.state_dir.display().to_string(),
        sessions: actor.info.live_sessions(),
        teams: actor
            .board
            .team_names()
            .iter()
            .map(|t| actor.board.summary(t))
            .collect(),
        commits: actor.writer.stats(),
    }
}
