//! `teamctl logs`: a teammate's transcript and process log, read from the state
//! directory without boardd.

use crate::{base_command, stderr, stdout, teamctl};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;
use teamboard_testkit::short_tempdir;

/// `teamctl` for commands that must not need boardd: the socket does not exist.
fn offline(state: &Path, args: &[&str]) -> Output {
    let mut all = vec!["--state-dir", state.to_str().expect("utf-8 path")];
    all.extend_from_slice(args);
    teamctl(&state.join("no-boardd-here.sock"), &all)
}

fn transcript_file(state: &Path, team: &str, name: &str) -> PathBuf {
    let path = state
        .join("teammates")
        .join(team)
        .join(name)
        .join("transcript.jsonl");
    std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
    path
}

/// Five entries of every kind, as JSON lines; the last is a 60-line tool result.
fn sample_entries() -> Vec<String> {
    let long: Vec<String> = (1..=60).map(|i| format!("out {i}")).collect();
    [
        serde_json::json!({"at": 3_723_000, "kind": "lifecycle", "text": "started"}),
        serde_json::json!({"at": 3_724_000, "kind": "user", "task": 3,
            "text": "Task #3: Write the parser\nSee the spec."}),
        serde_json::json!({"at": 3_725_000, "kind": "assistant", "task": 3,
            "text": "Reading the code first."}),
        serde_json::json!({"at": 3_726_000, "kind": "tool_use", "tool": "bash", "task": 3,
            "text": "{\"command\":\"cargo test\"}"}),
        serde_json::json!({"at": 3_727_000, "kind": "tool_result", "tool": "bash", "task": 3,
            "is_error": true, "text": long.join("\n")}),
    ]
    .iter()
    .map(|v| v.to_string())
    .collect()
}

#[test]
fn logs_prints_a_transcript_readably() {
    let dir = short_tempdir();
    let state = dir.path();
    let entries = sample_entries();
    let mut text = String::new();
    for (i, e) in entries.iter().enumerate() {
        text.push_str(e);
        text.push('\n');
        if i == 1 {
            text.push_str("this is not json\n\n");
        }
    }
    // A line teammated is still writing: never shown.
    text.push_str(r#"{"at": 3728000, "kind": "assistant", "text": "PARTIAL"#);
    std::fs::write(transcript_file(state, "default", "alice"), text).expect("write");

    let out = offline(state, &["logs", "alice"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let shown = stdout(&out);
    let lines: Vec<&str> = shown.lines().collect();
    assert_eq!(lines[0], "01:02:03      -  lifecycle    started", "{shown}");
    assert_eq!(lines[1], "01:02:04     #3  user", "{shown}");
    assert_eq!(lines[2], "    Task #3: Write the parser", "{shown}");
    assert_eq!(lines[3], "    See the spec.", "{shown}");
    assert_eq!(
        lines[4], "!! line 3 is not a transcript entry: this is not json",
        "{shown}"
    );
    assert_eq!(
        lines[5], "01:02:05     #3  assistant    Reading the code first.",
        "{shown}"
    );
    assert_eq!(
        lines[6], r#"01:02:06     #3  tool_use     bash  {"command":"cargo test"}"#,
        "{shown}"
    );
    assert_eq!(
        lines[7], "01:02:07     #3  tool_result  bash  [error]",
        "{shown}"
    );
    assert_eq!(lines[8], "    out 1", "{shown}");
    assert!(
        shown.contains("    … 25 more lines (--raw shows them)\n"),
        "{shown}"
    );
    assert!(!shown.contains("    out 30\n"), "shortened: {shown}");
    assert_eq!(lines.last(), Some(&"    out 60"), "{shown}");
    assert!(!shown.contains("PARTIAL"), "{shown}");

    let raw = stdout(&offline(state, &["logs", "alice", "--raw"]));
    assert!(raw.contains("    out 30\n"), "{raw}");
    assert!(!raw.contains("more lines"), "{raw}");

    // --lines counts entries, not printed lines.
    let last_two = stdout(&offline(state, &["logs", "alice", "--lines", "2"]));
    assert!(
        last_two.starts_with("01:02:06     #3  tool_use"),
        "{last_two}"
    );
    assert!(last_two.contains("tool_result"), "{last_two}");
    assert!(!last_two.contains("assistant"), "{last_two}");

    // --json: the entries exactly as written, one per line; the bad line is
    // reported on stderr and left out, so stdout stays valid JSON Lines.
    let out = offline(state, &["logs", "alice", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let printed: Vec<String> = stdout(&out).lines().map(str::to_string).collect();
    assert_eq!(printed, entries);
    assert!(stderr(&out).contains("line 3"), "{}", stderr(&out));
    let newest = stdout(&offline(state, &["logs", "alice", "--json", "-n", "1"]));
    assert_eq!(newest.trim_end(), entries[4]);
}

#[test]
fn logs_without_a_transcript_names_the_path_and_the_way_out() {
    let dir = short_tempdir();
    let out = offline(dir.path(), &["logs", "nobody"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    let path = dir.path().join("teammates/default/nobody/transcript.jsonl");
    assert!(err.starts_with("teamctl: "), "{err}");
    assert!(err.contains(&path.display().to_string()), "{err}");
    assert!(err.contains("teamctl team"), "{err}");

    let out = offline(dir.path(), &["logs", "nobody", "--process-log"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("teammated.log"), "{err}");
    assert!(
        err.contains("journalctl --user -u teammated@nobody"),
        "{err}"
    );

    // Names become path components: `..` and friends are refused.
    let out = offline(dir.path(), &["logs", "../../etc"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("bad teammate name"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn logs_process_log_prints_teammateds_output() {
    let dir = short_tempdir();
    let log = dir.path().join("teammates/t1/alice/teammated.log");
    std::fs::create_dir_all(log.parent().expect("parent")).expect("mkdir");
    std::fs::write(&log, "starting\nconnected to boardd\n").expect("write");
    let all = stdout(&offline(
        dir.path(),
        &["--team", "t1", "logs", "alice", "--process-log"],
    ));
    assert_eq!(all, "starting\nconnected to boardd\n");
    let last = stdout(&offline(
        dir.path(),
        &[
            "--team",
            "t1",
            "logs",
            "alice",
            "--process-log",
            "--lines",
            "1",
        ],
    ));
    assert_eq!(last, "connected to boardd\n");
}

#[test]
fn logs_follow_waits_for_the_file_and_prints_complete_lines_as_they_come() {
    use std::io::Write as _;
    let dir = short_tempdir();
    let state = dir.path();
    let path = state.join("teammates/default/alice/transcript.jsonl");
    let mut child = base_command(&state.join("no-boardd-here.sock"))
        .arg("--state-dir")
        .arg(state)
        .args(["logs", "alice", "--follow", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn logs --follow");
    let (tx, rx) = mpsc::channel::<String>();
    let out = child.stdout.take().expect("stdout");
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(out).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let next = || rx.recv_timeout(Duration::from_secs(10)).expect("a line");
    let entries = sample_entries();

    // The file does not exist yet: follow waits for it.
    std::thread::sleep(Duration::from_millis(300));
    let mut file = {
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .expect("create the transcript")
    };
    writeln!(file, "{}", entries[0]).expect("append");
    assert_eq!(next(), entries[0]);

    // Half a line is held back until its newline arrives.
    let (head, rest) = entries[2].split_at(20);
    write!(file, "{head}").expect("append");
    file.flush().expect("flush");
    assert!(
        rx.recv_timeout(Duration::from_millis(700)).is_err(),
        "a partial line was printed"
    );
    writeln!(file, "{rest}").expect("append");
    assert_eq!(next(), entries[2]);
    drop(file);

    // Truncated in place (shorter than what was read): read again from the start.
    std::fs::write(&path, format!("{}\n", entries[3])).expect("truncate");
    assert_eq!(next(), entries[3]);

    // Replaced by a new file (rotation): the new file is read from its start.
    let fresh = state.join("fresh.jsonl");
    std::fs::write(&fresh, format!("{}\n{}\n", entries[1], entries[4])).expect("write");
    std::fs::rename(&fresh, &path).expect("rotate");
    assert_eq!(next(), entries[1]);
    assert_eq!(next(), entries[4]);

    let _ = child.kill();
    let _ = child.wait();
    let _ = reader.join();
}
