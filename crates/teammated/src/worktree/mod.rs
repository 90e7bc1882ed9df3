//! The held task's git worktree, as the teammate sees it.
//!
//! boardd owns the worktree (`docs/design/worktrees.md`): it names it in the
//! claim, creates it when the holder opens it, commits the work, runs the checks
//! and lands the branch. The teammate only works there. From the claim to the end
//! of the task (complete, fail, release, a lost claim) its tools run in a
//! [`LocalEnv`] of the worktree; the teammate's own `--workdir` serves everything
//! else. The swap is of the whole environment, not a path threaded through each
//! tool, so no tool can miss it.
//!
//! - [`TaskTree`]: where the task works and what it must pass;
//! - [`text`]: what the model is told of it, and of a refused completion.
//!
//! Opening it right after a claim, and what a failure does, is the teammate's
//! (`crate::teammate`, `tree`).

pub mod text;

use crate::tools::LocalEnv;
use std::path::PathBuf;
use teamboard_protocol::TaskId;
use teamboard_protocol::worktree::{Found, MergeStyle, OpenedWorktree, Repo};

/// The worktree of the held task, as boardd opened it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskTree {
    pub task: TaskId,
    /// Its real path: the file tools compare real paths.
    pub path: PathBuf,
    pub branch: String,
    /// The target's head it was created from.
    pub base: Option<String>,
    pub target: String,
    /// How a conflict with the target is resolved: by rebase or by merge.
    pub merge: MergeStyle,
    /// The team's checks, then the task's: the order boardd runs them in.
    pub checks: Vec<String>,
    /// What the previous owners left there.
    pub found: Found,
}

impl TaskTree {
    /// `path` is the worktree's real path; `repo` gives the team's checks and the
    /// merge style (without it: none, and rebase).
    pub fn new(
        opened: OpenedWorktree,
        path: PathBuf,
        repo: Option<&Repo>,
        task_checks: &[String],
    ) -> TaskTree {
        let mut checks: Vec<String> = repo.map(|r| r.checks.clone()).unwrap_or_default();
        checks.extend(task_checks.iter().cloned());
        TaskTree {
            task: opened.task,
            path,
            branch: opened.worktree.branch,
            base: opened.worktree.base,
            target: opened.target,
            merge: repo.map(|r| r.merge).unwrap_or_default(),
            checks,
            found: opened.found,
        }
    }

    /// The tools of `home` (the teammate's own), working in this worktree. Its
    /// sandbox hides the team's other worktrees, its siblings.
    pub fn env(&self, home: &LocalEnv) -> LocalEnv {
        let mut env = home.in_dir(self.path.clone());
        env.jail = env.jail.hide(self.path.parent().map(PathBuf::from));
        env
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::time::Duration;

    fn repo(checks: &[&str], merge: MergeStyle) -> Repo {
        Repo {
            path: "/r".into(),
            branch: "main".into(),
            merge,
            checks: checks.iter().map(|c| c.to_string()).collect(),
            check_timeout_ms: 1000,
            worktrees: "/w".into(),
            git_version: "2.43".into(),
            set_at: 0,
            review: false,
        }
    }

    pub(crate) fn opened(found: Found) -> OpenedWorktree {
        serde_json::from_value(json!({
            "task": 12,
            "worktree": {"path": "/w/task-12", "branch": "teamboard/t/task-12",
                         "base": "abc1234def5678"},
            "repo": "/r", "target": "main", "fresh": true,
            "found": found,
        }))
        .expect("an OpenedWorktree")
    }

    #[test]
    fn the_team_checks_come_before_the_tasks() {
        let tree = TaskTree::new(
            opened(Found::default()),
            "/w/task-12".into(),
            Some(&repo(&["cargo test"], MergeStyle::Merge)),
            &["test -f x".to_string()],
        );
        assert_eq!(tree.checks, ["cargo test", "test -f x"]);
        assert_eq!(tree.merge, MergeStyle::Merge);
        assert_eq!(tree.target, "main");
        let bare = TaskTree::new(opened(Found::default()), "/w".into(), None, &[]);
        assert!(bare.checks.is_empty());
        assert_eq!(bare.merge, MergeStyle::Rebase);
    }

    #[tokio::test]
    async fn the_task_env_works_in_the_worktree_and_shares_the_guards() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (home_dir, tree_dir) = (dir.path().join("home"), dir.path().join("tree"));
        std::fs::create_dir_all(&home_dir).expect("home");
        std::fs::create_dir_all(&tree_dir).expect("tree");
        std::fs::write(home_dir.join("mine.txt"), "home").expect("write");
        let home = LocalEnv::new(
            home_dir.canonicalize().expect("real"),
            Duration::from_secs(10),
        );
        let path = tree_dir.canonicalize().expect("real");
        let tree = TaskTree::new(opened(Found::default()), path.clone(), None, &[]);
        let env = tree.env(&home);
        assert_eq!(env.workdir, path);
        assert_eq!(home.workdir, home_dir.canonicalize().expect("real"));
        let pwd = crate::tools::run_local(&env, "bash", &json!({"command": "pwd"}))
            .await
            .expect("bash is local");
        assert!(
            pwd.content.starts_with(&format!("{}\n", path.display())),
            "{pwd:?}"
        );
        let wrote = crate::tools::run_local(
            &env,
            "write_file",
            &json!({"path": "new.txt", "content": "in the tree"}),
        )
        .await
        .expect("write_file is local");
        assert!(!wrote.is_error, "{wrote:?}");
        assert!(path.join("new.txt").is_file());
        assert!(!home_dir.join("new.txt").exists());
        // The teammate's own directory is outside the task's.
        let mine = home_dir.join("mine.txt");
        let read = crate::tools::run_local(
            &env,
            "read_file",
            &json!({"path": mine.display().to_string()}),
        )
        .await
        .expect("read_file is local");
        assert!(
            read.is_error && read.content.contains("outside"),
            "{read:?}"
        );
        // One set of guards: ending the claim ends the jobs the task's commands
        // left, wherever they ran.
        assert!(env.guards.same_as(&home.guards));
    }
}
