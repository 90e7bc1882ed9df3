//! `teamctl shutdown`, `requests`, `plans`, `approve` and `reject`, and how
//! `team` and `task show` show the requests. Teammates that answer are protocol
//! clients inside the test; the ones that must be stopped are real processes in
//! process groups of their own (a spawned teammated, a mute teammate), so that
//! boardd's signals never reach the test runner.

use crate::{Cli, TEAMCTL, base_command, stderr, stdout};
use serde_json::Value;
use std::process::{Child, Output, Stdio};
use std::time::Duration;
use teamboard_protocol::request::RegisterArgs;
use teamboard_protocol::{Client, MessageKind, RequestId, TaskStatus};
use teamboard_testkit::{
    MuteTeammate, PATIENCE, Teamctl, alive, connect, eventually_blocking, short_tempdir,
    workspace_bin,
};

/// `teamctl ARGS` started in the background, for a test that answers while it
/// waits.
fn start(d: &Cli, args: &[&str]) -> Child {
    base_command(&d.socket)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("teamctl starts")
}

/// The id of the shutdown request waiting in `teammate`'s inbox, once it is there.
fn shutdown_request_in_inbox(d: &Cli, teammate: &Client) -> RequestId {
    eventually_blocking("a shutdown request in the inbox", PATIENCE, || {
        let inbox = d.block_on(teammate.inbox()).ok()?;
        let m = inbox
            .iter()
            .find(|m| m.kind == MessageKind::ShutdownRequest)?;
        m.request_id.as_deref()?.parse().ok()
    })
}

fn finished(child: Child) -> Output {
    child.wait_with_output().expect("teamctl exits")
}

#[test]
fn shutdown_waits_for_the_answer_and_prints_it() {
    let d = Cli::start();
    let alice = d.teammate("alice", "coder");
    let waiting = start(&d, &["shutdown", "alice", "--reason", "the release is cut"]);
    let id = shutdown_request_in_inbox(&d, &alice);
    let inbox = d.block_on(alice.inbox()).expect("inbox");
    assert_eq!(inbox[0].content, "the release is cut");
    // While it is open, `requests` and `team` show it.
    let listed = d.ok(&["requests"]);
    assert!(
        listed.contains(&format!("r{id}")) && listed.contains("lead -> alice"),
        "{listed}"
    );
    assert!(listed.contains("pending  opened"), "{listed}");
    assert!(listed.contains("answer due in"), "{listed}");
    let team = d.ok(&["team"]);
    assert!(
        team.contains(&format!("shutdown requested just now (request r{id})"))
            || team.contains(&format!("s ago (request r{id})")),
        "{team}"
    );
    // `--json` says so too, on the member it is addressed to.
    let alice_json = |d: &Cli| {
        let roster = d.json(&["team"]);
        let members = roster.as_array().expect("an array of members");
        let alice = members.iter().find(|m| m["name"] == "alice");
        alice.expect("alice on the roster").clone()
    };
    let shown = alice_json(&d);
    assert_eq!(shown["shutdown_request"]["id"], id, "{shown}");
    assert_eq!(shown["shutdown_request"]["state"], "pending", "{shown}");
    assert_eq!(shown["shutdown_request"]["reason"], "the release is cut");
    d.block_on(alice.respond_shutdown(id, true, None))
        .expect("approve");
    let out = finished(waiting);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        format!("alice approved the shutdown and is leaving (request r{id})\n")
    );
    assert!(
        d.ok(&["team"])
            .lines()
            .all(|l| !l.contains("shutdown requested"))
    );
    let shown = alice_json(&d);
    assert!(shown.get("shutdown_request").is_none(), "{shown}");

    // Refused: the reason is shown, and the exit status says the teammate stays.
    let bob = d.teammate("bob", "coder");
    let waiting = start(&d, &["shutdown", "bob"]);
    let id = shutdown_request_in_inbox(&d, &bob);
    d.block_on(bob.respond_shutdown(id, false, Some("halfway through #4")))
        .expect("reject");
    let out = finished(waiting);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert_eq!(
        stderr(&out),
        format!("teamctl: bob rejected the shutdown (request r{id}): halfway through #4\n")
    );

    // --json prints the settled request.
    let waiting = start(&d, &["shutdown", "bob", "--json"]);
    let id = eventually_blocking("the second request", PATIENCE, || {
        let inbox = d.block_on(bob.inbox()).ok()?;
        inbox
            .iter()
            .filter_map(|m| m.request_id.as_deref()?.parse::<RequestId>().ok())
            .find(|r| *r > id)
    });
    d.block_on(bob.respond_shutdown(id, true, Some("done")))
        .expect("approve");
    let out = finished(waiting);
    assert!(out.status.success(), "{}", stderr(&out));
    let shown: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(shown["id"], id);
    assert_eq!(shown["state"], "approved");
    assert_eq!(shown["answered_by"], "bob");
    assert_eq!(shown["feedback"], "done");
}

#[test]
fn shutdown_no_wait_prints_the_request_and_refusals_say_why() {
    let d = Cli::start();
    let _alice = d.teammate("alice", "coder");
    let r = d.json(&["shutdown", "alice", "--no-wait", "--timeout", "300"]);
    assert_eq!(r["kind"], "shutdown");
    assert_eq!(r["from"], "lead");
    assert_eq!(r["to"], "alice");
    assert_eq!(r["state"], "pending");
    let deadline = r["deadline"].as_i64().expect("a deadline");
    let created = r["created_at"].as_i64().expect("created_at");
    assert_eq!(deadline - created, 300_000, "{r}");
    // A second request while one is pending is the same request.
    let again = d.ok(&["shutdown", "alice", "--no-wait"]);
    assert!(again.starts_with(&format!("r{}", r["id"])), "{again}");

    let refused = |args: &[&str], needle: &str| {
        let out = d.run(args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", stdout(&out));
        let err = stderr(&out);
        assert!(err.starts_with("teamctl: "), "{err}");
        assert!(err.contains(needle), "{needle:?} not in: {err}");
    };
    refused(&["shutdown", "nobody"], "no teammate named 'nobody'");
    refused(&["shutdown", "alice", "--timeout", "0"], "use --force");
    let gone = d.teammate("gone", "coder");
    d.block_on(gone.close());
    eventually_blocking("gone to be offline", PATIENCE, || {
        let out = d.run(&["shutdown", "gone", "--no-wait"]);
        stderr(&out)
            .contains("'gone' is not connected")
            .then_some(())
    });
}

#[test]
fn requests_list_the_open_ones_and_all_with_the_documented_json() {
    let d = Cli::start();
    assert!(d.ok(&["requests"]).is_empty());
    assert!(stderr(&d.run(&["requests"])).contains("no open requests"));
    d.ok(&["task", "add", "parser", "--require-plan"]);
    let alice = d.teammate("alice", "coder");
    let _bob = d.teammate("bob", "coder");
    let claim = d.block_on(alice.claim_task(1)).expect("claim");
    d.block_on(alice.submit_plan(1, claim.epoch, "1. read\n2. write"))
        .expect("plan");
    d.ok(&["shutdown", "bob", "--no-wait"]);

    let all = d.json(&["requests"]);
    let all = all.as_array().expect("an array");
    assert_eq!(all.len(), 2, "{all:?}");
    for r in all {
        for field in ["id", "kind", "from", "to", "task", "state"] {
            assert!(r.get(field).is_some(), "request lacks {field}: {r}");
        }
    }
    let plan = &all[0];
    assert_eq!(plan["kind"], "plan");
    assert_eq!(plan["from"], "alice");
    assert_eq!(plan["to"], "lead");
    assert_eq!(plan["task"], 1);
    assert_eq!(plan["state"], "pending");
    assert_eq!(plan["plan"], "1. read\n2. write");
    assert_eq!(all[1]["kind"], "shutdown");
    assert_eq!(all[1]["to"], "bob");
    // Present, as null, in a shutdown too: every object has the listed fields.
    assert_eq!(all[1].get("task"), Some(&Value::Null), "{}", all[1]);

    // The live view counts them, and shows the pending shutdown on bob's line.
    let frame = d.ok(&["watch", "--once"]);
    assert!(
        frame.contains(
            "requests: 1 plan waiting for your decision (teamctl plans), 1 shutdown pending"
        ),
        "{frame}"
    );
    let bob = frame
        .lines()
        .find(|l| l.trim_start().starts_with("bob"))
        .unwrap_or_else(|| panic!("no bob in:\n{frame}"));
    assert!(bob.contains("shutdown requested"), "{frame}");
    assert!(frame.contains("request_opened"), "{frame}");

    let only = d.json(&["requests", "--kind", "shutdown"]);
    assert_eq!(only.as_array().map(Vec::len), Some(1), "{only}");
    let text = d.ok(&["requests", "--kind", "plan"]);
    assert_eq!(text.lines().count(), 1, "{text}");
    assert!(
        text.contains("plan      alice -> lead  #1  pending"),
        "{text}"
    );

    // Settled ones show with --all only.
    d.ok(&["approve", "1"]);
    let open = d.json(&["requests"]);
    assert_eq!(open.as_array().map(Vec::len), Some(1), "{open}");
    let every = d.ok(&["requests", "--all"]);
    assert!(every.contains("approved by lead"), "{every}");
    let out = d.run(&["requests", "--kind", "task"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("use shutdown or plan"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn plans_are_shown_with_their_text_and_decided_by_approve_and_reject() {
    let d = Cli::start();
    d.ok(&["task", "add", "migrate the schema", "--require-plan"]);
    let t = d.json(&["task", "show", "1"]);
    assert_eq!(t["require_plan"], true);
    assert!(
        d.ok(&["task", "show", "1"])
            .contains("plan:       required")
    );
    let alice = d.teammate("alice", "coder");
    let claim = d.block_on(alice.claim_task(1)).expect("claim");
    let first = d
        .block_on(alice.submit_plan(1, claim.epoch, "drop the old table\nthen add columns"))
        .expect("plan");

    let shown = d.ok(&["plans"]);
    assert!(
        shown.starts_with(&format!(
            "r{}  alice  #1 migrate the schema  pending  submitted",
            first.id
        )),
        "{shown}"
    );
    assert!(
        shown.contains("\n    drop the old table\n    then add columns\n"),
        "{shown}"
    );
    assert!(shown.contains("teamctl approve REQ"), "{shown}");
    let json = d.json(&["plans"]);
    assert_eq!(json[0]["plan"], "drop the old table\nthen add columns");
    assert_eq!(json[0]["kind"], "plan");

    // Reject needs feedback (clap says so), then reaches alice.
    let out = d.run(&["reject", &format!("r{}", first.id)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--feedback"), "{}", stderr(&out));
    let said = d.ok(&[
        "reject",
        &format!("R{}", first.id),
        "--feedback",
        "keep the old table",
    ]);
    assert_eq!(
        said,
        format!(
            "rejected alice's plan for #1 (request r{}); alice is told now\n",
            first.id
        )
    );
    let inbox = d.block_on(alice.inbox()).expect("inbox");
    let answer = inbox
        .iter()
        .find(|m| m.kind == MessageKind::PlanApprovalResponse)
        .expect("the decision");
    assert!(answer.content.contains("keep the old table"), "{answer:?}");
    // Deciding it again is refused with boardd's reason.
    let out = d.run(&["approve", &first.id.to_string()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("already rejected by lead"),
        "{}",
        stderr(&out)
    );
    assert!(stderr(&d.run(&["plans"])).contains("no plans waiting"));

    let second = d
        .block_on(alice.submit_plan(1, claim.epoch, "add columns only"))
        .expect("plan");
    let r = d.json(&["approve", &second.id.to_string(), "--feedback", "go"]);
    assert_eq!(r["state"], "approved");
    assert_eq!(r["feedback"], "go");
    d.block_on(alice.release_task_with_note(1, claim.epoch, "columns added; index left"))
        .expect("release");

    // task show: the plans, oldest first, with decisions and feedback, and the
    // handoff note.
    let text = d.ok(&["task", "show", "1"]);
    assert!(
        text.contains("handoff:    columns added; index left"),
        "{text}"
    );
    let plans = text.split("plans:\n").nth(1).expect("a plans section");
    let rejected = plans.find(&format!("r{}  by alice  claim 1  rejected", first.id));
    let approved = plans.find(&format!("r{}  by alice  claim 1  approved", second.id));
    assert!(
        rejected.is_some() && approved.is_some() && rejected < approved,
        "{text}"
    );
    assert!(plans.contains("feedback: keep the old table"), "{text}");
    assert!(plans.contains("      add columns only"), "{text}");
    let json = d.json(&["task", "show", "1"]);
    assert_eq!(json["handoff"], "columns added; index left");
    assert_eq!(json["plans"].as_array().map(Vec::len), Some(2), "{json}");
    assert_eq!(json["plans"][1]["feedback"], "go");

    // A shutdown request is not a plan.
    let _bob = d.teammate("bob", "coder");
    let s = d.json(&["shutdown", "bob", "--no-wait"]);
    let out = d.run(&["approve", &format!("r{}", s["id"])]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("is a shutdown request to bob, not a plan"),
        "{}",
        stderr(&out)
    );
    let out = d.run(&["approve", "99"]);
    assert!(stderr(&out).contains("no request r99"), "{}", stderr(&out));
}

#[test]
fn team_shows_who_needs_plans_approved() {
    let d = Cli::start();
    let carol = d.block_on(async {
        let c = connect(&d.socket, "carol").await;
        c.register_with(RegisterArgs {
            role: "coder".into(),
            pid: Some(4242),
            require_plan: true,
            ..RegisterArgs::default()
        })
        .await
        .expect("register");
        c
    });
    let _dave = d.teammate("dave", "coder");
    let team = d.ok(&["team"]);
    let line = |name: &str| {
        team.lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("no {name} in:\n{team}"))
            .to_string()
    };
    assert!(line("carol").ends_with("plans need approval"), "{team}");
    assert!(!line("dave").contains("plans need approval"), "{team}");
    assert_eq!(d.json(&["team"])[0]["require_plan"], true);
    drop(carol);
}

/// Spawns a real teammated (scripted model) named `name` through `teamctl spawn`
/// with `extra` flags, and returns its pid once it is connected.
fn spawn_teammated(d: &Cli, dir: &std::path::Path, name: &str, extra: &[&str]) -> u32 {
    let out = Teamctl::new(TEAMCTL, &d.socket)
        .with_state_dir(&dir.join("state"))
        .command()
        .env("TEAMMATED_BIN", workspace_bin("teammated"))
        .args(["spawn", name, "--role", "coder", "--provider", "scripted"])
        .args(extra)
        .arg("--workdir")
        .arg(dir)
        .arg("--json")
        .output()
        .expect("teamctl runs");
    assert!(out.status.success(), "{}", stderr(&out));
    let spawned: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    u32::try_from(spawned["pid"].as_u64().expect("pid")).expect("a pid")
}

/// A real teammated that holds no task approves on its own and exits; one spawned
/// with `--require-plan` says so on the roster.
#[test]
fn an_idle_spawned_teammated_approves_the_shutdown_and_exits() {
    let d = Cli::start();
    let dir = short_tempdir();
    let pid = spawn_teammated(&d, dir.path(), "fay", &["--require-plan"]);
    let _cleanup = KillGroupOnDrop(pid);
    let fay = &d.json(&["team"])[0];
    assert_eq!(fay["require_plan"], true, "{fay}");
    assert!(d.ok(&["team"]).contains("plans need approval"));

    let out = d.run(&["shutdown", "fay", "--reason", "done for today"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with("fay approved the shutdown and is leaving (request r1)"),
        "{}",
        stdout(&out)
    );
    eventually_blocking("fay to exit", PATIENCE, || (!alive(pid)).then_some(()));
    let r = &d.json(&["requests", "--all"])[0];
    assert_eq!(r["answered_by"], "fay", "{r}");
    assert_eq!(r["forced"], false, "{r}");
}

/// `--force` against a real teammated started with `teamctl spawn`: boardd stops
/// its process group, its task goes back to pending, and the request and the
/// roster say so.
#[test]
fn shutdown_force_stops_a_spawned_teammated_and_gives_its_task_back() {
    let d = Cli::start();
    let dir = short_tempdir();
    let started = dir.path().join("started");
    // The scripted model runs this block: the teammate holds #1 while it sleeps.
    d.ok(&[
        "task",
        "add",
        "long job",
        "-d",
        &format!("```sh\ntouch '{}'\nsleep 600\n```", started.display()),
    ]);
    let pid = spawn_teammated(&d, dir.path(), "erin", &[]);
    let _cleanup = KillGroupOnDrop(pid);
    eventually_blocking("erin to start the job", PATIENCE, || {
        started.exists().then_some(())
    });
    let t = d.json(&["task", "show", "1"]);
    assert_eq!(t["status"], "in_progress", "{t}");
    assert_eq!(t["owner"], "erin");

    let out = d.run(&["shutdown", "erin", "--force", "--reason", "over budget"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let said = stdout(&out);
    assert!(
        said.starts_with("boardd stopped erin's processes (request r1, forced)\n"),
        "{said}"
    );
    assert!(
        said.contains("erin is gone; its task #1 is pending now"),
        "{said}"
    );
    eventually_blocking("teammated to exit", Duration::from_secs(10), || {
        (!alive(pid)).then_some(())
    });
    let t = d.json(&["task", "show", "1"]);
    assert_eq!(t["status"], TaskStatus::Pending.to_string(), "{t}");
    assert_eq!(t["owner"], Value::Null, "{t}");
    // Being stopped is not the task's fault: the attempt does not count.
    assert_eq!(t["attempts"], 0, "{t}");
    let r = d.json(&["requests", "--all"]);
    assert_eq!(r[0]["state"], "approved", "{r}");
    assert_eq!(r[0]["forced"], true, "{r}");
    assert_eq!(r[0]["answered_by"], "boardd", "{r}");
    let erin = &d.json(&["team"])[0];
    assert_eq!(erin["connected"], false, "{erin}");
    assert_eq!(erin["task"], Value::Null, "{erin}");
    assert!(
        matches!(erin["status"].as_str(), Some("shutdown" | "offline")),
        "{erin}"
    );
}

/// A teammate that never answers: the deadline passes, boardd stops its process
/// group, and teamctl reports the request expired.
#[test]
fn an_unanswered_shutdown_expires_and_boardd_stops_the_process() {
    let d = Cli::start();
    let mut mute = MuteTeammate::spawn(&d.socket, "mute");
    let pid = mute.pid();
    let out = d.run(&["shutdown", "mute", "--timeout", "1"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let said = stdout(&out);
    assert!(
        said.starts_with(
            "mute did not answer in time: expired, and boardd stopped its processes (request r1)"
        ),
        "{said}"
    );
    assert!(said.contains("mute is gone"), "{said}");
    let status = eventually_blocking("mute to exit", Duration::from_secs(10), || mute.try_wait());
    use std::os::unix::process::ExitStatusExt as _;
    assert_eq!(status.signal(), Some(libc::SIGTERM), "{status:?}");
    assert!(!alive(pid));
    // The whole group: the tool command it had started went too.
    let tool = mute.tool_pid();
    eventually_blocking("the tool command to stop", Duration::from_secs(10), || {
        (!alive(tool)).then_some(())
    });
    let r = &d.json(&["requests", "--all"])[0];
    assert_eq!(r["state"], "expired", "{r}");
    assert_eq!(r["forced"], true, "{r}");
    // The lead hears of it from boardd.
    let inbox = d.json(&["inbox"]);
    let told = inbox
        .as_array()
        .expect("array")
        .iter()
        .find(|m| m["kind"] == "shutdown_response")
        .unwrap_or_else(|| panic!("no shutdown_response in {inbox}"));
    assert_eq!(told["from"], "boardd");
}

/// Kills the process group a test caused to be started, however the test ends.
struct KillGroupOnDrop(u32);

impl Drop for KillGroupOnDrop {
    fn drop(&mut self) {
        if alive(self.0) {
            // SAFETY: kill(2) has no memory-safety preconditions. The group is the
            // one `teamctl spawn` made for the teammate (it leads it).
            unsafe { libc::kill(-(self.0 as libc::pid_t), libc::SIGKILL) };
        }
    }
}

/// A teammate's checks are only proposed: `task show` and `requests` say so,
/// and name the command that takes them; `task accept-checks` makes them the
/// task's, `--reject` drops them. Only the lead may.
#[test]
fn checks_a_teammate_proposes_wait_for_the_lead() {
    use teamboard_protocol::request::NewTask;
    let d = Cli::start();
    let alice = d.teammate("alice", "coder");
    let proposed = |subject: &str, check: &str| {
        let new = NewTask {
            subject: subject.into(),
            checks: vec![check.into()],
            ..Default::default()
        };
        d.block_on(alice.add_task(new)).expect("added")
    };
    let t = proposed("parser", "cargo test -p parser");
    assert!(t.checks.is_empty(), "{t:?}");
    let id = t.id.to_string();
    let text = d.ok(&["task", "show", &id]);
    assert!(text.contains("proposed:   cargo test -p parser"), "{text}");
    assert!(!text.contains("checks:     cargo test"), "{text}");
    let listed = d.ok(&["requests"]);
    assert!(
        listed.contains(&format!(
            "#{id}  checks proposed: `cargo test -p parser`  (teamctl task accept-checks {id}"
        )),
        "{listed}"
    );
    // A teammate cannot take its own proposal.
    let refused = d
        .block_on(alice.accept_checks(t.id, false))
        .expect_err("a teammate may not accept checks");
    assert!(refused.to_string().contains("only the lead"), "{refused}");

    d.ok(&["task", "accept-checks", &id]);
    let json = d.json(&["task", "show", &id]);
    assert_eq!(json["checks"], serde_json::json!(["cargo test -p parser"]));
    assert!(json.get("proposed_checks").is_none(), "{json}");
    assert!(!d.ok(&["requests"]).contains("checks proposed"));

    let u = proposed("docs", "rm -rf ~");
    let dropped = d.json(&["task", "accept-checks", &u.id.to_string(), "--reject"]);
    assert!(dropped.get("checks").is_none(), "{dropped}");
    assert!(dropped.get("proposed_checks").is_none(), "{dropped}");
}
