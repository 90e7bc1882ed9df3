//! What a task changed, found by git run beside boardd: `teamctl task diff` and
//! the web page's diff both read it here.
//!
//! No boardd op does this: the caller reads the task's worktree with `get_task`
//! and the team's repository with `get_repo`, then [`plan`] picks what to diff
//! (`docs/design/worktrees.md`, the last section):
//! - a task that landed: `landed_on..merged` in the repository;
//! - a task whose checks passed (waiting for review, or queued): the head that
//!   passed against the target, `<target>...<head>` in the repository, which is
//!   what `merge_task` lands, whatever is in the worktree since;
//! - an open task whose worktree is there: the worktree against its fork point from
//!   the target, uncommitted changes included, then the untracked files (the
//!   completion's `git add -A` will commit them too);
//! - a worktree directory that is gone: `<target>...<branch>` in the repository.
//!
//! [`plan`] makes that choice from what it is given, so it is tested without git;
//! [`git`] runs the commands.

pub mod git;

use std::path::{Path, PathBuf};
use teamboard_protocol::{Repo, Task};

/// Why there is no diff to show, or why git could not make it; a sentence for
/// the person.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct DiffError(pub String);

macro_rules! bail {
    ($($arg:tt)*) => { return Err(DiffError(format!($($arg)*))) };
}
pub(crate) use bail;

/// The task's change as text: the patch, then the untracked files of an open
/// worktree, as `teamctl task diff` shows them piped.
pub fn text(task: &Task, repo: Option<&Repo>) -> Result<String, DiffError> {
    match plan(task, repo, |dir| dir.is_dir(), git::branch_exists)? {
        Diff::Landed { repo, from, to } => git::diff_text(&repo, &[from, to]),
        Diff::Passed { repo, target, head } => {
            git::diff_text(&repo, &[format!("refs/heads/{target}...{head}")])
        }
        Diff::Worktree { dir, target } => {
            let base = git::merge_base(&dir, &format!("refs/heads/{target}"))?;
            let mut out = git::diff_text(&dir, &[base])?;
            let untracked = git::untracked(&dir)?;
            if !untracked.is_empty() {
                out.push_str(
                    "\nuntracked files (not in the diff above; completing commits them):\n",
                );
                for path in untracked {
                    out.push_str(&format!("  {path}\n"));
                }
            }
            Ok(out)
        }
        Diff::Branch {
            repo,
            target,
            branch,
        } => git::diff_text(
            &repo,
            &[format!("refs/heads/{target}...refs/heads/{branch}")],
        ),
    }
}

/// Which diff shows a task's change.
#[derive(Debug, PartialEq, Eq)]
pub enum Diff {
    /// `git -C repo diff from to`: a landed task, `landed_on..merged`.
    Landed {
        repo: PathBuf,
        from: String,
        to: String,
    },
    /// `git -C repo diff target...head`: the head that passed the checks, as
    /// a review reads it.
    Passed {
        repo: PathBuf,
        target: String,
        head: String,
    },
    /// In the worktree: `git diff $(git merge-base refs/heads/target HEAD)`.
    Worktree { dir: PathBuf, target: String },
    /// `git -C repo diff target...branch`: the directory is gone, the branch is not.
    Branch {
        repo: PathBuf,
        target: String,
        branch: String,
    },
}

/// Picks the diff for `task`, asking `dir_exists` and `branch_exists` about the
/// disk; the error says why there is nothing to diff.
pub fn plan(
    task: &Task,
    repo: Option<&Repo>,
    dir_exists: impl Fn(&Path) -> bool,
    branch_exists: impl Fn(&Path, &str) -> Result<bool, DiffError>,
) -> Result<Diff, DiffError> {
    let id = task.id;
    let Some(w) = &task.worktree else {
        bail!(
            "task #{id} has no worktree: {}",
            if task.no_worktree {
                "it was added with --no-worktree and works in the team's directory"
            } else if repo.is_none() {
                "its team has no repository (see `teamctl repo`)"
            } else {
                "it gets one when a teammate first claims it"
            }
        );
    };
    let Some(repo) = repo else {
        bail!(
            "task #{id} has a worktree, but its team has no repository now, so there is \
             no target to diff against"
        );
    };
    let repo_dir = PathBuf::from(&repo.path);
    if let (Some(merged), Some(on)) = (&w.merged, &w.landed_on) {
        if !dir_exists(&repo_dir) {
            bail!(
                "the team's repository {} is not there any more; task #{id} landed as {}",
                repo.path,
                merged.get(..7).unwrap_or(merged)
            );
        }
        return Ok(Diff::Landed {
            repo: repo_dir,
            from: on.clone(),
            to: merged.clone(),
        });
    }
    if w.pruned {
        bail!(
            "task #{id}'s worktree and branch were pruned ({}): nothing is left to diff",
            if w.discard {
                "it was cancelled with --discard"
            } else {
                "`teamctl worktrees prune`"
            }
        );
    }
    if let Some(head) = task.landing.as_ref().and_then(|l| l.head.clone())
        && dir_exists(&repo_dir)
    {
        return Ok(Diff::Passed {
            repo: repo_dir,
            target: repo.branch.clone(),
            head,
        });
    }
    let dir = PathBuf::from(&w.path);
    if dir_exists(&dir) {
        return Ok(Diff::Worktree {
            dir,
            target: repo.branch.clone(),
        });
    }
    if w.base.is_none() {
        bail!(
            "task #{id}'s worktree is reserved but not created yet (its owner creates it \
             when it starts): nothing has changed"
        );
    }
    if dir_exists(&repo_dir) && branch_exists(&repo_dir, &w.branch)? {
        return Ok(Diff::Branch {
            repo: repo_dir,
            target: repo.branch.clone(),
            branch: w.branch.clone(),
        });
    }
    bail!(
        "task #{id}'s worktree {} and its branch {} are both gone: nothing is left to diff",
        w.path,
        w.branch
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use teamboard_protocol::{MergeStyle, Worktree};

    fn repo() -> Repo {
        Repo {
            path: "/src/app".into(),
            branch: "main".into(),
            merge: MergeStyle::Rebase,
            checks: vec![],
            check_timeout_ms: 1000,
            worktrees: "/w".into(),
            git_version: String::new(),
            set_at: 0,
            review: false,
        }
    }

    fn task(worktree: Option<Worktree>) -> Task {
        let mut t: Task = serde_json::from_value(serde_json::json!({
            "id": 3, "subject": "s", "status": "in_progress", "created_at": 0, "updated_at": 0
        }))
        .expect("task");
        t.worktree = worktree;
        t
    }

    fn worktree() -> Worktree {
        Worktree {
            path: "/w/task-3".into(),
            branch: "teamboard/default/task-3".into(),
            base: Some("b".repeat(40)),
            merged: None,
            landed_on: None,
            discard: false,
            pruned: false,
        }
    }

    fn everything_exists() -> (
        impl Fn(&Path) -> bool,
        impl Fn(&Path, &str) -> Result<bool, DiffError>,
    ) {
        (|_: &Path| true, |_: &Path, _: &str| Ok(true))
    }

    #[test]
    fn a_landed_task_diffs_what_it_brought_to_the_target() {
        let mut w = worktree();
        w.merged = Some("m".into());
        w.landed_on = Some("o".into());
        let (dir, branch) = everything_exists();
        assert_eq!(
            plan(&task(Some(w)), Some(&repo()), dir, branch).expect("plan"),
            Diff::Landed {
                repo: "/src/app".into(),
                from: "o".into(),
                to: "m".into()
            }
        );
    }

    #[test]
    fn an_open_task_diffs_its_worktree_and_without_it_its_branch() {
        let (dir, branch) = everything_exists();
        assert_eq!(
            plan(&task(Some(worktree())), Some(&repo()), dir, branch).expect("plan"),
            Diff::Worktree {
                dir: "/w/task-3".into(),
                target: "main".into()
            }
        );
        let only_repo = |p: &Path| p == Path::new("/src/app");
        assert_eq!(
            plan(
                &task(Some(worktree())),
                Some(&repo()),
                only_repo,
                |_: &Path, b: &str| Ok(b == "teamboard/default/task-3")
            )
            .expect("plan"),
            Diff::Branch {
                repo: "/src/app".into(),
                target: "main".into(),
                branch: "teamboard/default/task-3".into()
            }
        );
        let e = plan(
            &task(Some(worktree())),
            Some(&repo()),
            only_repo,
            |_: &Path, _: &str| Ok(false),
        )
        .expect_err("both gone");
        assert!(e.to_string().contains("are both gone"), "{e}");
    }

    #[test]
    fn a_task_whose_checks_passed_diffs_the_head_that_passed() {
        let mut t = task(Some(worktree()));
        t.landing = Some(teamboard_protocol::Landing {
            stage: teamboard_protocol::LandingStage::Review,
            result: String::new(),
            head: Some("h".repeat(40)),
            since: 0,
            queued_at: None,
            review_at: Some(0),
            diff: None,
            paths: Vec::new(),
            checkout: None,
            onto: None,
        });
        let (dir, branch) = everything_exists();
        assert_eq!(
            plan(&t, Some(&repo()), dir, branch).expect("plan"),
            Diff::Passed {
                repo: "/src/app".into(),
                target: "main".into(),
                head: "h".repeat(40)
            }
        );
    }

    #[test]
    fn no_worktree_says_why() {
        let (dir, branch) = everything_exists();
        let e = plan(&task(None), None, &dir, &branch).expect_err("no repo");
        assert_eq!(
            e.to_string(),
            "task #3 has no worktree: its team has no repository (see `teamctl repo`)"
        );
        let mut opted_out = task(None);
        opted_out.no_worktree = true;
        let e = plan(&opted_out, Some(&repo()), &dir, &branch).expect_err("opted out");
        assert!(e.to_string().contains("--no-worktree"), "{e}");
        let e = plan(&task(None), Some(&repo()), &dir, &branch).expect_err("unclaimed");
        assert!(e.to_string().contains("first claims it"), "{e}");

        let mut pruned = worktree();
        pruned.pruned = true;
        pruned.discard = true;
        let e = plan(&task(Some(pruned)), Some(&repo()), &dir, &branch).expect_err("pruned");
        assert!(e.to_string().contains("were pruned"), "{e}");

        let mut reserved = worktree();
        reserved.base = None;
        let e = plan(
            &task(Some(reserved)),
            Some(&repo()),
            |_: &Path| false,
            &branch,
        )
        .expect_err("reserved");
        assert!(e.to_string().contains("not created yet"), "{e}");
    }
}
