//! The teammate's transcript on disk, for `teamctl logs`.
//!
//! One JSON line per entry, appended with a single `write` so that a reader tailing
//! the file never sees half an entry from us. A transcript that cannot be written is
//! logged and otherwise ignored: losing the log must not stop the work.

use std::io::Write;
use std::path::{Path, PathBuf};
use teamboard_protocol::transcript::{EntryKind, TranscriptEntry};

pub struct Transcript {
    path: PathBuf,
    file: Option<std::fs::File>,
    warned: bool,
}

impl Transcript {
    pub fn open(path: PathBuf) -> Transcript {
        let file = path
            .parent()
            .map(std::fs::create_dir_all)
            .transpose()
            .and_then(|_| {
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&path)
            });
        let (file, warned) = match file {
            Ok(f) => (Some(f), false),
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "cannot open the transcript; continuing without one");
                (None, true)
            }
        };
        Transcript { path, file, warned }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn write(
        &mut self,
        kind: EntryKind,
        tool: Option<&str>,
        task: Option<u64>,
        is_error: bool,
        text: &str,
    ) {
        let entry = TranscriptEntry {
            at: now_ms(),
            kind,
            tool: tool.map(str::to_string),
            task,
            is_error,
            text: text.to_string(),
        };
        let Some(file) = self.file.as_mut() else {
            return;
        };
        let mut line = match serde_json::to_vec(&entry) {
            Ok(line) => line,
            Err(_) => return,
        };
        line.push(b'\n');
        if let Err(e) = file.write_all(&line)
            && !self.warned
        {
            tracing::warn!(path = %self.path.display(), error = %e, "cannot write the transcript");
            self.warned = true;
        }
    }
}

pub use teamboard_protocol::now_ms;
