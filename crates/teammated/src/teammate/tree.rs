//! Opening the held task's worktree right after the claim, before the first model
//! call on it.
//!
//! Every claim goes through `Teammate::hold` (the wait's auto-claim, the
//! `claim_task` tool, a claim boardd gives back on reconnecting or at start), and
//! `hold` opens the worktree here (`crate::worktree` says what it is). A failure
//! settles the task at once, so the model never works on a task whose place is
//! unknown:
//!
//! - boardd says the claim is gone: the usual lost claim, let go without a word
//!   to boardd;
//! - anything else (git failed, the directory is not usable here): the task is
//!   given back with the error, which uses up an attempt, so a broken repository
//!   fails its tasks in the end instead of handing them round for ever, and the
//!   lead is told.

use super::Teammate;
use crate::worktree::TaskTree;
use teamboard_protocol::{ClientError, ErrorCode, MessageKind, Task};

/// Whether boardd's answer to `open_worktree` says the claim is no longer ours.
/// Not `invalid_state`: boardd also says that of a request it cannot serve, and
/// a release of a claim that is really gone is refused harmlessly.
fn claim_gone(e: &ClientError) -> bool {
    matches!(
        e.code(),
        Some(ErrorCode::StaleEpoch | ErrorCode::NotFound | ErrorCode::Conflict)
    )
}

impl Teammate {
    /// Opens the worktree of `task`, just claimed with `epoch` and held, when it
    /// has one. `Ok(None)`: it works in the teammate's own directory. `Err`: the
    /// task is settled already (let go, or given back); the text says what
    /// happened, for the model or the transcript.
    pub(super) async fn open_tree(
        &mut self,
        task: &Task,
        epoch: u64,
    ) -> Result<Option<TaskTree>, String> {
        if task.worktree.is_none() {
            return Ok(None);
        }
        let id = task.id;
        let opened = self
            .session
            .call(|c| async move { c.open_worktree(id, epoch).await })
            .await;
        let opened = match opened {
            Ok(opened) => opened,
            Err(e) if claim_gone(&e) => {
                let text = format!("the claim on #{id} was lost before its worktree opened ({e})");
                tracing::warn!(task = id, error = %e, "{text}");
                self.lifecycle(&text);
                self.let_go();
                return Err(text);
            }
            Err(e) => return Err(self.cannot_open(id, e.to_string()).await),
        };
        let path = match std::fs::canonicalize(&opened.worktree.path) {
            Ok(path) if path.is_dir() => path,
            Ok(path) => {
                let why = format!("{} is not a directory", path.display());
                return Err(self.cannot_open(id, why).await);
            }
            Err(e) => {
                let why = format!(
                    "boardd opened {}, but it is not usable here: {e}",
                    opened.worktree.path
                );
                return Err(self.cannot_open(id, why).await);
            }
        };
        // The team's checks and merge style, read afresh for each task. Without
        // them the task is still workable: only the opening names fewer checks.
        let repo = match self
            .session
            .call(|c| async move { c.get_repo().await })
            .await
        {
            Ok(repo) => repo,
            Err(e) => {
                tracing::warn!(task = id, error = %e, "cannot read the team's repository");
                None
            }
        };
        let fresh = opened.fresh;
        let tree = TaskTree::new(opened, path, repo.as_ref(), &task.checks);
        let text = format!(
            "worktree: #{id} works in {} (branch {}, {})",
            tree.path.display(),
            tree.branch,
            if fresh { "created" } else { "reused" }
        );
        tracing::info!(task = id, "{text}");
        self.lifecycle(&text);
        Ok(Some(tree))
    }

    /// Gives the held task `id` back with `why` (the attempt counts) and tells the
    /// lead. Returns what happened, in words.
    async fn cannot_open(&mut self, id: u64, why: String) -> String {
        let text = format!("cannot open the worktree of #{id}: {why}");
        tracing::warn!(task = id, "{text}");
        self.lifecycle_error(&text);
        self.release(Some(&text)).await;
        self.tell_lead(
            MessageKind::Error,
            format!("{} released #{id}: {text}", self.cfg.name),
        )
        .await;
        format!("{text}; the task was given back")
    }
}
