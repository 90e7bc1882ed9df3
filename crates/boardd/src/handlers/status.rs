//! `status`: the daemon's version, uptime and per-team counts.

use crate::info::DaemonInfo;
use teamboard_board::Board;
use teamboard_protocol::{PROTOCOL_VERSION, ServerStatus};

pub(super) fn status(board: &Board, info: &DaemonInfo) -> ServerStatus {
    ServerStatus {
        version: env!("CARGO_PKG_VERSION").to_string(),
        protocol: PROTOCOL_VERSION,
        pid: std::process::id(),
        uptime_ms: info.started.elapsed().as_millis() as u64,
        socket: info.socket.display().to_string(),
        state_dir: info.state_dir.display().to_string(),
        sessions: info.live_sessions(),
        teams: board
            .team_names()
            .iter()
            .map(|t| board.summary(t))
            .collect(),
        commits: info.commits.stats(),
    }
}
