//! `teamctl task ...` and `teamctl tasks`: adding, listing, dependencies, cancel,
//! retry and the history of one task.

use crate::{Cli, stderr, stdout};
use teamboard_protocol::Claim;

/// The line of task `id` in a listing (`[ ] #id  subject ...`).
fn line_of(listing: &str, id: &str) -> String {
    let tag = format!("#{id}");
    listing
        .lines()
        .find(|l| l.get(4..).and_then(|r| r.split_whitespace().next()) == Some(tag.as_str()))
        .unwrap_or_else(|| panic!("no line for {tag} in:\n{listing}"))
        .to_string()
}

#[test]
fn task_add_prints_just_the_id() {
    let d = Cli::start();
    assert_eq!(d.ok(&["task", "add", "first"]), "1\n");
    assert_eq!(
        d.ok(&["task", "add", "second", "-d", "details", "--priority", "-2"]),
        "2\n"
    );
    let t = d.json(&[
        "task",
        "add",
        "third",
        "--blocked-by",
        "1",
        "--role",
        "coder",
    ]);
    assert_eq!(t["id"], 3);
    assert_eq!(t["subject"], "third");
    assert_eq!(t["status"], "pending");
    assert_eq!(t["blocked_by"], serde_json::json!([1]));
    assert_eq!(t["role"], "coder");
}

#[test]
fn tasks_show_markers_owners_and_open_blockers() {
    let d = Cli::start_with(|c| c.board.max_attempts = 1);
    let a = d.ok(&["task", "add", "design"]).trim().to_string();
    let b = d
        .ok(&["task", "add", "build", "--blocked-by", &a])
        .trim()
        .to_string();
    let c = d
        .ok(&["task", "add", "test", "--blocked-by", &format!("{a},{b}")])
        .trim()
        .to_string();
    let e = d.ok(&["task", "add", "doomed"]).trim().to_string();
    let f = d.ok(&["task", "add", "dropped"]).trim().to_string();

    let listing = d.ok(&["tasks"]);
    assert!(line_of(&listing, &a).starts_with("[ ] #1"), "{listing}");
    assert!(
        line_of(&listing, &c).ends_with("blocked by #1, #2"),
        "{listing}"
    );

    // A teammate finishes #1 (so it no longer blocks) and starts on #2.
    let alice = d.teammate("alice", "coder");
    d.block_on(async {
        let claim: Claim = alice.claim_task(1).await.expect("claim #1");
        alice
            .complete_task(1, claim.epoch, "done")
            .await
            .expect("complete #1");
        alice.claim_task(2).await.expect("claim #2");
    });
    // Another one fails #4 on its only attempt.
    let bob = d.teammate("bob", "coder");
    d.block_on(async {
        let claim = bob.claim_task(4).await.expect("claim #4");
        bob.fail_task(4, claim.epoch, "it broke")
            .await
            .expect("fail #4");
    });
    let cancelled = d.ok(&["task", "cancel", &f]);
    assert!(cancelled.starts_with("[-] #5"), "{cancelled}");

    let listing = d.ok(&["tasks"]);
    assert!(line_of(&listing, &a).starts_with("[x] #1"), "{listing}");
    let line_b = line_of(&listing, &b);
    assert!(line_b.starts_with("[>] #2"), "{listing}");
    assert!(line_b.contains("@alice"), "{listing}");
    assert!(!line_b.contains("blocked by"), "{listing}");
    let line_c = line_of(&listing, &c);
    assert!(line_c.starts_with("[ ] #3"), "{listing}");
    assert!(
        line_c.ends_with("blocked by #2"),
        "only the open blocker: {listing}"
    );
    assert!(line_of(&listing, &e).starts_with("[!] #4"), "{listing}");
    assert!(line_of(&listing, &f).starts_with("[-] #5"), "{listing}");

    // Filters, both spellings, in text and JSON.
    let pending = d.ok(&["tasks", "--status", "pending"]);
    assert_eq!(pending.lines().count(), 1, "{pending}");
    assert!(pending.contains("blocked by #2"), "{pending}");
    let in_progress = d.json(&["tasks", "--status", "in-progress"]);
    let ids: Vec<_> = in_progress
        .as_array()
        .expect("array")
        .iter()
        .map(|t| t["id"].clone())
        .collect();
    assert_eq!(ids, vec![serde_json::json!(2)]);

    // Retry brings the failed task back.
    let retried = d.ok(&["task", "retry", &e]);
    assert!(retried.starts_with("[ ] #4"), "{retried}");
    let retried = d.json(&["task", "retry", &f]);
    assert_eq!(retried["status"], "pending");
}

#[test]
fn bad_status_is_a_usage_error() {
    let d = Cli::start();
    let out = d.run(&["tasks", "--status", "done"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("unknown status 'done'"), "{err}");
    assert!(err.contains("in_progress"), "{err}");
}

#[test]
fn dependency_cycle_is_refused() {
    let d = Cli::start();
    d.ok(&["task", "add", "a"]);
    d.ok(&["task", "add", "b", "--blocked-by", "1"]);
    let out = d.run(&["task", "depend", "1", "--on", "2"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = stderr(&out);
    assert!(err.starts_with("teamctl: "), "{err}");
    assert!(err.contains("cycle"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    assert!(stdout(&out).is_empty());

    // A good edge prints the task line, with the blocker still open.
    d.ok(&["task", "add", "c"]);
    let line = d.ok(&["task", "depend", "3", "--on", "#1", "2"]);
    assert!(line.starts_with("[ ] #3"), "{line}");
    assert!(line.trim_end().ends_with("blocked by #1, #2"), "{line}");
    let t = d.json(&["task", "depend", "3", "--on", "1"]);
    assert_eq!(t["id"], 3);

    // A task that does not exist.
    let out = d.run(&["task", "cancel", "99"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).starts_with("teamctl: "), "{}", stderr(&out));
}

#[test]
fn task_show_has_history() {
    let d = Cli::start();
    d.ok(&["task", "add", "one", "-d", "line one\nline two"]);
    let alice = d.teammate("alice", "coder");
    d.block_on(async {
        let c = alice.claim_task(1).await.expect("claim");
        alice
            .complete_task(1, c.epoch, "shipped")
            .await
            .expect("complete");
    });

    let detail = d.json(&["task", "show", "1"]);
    assert_eq!(detail["id"], 1);
    assert_eq!(detail["status"], "completed");
    assert_eq!(detail["result"], "shipped");
    let history = detail["history"].as_array().expect("history array");
    let kinds: Vec<_> = history.iter().filter_map(|e| e["kind"].as_str()).collect();
    assert!(kinds.contains(&"task_created"), "{kinds:?}");
    assert!(kinds.contains(&"task_claimed"), "{kinds:?}");
    assert!(kinds.contains(&"task_completed"), "{kinds:?}");
    for e in history {
        assert!(
            e["at"].is_i64() && e["actor"].is_string() && e["detail"].is_string(),
            "{e}"
        );
    }

    let text = d.ok(&["task", "show", "#1"]);
    assert!(text.starts_with("[x] #1  one"), "{text}");
    assert!(text.contains("result:"), "{text}");
    assert!(text.contains("shipped"), "{text}");
    assert!(text.contains("line two"), "{text}");
    assert!(text.contains("history:"), "{text}");
    assert!(text.contains("lead"), "{text}");
    assert!(text.contains("alice"), "{text}");

    let out = d.run(&["task", "show", "42"]);
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn task_edit_and_delete_change_a_pending_task_refuse_in_words_and_survive_a_restart() {
    let mut d = Cli::start();
    d.ok(&["task", "add", "parser"]);
    d.ok(&["task", "add", "lexer", "--blocked-by", "1"]);
    d.ok(&["task", "add", "docs"]);
    d.ok(&["task", "add", "held"]);

    let edited = d.ok(&[
        "task",
        "edit",
        "#1",
        "--subject",
        "the parser",
        "-p",
        "7",
        "--role",
        "dev",
    ]);
    assert!(
        edited.contains("#1") && edited.contains("the parser"),
        "{edited}"
    );
    let out = d.run(&["task", "edit", "1"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("name something to change"),
        "{}",
        stderr(&out)
    );
    let out = d.run(&["task", "edit", "1", "--role", "two words"]);
    assert!(stderr(&out).contains("role:"), "{}", stderr(&out));

    // A task others wait for is refused, naming them.
    let out = d.run(&["task", "delete", "1"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("#2 waits for #1; delete or cancel it first"),
        "{}",
        stderr(&out)
    );
    assert_eq!(d.ok(&["task", "delete", "3"]), "deleted #3 docs\n");
    let out = d.run(&["task", "show", "3"]);
    assert!(!out.status.success(), "{}", stdout(&out));

    // A claimed task is refused in words.
    let ann = d.teammate("ann", "dev");
    let _claim: Claim = d.block_on(ann.claim_task(4)).expect("claim #4");
    for args in [
        &["task", "edit", "4", "-p", "1"][..],
        &["task", "delete", "4"],
    ] {
        let out = d.run(args);
        assert!(!out.status.success());
        assert!(
            stderr(&out).contains("task #4 is held by ann; only a task no one holds"),
            "{}",
            stderr(&out)
        );
    }

    // The newest task deleted: a restart must still not give its id again.
    d.ok(&["task", "add", "last"]);
    d.ok(&["task", "delete", "5"]);
    d.restart();
    let shown = d.json(&["task", "show", "1"]);
    assert_eq!(shown["subject"], "the parser");
    assert_eq!(shown["priority"], 7);
    assert_eq!(shown["role"], "dev");
    let out = d.run(&["task", "show", "3"]);
    assert!(!out.status.success(), "{}", stdout(&out));
    // The deleted id is not reused.
    assert_eq!(d.ok(&["task", "add", "after"]), "6\n");
}
