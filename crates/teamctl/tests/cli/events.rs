//! `teamctl events`: history, paging, filters and `--follow`.

use crate::{Cli, base_command, stderr};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::sync::mpsc;
use std::time::Duration;
use teamboard_protocol::Client;

#[test]
fn events_prints_history_as_text_and_json_lines() {
    let d = Cli::start();
    d.ok(&["task", "add", "one"]);
    d.ok(&["task", "add", "two"]);
    d.ok(&["task", "cancel", "2"]);

    let text = d.ok(&["events"]);
    assert_eq!(text.lines().count(), 3, "{text}");
    assert!(text.contains("task_created"), "{text}");
    assert!(text.contains("task_cancelled"), "{text}");

    let out = d.ok(&["events", "--json"]);
    let events: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect();
    assert_eq!(events.len(), 3);
    let first_seq = events[0]["seq"].as_u64().expect("seq");

    let only_two = d.ok(&["events", "--task", "2", "--json"]);
    assert_eq!(only_two.lines().count(), 2, "{only_two}");
    let since = d.ok(&["events", "--since", &first_seq.to_string()]);
    assert_eq!(since.lines().count(), 2, "{since}");
    let limited = d.ok(&["events", "--limit", "1"]);
    assert_eq!(limited.lines().count(), 1, "{limited}");
    assert!(limited.contains("task_cancelled"), "newest: {limited}");
}

#[test]
fn events_since_pages_through_long_histories() {
    let d = Cli::start();
    // 1,100 events: more than one page (boardd answers at most 1,000 by default).
    d.block_on(async {
        let lead = std::sync::Arc::new(
            Client::connect(
                &d.socket,
                "test",
                "lead",
                "default",
                Some(&teamboard_testkit::lead_key(&d.socket)),
            )
            .await
            .expect("connects"),
        );
        for batch in 0..11 {
            let mut set = tokio::task::JoinSet::new();
            for i in 0..100 {
                let lead = lead.clone();
                set.spawn(async move {
                    lead.add_task(teamboard_protocol::request::NewTask {
                        subject: format!("task {batch}-{i}"),
                        ..Default::default()
                    })
                    .await
                });
            }
            while let Some(r) = set.join_next().await {
                r.expect("joins").expect("task added");
            }
        }
    });
    let newest = d.ok(&["events"]);
    assert_eq!(newest.lines().count(), 1000, "newest page only");
    let all = d.ok(&["events", "--since", "0"]);
    assert_eq!(all.lines().count(), 1100, "--since pages forward");
    let some = d.ok(&["events", "--since", "1050"]);
    assert_eq!(some.lines().count(), 50);
    let limited = d.ok(&["events", "--since", "0", "--limit", "10"]);
    assert!(
        limited
            .lines()
            .next()
            .is_some_and(|l| l.trim_start().starts_with("1 ")),
        "{limited}"
    );
    assert_eq!(limited.lines().count(), 10);
}

#[test]
fn events_of_a_task_that_does_not_exist_is_an_error() {
    let d = Cli::start();
    d.ok(&["task", "add", "one"]);
    let out = d.run(&["events", "--task", "99"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("#99 does not exist"), "{err}");
    assert!(d.ok(&["events", "--task", "1"]).contains("one"));
}

#[test]
fn events_follow_streams_new_events() {
    let d = Cli::start();
    d.ok(&["task", "add", "before"]);
    let mut child = base_command(&d.socket)
        .args(["events", "--follow", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn events --follow");
    let (tx, rx) = mpsc::channel::<Value>();
    let stdout = child.stdout.take().expect("stdout");
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            let v: Value = serde_json::from_str(&line).expect("JSON line");
            if tx.send(v).is_err() {
                break;
            }
        }
    });
    let next = || rx.recv_timeout(Duration::from_secs(10)).expect("an event");
    // History first...
    assert_eq!(next()["task"], 1);
    // ...then live events, in order and without duplicates.
    d.ok(&["task", "add", "after"]);
    d.ok(&["task", "cancel", "2"]);
    let e = next();
    assert_eq!(
        (e["kind"].as_str(), e["task"].as_u64()),
        (Some("task_created"), Some(2))
    );
    let e = next();
    assert_eq!(
        (e["kind"].as_str(), e["task"].as_u64()),
        (Some("task_cancelled"), Some(2))
    );
    let _ = child.kill();
    let _ = child.wait();
    let _ = reader.join();
}

#[test]
fn events_follow_ends_when_the_daemon_goes_away() {
    let mut d = Cli::start();
    d.ok(&["task", "add", "one"]);
    let mut child = base_command(&d.socket)
        .args(["events", "--follow"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn events --follow");
    // The history is printed after subscribing: once it shows, the stream is live.
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let first = lines.next().expect("a line").expect("readable");
    assert!(first.contains("task_created"), "{first}");
    d.stop();
    let out = child.wait_with_output().expect("exits");
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.starts_with("teamctl: "), "{err}");
    assert!(err.contains("closed"), "{err}");
}
