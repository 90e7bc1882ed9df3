//! The teammate's transcript on disk, for `teamctl logs`.
//!
//! One JSON line per entry, appended with a single `write` so that a reader tailing
//! the file never sees half an entry from us. A transcript that cannot be written is
//! logged and otherwise ignored: losing the log must not stop the work.

use crate::llm::{Block, Retrying};
use std::future::Future;
use std::io::Write;
use std::path::{Path, PathBuf};
use teamboard_protocol::now_ms;
use teamboard_protocol::transcript::{EntryKind, TranscriptEntry};
use tokio::sync::mpsc;

/// Where a model call's retry notices go, and where [`Transcript::write_while`]
/// reads them: `on_retry` is what a `CompletionRequest` takes.
pub fn retry_notices() -> (
    impl Fn(&Retrying<'_>) + Send + Sync,
    mpsc::UnboundedReceiver<String>,
) {
    let (tx, rx) = mpsc::unbounded_channel();
    let on_retry = move |r: &Retrying<'_>| {
        // The receiver lives as long as the call; a send can only fail after it.
        let _ = tx.send(r.to_string());
    };
    (on_retry, rx)
}

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

    /// Logs a model turn, block by block in its order, and returns its text
    /// (the non-blank text blocks joined by newlines) and its tool calls as
    /// (id, name, input).
    pub fn record_turn(
        &mut self,
        task: Option<u64>,
        content: &[Block],
    ) -> (String, Vec<(String, String, serde_json::Value)>) {
        let mut uses = Vec::new();
        let mut text = Vec::new();
        for block in content {
            match block {
                Block::Text { text: t } if !t.trim().is_empty() => {
                    text.push(t.as_str());
                    self.write(EntryKind::Assistant, None, task, false, t);
                }
                Block::ToolUse { id, name, input } => {
                    self.write(
                        EntryKind::ToolUse,
                        Some(name),
                        task,
                        false,
                        &input.to_string(),
                    );
                    uses.push((id.clone(), name.clone(), input.clone()));
                }
                _ => {}
            }
        }
        (text.join("\n"), uses)
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

    /// Runs `call`, writing each line that arrives on `lines` as a lifecycle entry
    /// the moment it arrives: a retry notice must be readable during its wait, not
    /// after it.
    pub async fn write_while<F: Future>(
        &mut self,
        task: Option<u64>,
        lines: &mut mpsc::UnboundedReceiver<String>,
        call: F,
    ) -> F::Output {
        let mut call = std::pin::pin!(call);
        let out = loop {
            tokio::select! {
                out = &mut call => break out,
                Some(line) = lines.recv() => {
                    self.write(EntryKind::Lifecycle, None, task, false, &line);
                }
            }
        };
        // Lines sent just before the call ended, which `select!` did not pick.
        while let Ok(line) = lines.try_recv() {
            self.write(EntryKind::Lifecycle, None, task, false, &line);
        }
        out
    }
}
