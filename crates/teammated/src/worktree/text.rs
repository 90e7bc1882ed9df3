//! What the model is told about the held task's worktree: where it works, what
//! the previous owners left there, what happens when it completes, and what to do
//! when boardd's completion gate refuses.
//!
//! The opening says that teamboard commits: a model that commits itself does no
//! harm, but one that thinks it must may spend rounds on commit messages. And it
//! says what was found before anything else is done: a re-claim reuses the
//! worktree, so the model must look before it redoes the work.

use super::TaskTree;
use teamboard_protocol::ErrorCode;
use teamboard_protocol::worktree::Found;

/// How many uncommitted paths the opening names.
const CHANGED_SHOWN: usize = 10;

/// A commit id as people read it.
fn short(commit: &str) -> &str {
    commit.get(..7).unwrap_or(commit)
}

/// `cargo test`, `ruff .`
fn listed(checks: &[String]) -> String {
    checks
        .iter()
        .map(|c| format!("`{c}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

impl TaskTree {
    /// The block that opens the task after its description.
    pub fn opening(&self) -> String {
        let from = match &self.base {
            Some(base) => format!("from {} at {}", self.target, short(base)),
            None => format!("from {}", self.target),
        };
        let mut s = format!(
            "[Worktree] You work on task #{} in the git worktree {} (branch {}, {from}). \
             bash starts there and the file tools are confined to it. Stay inside it. \
             When you complete the task, teamboard commits your changes, brings the \
             branch up to date with {}",
            self.task,
            self.path.display(),
            self.branch,
            self.target,
        );
        if self.checks.is_empty() {
            s.push_str(" and lands it there (there are no checks to pass)");
        } else {
            s.push_str(&format!(
                " and runs the checks: {}; the work lands on {} only when they pass",
                listed(&self.checks),
                self.target
            ));
        }
        s.push_str(". You need not commit yourself.");
        if let Some(found) = self.found_text() {
            s.push_str("\n\n");
            s.push_str(&found);
        }
        s
    }

    /// What a previous owner left, for the model; `None` when nothing.
    fn found_text(&self) -> Option<String> {
        let found: &Found = &self.found;
        if found.is_empty() {
            return None;
        }
        let mut parts = Vec::new();
        if found.commits > 0 {
            let n = found.commits;
            let commits = if n == 1 {
                "1 commit".to_string()
            } else {
                format!("{n} commits")
            };
            parts.push(match &self.base {
                Some(base) => format!("{commits} since {}'s {}", self.target, short(base)),
                None => format!("{commits} on its branch"),
            });
        }
        if !found.changed.is_empty() {
            let shown = &found.changed[..found.changed.len().min(CHANGED_SHOWN)];
            let rest = found.changed.len() - shown.len();
            let more = if found.more_changed {
                " (and more)".to_string()
            } else if rest > 0 {
                format!(" (and {rest} more)")
            } else {
                String::new()
            };
            parts.push(format!("uncommitted changes in {}{more}", shown.join(", ")));
        }
        if let Some(what) = &found.in_progress {
            parts.push(format!("a {what} in progress"));
        }
        Some(format!(
            "This worktree already holds work from a previous owner: {}. Nothing of it was \
             thrown away: look at it (`git status`, `git log {}..HEAD`, `git diff`) before \
             you redo anything.",
            parts.join("; "),
            self.target
        ))
    }

    /// The line of the identity block, which survives compaction.
    pub fn identity_line(&self) -> String {
        format!(
            "You work in the git worktree {} (branch {}); stay inside it.",
            self.path.display(),
            self.branch
        )
    }
}

/// What the model is told when boardd's completion gate refuses `complete_task`:
/// boardd's `message` as it is, then what to do (see
/// [`teamboard_protocol::refusal::refused_completion`], which the board's MCP
/// server uses too). `None` for any other refusal. The claim is kept: the model
/// fixes the problem and completes again.
pub fn refused_completion(
    code: ErrorCode,
    message: &str,
    tree: Option<&TaskTree>,
) -> Option<String> {
    teamboard_protocol::refusal::refused_completion(
        code,
        message,
        tree.map(|t| (t.target.as_str(), t.merge)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::worktree::tests::opened;
    use teamboard_protocol::worktree::MergeStyle;

    fn tree(found: Found, checks: &[&str]) -> TaskTree {
        TaskTree::new(
            opened(found),
            "/w/task-12".into(),
            None,
            &checks.iter().map(|c| c.to_string()).collect::<Vec<_>>(),
        )
    }

    #[test]
    fn a_fresh_worktree_is_named_with_its_branch_base_and_checks() {
        let text = tree(Found::default(), &["cargo test", "test -f x"]).opening();
        assert_eq!(
            text,
            "[Worktree] You work on task #12 in the git worktree /w/task-12 (branch \
             teamboard/t/task-12, from main at abc1234). bash starts there and the file \
             tools are confined to it. Stay inside it. When you complete the task, \
             teamboard commits your changes, brings the branch up to date with main and \
             runs the checks: `cargo test`, `test -f x`; the work lands on main only when \
             they pass. You need not commit yourself."
        );
        let none = tree(Found::default(), &[]).opening();
        assert!(
            none.contains("and lands it there (there are no checks to pass). You need not"),
            "{none}"
        );
        assert!(!none.contains("previous owner"), "{none}");
    }

    #[test]
    fn what_a_previous_owner_left_is_said_before_anything_is_redone() {
        let found = Found {
            commits: 2,
            changed: vec!["src/a.rs".into(), "src/b.rs".into()],
            more_changed: true,
            in_progress: Some("rebase".into()),
        };
        let text = tree(found, &[]).opening();
        assert!(
            text.ends_with(
                "\n\nThis worktree already holds work from a previous owner: 2 commits since \
                 main's abc1234; uncommitted changes in src/a.rs, src/b.rs (and more); a rebase \
                 in progress. Nothing of it was thrown away: look at it (`git status`, \
                 `git log main..HEAD`, `git diff`) before you redo anything."
            ),
            "{text}"
        );
        let many = Found {
            changed: (0..12).map(|n| format!("f{n}")).collect(),
            ..Found::default()
        };
        let text = tree(many, &[]).opening();
        assert!(
            text.contains(
                "uncommitted changes in f0, f1, f2, f3, f4, f5, f6, f7, f8, f9 (and 2 more)."
            ),
            "{text}"
        );
        assert!(!text.contains("commits since"), "{text}");
        let one = Found {
            commits: 1,
            ..Found::default()
        };
        assert!(
            tree(one, &[])
                .opening()
                .contains("previous owner: 1 commit since main's abc1234.")
        );
    }

    #[test]
    fn a_refused_completion_keeps_boardds_words_and_says_what_to_do() {
        let t = tree(Found::default(), &[]);
        let failed = refused_completion(
            ErrorCode::CheckFailed,
            "check `test -f must-exist` failed (exit code 1):\n",
            Some(&t),
        )
        .expect("a gate refusal");
        assert!(
            failed.starts_with(
                "complete_task was refused: check `test -f must-exist` failed (exit code 1):\n"
            ),
            "{failed}"
        );
        assert!(
            failed.ends_with("fix the problem in your worktree and call complete_task again."),
            "{failed}"
        );
        let conflict =
            refused_completion(ErrorCode::MergeConflict, "conflict in src/a.rs", Some(&t))
                .expect("a gate refusal");
        assert!(conflict.contains("conflict in src/a.rs"), "{conflict}");
        assert!(
            conflict.contains("run `git rebase main` in your worktree"),
            "{conflict}"
        );
        assert!(conflict.contains("`git rebase --continue`"), "{conflict}");
        let mut merging = t.clone();
        merging.merge = MergeStyle::Merge;
        let conflict = refused_completion(ErrorCode::MergeConflict, "x", Some(&merging))
            .expect("a gate refusal");
        assert!(
            conflict.contains("run `git merge main` in your worktree"),
            "{conflict}"
        );
        assert_eq!(
            refused_completion(ErrorCode::PlanRequired, "x", Some(&t)),
            None
        );
    }
}
