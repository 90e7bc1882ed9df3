//! Landings that wait, across a real restart of a real boardd: `blocked` on the
//! person's checkout of the target and `conflict` with the target are both in
//! the task rows, so a `kill -9` loses neither; `teamctl task show` shows them
//! and `teamctl task retry` lands them (`docs/design/worktrees.md`).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "test code: a panic fails the test, and the harness captures what it prints"
)]

use std::path::Path;
use std::sync::Arc;
use teamboard_protocol::{Client, ErrorCode, LandingStage, Task, TaskStatus};
use teamboard_testkit::git::{git, git_command};
use teamboard_testkit::{
    Daemon, GitRepo, PATIENCE, Teamctl, claim_and_write, complete_in_background, eventually, lead,
    short_tempdir, stage_is, task, teammate, workspace_bin,
};

const ARGS: [&str; 2] = ["--restart-grace", "30"];

fn teamctl(socket: &Path) -> Teamctl {
    Teamctl::new(workspace_bin("teamctl"), socket)
}

async fn completed(client: &Client, id: u64) -> Task {
    eventually(format!("#{id} to complete"), PATIENCE, || async {
        let t = client.get_task(id).await.expect("get").task;
        (t.status == TaskStatus::Completed).then_some(t)
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocked_landing_survives_a_kill_and_lands_once_the_checkout_is_clean() {
    let dir = short_tempdir();
    let repo = GitRepo::new(dir.path());
    let (socket, state) = (dir.path().join("s"), dir.path().join("state"));
    let mut daemon = Daemon::start(&socket, &state, &ARGS).await;
    let lead = lead(&socket).await;
    lead.set_repo(repo.repo_args()).await.expect("set_repo");
    // The person checks main out after `repo set`, and changes a file.
    git(&repo.path, &["switch", "-q", "main"]);
    std::fs::write(repo.path.join("README.md"), "mine\n").expect("edit");
    let id = lead.add_task(task("readme")).await.expect("add").id;
    let alice = Arc::new(teammate(&socket, "alice", "coder").await);
    let (epoch, _) = claim_and_write(&alice, id, &[("README.md", "theirs\n")]).await;
    let waiting = complete_in_background(&alice, id, epoch);
    stage_is(&lead, id, LandingStage::Blocked).await;
    let show = teamctl(&socket).ok(&["task", "show", &id.to_string()]);
    assert!(
        show.contains(&format!(
            "landing:    blocked: {} has changes in the way (README.md)",
            repo.path.display()
        )),
        "{show}"
    );

    daemon.kill9();
    assert!(waiting.await.expect("join").is_err(), "its connection died");
    let _daemon = Daemon::start(&socket, &state, &ARGS).await;
    let lead = teamboard_testkit::lead(&socket).await;
    let t = lead.get_task(id).await.expect("get").task;
    let l = t.landing.expect("the landing survived");
    assert_eq!(
        (l.stage, l.paths),
        (LandingStage::Blocked, vec!["README.md".to_string()])
    );
    assert_eq!((t.status, t.attempts), (TaskStatus::InProgress, 1));
    assert_eq!(
        std::fs::read_to_string(repo.path.join("README.md")).expect("read"),
        "mine\n"
    );

    git(&repo.path, &["checkout", "README.md"]);
    teamctl(&socket).ok(&["task", "retry", &id.to_string()]);
    let done = completed(&lead, id).await;
    assert_eq!(done.attempts, 1);
    assert_eq!(
        std::fs::read_to_string(repo.path.join("README.md")).expect("read"),
        "theirs\n"
    );
    assert_eq!(git(&repo.path, &["status", "--porcelain"]), "");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conflict_survives_a_kill_and_a_person_resolves_it_by_hand() {
    let dir = short_tempdir();
    let repo = GitRepo::new(dir.path());
    let (socket, state) = (dir.path().join("s"), dir.path().join("state"));
    let mut daemon = Daemon::start(&socket, &state, &ARGS).await;
    let lead = lead(&socket).await;
    lead.set_repo(repo.repo_args()).await.expect("set_repo");
    let a = lead.add_task(task("a")).await.expect("add").id;
    let b = lead.add_task(task("b")).await.expect("add").id;
    let alice = teammate(&socket, "alice", "coder").await;
    let bob = teammate(&socket, "bob", "coder").await;
    let (ea, _) = claim_and_write(&alice, a, &[("same.txt", "one\n")]).await;
    let (eb, wb) = claim_and_write(&bob, b, &[("same.txt", "two\n")]).await;
    alice.complete_task(a, ea, "a").await.expect("a lands");
    let e = bob.complete_task(b, eb, "b").await.expect_err("conflict");
    assert_eq!(e.code(), Some(ErrorCode::MergeConflict), "{e}");
    let said = e.to_string();
    for says in [
        "conflicts with main in same.txt".to_string(),
        format!("main at {}", &repo.head("main")[..10]),
        wb.display().to_string(),
        "git rebase main".to_string(),
        format!("teamctl task retry {b}"),
    ] {
        assert!(said.contains(&says), "{says}: {said}");
    }
    let show = teamctl(&socket).ok(&["task", "show", &b.to_string()]);
    assert!(
        show.contains("landing:    conflict with the target at"),
        "{show}"
    );

    daemon.kill9();
    let _daemon = Daemon::start(&socket, &state, &ARGS).await;
    let lead = teamboard_testkit::lead(&socket).await;
    let t = lead.get_task(b).await.expect("get").task;
    let l = t.landing.expect("the conflict survived");
    assert_eq!(l.stage, LandingStage::Conflict);
    assert_eq!(l.paths, vec!["same.txt".to_string()]);
    assert_eq!((t.status, t.attempts), (TaskStatus::InProgress, 1));

    // The person resolves it in the worktree and retries; bob still holds it.
    let stopped = git_command(&wb)
        .args(["rebase", "main"])
        .output()
        .expect("rebase");
    assert!(
        !stopped.status.success(),
        "the rebase stops on the conflict"
    );
    std::fs::write(wb.join("same.txt"), "one\ntwo\n").expect("resolve");
    git(&wb, &["add", "same.txt"]);
    git_command(&wb)
        .args(["-c", "core.editor=true", "rebase", "--continue"])
        .output()
        .expect("continue");
    teamctl(&socket).ok(&["task", "retry", &b.to_string()]);
    let done = completed(&lead, b).await;
    assert_eq!((done.attempts, done.owner.as_deref()), (1, Some("bob")));
    assert_eq!(repo.show("main", "same.txt").as_deref(), Some("one\ntwo\n"));
}
