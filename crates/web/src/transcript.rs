//! The end of a teammate's transcript, for the page.
//!
//! The file is JSON Lines that teammated appends to; only complete lines that
//! parse as entries are given. Reading from the end keeps this cheap however long
//! the transcript has grown.

use std::io::{Read as _, Seek as _, SeekFrom};
use std::path::Path;
use teamboard_protocol::transcript::TranscriptEntry;

/// How much of the file's end is read: enough for the last entries of a busy
/// teammate, without reading megabytes of old conversation.
const WINDOW: u64 = 512 * 1024;

/// The last `lines` entries; none when the file does not exist yet.
pub fn tail(path: &Path, lines: usize) -> Vec<TranscriptEntry> {
    let Ok(mut file) = std::fs::File::open(path) else {
        return Vec::new();
    };
    let len = file.metadata().map_or(0, |m| m.len());
    let start = len.saturating_sub(WINDOW);
    let mut bytes = Vec::new();
    if file.seek(SeekFrom::Start(start)).is_err() || file.read_to_end(&mut bytes).is_err() {
        return Vec::new();
    }
    let text = String::from_utf8_lossy(&bytes);
    let mut whole: Vec<&str> = text.split('\n').collect();
    // The last piece has no newline yet (or is empty); the first may be cut.
    whole.pop();
    if start > 0 && !whole.is_empty() {
        whole.remove(0);
    }
    let entries: Vec<TranscriptEntry> = whole
        .iter()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let skip = entries.len().saturating_sub(lines);
    entries.into_iter().skip(skip).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_whole_entries_from_the_end() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("t.jsonl");
        let line = |i: i64| format!(r#"{{"at":{i},"kind":"assistant","text":"n{i}"}}"#);
        let mut text: String = (1..=5).map(|i| line(i) + "\n").collect();
        text.push_str("not json\n{\"at\":9,\"kin");
        std::fs::write(&path, text).expect("write");
        let got = super::tail(&path, 2);
        assert_eq!(got.iter().map(|e| e.at).collect::<Vec<_>>(), vec![4, 5]);
        assert!(super::tail(&dir.path().join("none"), 5).is_empty());
    }
}
