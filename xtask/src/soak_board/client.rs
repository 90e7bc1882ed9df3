//! What the lead and the member drivers share: their connection, the ack log,
//! their random choices, and the one rule for an answer: boardd's refusal is
//! an answer (nothing changed), anything else is a lost connection (the
//! change may or may not have happened, so it is not logged).

use super::acks::{AckLog, Line, What};
use super::connect::Conn;
use crate::soak::rng::Rng;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use teamboard_protocol::{ClientError, ErrorCode};

pub type Log = Arc<Mutex<AckLog>>;

/// How a request ended.
pub enum Outcome<T> {
    Acked(T),
    Refused(ErrorCode),
    /// No answer: the connection went (boardd was killed under it).
    Lost,
}

pub struct Driver {
    pub conn: Conn,
    log: Log,
    pub rng: Rng,
    stop: Arc<AtomicBool>,
}

impl Driver {
    pub fn new(conn: Conn, log: Log, rng: Rng, stop: Arc<AtomicBool>) -> Driver {
        Driver {
            conn,
            log,
            rng,
            stop,
        }
    }

    pub fn stopping(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Sorts an answer, dropping the connection when there was none.
    pub fn outcome<T>(&mut self, r: Result<T, ClientError>) -> Outcome<T> {
        match r {
            Ok(v) => Outcome::Acked(v),
            Err(e) => match e.code() {
                Some(code) => Outcome::Refused(code),
                None => {
                    self.conn.drop_connection();
                    Outcome::Lost
                }
            },
        }
    }

    /// Writes an acknowledged change (or a delivery) to the log, before the
    /// next request.
    pub fn record(&self, what: What) -> anyhow::Result<()> {
        let line = Line {
            client: self.conn.name.clone(),
            session: self.conn.sessions,
            what,
        };
        let mut log = self.log.lock().unwrap_or_else(|p| p.into_inner());
        log.push(&line)
    }

    /// A pause of `lo..hi` ms between two requests.
    pub async fn pause(&mut self, lo: u64, hi: u64) {
        let ms = self.rng.u64(lo..hi);
        tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
    }
}
