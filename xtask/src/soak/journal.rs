//! What each soak teammate did, one JSON line per record, in a file of its own.
//!
//! A teammate is killed with SIGKILL at any moment, so the journal is written
//! with one `write` per line to a file opened for appending, and the reader
//! skips a torn last line. The driver reads every journal at the end.

use anyhow::Context;
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};

/// One thing a teammate did or saw.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Record {
    Started {
        pid: u32,
    },
    /// Registered with boardd; `adopted` is a claim it still held (after a
    /// restart of boardd).
    Registered {
        adopted: Option<u64>,
    },
    Claimed {
        task: u64,
        epoch: u64,
    },
    Opened {
        task: u64,
        epoch: u64,
        fresh: bool,
        commits: u32,
        changed: Vec<String>,
        in_progress: Option<String>,
    },
    /// A manifest of a killed teammate's worktree, checked by this teammate
    /// when it opened the worktree, before it touched anything.
    ManifestChecked {
        task: u64,
        manifest: String,
        problems: Vec<String>,
    },
    /// A blocker's file was not in a worktree opened for its dependent.
    DependencyMissing {
        task: u64,
        file: String,
    },
    /// `complete_task` was answered (the line's time): `code` is `None` when
    /// the task completed.
    Answered {
        task: u64,
        epoch: u64,
        sent_at: i64,
        code: Option<String>,
        message: String,
        merged: Option<String>,
    },
    /// A conflict resolved in the worktree (`how`: both sides or its own).
    Resolved {
        task: u64,
        how: String,
        paths: Vec<String>,
    },
    /// It gave the task back.
    Released {
        task: u64,
        epoch: u64,
        why: String,
    },
    /// The claim ended under it.
    Lost {
        task: u64,
        epoch: u64,
        why: String,
    },
    /// A task it held (adopted, or queued when its answer was lost) landed
    /// without it waiting for the answer.
    LandedAway {
        task: u64,
    },
    /// The connection ended (boardd was killed); it reconnects.
    Reconnect {
        why: String,
    },
    /// Git in the worktree failed in a way a teammate had to work around.
    GitTrouble {
        task: u64,
        what: String,
    },
}

/// A journal line: the record and when it was written (wall-clock milliseconds).
#[derive(Serialize, Deserialize)]
struct Line {
    at: i64,
    #[serde(flatten)]
    record: Record,
}

/// A journal being written.
pub struct Journal(std::fs::File);

impl Journal {
    pub fn open(path: &Path) -> anyhow::Result<Journal> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path);
        Ok(Journal(file.with_context(|| {
            format!("cannot open the journal {}", path.display())
        })?))
    }

    /// Appends one record, stamped now. A journal that cannot be written is a
    /// broken soak, but the teammate keeps working: its kill-time behaviour is
    /// the point.
    pub fn write(&mut self, record: Record) {
        let at = teamboard_protocol::now_ms();
        let mut line = serde_json::to_vec(&Line { at, record }).unwrap_or_default();
        line.push(b'\n');
        if let Err(e) = self.0.write_all(&line) {
            eprintln!("soak worker: cannot write its journal: {e}");
        }
    }
}

/// Every record of the run: the teammate's name, when, and the record.
pub type Records = [(String, i64, Record)];

/// Every record of every `*.jsonl` journal in `dir`.
pub fn read_all(dir: &Path) -> anyhow::Result<Vec<(String, i64, Record)>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| Some(e.ok()?.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for path in files {
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        // A line torn by a kill does not parse, and is skipped.
        let lines = std::fs::read_to_string(&path)?;
        let lines = lines
            .lines()
            .filter_map(|l| serde_json::from_str::<Line>(l).ok());
        out.extend(lines.map(|l| (name.clone(), l.at, l.record)));
    }
    Ok(out)
}
