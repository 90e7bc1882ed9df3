//! What a worker is told when boardd's completion gate refuses to complete its
//! task: boardd's words, then what to do. One text for every worker, so that a
//! native teammate, an agent completing through the member socket and a
//! person's own session through `teamctl mcp` read the same steps.

use crate::ErrorCode;
use crate::worktree::MergeStyle;

/// A refusal's last words, for a worker still in its turn (an agent, whose
/// turn is over, is told otherwise: teammated's `work::agent`).
pub const AGAIN: &str = "call complete_task again.";

/// The refusal of `complete_task` by the completion gate: boardd's `message` as
/// it is (it names the check, its exit code and the end of its output, or the
/// conflicting paths), then what to do. `tree` is the worktree's target branch
/// and merge style, when known. `None` for any other refusal. The claim is kept:
/// the worker fixes the problem and completes again.
pub fn refused_completion(
    code: ErrorCode,
    message: &str,
    tree: Option<(&str, MergeStyle)>,
) -> Option<String> {
    let what = match code {
        ErrorCode::CheckFailed => {
            format!("The task is still yours: fix the problem in your worktree and {AGAIN}")
        }
        ErrorCode::MergeConflict => {
            let (target, merge) = tree.unwrap_or(("<the target branch>", MergeStyle::Rebase));
            let steps = match merge {
                MergeStyle::Rebase => format!(
                    "run `git rebase {target}` in your worktree, resolve the conflicts in the \
                     named files, `git add` them and `git rebase --continue` until the rebase \
                     is done"
                ),
                MergeStyle::Merge => format!(
                    "run `git merge {target}` in your worktree, resolve the conflicts in the \
                     named files, `git add` them and `git commit` to finish the merge"
                ),
            };
            format!(
                "The task is still yours. The target branch {target} changed the same lines: \
                 {steps}, then {AGAIN}"
            )
        }
        _ => return None,
    };
    Some(format!("complete_task was refused: {message}\n\n{what}"))
}
