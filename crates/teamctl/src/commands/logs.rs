//! `teamctl logs`: a teammate's transcript (or process log), readable.
//!
//! The transcript is a JSON Lines file that teammated appends to while it works.
//! Only complete lines are shown: a line still being written (no newline yet) waits
//! for its newline. `--follow` polls the file for growth, like `tail -F`: it waits
//! for a file that does not exist yet, and starts over on a file that was
//! truncated or replaced. A line that is not a transcript entry is shown as it is,
//! marked, and never stops the output.

use super::Ctx;
use crate::cli::LogsArgs;
use crate::render;
use anyhow::Context as _;
use std::collections::VecDeque;
use std::fs::File;
use std::io::{BufRead as _, BufReader, Seek as _, SeekFrom};
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::time::Duration;
use teamboard_protocol::names::validate_name;
use teamboard_protocol::transcript::{
    EntryKind, TranscriptEntry, process_log_path, transcript_path,
};
use tokio::signal::unix::{SignalKind, signal};

/// How often `--follow` looks for new lines.
const POLL: Duration = Duration::from_millis(200);
/// Tool results longer than this are shortened unless `--raw`.
const MAX_RESULT_LINES: usize = 40;
/// What a shortened tool result keeps from its start and its end (errors tend to
/// be at the end, the command's own header at the start).
const KEEP_HEAD: usize = 25;
const KEEP_TAIL: usize = 10;
/// A text up to this long, on one line, stays on the entry's header line.
const INLINE_TEXT: usize = 100;

pub async fn run(ctx: &Ctx, args: LogsArgs) -> anyhow::Result<()> {
    // The names become path components: check them before touching the disk.
    validate_name(&args.name).map_err(|e| anyhow::anyhow!("bad teammate name: {e}"))?;
    validate_name(&ctx.team).map_err(|e| anyhow::anyhow!("bad team name: {e}"))?;
    let state_dir = ctx.state_dir();
    let path = if args.process_log {
        process_log_path(&state_dir, &ctx.team, &args.name)
    } else {
        transcript_path(&state_dir, &ctx.team, &args.name)
    };
    let mut out = Printer {
        json: ctx.json,
        raw: args.raw,
        transcript: !args.process_log,
        path,
    };
    if args.follow {
        follow(&mut out, args.lines).await
    } else {
        once(ctx, &args, &mut out)
    }
}

/// Prints the file as it is now.
fn once(ctx: &Ctx, args: &LogsArgs, out: &mut Printer) -> anyhow::Result<()> {
    let mut tail = match Tail::open(&out.path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(missing(ctx, args, &out.path));
        }
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", out.path.display())),
    };
    let mut backlog = Backlog::new(args.lines);
    let path = out.path.clone();
    tail.read_new(|n, line| backlog.push(out, n, line))
        .with_context(|| format!("cannot read {}", path.display()))?;
    // A last line without its newline is either still being written or the end of
    // a file whose writer stopped mid-way; show it only if it is whole.
    if let Some((n, last)) = tail.unterminated()
        && out.is_whole(last)
    {
        backlog.push(out, n, last)?;
    }
    backlog.finish(out)
}

fn missing(ctx: &Ctx, args: &LogsArgs, path: &Path) -> anyhow::Error {
    let name = &args.name;
    if args.process_log {
        anyhow::anyhow!(
            "no process log for '{name}' in team '{}': {} does not exist. It is written for \
             teammates started with `teamctl spawn`; one run by systemd logs to \
             `journalctl --user -u teammated@{name}`",
            ctx.team,
            path.display()
        )
    } else {
        anyhow::anyhow!(
            "no transcript for '{name}' in team '{}': {} does not exist. `teamctl team` lists \
             the teammates' names; --follow waits for a teammate that has not started yet \
             (check --team and --state-dir too)",
            ctx.team,
            path.display()
        )
    }
}

/// Prints what exists, then what gets appended, until Ctrl-C.
async fn follow(out: &mut Printer, lines: Option<usize>) -> anyhow::Result<()> {
    let mut interrupt = signal(SignalKind::interrupt())?;
    let path = out.path.clone();
    let mut tail: Option<Tail> = None;
    // --lines applies to what is there when we start, as with `tail -n N -f`.
    let mut backlog = Backlog::new(lines);
    let mut announced = false;
    loop {
        if tail.is_none() {
            match Tail::open(&path) {
                Ok(t) => tail = Some(t),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    // Nothing existed when we started, so there is no backlog to
                    // cut: a file that appears later is shown from its start, as
                    // `tail -F` does.
                    backlog.last = None;
                    if !announced && !out.json {
                        render::note(format_args!(
                            "teamctl: waiting for {} to appear",
                            path.display()
                        ));
                        announced = true;
                    }
                }
                Err(e) => {
                    return Err(e).with_context(|| format!("cannot read {}", path.display()));
                }
            }
        }
        if let Some(t) = tail.as_mut() {
            t.read_new(|n, line| backlog.push(out, n, line))
                .with_context(|| format!("cannot read {}", path.display()))?;
            backlog.finish(out)?;
            match t.check(&path) {
                Change::None => {}
                Change::Truncated => t.rewind()?,
                // What was appended to the old file before it went has been read
                // above; the new one is read from its start.
                Change::Replaced | Change::Gone => tail = None,
            }
            if tail.is_none() {
                // A replacement may already be there: do not sleep before looking.
                continue;
            }
        }
        tokio::select! {
            _ = interrupt.recv() => return Ok(()),
            () = tokio::time::sleep(POLL) => {}
        }
    }
}

// ---------------------------------------------------------------- reading

/// An open file read line by line as it grows.
struct Tail {
    reader: BufReader<File>,
    /// Device and inode, to notice the path being pointed at a new file.
    id: (u64, u64),
    /// Bytes consumed so far (complete lines plus `partial`).
    pos: u64,
    /// The start of a line whose newline has not been written yet.
    partial: Vec<u8>,
    /// Complete lines handed out so far, for warnings.
    line_no: u64,
}

enum Change {
    None,
    Truncated,
    Replaced,
    Gone,
}

impl Tail {
    fn open(path: &Path) -> std::io::Result<Tail> {
        let file = File::open(path)?;
        let meta = file.metadata()?;
        Ok(Tail {
            reader: BufReader::new(file),
            id: (meta.dev(), meta.ino()),
            pos: 0,
            partial: Vec::new(),
            line_no: 0,
        })
    }

    /// Hands every complete line appended since the last call (without its line
    /// ending) to `each`, with its line number. A trailing partial line is kept
    /// for the next call.
    fn read_new(
        &mut self,
        mut each: impl FnMut(u64, &[u8]) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        loop {
            let n = self.reader.read_until(b'\n', &mut self.partial)?;
            if n == 0 {
                return Ok(());
            }
            self.pos += n as u64;
            if self.partial.last() != Some(&b'\n') {
                // End of the file in the middle of a line.
                return Ok(());
            }
            self.line_no += 1;
            let line = trim_line_end(&self.partial);
            let result = each(self.line_no, line);
            self.partial.clear();
            result?;
        }
    }

    /// The partial last line, if any, with the number it will have.
    fn unterminated(&self) -> Option<(u64, &[u8])> {
        let line = trim_line_end(&self.partial);
        (!line.is_empty()).then_some((self.line_no + 1, line))
    }

    /// What happened to the file at `path` since it was opened.
    fn check(&self, path: &Path) -> Change {
        match std::fs::metadata(path) {
            Ok(m) if (m.dev(), m.ino()) != self.id => Change::Replaced,
            Ok(m) if m.len() < self.pos => Change::Truncated,
            Ok(_) => Change::None,
            Err(_) => Change::Gone,
        }
    }

    /// Starts over at the beginning of a file that was truncated in place.
    fn rewind(&mut self) -> anyhow::Result<()> {
        self.reader
            .seek(SeekFrom::Start(0))
            .context("cannot go back to the start of a truncated file")?;
        self.pos = 0;
        self.partial.clear();
        self.line_no = 0;
        Ok(())
    }
}

fn trim_line_end(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// Prints lines as they come, or keeps only the last N to print when it is
/// finished, and from then on prints them as they come.
struct Backlog {
    last: Option<usize>,
    kept: VecDeque<(u64, Vec<u8>)>,
}

impl Backlog {
    fn new(last: Option<usize>) -> Backlog {
        Backlog {
            last,
            kept: VecDeque::new(),
        }
    }

    fn push(&mut self, out: &mut Printer, n: u64, line: &[u8]) -> anyhow::Result<()> {
        // Blank lines are not entries; they neither print nor count.
        if line.iter().all(u8::is_ascii_whitespace) {
            return Ok(());
        }
        let Some(last) = self.last else {
            return out.print(n, line);
        };
        if last == 0 {
            return Ok(());
        }
        if self.kept.len() == last {
            self.kept.pop_front();
        }
        self.kept.push_back((n, line.to_vec()));
        Ok(())
    }

    fn finish(&mut self, out: &mut Printer) -> anyhow::Result<()> {
        self.last = None;
        for (n, line) in self.kept.drain(..) {
            out.print(n, &line)?;
        }
        Ok(())
    }
}

// ---------------------------------------------------------------- printing

struct Printer {
    json: bool,
    raw: bool,
    /// A transcript (JSON Lines), or teammated's plain-text process log.
    transcript: bool,
    path: PathBuf,
}

impl Printer {
    /// Whether an unterminated last line is complete in itself.
    fn is_whole(&self, line: &[u8]) -> bool {
        !self.transcript || serde_json::from_slice::<serde_json::Value>(line).is_ok()
    }

    fn print(&mut self, n: u64, line: &[u8]) -> anyhow::Result<()> {
        if line.iter().all(u8::is_ascii_whitespace) {
            return Ok(());
        }
        let text = String::from_utf8_lossy(line);
        if !self.transcript {
            if self.json {
                return render::json_line(&text);
            }
            render::line(&text)?;
            return Ok(());
        }
        if self.json {
            // Unchanged, so that fields this teamctl does not know survive; but only
            // JSON objects, so that the output stays valid JSON Lines.
            if matches!(
                serde_json::from_str::<serde_json::Value>(&text),
                Ok(serde_json::Value::Object(_))
            ) {
                render::line(&text)?;
            } else {
                render::note(format_args!(
                    "teamctl: warning: line {n} of {} is not a transcript entry; skipped",
                    self.path.display()
                ));
            }
            return Ok(());
        }
        match serde_json::from_str::<TranscriptEntry>(&text) {
            Ok(entry) => {
                let lines: Vec<String> = entry_lines(&entry, self.raw)
                    .iter()
                    .map(|l| visible(l))
                    .collect();
                render::lines(&lines)?
            }
            Err(_) => render::line(&visible(&malformed_line(n, &text)))?,
        }
        Ok(())
    }
}

/// A line that is not a transcript entry, as it is, behind a marker.
fn malformed_line(n: u64, text: &str) -> String {
    format!("!! line {n} is not a transcript entry: {text}")
}

/// One entry for people:
///
/// ```text
/// 12:00:03    #3  tool_use     bash  {"command":"ls"}
/// 12:00:03    #3  tool_result  bash
///     Cargo.toml
///     src
/// ```
///
/// A short one-line text stays on the header line; anything else goes below it,
/// indented. Long tool results are cut down to their start and end unless `raw`.
fn entry_lines(e: &TranscriptEntry, raw: bool) -> Vec<String> {
    let task = e.task.map_or_else(|| "-".to_string(), |t| format!("#{t}"));
    let mut header = format!("{}  {task:>5}  {:<11}", render::clock(e.at), e.kind);
    if let Some(tool) = &e.tool {
        header.push_str("  ");
        header.push_str(tool);
    }
    if e.is_error {
        header.push_str("  [error]");
    }
    let text = e.text.trim_end();
    if text.is_empty() {
        return vec![format!("{header}  (empty)")];
    }
    if !text.contains('\n') && text.chars().count() <= INLINE_TEXT {
        return vec![format!("{header}  {text}")];
    }
    let lines: Vec<&str> = text.lines().collect();
    let mut out = vec![header.trim_end().to_string()];
    let indent = |l: &str| format!("    {l}").trim_end().to_string();
    if e.kind == EntryKind::ToolResult && !raw && lines.len() > MAX_RESULT_LINES {
        let hidden = lines.len() - KEEP_HEAD - KEEP_TAIL;
        out.extend(lines[..KEEP_HEAD].iter().map(|l| indent(l)));
        out.push(format!("    … {hidden} more lines (--raw shows them)"));
        out.extend(lines[lines.len() - KEEP_TAIL..].iter().map(|l| indent(l)));
    } else {
        out.extend(lines.iter().map(|l| indent(l)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(kind: EntryKind, text: &str) -> TranscriptEntry {
        TranscriptEntry {
            at: 3_723_000,
            kind,
            tool: None,
            task: Some(3),
            is_error: false,
            text: text.into(),
        }
    }

    #[test]
    fn short_texts_stay_on_the_header_line() {
        let e = entry(EntryKind::Assistant, "I'll read the code first.");
        assert_eq!(
            entry_lines(&e, false),
            vec!["01:02:03     #3  assistant    I'll read the code first."]
        );
        let mut e = entry(EntryKind::ToolUse, r#"{"command":"ls"}"#);
        e.tool = Some("bash".into());
        e.task = None;
        assert_eq!(
            entry_lines(&e, false),
            vec![r#"01:02:03      -  tool_use     bash  {"command":"ls"}"#]
        );
    }

    #[test]
    fn long_texts_are_indented_and_long_results_shortened() {
        let mut e = entry(EntryKind::ToolResult, "one\ntwo");
        e.tool = Some("bash".into());
        e.is_error = true;
        assert_eq!(
            entry_lines(&e, false),
            vec![
                "01:02:03     #3  tool_result  bash  [error]",
                "    one",
                "    two"
            ]
        );

        let text: Vec<String> = (1..=100).map(|i| format!("line {i}")).collect();
        e.text = text.join("\n");
        let short = entry_lines(&e, false);
        assert_eq!(short.len(), 1 + KEEP_HEAD + 1 + KEEP_TAIL);
        assert_eq!(short[1], "    line 1");
        assert_eq!(
            short[KEEP_HEAD + 1],
            "    … 65 more lines (--raw shows them)"
        );
        assert_eq!(short.last().map(String::as_str), Some("    line 100"));
        assert_eq!(entry_lines(&e, true).len(), 101);

        // Only tool results are shortened.
        e.kind = EntryKind::Assistant;
        assert_eq!(entry_lines(&e, false).len(), 101);
    }

    #[test]
    fn empty_text_says_so() {
        let e = entry(EntryKind::Lifecycle, "");
        assert_eq!(
            entry_lines(&e, false),
            vec!["01:02:03     #3  lifecycle    (empty)"]
        );
    }
}

/// `text` with control characters (other than tab) shown as `\u{..}` escapes. The
/// transcript holds what the model wrote and what its commands printed; an escape
/// sequence in there must not reach the terminal and rewrite it.
fn visible(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_control() && c != '\t' {
                c.escape_unicode().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

#[cfg(test)]
mod visible_tests {
    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(super::visible("a\u{1b}[2Jb\tc"), "a\\u{1b}[2Jb\tc");
    }
}
