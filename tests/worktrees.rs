//! Worktrees, completion gates and the merge queue, through a real boardd on a
//! real socket, with real git repositories (`docs/design/worktrees.md`).

use std::path::Path;
use teamboard_protocol::request::{NewTask, SetRepoArgs};
use teamboard_protocol::{CheckOutcome, Client, ErrorCode, MergeStyle, TaskStatus};
use teamboard_testkit::{GitRepo, InProc, code_of, lead, short_tempdir, task, teammate};

fn repo_args(repo: &GitRepo) -> SetRepoArgs {
    SetRepoArgs {
        path: repo.path.display().to_string(),
        branch: Some("main".into()),
        merge: None,
        checks: Vec::new(),
        check_timeout_ms: None,
    }
}

/// Claims `id` for `who` and opens its worktree; answers the epoch and path.
async fn claim_and_open(who: &Client, id: u64) -> (u64, std::path::PathBuf) {
    let claim = who.claim_task(id).await.expect("claim");
    let w = claim.task.worktree.as_ref().expect("reserved at claim");
    assert!(w.base.is_none(), "created only when opened: {w:?}");
    let opened = who.open_worktree(id, claim.epoch).await.expect("open");
    assert!(opened.fresh);
    (claim.epoch, opened.worktree.path.into())
}

fn write(dir: &Path, file: &str, content: &str) {
    std::fs::write(dir.join(file), content).expect("write");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_works_in_its_own_worktree_and_lands_before_its_dependents_are_ready() {
    let dir = short_tempdir();
    let repo = GitRepo::new(dir.path());
    let daemon = InProc::start().await;
    let lead = lead(&daemon.socket).await;
    let set = lead.set_repo(repo_args(&repo)).await.expect("set_repo");
    assert_eq!(set.branch, "main");
    assert_eq!(set.merge, MergeStyle::Rebase);
    assert_eq!(lead.get_repo().await.expect("get"), Some(set.clone()));

    let first = lead.add_task(task("config")).await.expect("add").id;
    let then = lead
        .add_task(NewTask {
            blocked_by: vec![first],
            ..task("tests")
        })
        .await
        .expect("add")
        .id;
    let alice = teammate(&daemon.socket, "alice", "coder").await;
    let (epoch, wt) = claim_and_open(&alice, first).await;
    assert!(wt.starts_with(&set.worktrees), "{}", wt.display());
    write(&wt, "config.toml", "port = 1\n");
    // Nothing of the task's is on the target, or in the person's checkout.
    assert!(repo.show("main", "config.toml").is_none());
    assert!(!repo.path.join("config.toml").exists());

    let done = alice
        .complete_task(first, epoch, "added the config")
        .await
        .expect("complete lands");
    assert_eq!(done.status, TaskStatus::Completed);
    let w = done.worktree.expect("worktree");
    assert_eq!(w.merged.as_deref(), Some(repo.head("main").as_str()));
    assert_eq!(
        repo.show("main", "config.toml").as_deref(),
        Some("port = 1\n")
    );
    assert_eq!(repo.log("main")[0], "config");

    // The dependent starts from the landed work.
    let bob = teammate(&daemon.socket, "bob", "coder").await;
    let (_, wt2) = claim_and_open(&bob, then).await;
    assert_eq!(
        std::fs::read_to_string(wt2.join("config.toml")).expect("landed work is there"),
        "port = 1\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_target_that_is_checked_out_or_a_plain_directory_is_refused_with_the_fix() {
    let dir = short_tempdir();
    let repo = GitRepo::new(dir.path());
    teamboard_testkit::git::git(&repo.path, &["switch", "-q", "main"]);
    let daemon = InProc::start().await;
    let lead = lead(&daemon.socket).await;
    let e = lead
        .set_repo(repo_args(&repo))
        .await
        .expect_err("checked out");
    assert_eq!(e.code(), Some(ErrorCode::Git), "{e}");
    assert!(e.to_string().contains("switch --detach"), "{e}");

    let plain = dir.path().join("plain");
    std::fs::create_dir_all(&plain).expect("dir");
    let e = lead
        .set_repo(SetRepoArgs {
            path: plain.display().to_string(),
            ..repo_args(&repo)
        })
        .await
        .expect_err("not a repo");
    assert_eq!(e.code(), Some(ErrorCode::Git), "{e}");
    assert!(e.to_string().contains("not a git repository"), "{e}");
    assert_eq!(lead.get_repo().await.expect("get"), None);

    let alice = teammate(&daemon.socket, "alice", "coder").await;
    assert_eq!(
        code_of(alice.set_repo(repo_args(&repo)).await),
        ErrorCode::PermissionDenied
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_teammates_editing_one_file_one_lands_and_the_other_gets_the_path() {
    let dir = short_tempdir();
    let repo = GitRepo::new(dir.path());
    let daemon = InProc::start().await;
    let lead = lead(&daemon.socket).await;
    lead.set_repo(repo_args(&repo)).await.expect("set_repo");
    let a = lead.add_task(task("readme a")).await.expect("add").id;
    let b = lead.add_task(task("readme b")).await.expect("add").id;
    let alice = teammate(&daemon.socket, "alice", "coder").await;
    let bob = teammate(&daemon.socket, "bob", "coder").await;
    let (ea, wa) = claim_and_open(&alice, a).await;
    let (eb, wb) = claim_and_open(&bob, b).await;
    write(&wa, "README.md", "alice was here\n");
    write(&wb, "README.md", "bob was here\n");

    alice.complete_task(a, ea, "a").await.expect("first lands");
    let e = bob.complete_task(b, eb, "b").await.expect_err("conflict");
    assert_eq!(e.code(), Some(ErrorCode::MergeConflict), "{e}");
    assert!(e.to_string().contains("README.md"), "{e}");
    // Bob keeps the task and his work, committed on his branch.
    let detail = bob.get_task(b).await.expect("get");
    assert_eq!(detail.task.status, TaskStatus::InProgress);
    assert_eq!(detail.task.owner.as_deref(), Some("bob"));
    assert!(detail.task.landing.is_none());
    assert_eq!(
        std::fs::read_to_string(wb.join("README.md")).expect("kept"),
        "bob was here\n"
    );
    assert_eq!(
        repo.show("main", "README.md").as_deref(),
        Some("alice was here\n")
    );
    assert!(
        detail
            .history
            .iter()
            .any(|e| e.kind == teamboard_protocol::EventKind::MergeConflict),
        "{:?}",
        detail.history
    );

    // He resolves it the way the refusal says, and lands.
    // It stops on the conflict, which is what the resolution starts from.
    let stopped = teamboard_testkit::git::git_command(&wb)
        .args(["rebase", "main"])
        .output()
        .expect("rebase");
    assert!(!stopped.status.success());
    write(&wb, "README.md", "alice and bob were here\n");
    teamboard_testkit::git::git(&wb, &["add", "README.md"]);
    teamboard_testkit::git::git_command(&wb)
        .args(["-c", "core.editor=true", "rebase", "--continue"])
        .status()
        .expect("continue");
    let done = bob.complete_task(b, eb, "b").await.expect("lands now");
    assert_eq!(done.status, TaskStatus::Completed);
    assert_eq!(
        repo.show("main", "README.md").as_deref(),
        Some("alice and bob were here\n")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_check_refuses_completion_with_its_evidence() {
    let dir = short_tempdir();
    let repo = GitRepo::new(dir.path());
    let daemon = InProc::start().await;
    let lead = lead(&daemon.socket).await;
    lead.set_repo(SetRepoArgs {
        checks: vec!["test -f README.md".into()],
        ..repo_args(&repo)
    })
    .await
    .expect("set_repo");
    let id = lead
        .add_task(NewTask {
            checks: vec!["echo checking the answer; grep -q 42 answer.txt".into()],
            ..task("answer")
        })
        .await
        .expect("add")
        .id;
    let alice = teammate(&daemon.socket, "alice", "coder").await;
    let (epoch, wt) = claim_and_open(&alice, id).await;
    write(&wt, "answer.txt", "41\n");
    let e = alice
        .complete_task(id, epoch, "answered")
        .await
        .expect_err("the check fails");
    assert_eq!(e.code(), Some(ErrorCode::CheckFailed), "{e}");
    let text = e.to_string();
    assert!(text.contains("grep -q 42 answer.txt"), "{text}");
    assert!(text.contains("exit code 1"), "{text}");
    assert!(text.contains("checking the answer"), "{text}");
    let task = alice.get_task(id).await.expect("get").task;
    assert_eq!(task.status, TaskStatus::InProgress);
    let outcomes: Vec<CheckOutcome> = task.check_runs.iter().map(|r| r.outcome).collect();
    assert_eq!(outcomes, [CheckOutcome::Passed, CheckOutcome::Failed]);
    assert!(repo.show("main", "answer.txt").is_none(), "nothing landed");

    write(&wt, "answer.txt", "42\n");
    let done = alice
        .complete_task(id, epoch, "answered")
        .await
        .expect("passes now");
    assert_eq!(done.status, TaskStatus::Completed);
    assert_eq!(repo.show("main", "answer.txt").as_deref(), Some("42\n"));
    assert!(
        done.check_runs
            .iter()
            .all(|r| r.outcome == CheckOutcome::Passed),
        "{:?}",
        done.check_runs
    );
}

/// A task of alice's whose gate was running when boardd stopped, and whose
/// worktree holds what the killed boardd's rebase leaves when the target
/// moved under it: the rebase stopped on the conflict (in README.md), in the
/// middle. The git outlives boardd, so nobody aborts it. Answers the epoch and
/// the worktree; the daemon is stopped.
async fn gate_killed_in_its_update(
    daemon: &mut InProc,
    repo: &GitRepo,
) -> (u64, u64, std::path::PathBuf) {
    let lead = lead(&daemon.socket).await;
    lead.set_repo(repo_args(repo)).await.expect("set_repo");
    let id = lead
        .add_task(NewTask {
            // Long enough that the task is still checking when boardd stops.
            checks: vec!["sleep 60".into()],
            ..task("readme")
        })
        .await
        .expect("add")
        .id;
    let alice = std::sync::Arc::new(teammate(&daemon.socket, "alice", "coder").await);
    let (epoch, wt) = claim_and_open(&alice, id).await;
    write(&wt, "README.md", "alice was here\n");
    let completing = {
        let alice = alice.clone();
        tokio::spawn(async move { alice.complete_task(id, epoch, "readme").await })
    };
    // The gate committed alice's work and runs the check.
    let branch = format!("refs/heads/teamboard/{}/task-{id}", teamboard_testkit::TEAM);
    teamboard_testkit::eventually("the gate's commit", teamboard_testkit::PATIENCE, || {
        let subject =
            teamboard_testkit::git::git(&repo.path, &["log", "-1", "--format=%s", &branch]);
        async move { (subject == "readme").then_some(()) }
    })
    .await;
    daemon.shutdown().await;
    let _ = completing.await;
    repo.commit_on("main", "README.md", "bob was here\n");
    let stopped = teamboard_testkit::git::git_command(&wt)
        .args(["rebase", "main"])
        .output()
        .expect("rebase");
    assert!(
        !stopped.status.success(),
        "the rebase stops on the conflict"
    );
    assert!(rebasing(&wt));
    (id, epoch, wt)
}

fn rebasing(wt: &Path) -> bool {
    let dir = teamboard_testkit::git::git(wt, &["rev-parse", "--git-path", "rebase-merge"]);
    wt.join(dir).exists()
}

/// boardd killed while a gate brought the branch up to date: after the
/// restart, boardd undoes its own half-done update before the owner gets the
/// worktree back, so the owner completes as if nothing happened: the conflict
/// is refused with its path, not with "a rebase is in progress".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_undoes_the_update_a_killed_gate_left_in_the_worktree() {
    let dir = short_tempdir();
    let repo = GitRepo::new(dir.path());
    let mut daemon = InProc::start().await;
    let (id, epoch, wt) = gate_killed_in_its_update(&mut daemon, &repo).await;

    daemon.restart().await;
    let alice = teammate(&daemon.socket, "alice", "coder").await;
    let task = alice.get_task(id).await.expect("get").task;
    assert_eq!(task.status, TaskStatus::InProgress);
    assert!(task.landing.is_none(), "{:?}", task.landing);
    let opened = alice.open_worktree(id, epoch).await.expect("reopen");
    assert_eq!(opened.found.in_progress, None, "{:?}", opened.found);
    assert_eq!(
        std::fs::read_to_string(wt.join("README.md")).expect("alice's work"),
        "alice was here\n"
    );
    let e = alice
        .complete_task(id, epoch, "readme")
        .await
        .expect_err("the conflict");
    assert_eq!(e.code(), Some(ErrorCode::MergeConflict), "{e}");
    assert!(e.to_string().contains("README.md"), "{e}");
}

/// The git a killed boardd started runs on. The restarted boardd does not
/// work in that worktree (abort the update, open it for the owner) until that
/// git is done, or the two would interleave.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_waits_for_the_git_a_killed_boardd_left_running_in_a_worktree() {
    let dir = short_tempdir();
    let repo = GitRepo::new(dir.path());
    let mut daemon = InProc::start().await;
    let (id, epoch, wt) = gate_killed_in_its_update(&mut daemon, &repo).await;
    // The killed boardd's git, still at work: one that runs until its input
    // closes.
    let mut orphan = teamboard_testkit::git::git_command(&wt)
        .args(["hash-object", "--stdin"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("git");

    daemon.restart().await;
    let alice = teammate(&daemon.socket, "alice", "coder").await;
    let mut open = Box::pin(alice.open_worktree(id, epoch));
    let waited = tokio::time::timeout(std::time::Duration::from_millis(500), &mut open).await;
    assert!(
        waited.is_err(),
        "answered while a git ran there: {waited:?}"
    );
    assert!(rebasing(&wt), "the update was undone while a git ran there");
    drop(orphan.stdin.take());
    orphan.wait().expect("the git exits");
    let opened = open.await.expect("reopen");
    assert_eq!(opened.found.in_progress, None, "{:?}", opened.found);
    assert!(!rebasing(&wt));
}

/// boardd killed after a landing moved the target but before it recorded the
/// landing: after the restart the task completes with the range it really
/// landed (`landed_on..merged` holds its commit), not as a landing of nothing
/// on top of itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_landing_the_killed_boardd_made_but_never_recorded_keeps_its_range() {
    let dir = short_tempdir();
    let repo = GitRepo::new(dir.path());
    let before = repo.head("main");
    // Holds every move of main after it is made (git's reference-transaction
    // hook, "committed"), for as long as the hold file is there: the landing's
    // update-ref has moved the target, and boardd does not know yet.
    let hold = dir.path().join("hold");
    std::fs::write(&hold, "").expect("hold");
    let hook = repo.path.join(".git/hooks/reference-transaction");
    std::fs::write(
        &hook,
        format!(
            "#!/bin/sh\nif [ \"$1\" = committed ] && grep -q ' refs/heads/main$'; then\n  while [ -f '{}' ]; do sleep 0.01; done\nfi\n",
            hold.display()
        ),
    )
    .expect("hook");
    std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");

    let mut daemon = InProc::start().await;
    let lead = lead(&daemon.socket).await;
    lead.set_repo(repo_args(&repo)).await.expect("set_repo");
    let id = lead.add_task(task("config")).await.expect("add").id;
    let alice = std::sync::Arc::new(teammate(&daemon.socket, "alice", "coder").await);
    let (epoch, wt) = claim_and_open(&alice, id).await;
    write(&wt, "config.toml", "port = 1\n");
    let completing = {
        let alice = alice.clone();
        tokio::spawn(async move { alice.complete_task(id, epoch, "config").await })
    };
    let branch = format!("teamboard/{}/task-{id}", teamboard_testkit::TEAM);
    let landed = teamboard_testkit::eventually("main to move", teamboard_testkit::PATIENCE, || {
        let (main, tip) = (repo.head("main"), repo.head(&branch));
        let moved = main != before && main == tip;
        async move { moved.then_some(main) }
    })
    .await;
    daemon.shutdown().await;
    let _ = completing.await;
    std::fs::remove_file(&hold).expect("release the hook");

    daemon.restart().await;
    let lead = teamboard_testkit::lead(&daemon.socket).await;
    let done = teamboard_testkit::eventually("the landing", teamboard_testkit::PATIENCE, || {
        let lead = &lead;
        async move {
            let t = lead.get_task(id).await.expect("get").task;
            (t.status == TaskStatus::Completed).then_some(t)
        }
    })
    .await;
    let w = done.worktree.expect("worktree");
    assert_eq!(w.merged.as_deref(), Some(landed.as_str()));
    assert_eq!(w.landed_on.as_deref(), Some(before.as_str()), "{w:?}");
    assert_eq!(repo.head("main"), landed);
}
