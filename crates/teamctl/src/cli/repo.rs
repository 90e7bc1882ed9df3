//! Command-line definitions for a team's repository: `repo`, `worktrees`, and the
//! task commands that touch a task's worktree (`task diff`, `task cancel --discard`).
//! `docs/design/worktrees.md` is the contract they follow.

use super::parse_task_id;
use clap::{Args, Subcommand};
use std::path::PathBuf;
use teamboard_protocol::{MergeStyle, TaskId};

pub const REPO_ABOUT: &str = "\
Show the team's git repository, or attach one with `repo set`";

pub const REPO_LONG: &str = "\
Show the team's git repository: its path, the target branch finished work lands on, \
the merge style, the default checks and their time limit, where boardd keeps the \
task worktrees, and the git version boardd found.

With a repository, every task works in a git worktree of its own, on a branch of its \
own (`teamctl worktrees`). A task completes only when its checks pass in that worktree \
and its work has landed on the target branch, one landing at a time. A team without \
a repository works in one shared directory, as before.";

pub const REPO_EXAMPLES: &str = "\
Examples:
  teamctl repo
  teamctl repo set . --branch main   this repository, landing on main
  teamctl repo set ~/src/app --branch main --check 'cargo test'
  teamctl repo --json | jq .branch";

pub const REPO_SET_LONG: &str = "\
Attach a git repository to the team. PATH is any directory inside it (made absolute \
here); boardd resolves the top level and checks git (at least 2.25), the branch and \
the directory it puts worktrees in. Setting it again replaces the settings.

The target branch (--branch) may be the one you have checked out: a landing updates \
your files with it, as a push with git's `receive.denyCurrentBranch=updateInstead` \
would. While you have changes a landing would touch, it waits (`landing: blocked` in \
`teamctl task show`) and lands once they are committed or undone.

Checks (--check, repeatable) are shell commands every task of the team must pass in \
its worktree before it may complete, before the task's own checks (`teamctl task add \
--check`). Each runs with `sh -c` and may take --check-timeout seconds.

With --review, work whose checks pass waits for you instead of landing: `teamctl \
review` lists it, `teamctl task diff ID` shows it, `teamctl merge ID` lands it and \
`teamctl send-back ID --feedback TEXT` returns it to its owner. `teamctl task add \
--review` asks the same of one task.";

pub const REPO_SET_EXAMPLES: &str = "\
Examples:
  teamctl repo set . --branch main
  teamctl repo set ~/src/app --branch main
  teamctl repo set . --merge merge --check 'cargo test' --check 'cargo clippy -- -D warnings'
  teamctl repo set . --check 'make test' --check-timeout 1800
  teamctl repo set . --branch main --check 'cargo test' --review   you read each change first";

pub const WORKTREES_ABOUT: &str = "\
List the task worktrees, with their state and size; `prune` removes finished ones";

pub const WORKTREES_LONG: &str = "\
List the team's task worktrees: the task, its status and owner, the worktree's \
state, how many paths have uncommitted changes, how many commits its branch has that \
the target branch does not, its size on disk and its path.

States: reserved (claimed, not created yet), active (its task is open), merged (its \
work is on the target branch), discarded (its task was cancelled with --discard), \
unmerged (work that is neither: kept), missing (the directory is gone; its branch may \
remain). Only merged and discarded ones are removed by `teamctl worktrees prune`; \
nothing else ever removes a worktree or a branch.";

pub const WORKTREES_EXAMPLES: &str = "\
Examples:
  teamctl worktrees
  teamctl worktrees prune --dry-run     what would go, and why the rest stays
  teamctl worktrees prune
  teamctl worktrees --json | jq '.[] | select(.state == \"unmerged\") | .task'";

pub const PRUNE_LONG: &str = "\
Remove the worktrees whose work is on the target branch (merged, with nothing \
uncommitted left in them) and those of tasks cancelled with `teamctl task cancel ID \
--discard`, with their branches. Every other worktree is kept, and teamctl says why.";

pub const PRUNE_EXAMPLES: &str = "\
Examples:
  teamctl worktrees prune --dry-run
  teamctl worktrees prune
  teamctl worktrees prune --json | jq '.removed[].task'";

pub const DIFF_LONG: &str = "\
Show what a task changed, with git run here (boardd is asked only where the task's \
worktree and the team's repository are).

A task that landed: the change it brought to the target branch. A task whose checks \
passed (waiting for review, or in the merge queue): the commit that passed, against \
the target it was brought up to date with; exactly what `teamctl merge` lands. An \
open task: its \
worktree against the point where it forked from the target, uncommitted changes \
included, then the files git does not track yet. If the worktree directory is gone \
but the branch remains: the branch against the target. In a terminal git pages and \
colours as it is configured to; piped, it does not page.";

pub const DIFF_EXAMPLES: &str = "\
Examples:
  teamctl task diff 3
  teamctl task diff 3 --stat
  teamctl task diff 3 --name-only
  teamctl task diff 3 | less -R";

pub const RETRY_LONG: &str = "\
Put a failed or cancelled task back to pending, with a fresh attempt count.

A task whose landing waits is tried again: `landing: blocked` (your checkout of the \
target has changes in the way) is looked at now and lands if the checkout is clean; \
`landing: conflict`, once you resolved it in the task's worktree (`git rebase \
<target>`, fix, `git add`, `git rebase --continue`), is checked and landed for the \
teammate that holds it, or made ready for the next teammate if none does.";

pub const CANCEL_LONG: &str = "\
Withdraw a task; its owner, if any, loses the claim.

In a team with a repository the task's worktree and branch are kept, so nothing it \
did is lost: `teamctl worktrees prune` leaves them alone. With --discard its \
unmerged work may go: prune then removes its worktree and branch.";

pub const CANCEL_EXAMPLES: &str = "\
Examples:
  teamctl task cancel 5
  teamctl task cancel 5 --discard && teamctl worktrees prune";

pub const REVIEW_ABOUT: &str = "\
List the work that passed its checks and waits for your review, with its size";

pub const REVIEW_LONG: &str = "\
List the tasks whose work passed its checks and waits for your review (with `teamctl \
repo set --review`, or `teamctl task add --review`): the task, its owner, how many \
files and lines it changes, how long it has waited, and the commit that passed.

Nothing of it lands while it waits, and it keeps waiting across restarts of boardd \
and of its owner. Read it with `teamctl task diff ID`, then land it with `teamctl \
merge ID` or return it with `teamctl send-back ID --feedback TEXT`.";

pub const REVIEW_EXAMPLES: &str = "\
Examples:
  teamctl review
  teamctl task diff 3 && teamctl merge 3
  teamctl send-back 4 --feedback 'keep the old flag working'
  teamctl review --json | jq '.[] | {id, diff: .landing.diff}'";

pub const MERGE_ABOUT: &str = "\
Land work that waits for your review, through the merge queue";

pub const MERGE_LONG: &str = "\
Land a task that waits for your review: it joins the team's merge queue and lands \
like any completion whose checks passed, exactly the commit that passed them \
(`teamctl task diff ID`). teamctl waits until it has landed and prints the commit, \
or says why it could not land (a conflict with work that landed meanwhile, a commit \
made after the checks): then the task goes back to pending with the reason as its \
note, for its next owner. Its owner need not be connected.";

pub const MERGE_EXAMPLES: &str = "\
Examples:
  teamctl merge 3
  teamctl merge 3 --json | jq .worktree.merged";

pub const SEND_BACK_ABOUT: &str = "\
Return work that waits for your review to its owner, with feedback";

pub const SEND_BACK_LONG: &str = "\
Return a task that waits for your review to its owner. The feedback is required: it \
becomes the task's handoff note and goes into its history. The owner keeps the claim \
and the worktree, takes the task up again at once (it waits idle meanwhile), and its \
next completion runs the checks, and your review, again. If the owner is gone (its \
process stopped or died), the task goes back to pending, without counting an \
attempt, and its next owner starts from the work and the feedback.";

pub const SEND_BACK_EXAMPLES: &str = "\
Examples:
  teamctl send-back 4 --feedback 'keep the old flag working'
  teamctl send-back 4 -f \"$(cat review-notes.md)\"";

#[derive(Debug, Args)]
pub struct RepoArgs {
    #[command(subcommand)]
    pub command: Option<RepoCommand>,
}

#[derive(Debug, Subcommand)]
pub enum RepoCommand {
    /// Attach a git repository and a target branch to the team (lead only)
    #[command(long_about = REPO_SET_LONG, after_help = REPO_SET_EXAMPLES)]
    Set(RepoSetArgs),
}

#[derive(Debug, Args)]
pub struct RepoSetArgs {
    /// A directory inside the repository
    #[arg(value_name = "PATH")]
    pub path: PathBuf,

    /// The target branch, where finished work lands; it may be checked out in your
    /// working tree. Without it boardd refuses, naming the branch checked out at
    /// PATH
    #[arg(short, long, value_name = "BRANCH")]
    pub branch: Option<String>,

    /// How a task's work lands on the target [default: rebase]
    #[arg(long, value_enum, value_name = "STYLE")]
    pub merge: Option<MergeStyle>,

    /// A shell command every task must pass before it completes (repeat for more)
    #[arg(long = "check", value_name = "CMD", value_parser = parse_check)]
    pub checks: Vec<String>,

    /// How long one check may run before it is stopped and counted as failed
    /// [default: 600]
    #[arg(long, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..))]
    pub check_timeout: Option<u64>,

    /// Every task's work waits for your review once its checks pass (`teamctl
    /// review`), instead of landing at once
    #[arg(long)]
    pub review: bool,
}

#[derive(Debug, Args)]
pub struct WorktreesArgs {
    #[command(subcommand)]
    pub command: Option<WorktreesCommand>,
}

#[derive(Debug, Subcommand)]
pub enum WorktreesCommand {
    /// Remove the worktrees whose work is merged or was discarded (lead only)
    #[command(long_about = PRUNE_LONG, after_help = PRUNE_EXAMPLES)]
    Prune(PruneArgs),
}

#[derive(Debug, Args)]
pub struct PruneArgs {
    /// Say what would be removed and what kept, and remove nothing
    #[arg(long)]
    pub dry_run: bool,
}

#[derive(Debug, Args)]
pub struct TaskDiffArgs {
    /// The task's id (`3` or `#3`)
    #[arg(value_name = "ID", value_parser = parse_task_id)]
    pub id: TaskId,

    /// How many lines changed in each file, instead of the changes
    #[arg(long, conflicts_with = "name_only")]
    pub stat: bool,

    /// Only the names of the files that changed
    #[arg(long)]
    pub name_only: bool,
}

#[derive(Debug, Args)]
pub struct TaskCancelArgs {
    /// The task's id (`3` or `#3`)
    #[arg(value_name = "ID", value_parser = parse_task_id)]
    pub id: TaskId,

    /// Let `teamctl worktrees prune` remove the task's worktree and branch with
    /// its unmerged work; without it they are kept
    #[arg(long)]
    pub discard: bool,
}

/// A check is a shell command: an empty one would pass or fail for no reason.
pub fn parse_check(s: &str) -> Result<String, String> {
    if s.trim().is_empty() {
        return Err(
            "a check is a shell command, e.g. --check 'cargo test'; it cannot be empty".into(),
        );
    }
    Ok(s.to_string())
}
