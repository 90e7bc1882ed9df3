//! `read_file`, `write_file` and `edit_file`.
//!
//! All three take their path through [`confine::resolve`] and do their disk work on
//! tokio's blocking pool, so a slow disk never stalls the teammate's other tasks
//! (lease keep-alive, the board connection).
//!
//! Writes are atomic (a temporary file in the same directory, then `rename`): a build
//! or a teammate reading the file concurrently sees either the old or the new
//! content, never half of it.

use super::call::{LocalEnv, ToolOutput, opt_int_arg, str_arg};
use super::confine;
use serde_json::Value;
use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;

/// Larger files are refused: their text would not fit a model's context anyway.
const MAX_FILE_BYTES: u64 = 10 * 1024 * 1024;
/// Lines `read_file` shows when the model names no `limit`.
const DEFAULT_LIMIT: u64 = 2000;
/// Longer lines are cut (minified code, data files): one such line could otherwise
/// fill the model's context.
const MAX_LINE_CHARS: usize = 2000;
/// `read_file` stops adding lines past this many bytes of output.
const MAX_READ_OUTPUT: usize = 100_000;
/// How much of a file is checked for NUL bytes to call it binary (what git and grep do).
const BINARY_PROBE: usize = 8192;

/// `read_file {path, offset?, limit?}`.
pub async fn read(env: &LocalEnv, input: &Value) -> ToolOutput {
    blocking(env, input, read_blocking).await
}

/// `write_file {path, content}`.
pub async fn write(env: &LocalEnv, input: &Value) -> ToolOutput {
    blocking(env, input, write_blocking).await
}

/// `edit_file {path, old_text, new_text}`.
pub async fn edit(env: &LocalEnv, input: &Value) -> ToolOutput {
    blocking(env, input, edit_blocking).await
}

type Blocking = fn(&LocalEnv, &Value) -> Result<String, ToolOutput>;

async fn blocking(env: &LocalEnv, input: &Value, f: Blocking) -> ToolOutput {
    let env = env.clone();
    let input = input.clone();
    match tokio::task::spawn_blocking(move || f(&env, &input)).await {
        Ok(Ok(content)) => ToolOutput::ok(content),
        Ok(Err(out)) => out,
        Err(e) => ToolOutput::error(format!("internal error: the file tool failed: {e}")),
    }
}

fn read_blocking(env: &LocalEnv, input: &Value) -> Result<String, ToolOutput> {
    let shown = str_arg(input, "path")?;
    let offset = opt_int_arg(input, "offset")?.unwrap_or(1);
    let limit = opt_int_arg(input, "limit")?.unwrap_or(DEFAULT_LIMIT);
    if offset == 0 {
        return Err(ToolOutput::error(
            "offset is 1-based: the first line is offset 1",
        ));
    }
    if limit == 0 {
        return Err(ToolOutput::error("limit must be at least 1"));
    }
    let path = confine::resolve(&env.workdir, shown, true)?;
    let (text, lossy) = load_text(&path, shown)?;

    let total = text.lines().count() as u64;
    if total == 0 {
        return Ok(format!("[{shown} is empty]"));
    }
    if offset > total {
        return Err(ToolOutput::error(format!(
            "offset {offset} is past the end of {shown}, which has {total} lines"
        )));
    }
    let mut out = String::new();
    let mut last = offset - 1;
    let mut cut_lines = 0usize;
    for (n, line) in (offset..).zip(text.lines().skip((offset - 1) as usize)) {
        if n >= offset.saturating_add(limit) || out.len() >= MAX_READ_OUTPUT {
            break;
        }
        let line = match line.char_indices().nth(MAX_LINE_CHARS) {
            Some((cut, _)) => {
                cut_lines += 1;
                format!(
                    "{}… [line cut: {} chars]",
                    &line[..cut],
                    line.chars().count()
                )
            }
            None => line.to_string(),
        };
        out.push_str(&format!("{n:>6}\t{line}\n"));
        last = n;
    }
    if last < total {
        out.push_str(&format!(
            "[showing lines {offset}-{last} of {total}; call read_file with offset={} to read more]\n",
            last + 1
        ));
    }
    if cut_lines > 0 {
        out.push_str(&format!(
            "[{cut_lines} line(s) longer than {MAX_LINE_CHARS} characters were cut; use bash to see them whole]\n"
        ));
    }
    if lossy {
        out.push_str(
            "[note: the file is not valid UTF-8; invalid bytes are shown as \u{FFFD}, and \
             edit_file will refuse it]\n",
        );
    }
    // The trailing newline is an artefact of the loop, not of the file.
    out.pop();
    Ok(out)
}

fn write_blocking(env: &LocalEnv, input: &Value) -> Result<String, ToolOutput> {
    let shown = str_arg(input, "path")?;
    let content = str_arg(input, "content")?;
    let path = confine::resolve_for_write(&env.workdir, shown, false)?;
    if path.is_dir() {
        return Err(ToolOutput::error(format!(
            "'{shown}' is a directory; give the path of a file to write"
        )));
    }
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).map_err(|e| {
            ToolOutput::error(format!("cannot create the directories for '{shown}': {e}"))
        })?;
    }
    atomic_write(&path, content.as_bytes())
        .map_err(|e| ToolOutput::error(format!("cannot write '{shown}': {e}")))?;
    Ok(format!("wrote {} bytes to {shown}", content.len()))
}

fn edit_blocking(env: &LocalEnv, input: &Value) -> Result<String, ToolOutput> {
    let shown = str_arg(input, "path")?;
    let old = str_arg(input, "old_text")?;
    let new = str_arg(input, "new_text")?;
    if old.is_empty() {
        return Err(ToolOutput::error(
            "old_text is empty; give the exact text to replace (to create or overwrite a \
             whole file, use write_file)",
        ));
    }
    if old == new {
        return Err(ToolOutput::error(
            "old_text and new_text are the same; nothing would change",
        ));
    }
    let path = confine::resolve_for_write(&env.workdir, shown, true)?;
    let (text, lossy) = load_text(&path, shown)?;
    if lossy {
        return Err(ToolOutput::error(format!(
            "'{shown}' is not valid UTF-8, so edit_file cannot rewrite it without damage; \
             use bash (e.g. sed) instead"
        )));
    }

    let mut found = occurrences(&text, old);
    let (mut old, mut new) = (old.to_string(), new.to_string());
    // The model copies lines from read_file, which shows them without their `\r`. In a
    // CRLF file, retry with the line endings the file actually has.
    if found.is_empty() && text.contains("\r\n") && old.contains('\n') && !old.contains('\r') {
        let crlf_old = old.replace('\n', "\r\n");
        let crlf_found = occurrences(&text, &crlf_old);
        if !crlf_found.is_empty() {
            found = crlf_found;
            old = crlf_old;
            new = new.replace("\r\n", "\n").replace('\n', "\r\n");
        }
    }

    match found.as_slice() {
        [] => Err(ToolOutput::error(not_found_message(shown, &text, &old))),
        [at] => {
            let at = *at;
            let line = line_of(&text, at);
            let mut edited = String::with_capacity(text.len() - old.len() + new.len());
            edited.push_str(&text[..at]);
            edited.push_str(&new);
            edited.push_str(&text[at + old.len()..]);
            atomic_write(&path, edited.as_bytes())
                .map_err(|e| ToolOutput::error(format!("cannot write '{shown}': {e}")))?;
            Ok(format!(
                "edited {shown}: replaced 1 occurrence at line {line} ({} line(s) became {})",
                old.lines().count().max(1),
                new.lines().count()
            ))
        }
        many => {
            let lines: Vec<String> = many
                .iter()
                .take(10)
                .map(|&at| line_of(&text, at).to_string())
                .collect();
            let more = if many.len() > 10 { ", …" } else { "" };
            Err(ToolOutput::error(format!(
                "old_text occurs {} times in {shown} (at lines {}{more}); it must occur exactly \
                 once. Include more surrounding lines in old_text so that it matches only the \
                 place you mean, or make several edits.",
                many.len(),
                lines.join(", ")
            )))
        }
    }
}

/// Byte offsets of every occurrence of `needle`, overlapping ones included: in `aaa`,
/// `aa` occurs twice, and replacing "the" one would be a guess.
fn occurrences(haystack: &str, needle: &str) -> Vec<usize> {
    let step = needle.chars().next().map_or(1, char::len_utf8);
    let mut found = Vec::new();
    let mut start = 0;
    while let Some(i) = haystack.get(start..).and_then(|h| h.find(needle)) {
        found.push(start + i);
        start += i + step;
    }
    found
}

fn line_of(text: &str, byte: usize) -> usize {
    text[..byte].matches('\n').count() + 1
}

fn not_found_message(shown: &str, text: &str, old: &str) -> String {
    let mut msg = format!(
        "old_text was not found in {shown}. It must match the file exactly, character for \
         character, including indentation and line breaks."
    );
    let squash = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    if squash(text).contains(&squash(old)) {
        msg.push_str(
            " Text that matches except for whitespace (indentation, line breaks, trailing \
             spaces, tabs versus spaces) does exist.",
        );
    }
    let looks_numbered = old.lines().any(|l| {
        let l = l.trim_start();
        l.split_once('\t')
            .is_some_and(|(n, _)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    });
    if looks_numbered {
        msg.push_str(
            " old_text seems to include read_file's line-number prefixes; leave them out.",
        );
    }
    msg.push_str(
        " Read the file again with read_file (it may have changed) and copy the text from there.",
    );
    msg
}

/// The file's text, and whether invalid UTF-8 had to be replaced. Refuses directories,
/// files over [`MAX_FILE_BYTES`] and binary files with a message saying what to do.
fn load_text(path: &Path, shown: &str) -> Result<(String, bool), ToolOutput> {
    let meta =
        fs::metadata(path).map_err(|e| ToolOutput::error(format!("cannot read '{shown}': {e}")))?;
    if meta.is_dir() {
        return Err(ToolOutput::error(format!(
            "'{shown}' is a directory, not a file; use glob (e.g. pattern '{}/*') to list it",
            shown.trim_end_matches('/')
        )));
    }
    if !meta.is_file() {
        return Err(ToolOutput::error(format!(
            "'{shown}' is not a regular file (a device, socket or FIFO); the file tools \
             only handle regular files"
        )));
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(ToolOutput::error(format!(
            "'{shown}' is {} bytes, over the {} MB limit of the file tools; use bash \
             (head, sed -n, grep) to work with parts of it",
            meta.len(),
            MAX_FILE_BYTES / (1024 * 1024)
        )));
    }
    let bytes =
        fs::read(path).map_err(|e| ToolOutput::error(format!("cannot read '{shown}': {e}")))?;
    if bytes[..bytes.len().min(BINARY_PROBE)].contains(&0) {
        return Err(ToolOutput::error(format!(
            "'{shown}' looks like a binary file (it contains NUL bytes); the file tools \
             handle text only. Use bash (e.g. `file`, `xxd | head`) to inspect it"
        )));
    }
    match String::from_utf8(bytes) {
        Ok(text) => Ok((text, false)),
        Err(e) => Ok((String::from_utf8_lossy(e.as_bytes()).into_owned(), true)),
    }
}

/// Writes `bytes` to `path` through a temporary file in the same directory and a
/// rename, keeping the permissions of the file it replaces (an edited script stays
/// executable).
fn atomic_write(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = path
        .parent()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "the path has no parent"))?;
    let permissions = fs::metadata(path).ok().map(|m| m.permissions());
    let mut tmp = tempfile::Builder::new()
        // A short fixed prefix: one made from the target's name could exceed NAME_MAX.
        .prefix(".teammated-tmp-")
        // A new file gets what `File::create` gives (0666 less the umask), not
        // tempfile's private 0600.
        .permissions(fs::Permissions::from_mode(0o666))
        .tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    if let Some(p) = permissions {
        tmp.as_file().set_permissions(p)?;
    }
    // Flushed before the rename, so a crash leaves the old or the new file, not an
    // empty one under the new name. A failure on the way removes the temporary file.
    tmp.as_file().sync_all()?;
    tmp.persist(path)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::os::unix::fs::PermissionsExt;
    use std::time::Duration;

    fn env(dir: &Path) -> LocalEnv {
        LocalEnv::new(dir.to_path_buf(), Duration::from_secs(10))
    }

    #[tokio::test]
    async fn read_numbers_lines() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("f.txt"), "alpha\nbeta\r\ngamma\n").unwrap();
        let out = read(&env(dir.path()), &json!({"path": "f.txt"})).await;
        assert!(!out.is_error, "{}", out.content);
        assert_eq!(out.content, "     1\talpha\n     2\tbeta\n     3\tgamma");
    }

    #[tokio::test]
    async fn read_offset_and_limit() {
        let dir = tempfile::tempdir().unwrap();
        let text: String = (1..=10).map(|n| format!("line {n}\n")).collect();
        fs::write(dir.path().join("f.txt"), text).unwrap();
        let e = env(dir.path());
        let out = read(&e, &json!({"path": "f.txt", "offset": 3, "limit": 2})).await;
        assert_eq!(
            out.content,
            "     3\tline 3\n     4\tline 4\n[showing lines 3-4 of 10; call read_file with offset=5 to read more]"
        );
        let out = read(&e, &json!({"path": "f.txt", "offset": "9"})).await;
        assert_eq!(out.content, "     9\tline 9\n    10\tline 10");
        let out = read(&e, &json!({"path": "f.txt", "offset": 11})).await;
        assert!(out.is_error);
        assert!(out.content.contains("has 10 lines"), "{}", out.content);
        assert!(
            read(&e, &json!({"path": "f.txt", "offset": 0}))
                .await
                .is_error
        );
        assert!(
            read(&e, &json!({"path": "f.txt", "limit": -1}))
                .await
                .is_error
        );
    }

    #[tokio::test]
    async fn read_refuses_binary_missing_and_dirs() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("b.bin"), [0x7f, b'E', b'L', b'F', 0, 1, 2]).unwrap();
        fs::create_dir(dir.path().join("sub")).unwrap();
        fs::write(dir.path().join("empty"), "").unwrap();
        let e = env(dir.path());
        let out = read(&e, &json!({"path": "b.bin"})).await;
        assert!(
            out.is_error && out.content.contains("binary"),
            "{}",
            out.content
        );
        let out = read(&e, &json!({"path": "nope.txt"})).await;
        assert!(
            out.is_error && out.content.contains("does not exist"),
            "{}",
            out.content
        );
        let out = read(&e, &json!({"path": "sub"})).await;
        assert!(
            out.is_error && out.content.contains("directory"),
            "{}",
            out.content
        );
        let out = read(&e, &json!({"path": "empty"})).await;
        assert_eq!(out, ToolOutput::ok("[empty is empty]"));
        let out = read(&e, &json!({"path": "../x"})).await;
        assert!(
            out.is_error && out.content.contains("outside"),
            "{}",
            out.content
        );
    }

    #[tokio::test]
    async fn read_refuses_huge_files() {
        let dir = tempfile::tempdir().unwrap();
        let f = fs::File::create(dir.path().join("big")).unwrap();
        f.set_len(MAX_FILE_BYTES + 1).unwrap();
        let out = read(&env(dir.path()), &json!({"path": "big"})).await;
        assert!(
            out.is_error && out.content.contains("10 MB"),
            "{}",
            out.content
        );
    }

    #[tokio::test]
    async fn read_cuts_long_lines() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("min.js"), "x".repeat(5000)).unwrap();
        let out = read(&env(dir.path()), &json!({"path": "min.js"})).await;
        assert!(!out.is_error);
        assert!(out.content.contains("[line cut: 5000 chars]"));
        assert!(out.content.len() < 2200, "{}", out.content.len());
    }

    #[tokio::test]
    async fn write_creates_directories_and_reports() {
        let dir = tempfile::tempdir().unwrap();
        let e = env(dir.path());
        let out = write(&e, &json!({"path": "a/b/c.txt", "content": "hello\n"})).await;
        assert_eq!(out, ToolOutput::ok("wrote 6 bytes to a/b/c.txt"));
        assert_eq!(
            fs::read_to_string(dir.path().join("a/b/c.txt")).unwrap(),
            "hello\n"
        );
        // Overwrite; no temporary files are left behind.
        let out = write(&e, &json!({"path": "a/b/c.txt", "content": "bye"})).await;
        assert!(!out.is_error);
        assert_eq!(
            fs::read_to_string(dir.path().join("a/b/c.txt")).unwrap(),
            "bye"
        );
        let names: Vec<_> = fs::read_dir(dir.path().join("a/b")).unwrap().collect();
        assert_eq!(names.len(), 1);
        // A new file has the mode `File::create` gives, not a temporary file's 0600.
        fs::write(dir.path().join("a/b/plain"), "").unwrap();
        let mode = |p: &str| {
            fs::metadata(dir.path().join(p))
                .unwrap()
                .permissions()
                .mode()
        };
        assert_eq!(mode("a/b/c.txt"), mode("a/b/plain"));
        let out = write(&e, &json!({"path": "../evil", "content": "x"})).await;
        assert!(out.is_error);
        assert!(!dir.path().parent().unwrap().join("evil").exists());
        let out = write(&e, &json!({"path": "a", "content": "x"})).await;
        assert!(
            out.is_error && out.content.contains("directory"),
            "{}",
            out.content
        );
        assert!(write(&e, &json!({"path": "x"})).await.is_error);
    }

    #[tokio::test]
    async fn edit_replaces_exactly_one_occurrence() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("m.rs");
        fs::write(&p, "fn a() {}\nfn b() {}\n").unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(0o755)).unwrap();
        let out = edit(
            &env(dir.path()),
            &json!({"path": "m.rs", "old_text": "fn b() {}", "new_text": "fn b() {\n    a();\n}"}),
        )
        .await;
        assert!(!out.is_error, "{}", out.content);
        assert!(out.content.contains("line 2"), "{}", out.content);
        assert_eq!(
            fs::read_to_string(&p).unwrap(),
            "fn a() {}\nfn b() {\n    a();\n}\n"
        );
        // Permissions survive the atomic replace.
        assert_eq!(
            fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            0o755
        );
    }

    #[tokio::test]
    async fn edit_zero_occurrences_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("m.rs"), "    let x = 1;\n").unwrap();
        let e = env(dir.path());
        let out = edit(
            &e,
            &json!({"path": "m.rs", "old_text": "let y = 1;", "new_text": "let y = 2;"}),
        )
        .await;
        assert!(out.is_error);
        assert!(out.content.contains("not found"), "{}", out.content);
        assert!(!out.content.contains("does exist"));
        let out = edit(
            &e,
            &json!({"path": "m.rs", "old_text": "let  x =\n1;", "new_text": "let x = 2;"}),
        )
        .await;
        assert!(out.is_error);
        assert!(
            out.content.contains("except for whitespace"),
            "{}",
            out.content
        );
        let out = edit(
            &e,
            &json!({"path": "m.rs", "old_text": "     1\t    let x = 1;", "new_text": ""}),
        )
        .await;
        assert!(
            out.content.contains("line-number prefixes"),
            "{}",
            out.content
        );
        assert_eq!(
            fs::read_to_string(dir.path().join("m.rs")).unwrap(),
            "    let x = 1;\n"
        );
    }

    #[tokio::test]
    async fn edit_many_occurrences_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("m.txt"), "x = 1\ny = 2\nx = 1\nx = 1\n").unwrap();
        let out = edit(
            &env(dir.path()),
            &json!({"path": "m.txt", "old_text": "x = 1", "new_text": "x = 3"}),
        )
        .await;
        assert!(out.is_error);
        assert!(
            out.content.contains("occurs 3 times") && out.content.contains("lines 1, 3, 4"),
            "{}",
            out.content
        );
        assert_eq!(
            fs::read_to_string(dir.path().join("m.txt")).unwrap(),
            "x = 1\ny = 2\nx = 1\nx = 1\n"
        );
        // Overlapping occurrences count as several.
        fs::write(dir.path().join("o.txt"), "aaa").unwrap();
        let out = edit(
            &env(dir.path()),
            &json!({"path": "o.txt", "old_text": "aa", "new_text": "b"}),
        )
        .await;
        assert!(out.content.contains("occurs 2 times"), "{}", out.content);
    }

    #[tokio::test]
    async fn edit_refuses_empty_and_identical_text() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("m.txt"), "abc").unwrap();
        let e = env(dir.path());
        let out = edit(
            &e,
            &json!({"path": "m.txt", "old_text": "", "new_text": "x"}),
        )
        .await;
        assert!(
            out.is_error && out.content.contains("empty"),
            "{}",
            out.content
        );
        let out = edit(
            &e,
            &json!({"path": "m.txt", "old_text": "a", "new_text": "a"}),
        )
        .await;
        assert!(out.is_error);
        let out = edit(
            &e,
            &json!({"path": "nope", "old_text": "a", "new_text": "b"}),
        )
        .await;
        assert!(out.is_error && out.content.contains("does not exist"));
    }

    #[tokio::test]
    async fn edit_keeps_crlf_line_endings() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("w.txt"), "one\r\ntwo\r\nthree\r\n").unwrap();
        let out = edit(
            &env(dir.path()),
            &json!({"path": "w.txt", "old_text": "one\ntwo", "new_text": "1\n2"}),
        )
        .await;
        assert!(!out.is_error, "{}", out.content);
        assert_eq!(
            fs::read_to_string(dir.path().join("w.txt")).unwrap(),
            "1\r\n2\r\nthree\r\n"
        );
    }
}
