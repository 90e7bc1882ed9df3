//! Review before merge end to end (`docs/design/worktrees.md`, "Review before
//! merge"): the real boardd, teamctl and teammated binaries, a scripted
//! teammate and real git. Work whose checks pass waits in `landing: review`;
//! nothing lands while it waits, not even across a `kill -9` of boardd; the
//! person lands it with `teamctl merge` or returns it with `teamctl send-back`,
//! and the owner works on it again and completes again.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "test code: a panic fails the test, and the harness captures what it prints"
)]

use std::path::Path;
use teamboard_protocol::{Client, EventKind, LandingStage, Task, TaskStatus};
use teamboard_testkit::{
    Daemon, GitRepo, PATIENCE, Teamctl, Teammated, eventually, lead, short_tempdir, transcript,
    workspace_bin,
};

async fn boardd(dir: &Path) -> Daemon {
    Daemon::start(&dir.join("s"), &dir.join("state"), &[]).await
}

/// Waits until `id` satisfies `ok`, and answers it.
async fn task_where(client: &Client, id: u64, what: &str, ok: impl Fn(&Task) -> bool) -> Task {
    eventually(format!("#{id} to be {what}"), PATIENCE, || async {
        let t = client.get_task(id).await.ok()?.task;
        ok(&t).then_some(t)
    })
    .await
}

fn in_review(t: &Task) -> bool {
    t.landing
        .as_ref()
        .is_some_and(|l| l.stage == LandingStage::Review)
}

/// A task whose script the scripted teammate runs in the task's worktree.
fn script(sh: &str) -> String {
    format!("```sh\n{sh}\n```\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reviewed_work_waits_across_a_restart_then_merges_or_goes_back_with_feedback() {
    let dir = short_tempdir();
    let repo = GitRepo::new(dir.path());
    let mut daemon = boardd(dir.path()).await;
    let teamctl = Teamctl::new(workspace_bin("teamctl"), &daemon.socket);
    let start = repo.head("main");
    let path = repo.path.display().to_string();
    let set = teamctl.ok(&["repo", "set", &path, "--branch", "main", "--review"]);
    assert!(set.contains("review:"), "{set}");

    let work = workspace_bin("teammated");
    let mates = Teammated::new(work, &daemon.socket, &daemon.state_dir);
    let workdir = dir.path().join("work-alice");
    std::fs::create_dir_all(&workdir).unwrap();
    let alice = mates.spawn(
        "alice",
        "dev",
        &workdir,
        &dir.path().join("alice.log"),
        &[],
        &[],
    );
    let log = || alice.log_text();

    // 1. A completion whose checks pass waits for review; nothing lands.
    let hello = script("printf 'hello\\nworld\\n' > hello.txt && echo wrote hello");
    let id: u64 = teamctl
        .ok(&["task", "add", "say hello", "-d", &hello])
        .trim()
        .parse()
        .unwrap();
    let client = lead(&daemon.socket).await;
    let waiting = task_where(&client, id, "waiting for review", in_review).await;
    assert_eq!(waiting.status, TaskStatus::InProgress, "{}", log());
    assert_eq!(waiting.owner.as_deref(), Some("alice"));
    assert_eq!(repo.head("main"), start, "nothing lands while it waits");
    let head = waiting.landing.as_ref().unwrap().head.clone().unwrap();
    // The owner was answered and went idle, keeping the claim.
    eventually("alice to go idle", PATIENCE, || async {
        let team = client.team().await.ok()?;
        let a = team.into_iter().find(|m| m.name == "alice")?;
        (a.status == teamboard_protocol::MemberStatus::Idle && a.task == Some(id)).then_some(())
    })
    .await;

    let listed = teamctl.ok(&["review"]);
    let row = listed
        .lines()
        .find(|l| l.starts_with(&format!("#{id} ")))
        .unwrap_or_else(|| panic!("#{id} is not listed:\n{listed}"));
    assert!(row.contains("alice"), "{row}");
    assert!(row.contains("1 file, +2 -0"), "{row}");
    assert!(row.contains(&head[..7]), "{row}");
    let diff = teamctl.ok(&["task", "diff", &id.to_string()]);
    assert!(diff.contains("+++ b/hello.txt"), "{diff}");
    assert!(diff.contains("+world"), "{diff}");
    let shown = teamctl.ok(&["task", "show", &id.to_string()]);
    assert!(shown.contains("landing:    review: waiting for"), "{shown}");
    let board = teamctl.ok(&["tasks"]);
    assert!(board.contains("landing: review"), "{board}");

    // 2. boardd dies and comes back: the review still waits, and nothing
    // lands, whether or not its owner is back.
    daemon.kill9();
    drop(client);
    let daemon = boardd(dir.path()).await;
    let client = lead(&daemon.socket).await;
    let after = client.get_task(id).await.unwrap().task;
    assert!(in_review(&after), "{after:#?}");
    assert_eq!(
        after.landing.as_ref().unwrap().head.as_deref(),
        Some(&*head)
    );
    eventually("alice to reconnect", PATIENCE, || async {
        let team = client.team().await.ok()?;
        team.iter()
            .any(|m| m.name == "alice" && m.connected)
            .then_some(())
    })
    .await;
    let still = client.get_task(id).await.unwrap().task;
    assert!(in_review(&still), "{still:#?}\n{}", log());
    assert_eq!(repo.head("main"), start);

    // 3. The person merges it: it lands through the queue, exactly what passed.
    let merged = teamctl.ok(&["merge", &id.to_string()]);
    assert!(
        merged.starts_with(&format!("merged #{id}: landed as ")),
        "{merged}"
    );
    let done = client.get_task(id).await.unwrap().task;
    assert_eq!(done.status, TaskStatus::Completed);
    assert_eq!(
        repo.show("main", "hello.txt").as_deref(),
        Some("hello\nworld\n")
    );
    let refused = teamctl.run(&["merge", &id.to_string()]);
    assert!(!refused.status.success());
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(said.contains("not waiting for review"), "{said}");

    // 4. Another is sent back with feedback: the owner gets it, works again,
    // and its completion runs the gate and waits for review again.
    let runs = script("echo run >> runs.txt && wc -l < runs.txt");
    let id2: u64 = teamctl
        .ok(&["task", "add", "count runs", "-d", &runs])
        .trim()
        .parse()
        .unwrap();
    let first = task_where(&client, id2, "waiting for review", in_review).await;
    let first_head = first.landing.unwrap().head.unwrap();
    let empty = teamctl.run(&["send-back", &id2.to_string(), "--feedback", " "]);
    assert!(!empty.status.success());
    assert!(
        String::from_utf8_lossy(&empty.stderr).contains("feedback is empty"),
        "{empty:?}"
    );
    let sent = teamctl.ok(&[
        "send-back",
        &id2.to_string(),
        "--feedback",
        "count once more",
    ]);
    assert!(sent.contains("sent #2 back to alice"), "{sent}");
    let again = task_where(&client, id2, "waiting for review again", |t| {
        t.landing.as_ref().is_some_and(|l| {
            l.stage == LandingStage::Review && l.head.as_ref() != Some(&first_head)
        })
    })
    .await;
    assert_eq!(again.owner.as_deref(), Some("alice"));
    assert_eq!(again.epoch, first.epoch, "the claim was kept");
    assert_eq!(again.attempts, 1);
    let said = transcript(&daemon.state_dir, "alice");
    assert!(said.contains("count once more"), "{said}");
    let kinds: Vec<EventKind> = client
        .get_task(id2)
        .await
        .unwrap()
        .history
        .iter()
        .map(|e| e.kind)
        .collect();
    let of = |k: EventKind| kinds.iter().filter(|x| **x == k).count();
    assert_eq!(of(EventKind::ReviewRequested), 2, "{kinds:?}");
    assert_eq!(of(EventKind::SentBack), 1, "{kinds:?}");
    assert_eq!(repo.show("main", "runs.txt"), None, "nothing landed");
    teamctl.ok(&["merge", &id2.to_string()]);
    assert_eq!(repo.show("main", "runs.txt").as_deref(), Some("run\nrun\n"));
}
