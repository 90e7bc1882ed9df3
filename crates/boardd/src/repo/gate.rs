//! A completion's gate: commit the owner's work, bring the branch up to date
//! with the target, run the checks.

use super::Running;
use super::job::{Done, Passed};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use teamboard_board::{Conflict, GateJob, GateRefusal};
use teamboard_git::{CheckOutcome as Outcome, CheckSpec, GitError, Repo as Git, Update};
use teamboard_protocol::{
    CheckOutcome, CheckRun, DiffStat, ErrorCode, MergeStyle, SandboxMode, TaskId, Worktree,
};
use teamboard_sandbox::Jail;
use tokio::sync::mpsc;

/// On the repository's worker: commits everything in the worktree and brings
/// the branch up to date. Answers the head the checks are to run on, and the
/// size of its change against the target (what a review reads).
pub fn prepare(job: &GateJob) -> Result<(String, DiffStat), GateRefusal> {
    let git = Git::open(Path::new(&job.repo.path)).map_err(refuse_git)?;
    let wt = Path::new(&job.worktree.path);
    // A rebase or merge of ours that a killed boardd left half done (its
    // landing ended with it, and the owner completes again) would make the
    // commit below refuse, or, for a merge, conclude it with conflict markers.
    if git.abort_own_update(wt).map_err(refuse_git)? {
        tracing::warn!("aborted an update a previous boardd left in progress");
    }
    let state = git.worktree_state(wt).map_err(refuse_git)?;
    if let Some(message) = off_branch(&state.branch, &job.worktree) {
        return Err(GateRefusal::new(ErrorCode::Git, message));
    }
    let author = format!("{0} <{0}@teamboard.invalid>", job.author);
    git.commit_all(wt, &job.message, Some(&author))
        .map_err(refuse_git)?;
    let style = style(job.repo.merge);
    match git
        .update(wt, &job.repo.branch, style)
        .map_err(refuse_git)?
    {
        Update::Conflict { paths, onto } => {
            let message = conflict_message(
                job.task,
                &job.repo.branch,
                &onto,
                &job.worktree,
                job.repo.merge,
                &paths,
            );
            Err(GateRefusal::conflict(message, Conflict { paths, onto }))
        }
        Update::UpToDate | Update::Updated(_) => {
            let state = git.worktree_state(wt).map_err(refuse_git)?;
            let diff = git
                .diff_stat(&job.repo.branch, &state.head)
                .map_err(refuse_git)?;
            let diff = DiffStat {
                files: diff.files,
                added: diff.added,
                removed: diff.removed,
            };
            Ok((state.head, diff))
        }
    }
}

/// Runs the checks on a thread of their own, which answers the gate.
pub fn spawn_checks(
    job: GateJob,
    (head, diff): (String, DiffStat),
    done: mpsc::UnboundedSender<Done>,
    running: Arc<Running>,
) {
    let interrupt = running.start(&job.team, job.task, job.epoch);
    let name = format!("boardd-checks {}#{}", job.team, job.task);
    let (copy, answer, checks) = (job.clone(), done.clone(), running.clone());
    let started = super::thread::start(name, move || {
        let _span = tracing::info_span!("checks", team = %job.team, task = job.task).entered();
        let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            run_checks(&job, &head, diff, &interrupt, &running.private)
        }));
        // A panic is a bug; the owner still hears, and the checks never pass.
        let result = ran.unwrap_or_else(|_| {
            let why = "boardd could not finish running the checks";
            Err(GateRefusal::new(ErrorCode::Internal, why))
        });
        running.finish(&job.team, job.task, job.epoch);
        let _ = done.send(Done::Gated { job, result });
    });
    if let Err(e) = started {
        tracing::error!(error = %e, "cannot start a thread for the checks");
        checks.finish(&copy.team, copy.task, copy.epoch);
        let why = format!("boardd could not start the checks: {e}");
        let result = Err(GateRefusal::new(ErrorCode::Internal, why));
        let _ = answer.send(Done::Gated { job: copy, result });
    }
}

fn run_checks(
    job: &GateJob,
    head: &str,
    diff: DiffStat,
    interrupt: &teamboard_git::Interrupt,
    private: &[PathBuf],
) -> Result<Passed, GateRefusal> {
    // The jail keeps its private /tmp for as long as the checks run.
    let (_jail, shell) = shell(job, private)?;
    let mut runs = Vec::new();
    let timeout = Duration::from_millis(job.repo.check_timeout_ms);
    let env = vec![
        ("TEAMBOARD_TEAM".to_string(), job.team.clone()),
        ("TEAMBOARD_TASK".to_string(), job.task.to_string()),
    ];
    for command in &job.checks {
        let spec = CheckSpec {
            command,
            cwd: Path::new(&job.worktree.path),
            timeout,
            env: &env,
            shell: &shell,
        };
        let at = teamboard_protocol::now_ms();
        let result = teamboard_git::run_check(&spec, interrupt);
        let run = CheckRun {
            command: command.clone(),
            outcome: outcome(result.outcome),
            exit_code: result.exit_code,
            tail: result.tail,
            duration_ms: result.duration.as_millis() as u64,
            commit: head.to_string(),
            at,
        };
        tracing::info!(check = %command, outcome = %run.outcome, ms = run.duration_ms, "check ran");
        let passed = run.outcome == CheckOutcome::Passed;
        let message = (!passed).then(|| failure_message(&run, timeout));
        runs.push(run);
        if let Some(message) = message {
            return Err(GateRefusal {
                runs,
                ..GateRefusal::new(ErrorCode::CheckFailed, message)
            });
        }
    }
    Ok(Passed {
        head: head.to_string(),
        diff,
        runs,
    })
}

/// The shell the checks run with: `sh` in the owner's sandbox (the default
/// one when the owner registered none), which writes the worktree and a
/// private `/tmp` of the checks' own, and never sees `private` nor the team's
/// other worktrees. Only an owner whose sandbox is `off` has its checks run
/// unconfined, as its own commands are.
fn shell(job: &GateJob, private: &[PathBuf]) -> Result<(Jail, Vec<OsString>), GateRefusal> {
    let policy = job.sandbox.unwrap_or_default();
    let refuse = |why: String| {
        let message = format!("the checks of #{} cannot run: {why}", job.task);
        GateRefusal::new(ErrorCode::CheckFailed, message)
    };
    if policy.mode != SandboxMode::Off {
        teamboard_sandbox::probe().map_err(|e| refuse(e.to_string()))?;
    }
    let worktree = Path::new(&job.worktree.path);
    let jail = Jail::new(policy, worktree)
        .hide(private.iter().cloned())
        .hide(worktree.parent().map(Path::to_path_buf))
        .private_tmp()
        .map_err(|e| refuse(format!("cannot make a private /tmp: {e}")))?;
    let (program, mut args) = jail.wrap("sh", []);
    args.insert(0, program);
    Ok((jail, args))
}

/// The evidence of a check that did not pass, for the owner and the history.
fn failure_message(run: &CheckRun, timeout: Duration) -> String {
    let how = match (run.outcome, run.exit_code) {
        (CheckOutcome::TimedOut, _) => format!("timed out after {}", limit(timeout)),
        (CheckOutcome::Interrupted, _) => "was interrupted".to_string(),
        (_, Some(code)) => format!("failed with exit code {code}"),
        (_, None) => "was killed by a signal".to_string(),
    };
    let commit = teamboard_board::short(&run.commit);
    let tail = run.tail.trim_end();
    if tail.is_empty() {
        format!("check `{}` {how} on {commit}, with no output", run.command)
    } else {
        format!(
            "check `{}` {how} on {commit}; the end of its output:\n{tail}",
            run.command
        )
    }
}

/// A time limit as people set it: whole seconds, or milliseconds when it
/// is not a whole number of seconds (a 500 ms limit is not "0 s").
fn limit(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{} ms", d.as_millis())
    }
}

/// The refusal for a branch that conflicts with the target: the paths, the
/// target commit, and how to resolve it where the work is.
pub fn conflict_message(
    task: TaskId,
    target: &str,
    onto: &str,
    wt: &Worktree,
    style: MergeStyle,
    paths: &[String],
) -> String {
    let how = match style {
        MergeStyle::Rebase => format!(
            "run `git rebase {target}` in the worktree, resolve the conflicts, `git add` them and `git rebase --continue`"
        ),
        MergeStyle::Merge => {
            format!("run `git merge {target}` in the worktree, resolve the conflicts and commit")
        }
    };
    format!(
        "the branch conflicts with {target} in {} ({target} at {}); nothing landed and no attempt is used. Resolve it in the worktree {} (branch {}): {how}, then complete again (a person: `teamctl task retry {task}`)",
        paths.join(", "),
        teamboard_board::short(onto),
        wt.path,
        wt.branch
    )
}

/// Why a worktree whose checkout is `branch` is no place to commit or land
/// the task from, if it is not. Trap: where the target is checked out
/// nowhere, git lets an owner switch its worktree to it; a commit there would move
/// the target with nothing checked, and one on a detached HEAD would leave
/// the work on no branch while the task's empty branch "landed".
pub fn off_branch(branch: &Option<String>, wt: &Worktree) -> Option<String> {
    if branch.as_deref() == Some(wt.branch.as_str()) {
        return None;
    }
    let has = match branch {
        Some(b) => format!("branch '{b}'"),
        None => "a detached HEAD".to_string(),
    };
    Some(format!(
        "the worktree {} has {has} checked out, not the task's branch {}; nothing was committed or landed. Switch back (git switch {}; uncommitted changes come along) and complete again",
        wt.path, wt.branch, wt.branch
    ))
}

pub fn refuse_git(e: GitError) -> GateRefusal {
    GateRefusal::new(ErrorCode::Git, e.to_string())
}

pub fn style(style: MergeStyle) -> teamboard_git::Style {
    match style {
        MergeStyle::Rebase => teamboard_git::Style::Rebase,
        MergeStyle::Merge => teamboard_git::Style::Merge,
    }
}

fn outcome(o: Outcome) -> CheckOutcome {
    match o {
        Outcome::Passed => CheckOutcome::Passed,
        Outcome::Failed => CheckOutcome::Failed,
        Outcome::TimedOut => CheckOutcome::TimedOut,
        Outcome::Interrupted => CheckOutcome::Interrupted,
    }
}
