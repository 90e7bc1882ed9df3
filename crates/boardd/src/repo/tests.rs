//! A job whose thread cannot start is still answered.

use super::job::{Done, Job, Slot};
use super::{Repos, Running, gate, thread};
use std::sync::Arc;
use teamboard_board::GateJob;
use teamboard_protocol::request::SetRepoArgs;
use teamboard_protocol::{ErrorCode, MergeStyle, Repo, Worktree};

fn slot() -> Slot {
    Slot {
        session: 1,
        request: 7,
        team: "t".into(),
        actor: "lead".into(),
    }
}

fn repo() -> Repo {
    Repo {
        path: "/nowhere/repo".into(),
        branch: "main".into(),
        merge: MergeStyle::Rebase,
        checks: vec!["true".into()],
        check_timeout_ms: 1000,
        worktrees: "/nowhere/wt".into(),
        git_version: "2.45".into(),
        set_at: 0,
        review: false,
    }
}

#[test]
fn a_worker_that_cannot_start_answers_its_job() {
    thread::fail_here();
    let (mut repos, mut rx) = Repos::new(Vec::new());
    repos.submit(Job::List {
        slot: slot(),
        repo: repo(),
        entries: Vec::new(),
    });
    match rx.try_recv() {
        Ok(Done::Listed {
            slot,
            result: Err(e),
        }) => {
            assert_eq!((slot.session, slot.request), (1, 7));
            assert_eq!(e.code, ErrorCode::Internal);
            assert!(e.message.contains("no thread could start"), "{e:?}");
        }
        other => panic!("the request must be answered: {other:?}"),
    }
}

#[test]
fn a_repository_check_that_cannot_start_answers_set_repo() {
    thread::fail_here();
    let (mut repos, mut rx) = Repos::new(Vec::new());
    repos.submit(Job::SetRepo {
        slot: slot(),
        args: SetRepoArgs {
            path: "/nowhere/repo".into(),
            branch: None,
            merge: None,
            checks: Vec::new(),
            check_timeout_ms: None,
            review: false,
        },
        worktrees: "/nowhere/wt".into(),
    });
    assert!(
        matches!(rx.try_recv(), Ok(Done::SetRepo { result: Err(_), .. })),
        "the request must be answered"
    );
}

/// Trap: without an answer the owner's `complete_task` waited for ever and
/// the task stayed `checking`, refusing every later completion.
#[test]
fn checks_that_cannot_start_refuse_the_gate_and_leave_nothing_running() {
    thread::fail_here();
    let (done, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let running = Arc::new(Running::default());
    let job = GateJob {
        team: "t".into(),
        task: 3,
        epoch: 2,
        repo: repo(),
        worktree: Worktree {
            path: "/nowhere/wt/task-3".into(),
            branch: "teamboard/t/task-3".into(),
            base: Some("0".repeat(40)),
            merged: None,
            landed_on: None,
            discard: false,
            pruned: false,
        },
        checks: vec!["true".into()],
        message: "task 3".into(),
        author: "alice".into(),
        sandbox: None,
    };
    gate::spawn_checks(
        job,
        ("1".repeat(40), Default::default()),
        done,
        running.clone(),
    );
    match rx.try_recv() {
        Ok(Done::Gated {
            job,
            result: Err(refusal),
        }) => {
            assert_eq!((job.task, job.epoch), (3, 2));
            assert_eq!(refusal.code, ErrorCode::Internal);
            assert!(refusal.message.contains("could not start"), "{refusal:?}");
        }
        other => panic!("the gate must be answered: {other:?}"),
    }
    assert!(running.lock().is_empty(), "no check is left registered");
}

/// Trap: the recheck timer and a person's `retry_task` both ask to land a
/// blocked task; two land jobs in flight would land it, or report it, twice.
#[test]
fn a_landing_already_under_way_is_not_run_twice() {
    thread::fail_here();
    let (mut repos, mut rx) = Repos::new(Vec::new());
    let land = |epoch| Job::Land {
        job: teamboard_board::LandJob {
            team: "t".into(),
            task: 3,
            epoch,
            repo: repo(),
            worktree: Worktree {
                path: "/nowhere/wt/3".into(),
                branch: "task-3".into(),
                base: Some("base".into()),
                merged: None,
                landed_on: None,
                discard: false,
                pruned: false,
            },
            head: "head".into(),
            message: "m".into(),
        },
    };
    repos.submit(land(1));
    repos.submit(land(1));
    let first = rx.try_recv().expect("the first landing reports");
    assert!(matches!(first, Done::Landed { .. }), "{first:?}");
    assert!(rx.try_recv().is_err(), "the second ran too");
    // A later claim's landing runs, even before the earlier one reported.
    repos.submit(land(2));
    assert!(matches!(rx.try_recv(), Ok(Done::Landed { .. })));
    // Once it reported, a later look runs again.
    repos.reported(&first);
    repos.submit(land(1));
    assert!(matches!(rx.try_recv(), Ok(Done::Landed { .. })));
}
