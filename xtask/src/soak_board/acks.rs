//! The clients' side of the story: every answered request that changed the
//! board, every delivery of a message and every refusal of a stale epoch, one
//! JSON line each in `acks.jsonl`, written before the client sends its next
//! request.
//!
//! One file for every client of the run: they all run on the driver's one
//! thread, so lines never interleave, and one file keeps the order in which
//! the answers arrived. Each line is written with one `write` on an unbuffered
//! file: a line is in the kernel before the next request leaves, which is all
//! the checker needs (the driver is never the process that gets killed).

use anyhow::Context;
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::Path;
use teamboard_protocol::{RequestId, TaskId, TaskStatus};

/// One line of the log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Line {
    /// The client: `lead`, or a driver member's name.
    pub client: String,
    /// The client's session count: it goes up on every new connection, so a
    /// delivery can be told from a redelivery to a new session.
    pub session: u64,
    #[serde(flatten)]
    pub what: What,
}

/// The state of a task as the answer to an epoch op showed it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Seen {
    pub epoch: u64,
    pub status: TaskStatus,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum What {
    AddTask {
        id: TaskId,
        blocked_by: Vec<TaskId>,
    },
    CancelTask {
        id: TaskId,
    },
    /// A claim handed to this client (`claim_next` or `wait_for_work`).
    Claim {
        id: TaskId,
        epoch: u64,
    },
    Complete {
        id: TaskId,
        epoch: u64,
        seen: Seen,
    },
    Fail {
        id: TaskId,
        epoch: u64,
        seen: Seen,
    },
    Release {
        id: TaskId,
        epoch: u64,
        seen: Seen,
    },
    Heartbeat {
        id: TaskId,
        epoch: u64,
        seen: Seen,
    },
    /// An op that quoted an epoch the client knew to be old; boardd must
    /// refuse it. `acked` says whether it did not.
    StaleTry {
        id: TaskId,
        epoch: u64,
        acked: bool,
    },
    Send {
        message: u64,
        to: String,
    },
    /// Messages handed to this client (`inbox` or `wait_for_work`).
    Delivered {
        messages: Vec<u64>,
    },
    /// The answer to `ack`: how many of `messages` left the inbox.
    Ack {
        messages: Vec<u64>,
        acked: u64,
    },
    RequestShutdown {
        request: RequestId,
        to: String,
    },
    RespondShutdown {
        request: RequestId,
    },
    SubmitPlan {
        request: RequestId,
        id: TaskId,
        epoch: u64,
    },
    ReviewPlan {
        request: RequestId,
        approve: bool,
    },
}

/// The log, open for appending.
pub struct AckLog {
    file: std::fs::File,
    /// Lines written so far.
    pub lines: u64,
}

impl AckLog {
    pub fn create(path: &Path) -> anyhow::Result<AckLog> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .with_context(|| format!("cannot open {}", path.display()))?;
        Ok(AckLog { file, lines: 0 })
    }

    /// Appends one line. A log that cannot be written ends the run: a soak
    /// whose evidence has holes would report figures it cannot back.
    pub fn push(&mut self, line: &Line) -> anyhow::Result<()> {
        let mut bytes = serde_json::to_vec(line)?;
        bytes.push(b'\n');
        self.file
            .write_all(&bytes)
            .context("cannot write the ack log")?;
        self.lines += 1;
        Ok(())
    }
}

/// Reads a log back, in order.
pub fn read(path: &Path) -> anyhow::Result<Vec<Line>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    text.lines()
        .enumerate()
        .map(|(n, l)| {
            serde_json::from_str(l)
                .with_context(|| format!("{}:{}: not a log line", path.display(), n + 1))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_reads_back_as_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("acks.jsonl");
        let lines = [
            Line {
                client: "d1".into(),
                session: 2,
                what: What::Complete {
                    id: 3,
                    epoch: 4,
                    seen: Seen {
                        epoch: 4,
                        status: TaskStatus::Completed,
                    },
                },
            },
            Line {
                client: "lead".into(),
                session: 1,
                what: What::Send {
                    message: 9,
                    to: "d1".into(),
                },
            },
        ];
        let mut log = AckLog::create(&path).unwrap();
        for l in &lines {
            log.push(l).unwrap();
        }
        assert_eq!(read(&path).unwrap(), lines);
    }
}
