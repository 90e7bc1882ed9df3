//! The last few KiB of a stream of output: what a person needs to see why a
//! command failed, without holding a runaway log in memory.

/// How much of a check's output (or of git's error output) is kept.
pub const TAIL_BYTES: usize = 4096;

/// Keeps the last `limit` bytes pushed into it.
#[derive(Debug)]
pub(crate) struct Tail {
    buf: Vec<u8>,
    limit: usize,
    cut: bool,
}

impl Tail {
    pub(crate) fn new(limit: usize) -> Self {
        Tail {
            buf: Vec::new(),
            limit,
            cut: false,
        }
    }

    pub(crate) fn push(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
        // Trim in batches so a stream of small reads does not shift the buffer
        // on every read.
        if self.buf.len() > 2 * self.limit {
            let excess = self.buf.len() - self.limit;
            self.buf.drain(..excess);
            self.cut = true;
        }
    }

    /// The kept bytes as text: at most `limit` bytes of output, starting on a
    /// UTF-8 character boundary, prefixed with "…" when anything was dropped.
    pub(crate) fn text(&self) -> String {
        let mut start = self.buf.len().saturating_sub(self.limit);
        let cut = self.cut || start > 0;
        if cut {
            // Skip continuation bytes (10xxxxxx) so the text starts on a whole
            // character instead of a replacement character.
            while start < self.buf.len() && self.buf[start] & 0xC0 == 0x80 {
                start += 1;
            }
        }
        let body = String::from_utf8_lossy(&self.buf[start..]);
        if cut {
            format!("…{body}")
        } else {
            body.into_owned()
        }
    }
}

/// `text` trimmed and cut to its last [`TAIL_BYTES`].
pub(crate) fn bounded(text: &[u8]) -> String {
    let mut tail = Tail::new(TAIL_BYTES);
    tail.push(text.trim_ascii());
    tail.text()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_output_is_kept_whole() {
        let mut tail = Tail::new(8);
        tail.push(b"abc");
        tail.push(b"def");
        assert_eq!(tail.text(), "abcdef");
    }

    #[test]
    fn long_output_keeps_its_end_and_says_it_was_cut() {
        let mut tail = Tail::new(4);
        for chunk in [&b"0123"[..], b"4567", b"89"] {
            tail.push(chunk);
        }
        assert_eq!(tail.text(), "…6789");
    }

    #[test]
    fn a_cut_never_splits_a_character() {
        // "é" is two bytes: keeping the last 3 bytes of "éé" would start mid-character.
        let mut tail = Tail::new(3);
        tail.push("ééé".as_bytes());
        assert_eq!(tail.text(), "…é");
    }

    #[test]
    fn bounded_trims_whitespace() {
        assert_eq!(bounded(b"\n  fatal: no\n"), "fatal: no");
    }
}
