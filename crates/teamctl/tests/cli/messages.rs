//! `teamctl send`, `teamctl broadcast` and `teamctl inbox`.

use crate::{Cli, stderr, stdout};
use teamboard_protocol::MessageKind;

#[test]
fn send_to_unknown_teammate_fails() {
    let d = Cli::start();
    let out = d.run(&["send", "nobody", "hello"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.starts_with("teamctl: "), "{err}");
    assert!(err.contains("no teammate named"), "{err}");
}

#[test]
fn an_empty_message_or_broadcast_is_refused_before_anything_is_sent() {
    let d = Cli::start();
    for args in [
        &["send", "nobody", ""][..],
        &["send", "nobody", "  "],
        &["broadcast", ""],
    ] {
        let out = d.run(args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = stderr(&out);
        assert!(
            err.contains("is empty, so nothing was sent"),
            "{args:?}: {err}"
        );
    }
    // A kind that means something by itself may come without text: this one
    // gets as far as boardd, which knows no "nobody".
    let out = d.run(&["send", "nobody", "", "--kind", "idle_notification"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("no teammate named"),
        "{}",
        stderr(&out)
    );
    let events = stdout(&d.run(&["events"]));
    assert!(!events.contains("message_sent"), "{events}");
}

#[test]
fn messages_inbox_and_broadcast() {
    let d = Cli::start();
    let alice = d.teammate("alice", "coder");
    let _bob = d.teammate("bob", "tester");

    let sent = d.ok(&["send", "alice", "please start with #1"]);
    assert!(sent.contains("alice"), "{sent}");
    let m = d.json(&["send", "alice", "tests pass", "--kind", "result"]);
    assert_eq!(m["kind"], "result");
    assert_eq!(m["to"], "alice");
    assert_eq!(m["from"], "lead");
    let all = d.json(&["broadcast", "standup in 5"]);
    let mut to: Vec<_> = all
        .as_array()
        .expect("array")
        .iter()
        .filter_map(|m| m["to"].as_str().map(str::to_string))
        .collect();
    to.sort();
    assert_eq!(to, vec!["alice", "bob"]);
    let inbox = d.block_on(alice.inbox()).expect("alice's inbox");
    assert_eq!(inbox.len(), 3);

    // Alice writes to the lead.
    d.block_on(alice.send("lead", MessageKind::Message, "done with #1\nsee PR", None))
        .expect("send to lead");
    let shown = d.ok(&["inbox"]);
    assert!(shown.contains("from alice"), "{shown}");
    assert!(shown.contains("done with #1"), "{shown}");
    let json = d.json(&["inbox"]);
    assert_eq!(json.as_array().map(Vec::len), Some(1));
    // --ack acknowledges what it showed; afterwards the inbox is empty.
    let shown = d.ok(&["inbox", "--ack"]);
    assert!(shown.contains("see PR"), "{shown}");
    let json = d.json(&["inbox"]);
    assert_eq!(json, serde_json::json!([]));
}

/// The kinds that belong to a tracked request are not messages a lead sends:
/// teamctl names the command that makes them, and nothing reaches the teammate.
#[test]
fn send_refuses_the_kinds_of_tracked_requests_and_names_the_command() {
    let d = Cli::start();
    let alice = d.teammate("alice", "coder");
    for (kind, instead) in [
        ("shutdown_request", "teamctl shutdown NAME"),
        ("shutdown-response", "only the teammate answers"),
        ("plan_approval_request", "teamctl plans"),
        (
            "plan_approval_response",
            "teamctl reject REQ --feedback TEXT",
        ),
    ] {
        let out = d.run(&["send", "alice", "stop", "--kind", kind]);
        assert_eq!(out.status.code(), Some(2), "{kind}: {}", stdout(&out));
        let err = stderr(&out);
        assert!(err.contains("belong to a tracked request"), "{err}");
        assert!(err.contains(instead), "{instead:?} not in: {err}");
    }
    // The help no longer offers them.
    let help = d.ok(&["send", "--help"]);
    assert!(!help.contains("shutdown_request"), "{help}");
    assert!(help.contains("teamctl shutdown NAME"), "{help}");
    assert_eq!(d.block_on(alice.inbox()).expect("inbox"), Vec::new());
}
