//! Facts about the running daemon that `status` reports.

use crate::writer::Counters;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

/// Facts about the running daemon, for `status`.
#[derive(Debug, Clone)]
pub struct DaemonInfo {
    pub started: std::time::Instant,
    pub socket: PathBuf,
    pub state_dir: PathBuf,
    /// Live connections, counted by the server.
    pub live: Arc<AtomicU64>,
    /// Transactions and the replies that waited for them, counted by the writer.
    pub commits: Arc<Counters>,
}
