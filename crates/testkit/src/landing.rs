//! Driving a task of a team with a repository through its worktree and its
//! landing, as the worktree tests do.

use crate::eventually::{PATIENCE, eventually};
use crate::{GitRepo, Pause, task};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use teamboard_protocol::request::NewTask;
use teamboard_protocol::{Client, ClientError, LandingStage, Task};

/// Claims `id` as `who`, opens its worktree and writes `files` there (making
/// their directories); answers the epoch and the worktree.
pub async fn claim_and_write(who: &Client, id: u64, files: &[(&str, &str)]) -> (u64, PathBuf) {
    let claim = who.claim_task(id).await.expect("claim");
    let opened = who.open_worktree(id, claim.epoch).await.expect("open");
    let wt = PathBuf::from(&opened.worktree.path);
    for (path, content) in files {
        let path = wt.join(path);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, content).expect("write");
    }
    (claim.epoch, wt)
}

/// Installs a reference-transaction hook in `repo` that stops at `pause` in
/// `state` ("prepared": the lock on `refs/heads/main` is taken and holds the
/// new value; "committed": the ref has moved and the lock is gone) whenever
/// `refs/heads/main` moves.
pub fn pause_main_update(repo: &GitRepo, pause: &Pause, state: &str) {
    repo.hook(
        "reference-transaction",
        &format!(
            "[ \"$1\" = {state} ] || exit 0\n\
             grep -q ' refs/heads/main$' || exit 0\n{}",
            pause.script()
        ),
    );
}

/// Adds a task whose check waits for the test, so that the test decides
/// when it passes its gate and joins the merge queue.
pub async fn add_held_task(lead: &Client, dir: &Path, subject: &str) -> (u64, Pause) {
    let pause = Pause::new(dir, &format!("check-{subject}"));
    let id = lead
        .add_task(NewTask {
            checks: vec![pause.script()],
            ..task(subject)
        })
        .await
        .expect("add")
        .id;
    (id, pause)
}

/// Sends `complete_task` from a task of its own: with a worktree, the answer
/// comes only once the task lands (or cannot).
pub fn complete_in_background(
    who: &Arc<Client>,
    id: u64,
    epoch: u64,
) -> tokio::task::JoinHandle<Result<Task, ClientError>> {
    let who = who.clone();
    tokio::spawn(async move { who.complete_task(id, epoch, "done").await })
}

/// Waits until task `id`'s landing is at `stage`.
pub async fn stage_is(client: &Client, id: u64, stage: LandingStage) {
    eventually(format!("#{id} to be {stage:?}"), PATIENCE, || async {
        let t = client.get_task(id).await.expect("get").task;
        (t.landing.map(|l| l.stage) == Some(stage)).then_some(())
    })
    .await;
}
