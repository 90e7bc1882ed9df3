//! A team's repository and its tasks' worktrees, as board state.
//!
//! The board never runs git. It decides who may do what, names each task's
//! worktree and branch in the claim that first needs them, and records what
//! boardd's repo worker reports (a worktree's base, a repository checked and
//! attached). `docs/design/worktrees.md` is the contract.

use crate::error::{BoardError, Result};
use crate::tasks::{change, require_lead};
use crate::transition::Note;
use crate::{About, Board, Ctx};
use teamboard_protocol::{
    ErrorCode, EventKind, Found, Repo, Task, TaskId, TaskStatus, Worktree, WorktreeEntry,
    WorktreeState,
};

/// What the repo worker needs to create or reopen a task's worktree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenJob {
    pub team: String,
    pub task: TaskId,
    pub epoch: u64,
    pub repo: Repo,
    pub worktree: Worktree,
}

/// The branch prefix of every task branch boardd makes for a team.
pub fn branch_prefix(team: &str) -> String {
    format!("teamboard/{team}/")
}

impl Board {
    /// The team's repository.
    pub fn repo(&self, team: &str) -> Option<&Repo> {
        self.team(team).and_then(|t| t.repo.as_ref())
    }

    /// Refuses anyone but the lead before `set_repo` is sent to the worker, so a
    /// teammate cannot make boardd run git on a path of its choosing.
    pub fn may_set_repo(&self, ctx: &Ctx) -> Result<()> {
        require_lead(ctx, "attach a repository to")
    }

    /// Attaches a repository the worker has checked. Tasks already holding a
    /// worktree keep it; the next claims reserve worktrees in the new one.
    pub fn set_repo(&mut self, ctx: Ctx, repo: Repo) -> Result<Repo> {
        self.may_set_repo(&ctx)?;
        let detail = format!(
            "attached {} (target {}, {} style, {} check(s))",
            repo.path,
            repo.branch,
            repo.merge,
            repo.checks.len()
        );
        self.team_mut(ctx.team).repo = Some(repo.clone());
        self.dirty.repos.insert(ctx.team.to_string());
        self.emit_as(&ctx, EventKind::RepoSet, About::default(), detail);
        Ok(repo)
    }

    /// The worktree a claim of `id` reserves, if the task needs one: the team has
    /// a repository and the task did not opt out.
    pub(crate) fn worktree_for(&self, team: &str, id: TaskId) -> Option<Worktree> {
        let t = self.team(team)?;
        let repo = t.repo.as_ref()?;
        let task = t.tasks.get(&id)?;
        if task.no_worktree {
            return None;
        }
        Some(Worktree {
            path: format!("{}/task-{id}", repo.worktrees.trim_end_matches('/')),
            branch: format!("{}task-{id}", branch_prefix(team)),
            base: None,
            merged: None,
            landed_on: None,
            discard: false,
            pruned: false,
        })
    }

    /// Checks that the session holds `id` with `epoch` and that the task has a
    /// worktree, and says what the worker needs to open it.
    pub fn open_job(&self, ctx: &Ctx, id: TaskId, epoch: u64) -> Result<OpenJob> {
        self.check_fence(ctx, id, epoch)?;
        let task = self.task(ctx.team, id)?;
        let (Some(worktree), Some(repo)) = (task.worktree.clone(), self.repo(ctx.team)) else {
            return Err(no_worktree(id));
        };
        Ok(OpenJob {
            team: ctx.team.to_string(),
            task: id,
            epoch,
            repo: repo.clone(),
            worktree,
        })
    }

    /// Records that the worker created or reopened the worktree: its base on
    /// first creation, and an event that says what the owner found there.
    pub fn worktree_opened(
        &mut self,
        ctx: Ctx,
        id: TaskId,
        epoch: u64,
        base: &str,
        fresh: bool,
        found: &Found,
    ) -> Result<Task> {
        if let Err(e) = self.check_fence(&ctx, id, epoch) {
            // The worktree exists whatever became of the claim. Trap: without
            // its base it stays `reserved`, which list and prune never look
            // at on disk, so it would be left behind for good.
            self.record_base(ctx.team, id, base, ctx.now.wall_ms);
            return Err(e);
        }
        let detail = opened_detail(ctx.actor, id, fresh, found);
        self.transition(change(&ctx, id), |task| {
            if let Some(w) = task.worktree.as_mut()
                && w.base.is_none()
            {
                w.base = Some(base.to_string());
            }
            Note::new(EventKind::WorktreeOpened, detail).about(ctx.actor)
        })
    }

    /// Sets the base of `id`'s worktree if it has none yet.
    fn record_base(&mut self, team: &str, id: TaskId, base: &str, wall_ms: i64) {
        let Some(task) = self.teams.get_mut(team).and_then(|t| t.tasks.get_mut(&id)) else {
            return;
        };
        if let Some(w) = task.worktree.as_mut().filter(|w| w.base.is_none()) {
            w.base = Some(base.to_string());
            task.updated_at = wall_ms;
            self.mark_task(team, id);
        }
    }

    /// The tasks with a worktree, for the worker to inspect (`list_worktrees`,
    /// `prune_worktrees`), with the state the board alone can tell.
    pub fn worktree_tasks(&self, team: &str) -> Vec<WorktreeEntry> {
        let Some(t) = self.team(team) else {
            return Vec::new();
        };
        t.tasks
            .values()
            .filter_map(|task| {
                let worktree = task.worktree.clone().filter(|w| !w.pruned)?;
                Some(WorktreeEntry {
                    task: task.id,
                    subject: task.subject.clone(),
                    status: task.status,
                    owner: task.owner.clone(),
                    state: board_state(task, &worktree),
                    worktree,
                    uncommitted: 0,
                    unmerged_commits: 0,
                    size: 0,
                })
            })
            .collect()
    }

    /// Records worktrees the worker removed.
    pub fn worktrees_pruned(&mut self, ctx: Ctx, removed: &[WorktreeEntry]) -> Result<()> {
        require_lead(&ctx, "prune the worktrees of")?;
        for entry in removed {
            if let Some(t) = self.teams.get_mut(ctx.team)
                && let Some(task) = t.tasks.get_mut(&entry.task)
                && let Some(w) = task.worktree.as_mut()
            {
                w.pruned = true;
                task.updated_at = ctx.now.wall_ms;
                self.dirty.tasks.insert((ctx.team.to_string(), entry.task));
            }
            self.emit_as(
                &ctx,
                EventKind::WorktreePruned,
                About::task(entry.task, None),
                format!(
                    "removed the worktree {} and branch {} of #{} ({})",
                    entry.worktree.path, entry.worktree.branch, entry.task, entry.state
                ),
            );
        }
        Ok(())
    }
}

/// What a worktree's task says about it before git is asked: the worker then
/// looks at the directory (missing, uncommitted work) and may only make a
/// prunable state unprunable, never the reverse.
fn board_state(task: &Task, w: &Worktree) -> WorktreeState {
    if w.base.is_none() {
        return WorktreeState::Reserved;
    }
    match task.status {
        TaskStatus::Completed if w.merged.is_some() => WorktreeState::Merged,
        TaskStatus::Cancelled if w.discard => WorktreeState::Discarded,
        TaskStatus::Cancelled | TaskStatus::Completed => WorktreeState::Unmerged,
        TaskStatus::Pending | TaskStatus::InProgress | TaskStatus::Failed => WorktreeState::Active,
    }
}

fn no_worktree(id: TaskId) -> BoardError {
    BoardError::new(
        ErrorCode::InvalidState,
        format!(
            "task #{id} has no worktree: its team has no repository, or it was added with no_worktree"
        ),
    )
}

fn opened_detail(actor: &str, id: TaskId, fresh: bool, found: &Found) -> String {
    if fresh {
        return format!("{actor} opened a new worktree for #{id}");
    }
    if found.is_empty() {
        return format!("{actor} reopened the worktree of #{id}; nothing was left in it");
    }
    let mut parts = Vec::new();
    if found.commits > 0 {
        parts.push(format!("{} commit(s)", found.commits));
    }
    if !found.changed.is_empty() {
        let more = if found.more_changed { " and more" } else { "" };
        parts.push(format!(
            "uncommitted changes in {}{more}",
            found.changed.join(", ")
        ));
    }
    if let Some(what) = &found.in_progress {
        parts.push(format!("a {what} in progress"));
    }
    format!(
        "{actor} reopened the worktree of #{id} and found {}",
        parts.join("; ")
    )
}
