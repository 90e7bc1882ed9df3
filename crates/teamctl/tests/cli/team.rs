//! `teamctl team` and `teamctl status`, and the JSON every listing prints.

use crate::Cli;
use serde_json::Value;

#[test]
fn json_outputs_have_the_documented_fields() {
    let d = Cli::start();
    d.ok(&["task", "add", "one", "-d", "the first"]);
    d.ok(&["task", "add", "two", "--blocked-by", "1"]);
    let alice = d.teammate("alice", "coder");
    d.block_on(alice.claim_task(1)).expect("claim");

    let tasks = d.json(&["tasks"]);
    let tasks = tasks.as_array().expect("array");
    assert_eq!(tasks.len(), 2);
    for field in [
        "id",
        "subject",
        "description",
        "status",
        "owner",
        "blocked_by",
        "priority",
        "role",
        "attempts",
        "result",
        "created_at",
        "updated_at",
    ] {
        assert!(
            tasks[0].get(field).is_some(),
            "task lacks {field}: {}",
            tasks[0]
        );
    }
    assert_eq!(tasks[0]["owner"], "alice");
    assert_eq!(tasks[0]["status"], "in_progress");
    assert_eq!(tasks[1]["blocked_by"], serde_json::json!([1]));

    let team = d.json(&["team"]);
    let members = team.as_array().expect("array");
    assert_eq!(members.len(), 1);
    let m = &members[0];
    for field in ["name", "role", "status", "pid", "task", "tokens"] {
        assert!(m.get(field).is_some(), "member lacks {field}: {m}");
    }
    assert_eq!(m["name"], "alice");
    assert_eq!(m["role"], "coder");
    assert_eq!(m["pid"], 4242);
    assert_eq!(m["task"], 1);
    assert!(
        m["tokens"]["input"].is_u64() && m["tokens"]["output"].is_u64(),
        "{m}"
    );

    let status = d.json(&["status"]);
    assert!(status["version"].is_string(), "{status}");
    assert!(status["teams"].is_array(), "{status}");

    // Text forms of the same.
    let team = d.ok(&["team"]);
    assert!(team.contains("alice"), "{team}");
    assert!(team.contains("coder"), "{team}");
    assert!(team.contains("pid 4242"), "{team}");
    assert!(team.contains("#1 one"), "{team}");
    let status = d.ok(&["status"]);
    assert!(status.starts_with("boardd "), "{status}");
    assert!(status.contains(&d.socket.display().to_string()), "{status}");
    assert!(status.contains("team default"), "{status}");
}

#[test]
fn team_json_members_have_name_role_status_pid_task_and_tokens() {
    let d = Cli::start();
    d.ok(&["task", "add", "build it"]);
    let _alice = d.teammate("alice", "coder");
    let bob = d.teammate("bob", "tester");
    d.block_on(bob.claim_task(1)).expect("claim");

    let team = d.json(&["team"]);
    let members = team.as_array().expect("an array of members");
    let member = |name: &str| {
        members
            .iter()
            .find(|m| m["name"] == name)
            .unwrap_or_else(|| panic!("no {name} in {team}"))
    };
    for m in members {
        for field in ["name", "role", "status", "pid", "task", "tokens"] {
            assert!(m.get(field).is_some(), "member lacks {field}: {m}");
        }
        assert!(m["status"].is_string(), "{m}");
        assert!(m["tokens"]["input"].is_u64(), "{m}");
        assert!(m["tokens"]["output"].is_u64(), "{m}");
    }
    // A member without a task has `task: null`, not a missing field.
    assert_eq!(member("alice")["task"], Value::Null);
    assert_eq!(member("alice")["role"], "coder");
    assert_eq!(member("alice")["pid"], 4242);
    assert_eq!(member("bob")["task"], 1);
    assert_eq!(member("bob")["status"], "working");

    let text = d.ok(&["team"]);
    let line = |name: &str| {
        text.lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("no line for {name} in:\n{text}"))
            .to_string()
    };
    let alice = line("alice");
    assert!(alice.contains("pid 4242"), "{text}");
    assert!(alice.contains("no task"), "{text}");
    assert!(alice.contains("tokens"), "{text}");
    let bob = line("bob");
    assert!(bob.contains("working"), "{text}");
    assert!(bob.contains("#1 build it"), "{text}");
}
